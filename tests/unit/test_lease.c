/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sl_lease.h"
#include "sl_limit.h"

#define MS 1000000ULL
#define S  1000000000ULL

static void
sizing(void **state)
{
	struct sl_lease l;
	struct sl_lease_sizing login = {5, 60 * S, 20000, 2};
	struct sl_lease_sizing bulk = {10000, S, 20000, 2};
	uint64_t t = 100 * S;
	int i;

	(void)state;
	memset(&l, 0, sizeof(l));
	/* a 5/min limit can afford no unspent token: exact, one per request */
	assert_int_equal(sl_lease_want(&l, &login, 1), 1);
	assert_int_equal(sl_lease_want(&l, &login, 3), 3);
	/* a busy 10000/s key: the lease grows with the rate, capped by the
	 * budget of 2% shared by two holders (100 units) */
	assert_int_equal(sl_lease_want(&l, &bulk, 1), 1);
	for (i = 0; i < 2000; i++) {
		l.units = 1;
		l.expires_ns = UINT64_MAX;
		sl_lease_seen(&l, 1, t + (uint64_t)i * 100000); /* 10000/s */
	}
	assert_true(sl_lease_want(&l, &bulk, 1) > 50);
	assert_true(sl_lease_want(&l, &bulk, 1) <= 100);
	/* a key seen four times a second under that generous limit: enough
	 * for its next requests within a lease's lifetime (1 s), not one ask
	 * per request */
	memset(&l, 0, sizeof(l));
	for (i = 0; i < 100; i++)
		sl_lease_seen(&l, 1, t + (uint64_t)i * 250 * MS);
	assert_true(sl_lease_want(&l, &bulk, 1) >= 3);
	assert_true(sl_lease_want(&l, &bulk, 1) <= 4);
	/* the same pace under the 5/min limit stays exact */
	assert_int_equal(sl_lease_want(&l, &login, 1), 1);
	/* a key's second request already sizes its lease from the gap: 100 ms
	 * apart is 10/s, 10 units for a lease's lifetime */
	memset(&l, 0, sizeof(l));
	sl_lease_seen(&l, 1, t);
	assert_int_equal(sl_lease_want(&l, &bulk, 1), 1);
	sl_lease_seen(&l, 1, t + 100 * MS);
	assert_int_equal(sl_lease_want(&l, &bulk, 1), 10);
	assert_int_equal(sl_lease_want(&l, &login, 1), 1);
}

static void
take_grant_expire(void **state)
{
	struct sl_lease l;
	uint64_t t = 5 * S;

	(void)state;
	memset(&l, 0, sizeof(l));
	assert_int_equal(sl_lease_take(&l, 1, t), SL_LEASE_EMPTY);
	l.asked_ns = t;
	assert_true(sl_lease_pending(&l, t + MS, 5 * MS));
	assert_false(sl_lease_pending(&l, t + 6 * MS, 5 * MS));
	sl_lease_granted(&l, 3, t + 100 * MS, 0, 0, 7, t);
	assert_false(sl_lease_pending(&l, t, 5 * MS));
	assert_int_equal(sl_lease_take(&l, 2, t), SL_LEASE_SPENT);
	assert_int_equal(sl_lease_take(&l, 2, t), SL_LEASE_EMPTY);
	assert_true(sl_lease_low(&l, 10));
	/* unspent units go back once the lease expires, not before */
	assert_int_equal(sl_lease_expire(&l, t + 99 * MS), 0);
	assert_int_equal(sl_lease_expire(&l, t + 100 * MS), 1);
	assert_int_equal(l.units, 0);
	assert_int_equal(sl_lease_take(&l, 1, t + 200 * MS), SL_LEASE_EMPTY);
	/* a refusal holds until its retry time */
	sl_lease_granted(&l, 0, 0, 2 * S, 3 * S, 0, t);
	assert_int_equal(sl_lease_take(&l, 1, t + S), SL_LEASE_REFUSED);
	assert_int_equal(sl_lease_take(&l, 1, t + 2 * S), SL_LEASE_EMPTY);
}

/* Units given back count again only while they still would have. */
static void
refunds(void **state)
{
	struct sl_limit_params p;
	struct sl_limit_state s;
	struct sl_limit_result r;
	uint64_t t = 1000 * S;

	(void)state;
	memset(&s, 0, sizeof(s));
	sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 10, 60 * S, 10);
	sl_limit_commit(&p, &s, 10, t);
	sl_limit_refund(&p, &s, 4, t);
	sl_limit_check(&p, &s, 4, t, &r);
	assert_true(r.allow);
	sl_limit_check(&p, &s, 5, t, &r);
	assert_false(r.allow);
	/* never more than full */
	sl_limit_refund(&p, &s, 100, t);
	sl_limit_check(&p, &s, 11, t, &r);
	assert_false(r.allow);
	/* a fixed window: back in the same window, lost in the next */
	memset(&s, 0, sizeof(s));
	sl_limit_params_init(&p, SL_LIM_FIXED_WINDOW, 5, 60 * S, 0);
	sl_limit_commit(&p, &s, 5, t);
	sl_limit_refund(&p, &s, 2, t + S);
	sl_limit_check(&p, &s, 2, t + S, &r);
	assert_true(r.allow);
	sl_limit_check(&p, &s, 3, t + S, &r);
	assert_false(r.allow);
	/* GCRA: the schedule moves back by the units returned */
	memset(&s, 0, sizeof(s));
	sl_limit_params_init(&p, SL_LIM_GCRA, 10, S, 5);
	sl_limit_commit(&p, &s, 5, t);
	sl_limit_refund(&p, &s, 2, t);
	sl_limit_check(&p, &s, 2, t, &r);
	assert_true(r.allow);
	sl_limit_check(&p, &s, 3, t, &r);
	assert_false(r.allow);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizing),
		cmocka_unit_test(take_grant_expire),
		cmocka_unit_test(refunds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

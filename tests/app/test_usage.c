/* SPDX-License-Identifier: BSD-3-Clause */
/* The demand a node reports for sluice-aggregator: a heavy hitter is
 * never lost among many light identities (space-saving), totals are
 * exact, the table stays bounded, and the report is the JSON the
 * aggregator reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "usage.h"

static struct sl_usage u;
static const struct sl_usage_lim none; /* a demand report, no limit said */

static const struct sl_usage_rule *
rule(uint64_t rid)
{
	uint32_t i;

	for (i = 0; i < u.n; i++)
		if (u.r[i].rid == rid)
			return &u.r[i];
	return NULL;
}

static uint64_t
units_of(const struct sl_usage_rule *r, uint64_t k1, uint64_t k2)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->top[i].k1 == k1 && r->top[i].k2 == k2)
			return r->top[i].units;
	return 0;
}

/* 1000 light identities (1 unit each) and one heavy (5 units per
 * round), interleaved: the heavy one is kept, with at least its true
 * count, and no more than that plus the least count when it came in. */
static void
heavy_hitter_kept(void **state)
{
	uint64_t k2;
	int round;

	(void)state;
	memset(&u, 0, sizeof(u));
	for (round = 0; round < 200; round++) {
		for (k2 = 1; k2 <= 5; k2++)
			sl_usage_note(&u, 7, k2,
				      1000 + (uint64_t)round * 5 + k2, 1, none);
		sl_usage_note(&u, 7, 3, 42, 5, none);
	}
	assert_int_equal(u.n, 1);
	assert_int_equal(rule(7)->total, 200 * 10);
	assert_int_equal(rule(7)->n, SL_USAGE_TOP);
	assert_true(units_of(rule(7), 3, 42) >= 1000);
	assert_true(units_of(rule(7), 3, 42) <= 1000 + 200);
	/* an identity is both words: the same k2 under another k1 is
	 * another identity (a rule's keys spread over hash tags) */
	assert_int_equal(units_of(rule(7), 4, 42), 0);
}

static void
rules_bounded(void **state)
{
	uint64_t k1;

	(void)state;
	memset(&u, 0, sizeof(u));
	for (k1 = 1; k1 <= SL_USAGE_RULES + 3; k1++)
		sl_usage_note(&u, k1, 1, 1, 2, none);
	assert_int_equal(u.n, SL_USAGE_RULES);
	assert_int_equal(u.unsent, 3 * 2);
	sl_usage_reset(&u, 5);
	assert_int_equal(u.n, 0);
	/* a rule counted afresh after a reset starts from nothing */
	sl_usage_note(&u, 99, 1, 1, 4, none);
	assert_int_equal(rule(99)->total, 4);
	assert_int_equal(rule(99)->n, 1);
}

static void
json_report(void **state)
{
	char buf[2048], small[60];
	int n;

	(void)state;
	memset(&u, 0, sizeof(u));
	sl_usage_note(&u, 1, 0x12, 0xab, 9, none);
	sl_usage_note(&u, 1, 0x34, 0xcd, 1, none);
	n = sl_usage_json(&u.r[0], 1796280000123ULL, 1000, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "{\"t\":1796280000123,\"i\":1000,\"total\":"
				 "10,\"top\":{\"0000000000000012"
				 "00000000000000ab\":9,\"0000000000000034"
				 "00000000000000cd\":1}}");
	/* an ask says the identity's global limit; a demand report after it
	 * (none said) leaves it standing */
	sl_usage_note(&u, 1, 0x34, 0xcd, 2, (struct sl_usage_lim){1200, 60000});
	sl_usage_note(&u, 1, 0x34, 0xcd, 1, none);
	n = sl_usage_json(&u.r[0], 5, 1000, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "{\"t\":5,\"i\":1000,\"total\":13,\"top\":{"
				 "\"000000000000001200000000000000ab\":9,"
				 "\"000000000000003400000000000000cd\":4},"
				 "\"lim\":{\"000000000000003400000000000000cd"
				 "\":[1200,60000]}}");
	/* a report that does not fit is not sent cut */
	assert_int_equal(sl_usage_json(&u.r[0], 1, 1000, small, sizeof(small)),
			 -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heavy_hitter_kept),
		cmocka_unit_test(rules_bounded),
		cmocka_unit_test(json_report),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node's ledger of a store's limit: its share, drained and
 * promised slices, edits, the store's refusals and the aggregator's
 * slices.
 */
#include <inttypes.h>
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

/* A share: divided, at least one unit; full at first; debt and refill. */
static void
ledger_basics(void **state)
{
	struct sl_share sh;
	struct sl_ledger g;
	uint64_t t = 1000 * S;

	(void)state;
	sl_share_of(&sh, 600, 20, 60 * S, 4); /* 150/min, burst 5 */
	assert_int_equal(sh.count, 150);
	assert_int_equal(sh.burst, 5);
	sl_share_of(&sh, 5, 5, 60 * S, 8); /* never below one unit */
	assert_int_equal(sh.count, 1);
	assert_int_equal(sh.burst, 1);
	sl_share_of(&sh, 600, 20, 60 * S, 4);
	memset(&g, 0, sizeof(g));
	assert_true(sl_ledger_room(&g, &sh, 5, t));
	assert_false(sl_ledger_room(&g, &sh, 6, t));
	/* a grant of 25 from the store: 20 units of debt */
	sl_ledger_charge(&g, &sh, 25, t);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 0);
	assert_false(sl_ledger_room(&g, &sh, 1, t));
	/* at 150/min (one per 400 ms), 21 units are back in 8.4 s */
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 1, t), 8400 * MS);
	assert_false(sl_ledger_room(&g, &sh, 1, t + 8399 * MS));
	assert_true(sl_ledger_room(&g, &sh, 1, t + 8400 * MS));
	/* never fuller than the share's burst */
	assert_int_equal(sl_ledger_left(&g, &sh, t + 3600 * S), 5);
	/* units given back (not admitted after all) count again */
	sl_ledger_charge(&g, &sh, 5, t + 3600 * S);
	sl_ledger_credit(&g, &sh, 2, t + 3600 * S);
	assert_int_equal(sl_ledger_left(&g, &sh, t + 3600 * S), 2);
	sl_ledger_credit(&g, &sh, 100, t + 3600 * S);
	assert_int_equal(sl_ledger_left(&g, &sh, t + 3600 * S), 5);
	/* more than the burst never fits */
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 6, t + 3600 * S), SL_NEVER);
	/* opened empty at a first grant of 5 and in debt, then set from the
	 * store's count (16 of 20 left, 4 of them this holder's): room now,
	 * not 8 s from now; never above the share's burst */
	memset(&g, 0, sizeof(g));
	sl_ledger_open(&g, &sh, 0, t);
	sl_ledger_charge(&g, &sh, 5, t);
	assert_false(sl_ledger_room(&g, &sh, 1, t));
	sl_ledger_set(&g, &sh, 16 / 4, t);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 4);
	assert_true(sl_ledger_room(&g, &sh, 4, t));
	sl_ledger_set(&g, &sh, 1000, t);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 5);
	/* and down: the others spent what it had */
	sl_ledger_set(&g, &sh, 0, t);
	assert_false(sl_ledger_room(&g, &sh, 1, t));
}

/* A share whose burst x period passes 64 bits of nanoseconds (a
 * million units a year, burst 100 000): its quotients as exact. */
static void
ledger_wide(void **state)
{
	struct sl_share sh;
	struct sl_ledger g;
	uint64_t year = 365ULL * 24 * 3600 * S, t = 1000 * S;

	(void)state;
	sl_share_of(&sh, 1000000, 100000, year, 1);
	memset(&g, 0, sizeof(g));
	assert_int_equal(sl_ledger_left(&g, &sh, t), 100000);
	sl_ledger_charge(&g, &sh, 100000, t);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 0);
	/* a unit per 31.536 s; 100 000 of them back in 100 000 of those */
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 1, t), year / 1000000);
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 100000, t),
			 year / 1000000 * 100000);
	assert_int_equal(sl_ledger_left(&g, &sh, t + year / 10), 100000);
}

/*
 * A holder that admits what the store grants it and, when an answer is
 * late, decides from its share. Whatever the mix, what it admits is at
 * most the share up to its last degraded decision plus what the store
 * granted after it: when the store grants more than the share, degraded
 * answers stop adding (the grants are charged), and when it grants less
 * they fill only up to the share — never the sum of the two.
 */
static void
ledger_bounds_mix(void **state)
{
	struct sl_share sh;
	struct sl_ledger g;
	uint64_t t0 = 1000 * S, t, rnd = 0x2545f4914f6cdd1dULL;
	int i, mode;

	(void)state;
	for (mode = 0; mode < 4; mode++) {
		/* an answer in time one event in 4/4, 3/4, 1/4, 1/16 */
		uint32_t in_time = mode == 0   ? 16
				   : mode == 1 ? 12
				   : mode == 2 ? 4
					       : 1;
		uint64_t granted = 0, degraded = 0, g_at_last = 0, t_last = 0;
		uint64_t bound;

		sl_share_of(&sh, 6000, 100, 60 * S, 2); /* 50/s, burst 50 */
		memset(&g, 0, sizeof(g));
		t = t0;
		for (i = 0; i < 20000; i++) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			t += 5 * MS + rnd % (30 * MS); /* ~50 events/s */
			if (rnd % 16 < in_time) {
				granted++;
				sl_ledger_charge(&g, &sh, 1, t);
			} else if (sl_ledger_room(&g, &sh, 1, t)) {
				degraded++;
				sl_ledger_charge(&g, &sh, 1, t);
				g_at_last = granted;
				t_last = t;
			}
		}
		bound = sh.burst + sh.count * (t_last - t0) / sh.period_ns +
			(granted - g_at_last);
		assert_true(granted + degraded <= bound + 1);
		/* and none of it was lost: with no grant at all the share is
		 * served whole (every event is within it here) */
		if (mode == 3)
			assert_true(degraded > 0);
		if (mode == 0)
			assert_int_equal(degraded, 0);
	}
}

/* A drained slice keeps its rate, not its burst: what it had is gone,
 * debt stays debt, and it refills from there. */
static void
ledger_drain(void **state)
{
	struct sl_share sh;
	struct sl_ledger g;
	uint64_t t = 10 * S;

	(void)state;
	memset(&g, 0, sizeof(g));
	sl_share_of(&sh, 600, 20, 60 * S, 4); /* 150/min, burst 5 */
	sl_ledger_open(&g, &sh, 1, t);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 5);
	sl_ledger_drain(&g, &sh, t, 0);
	assert_int_equal(sl_ledger_left(&g, &sh, t), 0);
	assert_false(sl_ledger_room(&g, &sh, 1, t));
	/* 2.5 units a second from now on */
	assert_int_equal(sl_ledger_left(&g, &sh, t + 400 * MS), 1);
	assert_int_equal(sl_ledger_left(&g, &sh, t + 2 * S), 5);
	/* in debt: drained, still in debt */
	sl_ledger_charge(&g, &sh, 8, t + 2 * S);
	sl_ledger_drain(&g, &sh, t + 2 * S, 0);
	assert_false(sl_ledger_room(&g, &sh, 1, t + 2 * S));
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 1, t + 2 * S), 1600 * MS);
}

/* Drained while the store's bucket is promised to reservations until u:
 * nothing earned before u, charges before it are debt, and it earns at
 * its rate from u on. */
static void
ledger_drain_until(void **state)
{
	struct sl_share sh;
	struct sl_ledger g;
	uint64_t t = 10 * S, u = t + 1 * S;

	(void)state;
	memset(&g, 0, sizeof(g));
	sl_share_of(&sh, 600, 20, 60 * S, 4); /* 150/min, burst 5 */
	sl_ledger_open(&g, &sh, 1, t);
	sl_ledger_drain(&g, &sh, t, u);
	assert_int_equal(sl_ledger_left(&g, &sh, t + 900 * MS), 0);
	assert_int_equal(sl_ledger_wait_ns(&g, &sh, 1, t), 1400 * MS);
	assert_int_equal(sl_ledger_left(&g, &sh, u + 400 * MS), 1);
	/* a unit admitted meanwhile (a reservation spent) is owed from u */
	memset(&g, 0, sizeof(g));
	sl_ledger_open(&g, &sh, 1, t);
	sl_ledger_drain(&g, &sh, t, u);
	sl_ledger_charge(&g, &sh, 1, t + 500 * MS);
	assert_int_equal(sl_ledger_left(&g, &sh, u + 400 * MS), 0);
	assert_int_equal(sl_ledger_left(&g, &sh, u + 800 * MS), 1);
}

/* How far ahead the store's bucket is promised, from its answer; and
 * when a share may earn again, taken to stay that far ahead while the
 * demand goes on, no further than the store could have promised. */
static void
store_promise(void **state)
{
	(void)state;
	/* 600/min, burst 20: -30 tokens is 5 s to full, 3 s out of debt */
	assert_int_equal(sl_store_ahead_ns(0, 600, 20, 60000, 5000 * MS, 0),
			 3000 * MS);
	/* units left: promised to nobody */
	assert_int_equal(sl_store_ahead_ns(0, 600, 20, 60000, 1500 * MS, 0), 0);
	assert_int_equal(sl_store_ahead_ns(1, 600, 20, 60000, 2000 * MS, 0), 0);
	/* 10^6 a day, burst 10^6, 10^6 in debt: a day out of debt (the
	 * burst's refill alone is past 64 bits in ns x ms) */
	assert_int_equal(sl_store_ahead_ns(0, 1000000, 1000000, 86400000,
					   2 * 86400 * S, 0),
			 86400 * S);
	/* a window refusing: until it frees */
	assert_int_equal(sl_store_ahead_ns(2, 600, 20, 60000, 9 * S, 4 * S),
			 4 * S);
	assert_int_equal(sl_store_promised_until(0, 3 * S, 10 * S), 0);
	assert_int_equal(sl_store_promised_until(9 * S, 0, 10 * S), 0);
	assert_int_equal(sl_store_promised_until(9 * S, 3 * S, 10 * S), 13 * S);
	/* no further than SL_LEASE_AHEAD_MS past the store's last word */
	assert_int_equal(sl_store_promised_until(6 * S, 3 * S, 10 * S), 11 * S);
	assert_int_equal(sl_store_promised_until(2 * S, 3 * S, 10 * S), 7 * S);
}

/* An edit hands out nothing: what the slice had left carries over, at
 * most the new burst; debt stays debt; a ledger never used stays so. */
static void
ledger_renumber(void **state)
{
	struct sl_share a, b, c;
	struct sl_ledger g, fresh;
	uint64_t t = 10 * S;

	(void)state;
	memset(&g, 0, sizeof(g));
	memset(&fresh, 0, sizeof(fresh));
	sl_share_of(&a, 600, 20, 60 * S, 4);  /* 150/min, burst 5 */
	sl_share_of(&b, 1200, 40, 60 * S, 4); /* 300/min, burst 10 */
	sl_share_of(&c, 120, 4, 60 * S, 4);   /* 30/min, burst 1 */
	sl_ledger_open(&g, &a, 1, t);
	sl_ledger_charge(&g, &a, 3, t);
	assert_int_equal(sl_ledger_left(&g, &a, t), 2);
	/* raised: 2 left, not a full new burst of 10 */
	sl_ledger_renumber(&g, &a, &b, t);
	assert_int_equal(sl_ledger_left(&g, &b, t), 2);
	/* and it earns at the new rate from there: 5 a second */
	assert_int_equal(sl_ledger_left(&g, &b, t + 1 * S), 7);
	/* lowered: capped at the new burst at once */
	sl_ledger_renumber(&g, &b, &c, t + 1 * S);
	assert_int_equal(sl_ledger_left(&g, &c, t + 1 * S), 1);
	/* in debt: still owing as many units under the new numbers */
	sl_ledger_charge(&g, &c, 3, t + 1 * S);
	sl_ledger_renumber(&g, &c, &a, t + 1 * S);
	assert_false(sl_ledger_room(&g, &a, 1, t + 1 * S));
	assert_int_equal(sl_ledger_wait_ns(&g, &a, 1, t + 1 * S), 1200 * MS);
	sl_ledger_renumber(&fresh, &a, &b, t);
	assert_int_equal(fresh.used, 0);
}

/* The node's word of a refusal: lately is SL_LEASE_HOT_NS, per key (a
 * key never refused, or whose slot another took since, is not), and
 * across the ms clock's wrap. */
static void
refusals(void **state)
{
	static struct sl_refusals r;
	uint64_t t = 100 * S, wrap = (uint64_t)UINT32_MAX * MS - 2 * S;
	uint64_t k, other = 0;

	(void)state;
	assert_false(sl_refusals_lately(&r, 1, 2, t));
	sl_refusals_note(&r, 1, 2, t);
	assert_true(sl_refusals_lately(&r, 1, 2, t));
	assert_true(sl_refusals_lately(&r, 1, 2, t + SL_LEASE_HOT_NS - MS));
	assert_false(sl_refusals_lately(&r, 1, 2, t + SL_LEASE_HOT_NS));
	assert_false(sl_refusals_lately(&r, 2, 1, t));
	assert_false(sl_refusals_lately(&r, 1, 3, t));
	/* a key sharing the slot: the last word wins, the other is lost */
	for (k = 3; other == 0 && k < 1000000; k++) {
		sl_refusals_note(&r, k, 0, t);
		if (!sl_refusals_lately(&r, 1, 2, t))
			other = k;
	}
	assert_int_not_equal(other, 0);
	assert_true(sl_refusals_lately(&r, other, 0, t));
	/* refused 2 s before the ms clock wraps, asked 1 s after */
	sl_refusals_note(&r, 7, 7, wrap);
	assert_true(sl_refusals_lately(&r, 7, 7, wrap + 3 * S));
	assert_false(
		sl_refusals_lately(&r, 7, 7, wrap + 3 * S + SL_LEASE_HOT_NS));
}

/* The aggregator's slices: found, missed, bounded, and never zero. */
static void
slices(void **state)
{
	static struct sl_slices t;
	uint32_t parts = 0, i, found = 0;
	uint64_t c, b;

	(void)state;
	sl_slices_clear(&t);
	assert_false(sl_slices_find(NULL, 1, 2, &parts));
	assert_false(sl_slices_find(&t, 1, 2, &parts));
	assert_int_equal(sl_slices_put(&t, 1, 2, 9000), 0);
	assert_int_equal(sl_slices_put(&t, 1, 3, 0), 0);
	assert_int_equal(sl_slices_put(&t, 1, 2, 8800), 0); /* replaced */
	assert_int_equal(t.n, 2);
	assert_true(sl_slices_find(&t, 1, 2, &parts));
	assert_int_equal(parts, 8800);
	assert_true(sl_slices_find(&t, 1, 3, &parts));
	assert_int_equal(parts, 0);
	assert_false(sl_slices_find(&t, 2, 1, &parts));
	assert_int_equal(sl_slices_put(&t, 1, 4, SL_SLICE_PARTS + 1), -1);
	/* filled to half: the rest refused, every one put still found */
	for (i = 0; i < SL_SLICE_SLOTS; i++)
		if (sl_slices_put(&t, 7, i, i % SL_SLICE_PARTS) == 0)
			found++;
	assert_int_equal(t.n, SL_SLICE_SLOTS / 2);
	for (i = 0; i < found; i++) {
		assert_true(sl_slices_find(&t, 7, i, &parts));
		assert_int_equal(parts, i % SL_SLICE_PARTS);
	}
	assert_false(sl_slices_find(&t, 7, SL_SLICE_SLOTS + 5, &parts));
	/* 1200/min burst 20 at 90 %: 1080 and 18; at 0: 1 and 1, never 0 */
	sl_slice_apply(1200, 20, 9000, &c, &b);
	assert_int_equal(c, 1080);
	assert_int_equal(b, 18);
	sl_slice_apply(1200, 20, 0, &c, &b);
	assert_int_equal(c, 1);
	assert_int_equal(b, 1);
	sl_slice_apply(1200, 20, 3333, &c, &b); /* rounded down */
	assert_int_equal(c, 399);
	assert_int_equal(b, 6);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ledger_basics),
		cmocka_unit_test(ledger_wide),
		cmocka_unit_test(ledger_bounds_mix),
		cmocka_unit_test(ledger_drain),
		cmocka_unit_test(ledger_drain_until),
		cmocka_unit_test(store_promise),
		cmocka_unit_test(ledger_renumber),
		cmocka_unit_test(refusals),
		cmocka_unit_test(slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

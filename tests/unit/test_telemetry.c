/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sl_top.h"

static void
heavy_hitters_survive_a_flood(void **state)
{
	static struct sl_top t;
	struct sl_top_entry out[SL_TOP_K];
	uint64_t truth[3] = {0, 0, 0}, total = 0;
	uint32_t n, i, k, seen = 0;

	(void)state;
	/* three heavy identities, each its own rate, among 100 000 one-off
	 * ones */
	for (i = 0; i < 100000; i++) {
		uint8_t id[8];

		memcpy(id, &i, 4);
		sl_top_add(&t, 1000 + i, 1, 1, 4, id, 4);
		total++;
		for (k = 0; k < 3; k++)
			if (i % (k + 2) == 0) {
				char hid[7] = {'h', 'e', 'a',
					       'v', 'y', (char)('0' + k),
					       0};

				sl_top_add(&t, k, 2, 1, 4, (const uint8_t *)hid,
					   6);
				truth[k]++;
				total++;
			}
	}
	n = sl_top_snapshot(&t, out);
	assert_int_equal(n, SL_TOP_K);
	for (i = 0; i < n; i++) {
		if (out[i].rule_slot != 2)
			continue;
		assert_int_equal(out[i].len, 6);
		k = (uint32_t)(out[i].id[5] - '0');
		assert_true(k < 3);
		seen |= 1u << k;
		/* each one's own truth: never under it, over it by at most
		 * err, and err within the sketch's bound (N / K) */
		assert_true(out[i].count >= truth[k]);
		assert_true(out[i].count - out[i].err <= truth[k]);
		assert_true(out[i].err <= total / SL_TOP_K);
	}
	assert_int_equal(seen, 7);
}

/* Entries not in use are never matched, whatever their zeroed hash;
 * the same identity under two rules is two entries. */
static void
heavy_hitters_partial(void **state)
{
	static struct sl_top t;
	struct sl_top_entry out[SL_TOP_K];
	const uint8_t id[4] = {1, 2, 3, 4};
	uint32_t n, i;

	(void)state;
	for (i = 0; i < 3; i++)
		sl_top_add(&t, 0, 0, 1, 4, id, 4);
	sl_top_add(&t, 0, 5, 1, 4, id, 4);
	n = sl_top_snapshot(&t, out);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].rule_slot, 0);
	assert_int_equal(out[0].count, 3);
	assert_int_equal(out[1].rule_slot, 5);
	assert_int_equal(out[1].count, 1);
}

static void
histogram_quantiles(void **state)
{
	struct sl_hist h;
	int i;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(sl_hist_quantile(&h, 0.5), 0);
	for (i = 0; i < 990; i++)
		sl_hist_add(&h, 300); /* bucket [288, 320) */
	for (i = 0; i < 10; i++)
		sl_hist_add(&h, 70000); /* bucket [65536, 73728) */
	assert_int_equal(sl_hist_quantile(&h, 0.5), 320);
	assert_int_equal(sl_hist_quantile(&h, 0.98), 320);
	assert_int_equal(sl_hist_quantile(&h, 0.999), 73728);
	sl_hist_add(&h, UINT64_MAX); /* clamps into the last bucket */
	assert_int_equal(h.b[SL_HIST_BUCKETS - 1], 1);
	/* every value lands in a bucket that ends past it, by at most 1/8 */
	{
		uint64_t v;

		for (v = 0; v < (1ULL << 39); v = v * 9 / 8 + 1) {
			memset(&h, 0, sizeof(h));
			sl_hist_add(&h, v);
			assert_true(sl_hist_quantile(&h, 0.5) > v);
			assert_true(sl_hist_quantile(&h, 0.5) <= v + v / 8 + 1);
		}
	}
}

/*
 * The backend's times per rule: each value in the first bucket whose
 * bound it does not pass, quantiles interpolated inside a bucket as
 * Prometheus' histogram_quantile does (so /sluice/rules and a dashboard
 * agree), the open last bucket read as its lower bound.
 */
static void
health_quantiles(void **state)
{
	struct sl_rule_health h, sum;
	int i;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(sl_health_quantile(&h, 0.99), 0);
	sl_health_time(&h, 500); /* on a bound: that bucket */
	assert_int_equal(h.le[0], 1);
	sl_health_time(&h, 501);
	assert_int_equal(h.le[1], 1);
	memset(&h, 0, sizeof(h));
	for (i = 0; i < 100; i++)
		sl_health_time(&h, 15000); /* (10 ms, 20 ms] */
	assert_int_equal(h.le[5], 100);
	assert_int_equal(sl_health_quantile(&h, 0.5), 15000);
	assert_int_equal(sl_health_quantile(&h, 0.9), 19000);
	for (i = 0; i < 100; i++)
		sl_health_time(&h, 60000000); /* past 10 s */
	assert_int_equal(sl_health_quantile(&h, 0.25), 15000);
	assert_int_equal(sl_health_quantile(&h, 0.99), 10000000);
	assert_int_equal(h.timed, 200);
	assert_int_equal(h.sum_us, 100ULL * 15000 + 100ULL * 60000000);
	sl_health_status(&h, 503);
	sl_health_status(&h, 200);
	sl_health_status(&h, 0);
	sl_health_status(&h, 999);
	assert_int_equal(h.cls[5], 1);
	assert_int_equal(h.cls[2], 1);
	assert_int_equal(h.cls[0], 2);
	memset(&sum, 0, sizeof(sum));
	sl_health_sum(&sum, &h);
	sl_health_sum(&sum, &h);
	assert_int_equal(sum.timed, 400);
	assert_int_equal(sum.le[5], 200);
	assert_int_equal(sum.cls[0], 4);
	assert_int_equal(sl_health_quantile(&sum, 0.25),
			 sl_health_quantile(&h, 0.25));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heavy_hitters_survive_a_flood),
		cmocka_unit_test(heavy_hitters_partial),
		cmocka_unit_test(histogram_quantiles),
		cmocka_unit_test(health_quantiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

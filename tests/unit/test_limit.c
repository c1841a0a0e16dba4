/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sl_limit.h"
#include "sl_mem.h"

#define MS 1000000ULL
#define S  1000000000ULL

/* A state with room for the log, zeroed: "never seen". */
static struct sl_limit_state *
fresh(void)
{
	return calloc(1, sizeof(struct sl_limit_state) + SL_LOG_MAX * 4);
}

/* check then commit when allowed, like the data path */
static int
take(const struct sl_limit_params *p, struct sl_limit_state *s, uint32_t cost,
     uint64_t now, struct sl_limit_result *r)
{
	sl_limit_check(p, s, cost, now, r);
	if (r->allow)
		sl_limit_commit(p, s, cost, now);
	return r->allow;
}

static void
token_bucket(void **state)
{
	struct sl_limit_params p;
	struct sl_limit_state *s = fresh();
	struct sl_limit_result r;
	uint64_t t0 = 1000 * S;
	int i;

	(void)state;
	assert_int_equal(
		sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 10, S, 5), 0);
	for (i = 0; i < 5; i++) {
		assert_true(take(&p, s, 1, t0, &r));
		assert_int_equal(r.remaining, 4 - i);
	}
	assert_int_equal(r.reset_ns, 500 * MS);
	assert_false(take(&p, s, 1, t0, &r));
	assert_int_equal(r.retry_after_ns, 100 * MS);
	assert_int_equal(r.reset_ns, 500 * MS);
	/* one token back after 100 ms, not before */
	assert_false(take(&p, s, 1, t0 + 99 * MS, &r));
	assert_int_equal(r.retry_after_ns, 1 * MS);
	assert_true(take(&p, s, 1, t0 + 100 * MS, &r));
	assert_false(take(&p, s, 1, t0 + 100 * MS, &r));
	/* cost 3 with 2 tokens: 100 ms to the third */
	assert_false(take(&p, s, 3, t0 + 300 * MS, &r));
	assert_int_equal(r.remaining, 2);
	assert_int_equal(r.retry_after_ns, 100 * MS);
	assert_true(take(&p, s, 3, t0 + 400 * MS, &r));
	/* cost above the burst never fits */
	assert_false(take(&p, s, 6, t0 + 100 * S, &r));
	assert_int_equal(r.retry_after_ns, SL_NEVER);
	/* a long idle period refills to the burst, never beyond */
	assert_true(take(&p, s, 5, t0 + 100 * S, &r));
	assert_int_equal(r.remaining, 0);
	/* idle for 2^63 ns: no overflow, simply full */
	assert_true(take(&p, s, 5, UINT64_MAX / 2 + t0, &r));
	free(s);
}

/* A day's limit in every algorithm: its burst, then one unit per
 * 86 400 s / count, and a window that ends a day later. */
static void
per_day(void **state)
{
	static const enum sl_limit_algo algos[] = {
		SL_LIM_TOKEN_BUCKET, SL_LIM_GCRA, SL_LIM_FIXED_WINDOW,
		SL_LIM_SLIDING_WINDOW, SL_LIM_SLIDING_LOG};
	const uint64_t day = 86400 * S, t0 = 1000 * S;
	struct sl_limit_params p;
	struct sl_limit_result r;
	unsigned int a, i;

	(void)state;
	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		struct sl_limit_state *s = fresh();

		assert_int_equal(
			sl_limit_params_init(&p, algos[a], 50, day, 50), 0);
		for (i = 0; i < 50; i++)
			assert_true(take(&p, s, 1, t0, &r));
		assert_false(take(&p, s, 1, t0, &r));
		assert_true(r.retry_after_ns >= day / 50);
		if (r.retry_after_ns > 2 * day) /* a sliding window: two */
			fail_msg("algorithm %u: retry after %llu ns", a,
				 (unsigned long long)r.retry_after_ns);
		/* nothing back within the first refill's interval */
		assert_false(take(&p, s, 1, t0 + day / 50 - S, &r));
		/* all of it back a day later */
		assert_true(take(&p, s, 1, t0 + 2 * day, &r));
		free(s);
	}
}

static void
token_bucket_clock_backwards(void **state)
{
	struct sl_limit_params p;
	struct sl_limit_state *s = fresh();
	struct sl_limit_result r;

	(void)state;
	sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 1, S, 2);
	assert_true(take(&p, s, 2, 10 * S, &r));
	/* going back 5 s must not hand out tokens */
	assert_false(take(&p, s, 1, 5 * S, &r));
	assert_false(take(&p, s, 1, 10 * S + 999 * MS, &r));
	assert_true(take(&p, s, 1, 11 * S, &r));
	free(s);
}

static void
gcra(void **state)
{
	struct sl_limit_params p;
	struct sl_limit_state *s = fresh();
	struct sl_limit_result r;
	uint64_t t0 = 50 * S;
	int i;

	(void)state;
	/* 10/s with a burst of 5: the same conformance as the token bucket */
	sl_limit_params_init(&p, SL_LIM_GCRA, 10, S, 5);
	for (i = 0; i < 5; i++)
		assert_true(take(&p, s, 1, t0, &r));
	assert_int_equal(r.remaining, 0);
	assert_false(take(&p, s, 1, t0, &r));
	assert_int_equal(r.retry_after_ns, 100 * MS);
	assert_int_equal(r.reset_ns, 500 * MS);
	assert_true(take(&p, s, 1, t0 + 100 * MS, &r));
	/* smooth: one every 100 ms from now on */
	for (i = 2; i < 10; i++) {
		assert_false(
			take(&p, s, 1, t0 + (uint64_t)i * 100 * MS - 1, &r));
		assert_true(take(&p, s, 1, t0 + (uint64_t)i * 100 * MS, &r));
	}
	/* a rate that does not divide the period stays exact: 3/s */
	sl_limit_params_init(&p, SL_LIM_GCRA, 3, S, 1);
	memset(s, 0, sizeof(*s));
	assert_true(take(&p, s, 1, t0, &r));
	assert_false(take(&p, s, 1, t0 + 333333333, &r));
	assert_true(take(&p, s, 1, t0 + 333333334, &r));
	/* the second came 2/3 ns late, so the schedule moved with it */
	assert_false(take(&p, s, 1, t0 + 666666667, &r));
	assert_true(take(&p, s, 1, t0 + 666666668, &r));
	assert_false(take(&p, s, 1, t0 + S, &r));
	assert_false(take(&p, s, 1, t0 + S + 1, &r));
	assert_true(take(&p, s, 1, t0 + S + 2, &r));
	/* cost above the burst never fits */
	assert_false(take(&p, s, 2, t0 + 100 * S, &r));
	assert_int_equal(r.retry_after_ns, SL_NEVER);
	free(s);
}

static uint64_t
rnd64(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A rate's numbers at every scale: a unit, a few, a billion; a
 * nanosecond to a day, whatever the product. */
static uint64_t
pick(uint64_t *x, uint64_t top)
{
	uint64_t v = rnd64(x);

	switch (v & 3) {
	case 0:
		return 1 + (v >> 2) % 4;
	case 1:
		return top - (v >> 2) % 4;
	default:
		return 1 + (v >> 2) % top;
	}
}

/*
 * A check's quotients by the divisors' reciprocals (sl_limit_params'
 * m_period, m_count) against the same check dividing (both 0): every
 * field of every answer the same, for token buckets and GCRA drawn at
 * every scale, charged and checked at random times.
 */
static void
quotients_by_reciprocal(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int n, i;

	(void)state;
	for (n = 0; n < 20000; n++) {
		struct sl_limit_params p, d;
		struct sl_limit_state s1, s2;
		uint8_t algo = n & 1 ? SL_LIM_GCRA : SL_LIM_TOKEN_BUCKET;
		uint64_t count = pick(&x, 1000000000ULL);
		uint64_t period = pick(&x, 86400ULL * 1000000000ULL);
		uint64_t burst = pick(&x, 1000000ULL), now = 1000000;

		if (sl_limit_params_init(&p, algo, count, period, burst) != 0)
			continue;
		d = p;
		d.m_period = 0;
		d.m_count = 0;
		memset(&s1, 0, sizeof(s1));
		memset(&s2, 0, sizeof(s2));
		for (i = 0; i < 8; i++) {
			struct sl_limit_result r1, r2;
			uint32_t cost = (uint32_t)(rnd64(&x) % 4);

			now += rnd64(&x) % (period / 2 + 1);
			memset(&r1, 0, sizeof(r1));
			memset(&r2, 0, sizeof(r2));
			sl_limit_check(&p, &s1, cost, now, &r1);
			sl_limit_check(&d, &s2, cost, now, &r2);
			assert_int_equal(r1.allow, r2.allow);
			assert_int_equal(r1.remaining, r2.remaining);
			assert_int_equal(r1.reset_ns, r2.reset_ns);
			assert_int_equal(r1.retry_after_ns, r2.retry_after_ns);
			if (r1.allow) {
				sl_limit_commit(&p, &s1, cost, now);
				sl_limit_commit(&d, &s2, cost, now);
			}
			assert_memory_equal(&s1, &s2, sizeof(s1));
		}
	}
}

/*
 * An allowed check's reset is the one a check of nothing finds once the
 * request is charged: the data path touches the bucket with it instead
 * of checking again. Every algorithm, drawn numbers, times that go back
 * as well as forward, and numbers changed under the state (a reload).
 */
static void
reset_known_at_check(void **state)
{
	uint64_t x = 0x2545f4914f6cdd1dULL;
	int n, i;

	(void)state;
	for (n = 0; n < 20000; n++) {
		struct sl_limit_params p[2];
		struct sl_limit_state *s = fresh();
		uint8_t algo = (uint8_t)(n % 5);
		uint64_t now = 1000ULL * S, period;

		for (i = 0; i < 2; i++) {
			period = algo == SL_LIM_SLIDING_LOG
					 ? (1 + rnd64(&x) % 3600) * MS
					 : pick(&x, 86400ULL * S);
			if (sl_limit_params_init(
				    &p[i], algo,
				    pick(&x, algo == SL_LIM_SLIDING_LOG
						     ? SL_LOG_MAX
						     : 1000000),
				    period, pick(&x, 1000000)) != 0)
				p[i] = p[0];
		}
		if (p[0].period_ns == 0)
			goto next;
		for (i = 0; i < 16; i++) {
			const struct sl_limit_params *q =
				&p[rnd64(&x) % 8 == 0];
			struct sl_limit_result r, after;
			uint32_t cost = (uint32_t)(rnd64(&x) % 4);
			uint64_t step = rnd64(&x) % (q->period_ns / 2 + 1);

			now = rnd64(&x) % 6 == 0 && now > step ? now - step
							       : now + step;
			sl_limit_check(q, s, cost, now, &r);
			if (!r.allow)
				continue;
			sl_limit_commit(q, s, cost, now);
			sl_limit_check(q, s, 0, now, &after);
			if (after.reset_ns != r.reset_ns)
				fail_msg("algo %u: reset %llu at check, %llu "
					 "after the charge",
					 algo, (unsigned long long)r.reset_ns,
					 (unsigned long long)after.reset_ns);
		}
	next:
		free(s);
	}
}

/* The boundary burst: fixed window lets 2x through across a boundary. */
static void
fixed_vs_sliding_boundary(void **state)
{
	struct sl_limit_params fw, sw;
	struct sl_limit_state *a = fresh(), *b = fresh();
	struct sl_limit_result r;
	int i, fixed = 0, sliding = 0;

	(void)state;
	sl_limit_params_init(&fw, SL_LIM_FIXED_WINDOW, 5, S, 0);
	sl_limit_params_init(&sw, SL_LIM_SLIDING_WINDOW, 5, S, 0);
	for (i = 0; i < 10; i++) {
		fixed += take(&fw, a, 1, 10 * S + 900 * MS, &r);
		sliding += take(&sw, b, 1, 10 * S + 900 * MS, &r);
	}
	assert_int_equal(fixed, 5);
	assert_int_equal(sliding, 5);
	assert_false(take(&fw, a, 1, 10 * S + 900 * MS, &r));
	assert_int_equal(r.retry_after_ns, 100 * MS);
	for (i = 0; i < 10; i++) {
		fixed += take(&fw, a, 1, 11 * S, &r);
		sliding += take(&sw, b, 1, 11 * S, &r);
	}
	assert_int_equal(fixed, 10);  /* ten in 100 ms */
	assert_int_equal(sliding, 5); /* the previous window still weighs 1.0 */
	/* sliding: the wait is until the previous window weighs 4/5 */
	assert_false(take(&sw, b, 1, 11 * S, &r));
	assert_int_equal(r.retry_after_ns, 200 * MS);
	/* half way: 5 * 0.5 = 2.5 used, two more fit, not three */
	assert_true(take(&sw, b, 1, 11 * S + 500 * MS, &r));
	assert_true(take(&sw, b, 1, 11 * S + 500 * MS, &r));
	assert_false(take(&sw, b, 1, 11 * S + 500 * MS, &r));
	/* cost above the quota never fits */
	assert_false(take(&fw, a, 6, 20 * S, &r));
	assert_int_equal(r.retry_after_ns, SL_NEVER);
	free(a);
	free(b);
}

static void
sliding_log(void **state)
{
	struct sl_limit_params p;
	struct sl_limit_state *s = fresh();
	struct sl_limit_result r;
	uint64_t t0 = 7 * S;

	(void)state;
	assert_int_equal(
		sl_limit_params_init(&p, SL_LIM_SLIDING_LOG, 3, 60 * S, 0), 0);
	assert_true(take(&p, s, 1, t0, &r));
	assert_true(take(&p, s, 1, t0 + 10 * S, &r));
	assert_true(take(&p, s, 1, t0 + 20 * S, &r));
	assert_int_equal(r.remaining, 0);
	assert_false(take(&p, s, 1, t0 + 30 * S, &r));
	assert_int_equal(r.retry_after_ns, 30 * S);
	assert_false(take(&p, s, 2, t0 + 30 * S, &r));
	assert_int_equal(r.retry_after_ns, 40 * S);
	assert_true(take(&p, s, 1, t0 + 60 * S, &r));
	assert_false(take(&p, s, 1, t0 + 60 * S, &r));
	/* bounded: the log never holds more than the limit */
	assert_true(s->log_n <= 3);
	/* clock back by 50 s: nothing expires early */
	assert_false(take(&p, s, 1, t0 + 10 * S, &r));
	/* limits beyond the log's capacity are refused */
	assert_int_equal(sl_limit_params_init(&p, SL_LIM_SLIDING_LOG, 65, S, 0),
			 -1);
	free(s);
}

static void
bad_params(void **state)
{
	struct sl_limit_params p;

	(void)state;
	assert_int_equal(sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 0, S, 1),
			 -1);
	assert_int_equal(sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 1,
					      3600 * S, 1000000000),
			 -1);
	assert_int_equal(sl_limit_params_init(&p, SL_LIM_GCRA, 1000000,
					      3600 * S, 1000000),
			 0);
}

/*
 * A table filled to its capacity keeps every key: where both of a key's
 * buckets are full, an entry moves to its other bucket instead of one
 * being dropped (first-fit alone dropped some from 80 % on).
 */
static void
bucket_fill_keeps_all(void **state)
{
	struct sl_bucket_table *t = sl_bucket_table_create(16384, 0);
	uint64_t x = 0x243f6a8885a308d3ULL, now = S;
	uint32_t i;

	(void)state;
	assert_non_null(t);
	for (i = 0; i < 16384; i++) {
		struct sl_bucket_key k;

		/* xorshift: keys as a hash spreads them */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		k.k1 = x;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		k.k2 = x;
		sl_bucket_begin(t);
		assert_non_null(sl_bucket_get(t, &k, now));
		/* charged: not full again for a minute */
		sl_bucket_touch(t, sl_bucket_get(t, &k, now), now + 60 * S);
	}
	assert_int_equal(sl_bucket_stats(t)->active, 16384);
	assert_int_equal(sl_bucket_stats(t)->evicted, 0);
	assert_int_equal(sl_bucket_stats(t)->expired, 0);
	assert_true(sl_bucket_stats(t)->shifted > 0);
	sl_bucket_table_free(t);
}

/*
 * A touch lands on its own entry whatever the value's size: the entry's
 * index comes from the state's offset by a shift and a multiply, not a
 * division. Every second entry touched to be full later; the sweep
 * frees the others and only them.
 */
static void
touch_every_stride(void **state)
{
	uint64_t now = S;
	size_t size;

	(void)state;
	for (size = 1; size <= 600; size += size < 64 ? 1 : 37) {
		struct sl_bucket_table *t =
			sl_bucket_table_create_sized(64, size);
		struct sl_limit_state *st[32];
		struct sl_bucket_key k;
		uint32_t i;

		assert_non_null(t);
		sl_bucket_begin(t);
		for (i = 0; i < 32; i++) {
			k = (struct sl_bucket_key){
				0x9e3779b97f4a7c15ULL * (i + 1), i + 1};
			st[i] = sl_bucket_get(t, &k, now);
			assert_non_null(st[i]);
		}
		for (i = 0; i < 32; i++)
			sl_bucket_touch(t, st[i], i % 2 ? now + 60 * S : now);
		sl_bucket_begin(t);
		if (sl_bucket_expire(t, now + S, 1000) != 16)
			fail_msg("value size %zu: a touch missed its entry",
				 size);
		for (i = 0; i < 32; i++) {
			k = (struct sl_bucket_key){
				0x9e3779b97f4a7c15ULL * (i + 1), i + 1};
			if ((sl_bucket_find(t, &k) != NULL) != (i % 2))
				fail_msg("value size %zu: entry %u", size, i);
		}
		sl_bucket_table_free(t);
	}
}

/* A flood of new identities never grows the table nor evicts a throttled one.
 */
static void
bucket_flood(void **state)
{
	struct sl_bucket_table *t = sl_bucket_table_create(64, 0);
	struct sl_limit_params p;
	struct sl_bucket_key hot = {0xabcdef, 0x12345};
	struct sl_limit_state *s;
	struct sl_limit_result r;
	uint64_t now = S, i;

	(void)state;
	assert_non_null(t);
	sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 10, 60 * S, 10);
	/* the hot client drains its bucket: full again only in a minute */
	sl_bucket_begin(t);
	s = sl_bucket_get(t, &hot, now);
	sl_limit_check(&p, s, 10, now, &r);
	sl_limit_commit(&p, s, 10, now);
	sl_bucket_touch(t, s, now + r.reset_ns);
	for (i = 0; i < 100000; i++) {
		struct sl_bucket_key k = {i * 0x9e3779b97f4a7c15ULL + 1, i};

		now += 1000;
		sl_bucket_begin(t);
		s = sl_bucket_get(t, &k, now);
		sl_limit_check(&p, s, 1, now, &r);
		sl_limit_commit(&p, s, 1, now);
		sl_bucket_touch(t, s, now + r.reset_ns);
		assert_true(sl_bucket_stats(t)->active <= 64);
	}
	/* still throttled: its state survived the flood */
	sl_bucket_begin(t);
	s = sl_bucket_get(t, &hot, now);
	sl_limit_check(&p, s, 1, now, &r);
	assert_false(r.allow);
	assert_true(sl_bucket_stats(t)->evicted + sl_bucket_stats(t)->expired >=
		    100000 - 64);
	/* everything is full again an hour later: the sweep frees it all */
	sl_bucket_begin(t);
	assert_int_equal(sl_bucket_expire(t, now + 3600 * S, 1000), 64);
	assert_int_equal(sl_bucket_stats(t)->active, 0);
	sl_bucket_table_free(t);
}

/*
 * A table carved from an arena (a mapped file) is found again as it was
 * left: the same block at another address (a new process maps it
 * anywhere) holds the drained key still drained and the table's counts;
 * a block that holds no such table, or one of another size, is refused.
 */
static void
bucket_arena_kept(void **state)
{
	size_t len = sl_bucket_table_arena_bytes(64, 1);
	unsigned char *one = calloc(1, len), *two = calloc(1, len);
	struct sl_mem_arena a = {.base = one, .size = len, .fresh = 1};
	struct sl_bucket_key k = {0xabc, 0xdef};
	struct sl_bucket_table *t;
	struct sl_limit_params p;
	struct sl_limit_state *s;
	struct sl_limit_result r;
	uint64_t now = S;

	(void)state;
	assert_true(len > 0);
	sl_limit_params_init(&p, SL_LIM_SLIDING_LOG, 2, 60 * S, 2);
	t = sl_bucket_table_create_in(64, 1, &a);
	assert_non_null(t);
	sl_bucket_begin(t);
	s = sl_bucket_get(t, &k, now);
	sl_limit_commit(&p, s, 2, now);
	sl_bucket_touch(t, s, now + 60 * S);
	memcpy(two, one, len);
	memset(one, 0xa5, len); /* the old mapping gone */

	a = (struct sl_mem_arena){.base = two, .size = len, .fresh = 0};
	t = sl_bucket_table_create_in(64, 1, &a);
	assert_non_null(t);
	assert_int_equal(sl_bucket_stats(t)->active, 1);
	sl_bucket_begin(t);
	s = sl_bucket_get(t, &k, now + S);
	sl_limit_check(&p, s, 1, now + S, &r);
	assert_false(r.allow);
	sl_bucket_table_free(t); /* nothing: the arena's */
	/* refused: another capacity, another kind, a block of nothing */
	a = (struct sl_mem_arena){.base = two, .size = len, .fresh = 0};
	assert_null(sl_bucket_table_create_in(32, 1, &a));
	a = (struct sl_mem_arena){.base = two, .size = len, .fresh = 0};
	assert_null(sl_bucket_table_create_in(64, 0, &a));
	memset(two, 0, len);
	a = (struct sl_mem_arena){.base = two, .size = len, .fresh = 0};
	assert_null(sl_bucket_table_create_in(64, 1, &a));
	a = (struct sl_mem_arena){.base = two, .size = len / 2, .fresh = 1};
	assert_null(sl_bucket_table_create_in(64, 1, &a));
	free(one);
	free(two);
}

/*
 * A table resized keeps what it knew: drained keys are carried into a
 * larger and into a smaller table with their state and the time they
 * are full; a key full again carries nothing, nor does a table of
 * another kind. Into a table too small for them all, each finds room by
 * the table's own eviction (the closest to full go first), within its
 * size.
 */
static void
bucket_copy_resized(void **state)
{
	struct sl_bucket_table *from = sl_bucket_table_create(64, 1);
	struct sl_bucket_table *big = sl_bucket_table_create(256, 1);
	struct sl_bucket_table *small = sl_bucket_table_create(8, 1);
	struct sl_bucket_table *other = sl_bucket_table_create(64, 0);
	struct sl_limit_params p;
	struct sl_limit_result r;
	uint64_t now = S, i;

	(void)state;
	sl_limit_params_init(&p, SL_LIM_TOKEN_BUCKET, 60, 60 * S, 20);
	for (i = 0; i < 20; i++) { /* key i spent i + 1 of its burst */
		struct sl_bucket_key k = {i, ~i};
		struct sl_limit_state *s;

		sl_bucket_begin(from);
		s = sl_bucket_get(from, &k, now);
		sl_limit_commit(&p, s, (uint32_t)i + 1, now);
		sl_bucket_touch(from, s, now + (i + 1) * S);
	}
	/* the first key full again at 1 s: not carried at 1.5 s */
	assert_int_equal(sl_bucket_copy(big, from, now + S + S / 2), 19);
	assert_int_equal(sl_bucket_copy(other, from, now), 0); /* kind */
	for (i = 1; i < 20; i++) {
		struct sl_bucket_key k = {i, ~i};

		sl_bucket_begin(big);
		sl_limit_check(&p, sl_bucket_get(big, &k, now),
			       20 - (uint32_t)i, now, &r);
		assert_false(r.allow); /* as drained as it was */
		sl_limit_check(&p, sl_bucket_get(big, &k, now),
			       19 - (uint32_t)i, now, &r);
		assert_true(r.allow);
	}
	assert_int_equal(sl_bucket_copy(small, from, now), 20);
	assert_int_equal(sl_bucket_stats(small)->active, 8);
	sl_bucket_table_free(from);
	sl_bucket_table_free(big);
	sl_bucket_table_free(small);
	sl_bucket_table_free(other);
}

/* Entries used by one request are never evicted by that same request. */
static void
bucket_pins(void **state)
{
	struct sl_bucket_table *t = sl_bucket_table_create(2, 1);
	struct sl_bucket_key k1 = {1, 1}, k2 = {2, 2}, k3 = {3, 3};
	struct sl_limit_state *a, *b, *c;

	(void)state;
	sl_bucket_begin(t);
	a = sl_bucket_get(t, &k1, 1);
	a->a = 77;
	b = sl_bucket_get(t, &k2, 1);
	c = sl_bucket_get(t, &k3, 1); /* table full, both pinned */
	assert_true(c != a && c != b);
	assert_int_equal(a->a, 77);
	sl_bucket_table_free(t);
}

/*
 * A hint finds its entry while the key matches and is renewed by every
 * get; a stale one (another key, an entry evicted and reused, garbage)
 * falls back to the table; the scratch state of a pinned-full table
 * leaves none.
 */
static void
bucket_hints(void **state)
{
	struct sl_bucket_table *t = sl_bucket_table_create(2, 0);
	struct sl_bucket_key k1 = {1, 1}, k2 = {2, 2}, k3 = {3, 3};
	struct sl_limit_state *a, *b, *c;
	uint32_t ha = 0, hb, h;

	(void)state;
	sl_bucket_begin(t);
	a = sl_bucket_get_hinted(t, &k1, 1, &ha);
	a->a = 11;
	assert_int_not_equal(ha, 0);
	sl_bucket_prefetch_hint(t, ha);
	sl_bucket_prefetch_hint(t, 12345); /* out of range: ignored */
	h = ha;
	assert_ptr_equal(sl_bucket_get_hinted(t, &k1, 1, &h), a);
	assert_int_equal(h, ha);
	assert_ptr_equal(sl_bucket_get(t, &k1, 1), a);
	/* k2 with k1's hint: its own, fresh state, and its own hint */
	hb = ha;
	b = sl_bucket_get_hinted(t, &k2, 1, &hb);
	assert_ptr_not_equal(b, a);
	assert_int_equal(b->a, 0);
	assert_int_not_equal(hb, ha);
	h = 99;
	assert_ptr_equal(sl_bucket_get_hinted(t, &k1, 1, &h), a);
	assert_int_equal(h, ha);
	/* both pinned: k3 gets the scratch state, which leaves no hint */
	h = ha;
	c = sl_bucket_get_hinted(t, &k3, 1, &h);
	assert_ptr_not_equal(c, a);
	assert_ptr_not_equal(c, b);
	assert_int_equal(h, 0);
	/* a new request: k3 evicts one of them; the old hints find k3's
	 * own state, not the evicted key's */
	sl_bucket_begin(t);
	c = sl_bucket_get(t, &k3, 2);
	c->a = 33;
	h = ha;
	assert_ptr_equal(sl_bucket_get_hinted(t, &k3, 2, &h), c);
	h = hb;
	assert_ptr_equal(sl_bucket_get_hinted(t, &k3, 2, &h), c);
	sl_bucket_table_free(t);
}

/* A reload changes a rule's numbers under live state: never a free bucket. */
static void
rule_changes(void **state)
{
	struct sl_limit_params a, b;
	struct sl_limit_state *s = fresh();
	struct sl_limit_result r;
	uint64_t t = 100 * S;

	(void)state;
	/* raising the rate: more room as it refills, not a full bucket. The
	 * state cannot know when the rule changed, so until its first
	 * decision under the new rate it refilled at the slower of the two:
	 * at t + 2 a third of a token (10/min), the rest at 20/min */
	sl_limit_params_init(&a, SL_LIM_TOKEN_BUCKET, 10, 60 * S, 10);
	sl_limit_params_init(&b, SL_LIM_TOKEN_BUCKET, 20, 60 * S, 10);
	assert_true(take(&a, s, 10, t, &r));
	assert_false(take(&b, s, 1, t + 2 * S, &r));
	assert_false(take(&b, s, 1, t + 4 * S - 1, &r));
	assert_true(take(&b, s, 1, t + 4 * S, &r));
	assert_false(take(&b, s, 1, t + 4 * S, &r));
	assert_true(take(&b, s, 1, t + 7 * S, &r)); /* 20/min */
	/* and lowering it: the slower (new) rate from the last charge */
	memset(s, 0, sizeof(*s));
	assert_true(take(&b, s, 10, t, &r));
	assert_false(take(&a, s, 1, t + 3 * S, &r));
	assert_true(take(&a, s, 1, t + 6 * S, &r));
	/* lowering the burst under what is owed: empty at once */
	memset(s, 0, sizeof(*s));
	sl_limit_params_init(&b, SL_LIM_TOKEN_BUCKET, 10, 60 * S, 1);
	assert_true(take(&a, s, 2, t, &r));
	assert_false(take(&b, s, 1, t, &r));
	/* the same rate written per minute instead of per second: owed stays
	 * owed */
	memset(s, 0, sizeof(*s));
	sl_limit_params_init(&a, SL_LIM_TOKEN_BUCKET, 10, S, 10);
	sl_limit_params_init(&b, SL_LIM_TOKEN_BUCKET, 600, 60 * S, 10);
	assert_true(take(&a, s, 10, t, &r));
	assert_false(take(&b, s, 1, t, &r));
	assert_true(take(&b, s, 1, t + 100 * MS, &r));
	/* a window that grows keeps what was used in the old one */
	memset(s, 0, sizeof(*s));
	sl_limit_params_init(&a, SL_LIM_FIXED_WINDOW, 5, 60 * S, 0);
	sl_limit_params_init(&b, SL_LIM_FIXED_WINDOW, 5, 3600 * S, 0);
	assert_true(take(&a, s, 5, t, &r));
	assert_false(take(&b, s, 1, t + 61 * S, &r));
	memset(s, 0, sizeof(*s));
	sl_limit_params_init(&a, SL_LIM_SLIDING_WINDOW, 5, 60 * S, 0);
	sl_limit_params_init(&b, SL_LIM_SLIDING_WINDOW, 5, 3600 * S, 0);
	assert_true(take(&a, s, 5, t, &r));
	assert_false(take(&b, s, 1, t + 61 * S, &r));
	/* GCRA keeps its schedule: a lower rate waits longer, never less */
	memset(s, 0, sizeof(*s));
	sl_limit_params_init(&a, SL_LIM_GCRA, 10, S, 1);
	sl_limit_params_init(&b, SL_LIM_GCRA, 3, S, 1);
	assert_true(take(&a, s, 1, t, &r));
	assert_false(take(&b, s, 1, t + 50 * MS, &r));
	free(s);
}

/*
 * Raise and lower each algorithm's capacity under a drained key, and
 * under a full one: what was used stays used, a raise comes by refill
 * (or the next window), a cut binds at once.
 */
struct cap_case {
	uint8_t algo;
	uint64_t lo, hi; /* count (windows) or burst (buckets) */
};

static void
params_cap(struct sl_limit_params *p, const struct cap_case *c, uint64_t cap)
{
	int bucket = c->algo == SL_LIM_TOKEN_BUCKET || c->algo == SL_LIM_GCRA;

	/* buckets: 2/s with the burst as the dial; windows: the quota per
	 * minute */
	assert_int_equal(sl_limit_params_init(p, c->algo, bucket ? 2 : cap,
					      bucket ? S : 60 * S,
					      bucket ? cap : 0),
			 0);
}

/* How many cost-1 requests pass back to back at now. */
static uint32_t
drain(const struct sl_limit_params *p, struct sl_limit_state *s, uint64_t now)
{
	struct sl_limit_result r;
	uint32_t n = 0;

	while (n < 1000 && take(p, s, 1, now, &r))
		n++;
	return n;
}

static void
capacity_edits_grant_nothing(void **state)
{
	static const struct cap_case cases[] = {
		{SL_LIM_TOKEN_BUCKET, 2, 4}, {SL_LIM_GCRA, 2, 4},
		{SL_LIM_FIXED_WINDOW, 2, 4}, {SL_LIM_SLIDING_WINDOW, 2, 4},
		{SL_LIM_SLIDING_LOG, 2, 4},
	};
	struct sl_limit_params lo, hi;
	struct sl_limit_result r;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cap_case *c = &cases[i];
		struct sl_limit_state *s = fresh();
		int bucket = c->algo <= SL_LIM_GCRA;
		uint64_t t = 120 * S, later = bucket ? 2 * S : 121 * S;

		params_cap(&lo, c, c->lo);
		params_cap(&hi, c, c->hi);
		/* drained at lo, raised to hi: nothing at once */
		assert_int_equal(drain(&lo, s, t), c->lo);
		if (take(&hi, s, 1, t, &r))
			fail_msg("algo %u: a raise granted a token", c->algo);
		/* the raise charged at that first decision under hi: the
		 * whole of hi once it has refilled */
		assert_int_equal(drain(&hi, s, t + later), c->hi);
		free(s);

		/* full at lo (seen, then refilled), raised: lo now, hi later */
		s = fresh();
		assert_int_equal(drain(&lo, s, t), c->lo);
		assert_int_equal(drain(&lo, s, t + later), c->lo);
		assert_int_equal(drain(&hi, s, t + 2 * later), c->lo);
		free(s);

		/* one used at hi, cut to lo: lo - 1 left, not lo */
		s = fresh();
		assert_true(take(&hi, s, 1, t, &r));
		assert_int_equal(drain(&lo, s, t), c->lo - 1);
		free(s);

		/* drained at hi, cut to lo: empty at once */
		s = fresh();
		assert_int_equal(drain(&hi, s, t), c->hi);
		if (take(&lo, s, 1, t, &r))
			fail_msg("algo %u: a cut left tokens", c->algo);
		free(s);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(token_bucket),
		cmocka_unit_test(token_bucket_clock_backwards),
		cmocka_unit_test(per_day),
		cmocka_unit_test(gcra),
		cmocka_unit_test(quotients_by_reciprocal),
		cmocka_unit_test(reset_known_at_check),
		cmocka_unit_test(fixed_vs_sliding_boundary),
		cmocka_unit_test(sliding_log),
		cmocka_unit_test(bad_params),
		cmocka_unit_test(bucket_fill_keeps_all),
		cmocka_unit_test(bucket_flood),
		cmocka_unit_test(touch_every_stride),
		cmocka_unit_test(bucket_pins),
		cmocka_unit_test(bucket_hints),
		cmocka_unit_test(bucket_arena_kept),
		cmocka_unit_test(bucket_copy_resized),
		cmocka_unit_test(rule_changes),
		cmocka_unit_test(capacity_edits_grant_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

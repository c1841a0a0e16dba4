/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench --hashcmp: the hand-written index (lib/table, through the
 * bucket table of lib/limit) against DPDK's rte_hash on the same keys:
 * 16-byte keys, as a bucket's; hits in a random order over the whole
 * table; misses; and what each does when full. Cycles per operation,
 * medians of rounds, one run, so the ratio is the figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>

#include "hashcmp.h"
#include "rnd.h"
#include "sl_limit.h"

#define ROUNDS 7

struct keyset {
	struct sl_bucket_key *k;
	uint32_t *order; /* a random visiting order */
	uint32_t n;
};

static void
make_keys(struct keyset *ks, uint32_t n, uint64_t seed)
{
	uint32_t i;

	ks->n = n;
	ks->k = malloc(n * sizeof(*ks->k));
	ks->order = malloc(n * sizeof(*ks->order));
	if (ks->k == NULL || ks->order == NULL) {
		fprintf(stderr, "hashcmp: out of memory\n");
		exit(1);
	}
	for (i = 0; i < n; i++) {
		ks->k[i].k1 = bench_xorshift(&seed);
		ks->k[i].k2 = bench_xorshift(&seed);
		ks->order[i] = i;
	}
	for (i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(bench_xorshift(&seed) % (i + 1)), t;

		t = ks->order[i];
		ks->order[i] = ks->order[j];
		ks->order[j] = t;
	}
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp_d);
	return v[ROUNDS / 2];
}

/* Cycles per lookup of every key of ks, in its random order. */
static double
ours_lookup(struct sl_bucket_table *t, const struct keyset *ks)
{
	double v[ROUNDS];
	uint64_t sink = 0;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t t0 = rte_rdtsc_precise();
		uint32_t i;

		for (i = 0; i < ks->n; i++) {
			sl_bucket_begin(t);
			sink += (uintptr_t)sl_bucket_get(
				t, &ks->k[ks->order[i]], 1);
		}
		v[r] = (double)(rte_rdtsc_precise() - t0) / ks->n;
	}
	if (sink == 0)
		printf("\n");
	return median(v);
}

static double
theirs_lookup(struct rte_hash *h, const struct keyset *ks, int *misses)
{
	double v[ROUNDS];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t t0 = rte_rdtsc_precise();
		uint32_t i;

		*misses = 0;
		for (i = 0; i < ks->n; i++)
			*misses += rte_hash_lookup(h, &ks->k[ks->order[i]]) < 0;
		v[r] = (double)(rte_rdtsc_precise() - t0) / ks->n;
	}
	return median(v);
}

static struct rte_hash *
their_table(uint32_t capacity, const char *name)
{
	struct rte_hash_parameters p = {
		.name = name,
		.entries = capacity,
		.key_len = sizeof(struct sl_bucket_key),
		.hash_func = rte_hash_crc,
		.hash_func_init_val = 0,
		.socket_id = (int)rte_socket_id(),
	};
	struct rte_hash *h = rte_hash_create(&p);

	if (h == NULL) {
		fprintf(stderr, "hashcmp: rte_hash_create failed (-m more)\n");
		exit(1);
	}
	return h;
}

/* Fills both with ks; returns how many rte_hash refused (full). */
static uint32_t
fill(struct sl_bucket_table *t, struct rte_hash *h, const struct keyset *ks,
     double *ours_ins, double *theirs_ins)
{
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i, refused = 0;

	for (i = 0; i < ks->n; i++) {
		sl_bucket_begin(t);
		sl_bucket_get(t, &ks->k[i], 1);
	}
	*ours_ins = (double)(rte_rdtsc_precise() - t0) / ks->n;
	t0 = rte_rdtsc_precise();
	for (i = 0; i < ks->n; i++)
		refused += rte_hash_add_key(h, &ks->k[i]) < 0;
	*theirs_ins = (double)(rte_rdtsc_precise() - t0) / ks->n;
	return refused;
}

static void
one_size(uint32_t n, int json)
{
	struct keyset in, out, over;
	char name[32];
	struct sl_bucket_table *t = sl_bucket_table_create(n, 0);
	struct rte_hash *h;
	double oi, ti, oh, th, om, tm;
	uint32_t refused, over_refused = 0, i;
	int miss_h, miss_m;

	snprintf(name, sizeof(name), "hashcmp%u", n);
	h = their_table(n, name);
	if (t == NULL) {
		fprintf(stderr, "hashcmp: out of memory\n");
		exit(1);
	}
	sl_bucket_table_prefault(t);
	make_keys(&in, n, 0x9e3779b97f4a7c15ULL + n);
	make_keys(&out, n, 0x2545f4914f6cdd1dULL + n);
	refused = fill(t, h, &in, &oi, &ti);
	oh = ours_lookup(t, &in);
	th = theirs_lookup(h, &in, &miss_h);
	tm = theirs_lookup(h, &out, &miss_m);
	/* our misses insert (find-or-make, evicting): time them last */
	om = ours_lookup(t, &out);
	/* a full table: rte_hash refuses new keys; ours evicts */
	make_keys(&over, n / 4, 0x1234567ULL + n);
	for (i = 0; i < over.n; i++)
		over_refused += rte_hash_add_key(h, &over.k[i]) < 0;
	if (!json)
		printf("%u keys: insert %.0f vs rte_hash %.0f cycles; hit "
		       "%.0f vs %.0f (%.2fx); miss (ours inserts) %.0f vs "
		       "rte_hash miss %.0f; rte_hash refused %u at fill, %u "
		       "of %u more when full (ours evicted %lu over the miss "
		       "rounds)\n",
		       n, oi, ti, oh, th, th / oh, om, tm, refused,
		       over_refused, over.n,
		       sl_bucket_stats(t)->evicted +
			       sl_bucket_stats(t)->expired);
	printf("{\"hashcmp_keys\": %u, \"ours_insert_cycles\": %.1f, "
	       "\"rte_hash_insert_cycles\": %.1f, \"ours_hit_cycles\": %.1f, "
	       "\"rte_hash_hit_cycles\": %.1f, \"rte_hash_over_ours_hit\": "
	       "%.2f, \"ours_miss_insert_cycles\": %.1f, "
	       "\"rte_hash_miss_cycles\": %.1f, \"rte_hash_refused_full\": "
	       "%u, \"rte_hash_refused_at_fill\": %u, "
	       "\"rte_hash_lookup_misses_on_hits\": %d, "
	       "\"ours_evicted_per_miss\": %.3f}\n",
	       n, oi, ti, oh, th, th / oh, om, tm, over_refused, refused,
	       miss_h,
	       (double)(sl_bucket_stats(t)->evicted +
			sl_bucket_stats(t)->expired) /
		       ((double)ROUNDS * n));
	(void)miss_m;
	rte_hash_free(h);
	sl_bucket_table_free(t);
	free(in.k);
	free(in.order);
	free(out.k);
	free(out.order);
	free(over.k);
	free(over.order);
}

int
sl_bench_hashcmp(int json, int small)
{
	if (small) {
		one_size(10000, json);
		return 0;
	}
	one_size(100000, json);
	one_size(1000000, json);
	return 0;
}

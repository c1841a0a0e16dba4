/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench --blocklist: one address against 10 000 mixed IPv4/IPv6
 * CIDRs, two ways — the rule set's hash table (one probe per prefix
 * length present, sl_ruleset_ip_blocked) and DPDK's rte_fib/rte_fib6
 * (sl_blockfib) — on two blocklists: every prefix length present, and
 * the usual few (/32, /24, /128, /64, /48). Both must give the same
 * answer for every address looked up; the figures are cycles per lookup,
 * medians of rounds, from one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "sl_rules.h"

#include "blockfib.h"
#include "blocklist.h"
#include "rnd.h"

#define N_CIDRS 10000
#define N_ADDRS 65536
#define ROUNDS  9

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t
rnd(void)
{
	return bench_xorshift(&rng);
}

static void
rnd_addr(uint8_t af, uint8_t *a)
{
	uint64_t x = rnd(), y = rnd();

	memset(a, 0, 16);
	memcpy(a, &x, 8);
	if (af == 6) {
		memcpy(a + 8, &y, 8);
		a[0] = 0x20; /* global unicast, as real clients */
	}
}

/* 70 % IPv4, 30 % IPv6; lengths from all of them, or the usual few. */
static void
make_cidrs(struct sl_config *c, int few)
{
	static const uint8_t few4[] = {32, 24}, few6[] = {128, 64, 48};
	uint32_t i;

	c->block_cidrs = calloc(N_CIDRS, sizeof(*c->block_cidrs));
	c->n_block_cidrs = N_CIDRS;
	for (i = 0; i < N_CIDRS; i++) {
		struct sl_cidr *b = &c->block_cidrs[i];

		b->af = rnd() % 10 < 7 ? 4 : 6;
		if (few)
			b->prefix =
				b->af == 4 ? few4[rnd() % 2] : few6[rnd() % 3];
		else
			b->prefix = b->af == 4 ? (uint8_t)(8 + rnd() % 25)
					       : (uint8_t)(16 + rnd() % 113);
		rnd_addr(b->af, b->addr);
	}
}

/* Half the lookups fall inside a blocked CIDR, half anywhere. */
static void
make_addrs(const struct sl_config *c, uint8_t (*a)[16], uint8_t *af)
{
	uint32_t i;

	for (i = 0; i < N_ADDRS; i++) {
		const struct sl_cidr *b = &c->block_cidrs[rnd() % N_CIDRS];

		af[i] = b->af;
		rnd_addr(b->af, a[i]);
		if (rnd() & 1) {
			uint32_t k;

			for (k = 0; k < b->prefix; k++) {
				uint8_t m = (uint8_t)(0x80 >> (k % 8));

				a[i][k / 8] = (uint8_t)((a[i][k / 8] & ~m) |
							(b->addr[k / 8] & m));
			}
		}
	}
}

static int
cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static double
median(uint64_t *t)
{
	qsort(t, ROUNDS, sizeof(*t), cmp);
	return (double)t[ROUNDS / 2] / N_ADDRS;
}

static int
one(int few, int json)
{
	struct sl_config c;
	struct sl_ruleset *rs;
	struct sl_blockfib *fib;
	uint8_t(*a)[16] = calloc(N_ADDRS, 16), *af = calloc(N_ADDRS, 1);
	uint64_t th[ROUNDS], tf[ROUNDS];
	uint32_t i, r, hits = 0, differ = 0;
	int err;

	sl_config_defaults(&c);
	make_cidrs(&c, few);
	make_addrs(&c, a, af);
	rs = sl_ruleset_build(&c);
	fib = sl_blockfib_build(&c, &err);
	if (rs == NULL || fib == NULL) {
		fprintf(stderr, "sluice-bench: cannot build the blocklists\n");
		return 1;
	}
	for (i = 0; i < N_ADDRS; i++) {
		int h = sl_ruleset_ip_blocked(rs, af[i], a[i]);

		hits += (uint32_t)h;
		differ += h != sl_blockfib_blocked(fib, af[i], a[i]);
	}
	for (r = 0; r < ROUNDS; r++) {
		uint64_t t0 = rte_rdtsc_precise(), n = 0;

		for (i = 0; i < N_ADDRS; i++)
			n += (uint64_t)sl_ruleset_ip_blocked(rs, af[i], a[i]);
		th[r] = rte_rdtsc_precise() - t0;
		t0 = rte_rdtsc_precise();
		for (i = 0; i < N_ADDRS; i++)
			n += (uint64_t)sl_blockfib_blocked(fib, af[i], a[i]);
		tf[r] = rte_rdtsc_precise() - t0;
		hits += (uint32_t)(n & 0); /* keep n live */
	}
	if (json)
		printf("{\"lengths\": \"%s\", \"hash_cycles\": %.1f, "
		       "\"fib_cycles\": %.1f, \"hash_over_fib\": %.2f, "
		       "\"blocked\": %u, \"disagree\": %u}\n",
		       few ? "few" : "all", median(th), median(tf),
		       median(th) / median(tf), hits, differ);
	else
		printf("blocklist, %u CIDRs (%s prefix lengths), %u lookups: "
		       "hash probes %.1f cycles, rte_fib %.1f cycles "
		       "(hash / fib %.2f); %u blocked, %u disagreements\n",
		       N_CIDRS, few ? "the usual few" : "all", N_ADDRS,
		       median(th), median(tf), median(th) / median(tf), hits,
		       differ);
	sl_blockfib_free(fib);
	sl_ruleset_free(rs);
	free(c.block_cidrs);
	free(a);
	free(af);
	return differ != 0;
}

int
sl_bench_blocklist(int json)
{
	return one(0, json) | one(1, json);
}

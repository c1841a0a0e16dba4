/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_TOP_H
#define SL_TOP_H

/*
 * The most throttled identities (space-saving heavy hitters, Metwally et
 * al.) and a log2 latency histogram: per worker, fixed size, written by
 * that worker only. Readers (the telemetry thread) use the per-entry
 * sequence number to skip an entry caught in the middle of a write.
 * Pure C.
 */

#include <stdint.h>

#define SL_TOP_K      32
#define SL_TOP_ID_MAX 96
/* log-linear: 8 exact values, then 8 sub-buckets per power of two up to
 * 2^40 ns, so a quantile is within 12.5 % of the value it stands for */
#define SL_HIST_SUB     8
#define SL_HIST_BUCKETS (SL_HIST_SUB + (40 - 3) * SL_HIST_SUB)

struct sl_top_entry {
	uint32_t seq; /* odd while the worker rewrites the entry */
	uint16_t rule_slot;
	uint8_t kind; /* sl_ident kind */
	uint8_t ip_af;
	uint8_t len;
	uint64_t count; /* rejections (an overestimate by at most err) */
	uint64_t err;
	uint8_t id[SL_TOP_ID_MAX];
};

struct sl_top {
	uint64_t hash[SL_TOP_K]; /* scanned first: four cache lines */
	uint32_t n;
	uint32_t misses;
	struct sl_top_entry e[SL_TOP_K];
};

/* Counts one rejection of identity (kind, af, bytes) by a rule slot. */
void sl_top_add(struct sl_top *t, uint64_t hash, uint16_t rule_slot,
		uint8_t kind, uint8_t ip_af, const uint8_t *id, uint32_t len);

/* Copies the consistent entries; returns how many. */
uint32_t sl_top_snapshot(const struct sl_top *t, struct sl_top_entry *out);

struct sl_hist {
	uint64_t b[SL_HIST_BUCKETS]; /* see sl_hist_add */
};

void sl_hist_add(struct sl_hist *h, uint64_t ns);
/* The end (ns, exclusive) of the bucket holding the q-th quantile (q in
 * 0..1): at most 12.5 % above the value itself. */
uint64_t sl_hist_quantile(const struct sl_hist *h, double q);

#endif /* SL_TOP_H */

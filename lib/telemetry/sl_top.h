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
	/* each hash's top byte, scanned first (one line, two compares):
	 * most refusals are of identities not listed, whose hash is then
	 * never read */
	uint8_t tag[SL_TOP_K];
	uint64_t hash[SL_TOP_K];
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

/*
 * What the backend answered to requests a rule matched, per worker: the
 * time from the request forwarded to its response's status line, in the
 * buckets an exporter shows as a histogram (upper bounds sl_health_le_us,
 * the last one unbounded), the status classes (index 0: requests whose
 * connection ended before their answer), the answers the framer could
 * not read, and the bytes the backend sent while one was due.
 */
#define SL_HEALTH_BUCKETS 15
extern const uint32_t sl_health_le_us[SL_HEALTH_BUCKETS - 1];

struct sl_rule_health {
	uint64_t le[SL_HEALTH_BUCKETS]; /* not cumulative */
	uint64_t sum_us;
	uint64_t timed;  /* = the sum of le[] */
	uint64_t cls[6]; /* [k]: status k00-k99 for k 1..5; [0]: none came */
	/* answers not read: the framer lost count (a gap, a framing it
	 * cannot follow), which says nothing of the backend */
	uint64_t unframed;
	uint64_t bytes;
};

void sl_health_time(struct sl_rule_health *h, uint64_t us);
void sl_health_status(struct sl_rule_health *h, uint32_t status);
/* Adds a into sum (a reader's total over workers). */
void sl_health_sum(struct sl_rule_health *sum, const struct sl_rule_health *a);
/*
 * The q-th quantile (0..1) in microseconds, interpolated inside its
 * bucket as Prometheus' histogram_quantile does, so that /sluice/rules
 * and a dashboard agree; the last bucket reports its lower bound. 0 when
 * nothing was timed.
 */
uint64_t sl_health_quantile(const struct sl_rule_health *h, double q);

#endif /* SL_TOP_H */

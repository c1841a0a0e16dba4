/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_LIMIT_H
#define SL_LIMIT_H

/*
 * The five limiting algorithms and the per-worker bucket table.
 *
 * Pure C: time is passed in as nanoseconds from any monotonic origin,
 * arithmetic is integer and exact (rates are kept as count per period, never
 * as a rounded rate), and nothing allocates after the table is created.
 *
 * State survives a change of a rule's numbers (a reload): it is re-read in
 * the new numbers, never in the client's favour. What a client has used
 * stays used; a raised capacity (burst, or a window's quota) is charged as
 * used too, so it becomes available only as the bucket refills or the
 * window moves on; a lowered one binds at once. A rule edit is never a
 * way to get tokens.
 *
 * Every algorithm is split in two steps so that a request that matches
 * several limits can be checked against all of them and charged to none
 * unless all allow: sl_limit_check() says what would happen and touches
 * nothing; sl_limit_commit() charges.
 */

#include <stddef.h>
#include <stdint.h>

enum sl_limit_algo {
	SL_LIM_TOKEN_BUCKET = 0,
	SL_LIM_GCRA,
	SL_LIM_FIXED_WINDOW,
	SL_LIM_SLIDING_WINDOW,
	SL_LIM_SLIDING_LOG,
};

#define SL_LOG_MAX 64 /* sliding_log keeps at most this many timestamps */
#define SL_NEVER   UINT64_MAX

struct sl_limit_params {
	uint8_t algo;
	uint64_t count; /* units per period (the window quota) */
	uint64_t period_ns;
	uint64_t burst; /* token_bucket and gcra capacity */
	uint32_t period_ms;
	/* derived by sl_limit_params_init */
	uint64_t cap;      /* token bucket: burst * period_ns credit */
	uint64_t fill_ns;  /* token bucket: time from empty to full */
	uint64_t t_q, t_r; /* gcra: emission interval = t_q + t_r / count */
	/* gcra: the burst tolerance, burst emission intervals, in whole ns
	 * and the count-ths beyond them */
	uint64_t tau, tau_frac;
	/* floor((2^64 - 1) / x) of period_ns and count: a check's quotients
	 * by a multiply instead of a division (0: divide) */
	uint64_t m_period, m_count;
};

/*
 * State of one (rule, identity). All zero means "never seen", which every
 * algorithm reads as full. The log is present only in log-capable tables.
 */
struct sl_limit_state {
	uint64_t a; /* deficit | tat | window id + 1 */
	uint64_t b; /* last refill | tat fraction | counts */
	/* the numbers it was last charged under: a reload may change them */
	uint32_t tag_period_ms;
	uint32_t tag_count;
	uint32_t tag_burst; /* capped at UINT32_MAX */
	uint8_t used;
	uint8_t log_head; /* oldest entry */
	uint8_t log_n;
	uint32_t log[]; /* sliding_log: arrival times in ms, modulo 2^32 */
};

struct sl_limit_result {
	uint8_t allow;
	uint64_t remaining; /* units left after this request (if allowed) */
	uint64_t retry_after_ns; /* until cost units would be allowed (if
				    denied) */
	/* until the limit is back to full; when allowed, as it will be
	 * once this request is committed at the same time */
	uint64_t reset_ns;
};

/*
 * The quota a client is told (draft-ietf-httpapi-ratelimit-headers'
 * q units per w seconds). A token bucket or GCRA whose burst is below
 * its count binds first: it is told as its burst over the time the rate
 * refills it, w rounded up to whole seconds, so that a client that keeps
 * to q in any w never finds the bucket empty, at the rule's rate or a
 * little below. Every other limit is told as written.
 */
void sl_limit_quota(uint8_t algo, uint64_t count, uint64_t period_ns,
		    uint64_t burst, uint64_t *q, uint64_t *w_s);

/* Returns 0, or -1 when the numbers cannot be represented exactly. */
int sl_limit_params_init(struct sl_limit_params *p, uint8_t algo,
			 uint64_t count, uint64_t period_ns, uint64_t burst);

/*
 * Charges nothing. State written under other numbers (a reload) is
 * re-read in these ones first, in place: from then on it refills at the
 * new rate, and the re-reading itself decides nothing.
 */
void sl_limit_check(const struct sl_limit_params *p, struct sl_limit_state *s,
		    uint32_t cost, uint64_t now_ns, struct sl_limit_result *r);

void sl_limit_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
		     uint32_t cost, uint64_t now_ns);

/*
 * Gives back units charged earlier and not used (an expired lease).
 * Only while they still count: a window that has moved on keeps nothing.
 */
void sl_limit_refund(const struct sl_limit_params *p, struct sl_limit_state *s,
		     uint64_t units, uint64_t now_ns);

/*
 * Bucket table: fixed capacity, keyed by a 128-bit fingerprint of
 * (rule, identity). An absent entry is a full bucket, so the table may
 * drop any entry at the price of generosity; it drops first the entries
 * that are already full again (no information lost), then those closest
 * to full — never the buckets of clients that are being throttled.
 */
struct sl_bucket_key {
	uint64_t k1;
	uint64_t k2;
};

struct sl_bucket_stats {
	uint64_t active;
	uint64_t created;
	uint64_t evicted; /* dropped while not yet full: the table was full */
	uint64_t shifted; /* moved to their other bucket to make room */
	uint64_t expired; /* dropped once full again */
};

struct sl_bucket_table;

/* log_capable: entries carry a timestamp log (larger). */
struct sl_bucket_table *sl_bucket_table_create(uint32_t capacity,
					       int log_capable);
/* A table whose values are value_size bytes of the caller's (zeroed when new).
 */
struct sl_bucket_table *sl_bucket_table_create_sized(uint32_t capacity,
						     size_t value_size);
/*
 * A table of sl_bucket_table_create's kind carved from a (sl_mem.h), so
 * that it keeps its buckets across a restart: where a is not fresh, the
 * table is found as a table of the same capacity and kind left it. NULL
 * when a is too small or holds no such table. Freed with the arena, not
 * by sl_bucket_table_free (which does nothing to it).
 */
struct sl_mem_arena;
struct sl_bucket_table *sl_bucket_table_create_in(uint32_t capacity,
						  int log_capable,
						  struct sl_mem_arena *a);
/* The bytes an arena needs for it (with its alignment). */
size_t sl_bucket_table_arena_bytes(uint32_t capacity, int log_capable);
void sl_bucket_table_free(struct sl_bucket_table *t);
/* Faults the table's memory in, on the thread that will use it. */
void sl_bucket_table_prefault(struct sl_bucket_table *t);

/* Starts a request: entries got until the next call are never evicted. */
void sl_bucket_begin(struct sl_bucket_table *t);

/* The state for key, or a fresh one; never NULL. */
struct sl_limit_state *sl_bucket_get(struct sl_bucket_table *t,
				     const struct sl_bucket_key *k,
				     uint64_t now_ns);

/* The state for key if the table has one, else NULL: makes, pins and
 * evicts nothing (an owner's look for a probe, not a decision). */
struct sl_limit_state *sl_bucket_find(struct sl_bucket_table *t,
				      const struct sl_bucket_key *k);

/*
 * Hints: a caller that decides the same key again and again (a flow on a
 * keep-alive connection) keeps the entry's hint, prefetches its lines as
 * soon as it knows the flow, and finds the entry through it without the
 * hash table when its key still matches. A stale hint costs one compare.
 */
/* Asks for the entry's and its state's lines. */
void sl_bucket_prefetch_hint(const struct sl_bucket_table *t, uint32_t hint);
/*
 * sl_bucket_get, through *hint when it still names key; *hint is then
 * the returned state's (0 for the scratch state of a table whose every
 * candidate entry the request has pinned).
 */
struct sl_limit_state *sl_bucket_get_hinted(struct sl_bucket_table *t,
					    const struct sl_bucket_key *k,
					    uint64_t now_ns, uint32_t *hint);

/* Records when the state will be full again (after a commit). */
void sl_bucket_touch(struct sl_bucket_table *t, struct sl_limit_state *s,
		     uint64_t full_at_ns);

uint32_t sl_bucket_expire(struct sl_bucket_table *t, uint64_t now_ns,
			  uint32_t budget);
/* The same, showing each entry to fn before it goes. */
uint32_t sl_bucket_sweep(struct sl_bucket_table *t, uint64_t now_ns,
			 uint32_t budget,
			 void (*fn)(void *arg, const struct sl_bucket_key *k,
				    void *value),
			 void *arg);

/*
 * Every bucket of src that is not yet full again at now, put in dst (a
 * table of the same kind, any capacity) with its state and the time it
 * is full: a table resized keeps what it knew. Where dst is too small,
 * its own eviction drops the ones closest to full. Returns how many were
 * carried.
 */
uint32_t sl_bucket_copy(struct sl_bucket_table *dst,
			struct sl_bucket_table *src, uint64_t now_ns);

const struct sl_bucket_stats *sl_bucket_stats(const struct sl_bucket_table *t);
uint64_t sl_bucket_table_bytes(const struct sl_bucket_table *t);

#endif /* SL_LIMIT_H */

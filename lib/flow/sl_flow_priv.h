/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_FLOW_PRIV_H
#define SL_FLOW_PRIV_H

#include "sl_flow.h"

#define BUCKET_SLOTS 8

/* One cache line: signatures first so a miss touches nothing else. */
struct bucket {
	uint32_t sig[BUCKET_SLOTS];
	uint32_t idx[BUCKET_SLOTS]; /* entry index + 1; 0 = empty */
} __attribute__((aligned(64)));

struct sl_flow_table {
	struct sl_flow_params p;
	uint64_t hkey[6]; /* the flow hash's key, from p.hash_seed */
	struct bucket *buckets;
	uint32_t bucket_mask;
	struct sl_flow *flows;
	/* when each entry was last seen, + 1; 0 when free. Kept apart from
	 * the entries so the eviction and expiry scans read 8 bytes an entry
	 * instead of an entry's cache lines */
	uint64_t *seen;
	uint32_t *free_flows; /* stack of free entry indexes */
	uint32_t n_free;
	uint32_t clock; /* eviction hand when the table is full */
	uint32_t sweep; /* expiry hand */
	uint8_t *heads; /* head_slots * max_head_bytes */
	uint32_t *free_heads;
	uint32_t n_free_heads;
	struct sl_flow_stats st;
	struct sl_flow *last;
};

struct sl_flow *sl_flow_find(struct sl_flow_table *t,
			     const struct sl_flow_key *k, uint64_t h);
struct sl_flow *sl_flow_insert(struct sl_flow_table *t,
			       const struct sl_flow_key *k, uint64_t h,
			       uint64_t now);
void sl_flow_remove(struct sl_flow_table *t, struct sl_flow *f);
void sl_flow_release_head(struct sl_flow_table *t, struct sl_flow *f);
uint64_t sl_flow_key_hash(const struct sl_flow_table *t,
			  const struct sl_flow_key *k);

static inline void
sl_flow_touch(struct sl_flow_table *t, struct sl_flow *f, uint64_t now)
{
	t->seen[f - t->flows] = now + 1;
}

#endif

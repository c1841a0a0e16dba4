/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_PARKQ_H
#define SLUICE_PARKQ_H

/*
 * The park queue: requests waiting for the coordinator's answer, oldest
 * first. A parked request keeps its mbuf (and up to SL_PARK_HELD later
 * segments of its connection) until its lease is answered or the store
 * timeout passes; nothing in the worker ever blocks. A plain data
 * structure: it decides nothing and sends nothing.
 */

#include <rte_mbuf.h>

#include "sl_flow.h"
#include "sl_ident.h"
#include "sl_limit.h"
#include "sl_net.h"

#define SL_PARK_MAX  512
#define SL_PARK_HELD 16 /* an initial congestion window and more */
#define SL_PARK_NIL  0xffff
#define SL_MAX_MATCH 32 /* limits checked per request */

/* One limit a request needs, kept by value: it outlives a reload. */
struct sl_need {
	struct sl_bucket_key key;
	uint64_t count, burst;
	uint32_t period_ms;
	uint32_t cost;
	uint32_t accuracy_ppm;
	uint16_t slot; /* counters and reply template, by rule name */
	uint8_t algo;
	uint8_t on_failure; /* enum sl_store_fail */
	uint8_t subs;       /* the rule's sub_buckets */
	uint8_t global;     /* the rule's global: its demand reported */
	uint64_t rid;       /* ... under the rule's id */
	uint64_t gcount;    /* ... against its global count (per period) */
	/* the rule's tier, by its name's hash (a reload may reorder the
	 * tiers while it waits); 0: every tier */
	uint64_t tier_h;
};

struct sl_parked {
	struct rte_mbuf *m;
	struct sl_pkt p;
	struct sl_flow_key fk;
	uint64_t deadline_ns;
	uint32_t rest_off, rest_len; /* body bytes after the head */
	uint32_t head_off;           /* where the head begins */
	uint8_t first;               /* nothing of the segment went before */
	uint8_t keep;                /* refused: the connection may be kept */
	uint16_t prev, next;         /* FIFO of parked requests */
	uint8_t in_use;
	uint8_t n_held;
	uint8_t n_need;
	/* the heads pipelined behind it in its segment (leased.c): its
	 * grant is sized for them, topped up once if it fell short */
	uint8_t behind;
	uint8_t topped;
	struct rte_mbuf *held[SL_PARK_HELD];
	struct sl_identity id; /* for the throttled-identities sketch */
	int16_t tier;          /* for the per-tier counters */
	/* its key's tier is being asked (tiers.c, under tier_k): the needs
	 * are every tier's, those of other tiers dropped once it is known */
	uint8_t tier_wait;
	struct sl_bucket_key tier_k;
	struct sl_need need[];
};

struct sl_parkq {
	void *mem;
	uint16_t free[SL_PARK_MAX];
	uint16_t n_free;
	uint16_t head, tail;
	uint8_t timeouts_due; /* the oldest entry's deadline has passed */
};

/* Where the request's head sits in its segment, for its mbuf. */
struct sl_park_place {
	uint32_t rest_off; /* the bytes after its head */
	uint32_t head_off;
	uint8_t first; /* nothing of the segment went before it */
	uint8_t keep;  /* refused, it may keep the connection (keepable) */
};

int sl_parkq_init(struct sl_parkq *q, unsigned int socket);
void sl_parkq_free(struct sl_parkq *q);
struct sl_parked *sl_parkq_entry(const struct sl_parkq *q, uint16_t i);

static inline int
sl_parkq_full(const struct sl_parkq *q)
{
	return q->n_free == 0;
}

static inline int
sl_parkq_empty(const struct sl_parkq *q)
{
	return q->n_free == SL_PARK_MAX;
}

/* Queues a request for its needs (copied); returns its entry's index. */
uint16_t sl_parkq_add(struct sl_parkq *q, const struct sl_need *ns, uint32_t n,
		      const struct sl_identity *id, int16_t tier,
		      uint64_t deadline_ns);

/* The mbuf of entry i, once the flow said PARKED. */
void sl_parkq_attach(struct sl_parkq *q, uint16_t i, struct rte_mbuf *m,
		     const struct sl_pkt *p, const struct sl_flow_key *k,
		     const struct sl_park_place *at);

/* Keeps a later segment of entry i's connection; -1: full (drop it). */
int sl_parkq_hold(struct sl_parkq *q, uint16_t i, struct rte_mbuf *m);

void sl_parkq_remove(struct sl_parkq *q, uint16_t i);

#endif /* SLUICE_PARKQ_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_PARK_H
#define SLUICE_PARK_H

#include <rte_mbuf.h>

/*
 * Worker side of the leases: spending them, asking the coordinator for
 * more, and parking the requests that must wait for its answer. A parked
 * request keeps its mbuf (and up to SL_PARK_HELD later segments of its
 * connection) until the answer comes or the store timeout passes; nothing
 * in the worker ever blocks.
 */

#include "sl_flow.h"
#include "sl_ident.h"
#include "sl_lease.h"
#include "sl_limit.h"
#include "sl_net.h"

#define SL_PARK_MAX  512
#define SL_PARK_HELD 16 /* an initial congestion window and more */

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
};

struct sl_parked {
	struct rte_mbuf *m;
	struct sl_pkt p;
	struct sl_flow_key fk;
	uint64_t deadline_ns;
	uint32_t rest_off, rest_len; /* body bytes after the head */
	uint32_t head_off;           /* where the head begins */
	uint8_t first;               /* nothing of the segment went before */
	uint16_t prev, next;         /* FIFO of parked requests */
	uint8_t in_use;
	uint8_t n_held;
	uint8_t n_need;
	struct rte_mbuf *held[SL_PARK_HELD];
	struct sl_identity id; /* for the throttled-identities sketch */
	int16_t tier;          /* for the per-tier counters */
	struct sl_need need[];
};

struct sl_worker;

int sl_park_init(struct sl_worker *w);
void sl_park_free(struct sl_worker *w);

/*
 * Decides a request against its leased limits: returns CONTINUE (allowed),
 * STOP (refused: w->pending set) or PARK (w->park_new names the entry).
 */
enum sl_req_action sl_park_decide(struct sl_worker *w, struct sl_need *needs,
				  uint32_t n, int parkable,
				  const struct sl_identity *id);

/* The mbuf of the request just parked (after the flow said PARKED). */
void sl_park_attach(struct sl_worker *w, struct rte_mbuf *m,
		    const struct sl_pkt *p, const struct sl_flow_key *k,
		    struct sl_flow *f, uint32_t rest_off);

/* A later segment of a parked connection: kept, or dropped when full. */
void sl_park_hold(struct sl_worker *w, struct sl_flow *f, struct rte_mbuf *m);

/* Each loop: answers from the coordinator, timeouts, expired leases;
 * returns how many answers came. */
unsigned int sl_park_poll(struct sl_worker *w);

#endif /* SLUICE_PARK_H */

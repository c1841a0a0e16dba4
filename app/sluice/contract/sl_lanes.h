/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_LANES_H
#define SL_LANES_H

/*
 * The lanes between the workers and the node's authority (authority/):
 * each worker asks and is answered through its own pair of
 * single-producer/single-consumer rings, in the messages below, and
 * reads the store's refusals from one table the authority writes. That
 * is all a worker knows of the authority.
 */

#include <stdint.h>
#include <string.h>

#include <rte_ring.h>

#include "sl_lease.h"

enum sl_coord_type {
	SL_CO_ASK = 1,   /* reserve units for a lease */
	SL_CO_GIVE_BACK, /* unspent units of an expired lease */
	SL_CO_ANSWER,    /* units granted (0: refused) */
	SL_CO_TIER,      /* which tier is this key in? */
	/* the rest of a key longer than one message holds, in the
	 * messages right behind its SL_CO_TIER (enqueued with it) */
	SL_CO_TIER_MORE,
	SL_CO_TIER_ANSWER, /* its name, if the keys hash has it */
	SL_CO_TAKEN,       /* units a worker admitted without a grant */
	/* a global rule's demand (ask.seen, ask.rid) between asks: a key
	 * at its limit asks once per lease, seconds apart, and the
	 * aggregator needs it every round */
	SL_CO_DEMAND,
};

/* One ring element: 128 bytes, two cache lines (a key fits in it). */
enum sl_tier_found { SL_TIER_UNNAMED, SL_TIER_NAMED, SL_TIER_UNSAID };

#define SL_TIER_TEXT 102u /* bytes of a key (or tier name) per message */
/* The longest key asked of the keys hash (tier.len): three messages. A
 * longer one is in the default tier unless the static map names it. */
#define SL_TIER_KEY_MAX  255u
#define SL_TIER_MSGS_MAX ((SL_TIER_KEY_MAX + SL_TIER_TEXT - 1) / SL_TIER_TEXT)

/* Messages an ask for the tier of a key of len bytes takes. */
static inline uint32_t
sl_tier_msgs(uint32_t len)
{
	return len <= SL_TIER_TEXT ? 1
				   : (len + SL_TIER_TEXT - 1) / SL_TIER_TEXT;
}

struct sl_coord_msg {
	uint64_t k1, k2; /* the bucket: rule name and identity */
	uint8_t type;
	uint8_t algo;
	uint8_t worker;
	/* the key's state over this many store keys (sub_buckets; 0, 1:
	 * one) */
	uint8_t subs;
	uint32_t period_ms;
	union {
		struct {
			uint64_t count, burst;
			uint32_t want, need;
			uint8_t on_failure; /* enum sl_store_fail */
			/* demand above the limit: units not there yet may be
			 * granted as a reservation, good from when they
			 * would be (ans.retry_ns), within this (ms) */
			uint16_t ahead_ms;
			/* a global rule's bucket: its demand reported to the
			 * region (usage.c) under the rule's id, rid */
			uint8_t global;
			uint32_t div_open;   /* fail_open divides by this */
			uint32_t div_strict; /* local_strict by this */
			/* a charge: the units were admitted over this span
			 * just past (ms; 0: at once) */
			uint32_t span_ms;
			/* a global rule's: units that arrived at the lease
			 * since its last ask, the demand reported (usage.c) */
			uint32_t seen;
			uint64_t rid;
			/* ... and the global limit it is weighed against:
			 * count per period_ms, unsliced */
			uint64_t gcount;
		} ask;
		struct {
			uint64_t count, burst, units;
			uint8_t on_failure; /* enum sl_store_fail */
			uint64_t since_ns;  /* owed: the first of them */
		} back;
		struct {
			/* retry_ns with units: a reservation, its last
			 * unit good then (sl_lease_granted) */
			uint32_t granted;
			uint8_t degraded; /* decided by the node, not the store
					   */
			uint8_t pad[3];
			uint64_t expires_ns, retry_ns, reset_ns, remaining;
		} ans;
		struct {
			uint8_t len; /* of the key, or of the tier's name */
			/* answer: SL_TIER_NAMED (the hash names the key),
			 * SL_TIER_UNNAMED, or SL_TIER_UNSAID (the store
			 * could not say: out, or an error) */
			uint8_t found;
			/* the key (its first SL_TIER_TEXT bytes, the rest
			 * in SL_CO_TIER_MORE), or the tier's name */
			char text[SL_TIER_TEXT];
		} tier;
	};
};

/* Units of ask q's (rule, identity), with its numbers, as a charge. */
static inline void
sl_msg_taken(struct sl_coord_msg *b, const struct sl_coord_msg *q,
	     uint64_t units)
{
	memset(b, 0, sizeof(*b));
	b->type = SL_CO_TAKEN;
	b->k1 = q->k1;
	b->k2 = q->k2;
	b->algo = q->algo;
	b->period_ms = q->period_ms;
	b->worker = q->worker;
	b->subs = q->subs;
	b->back.count = q->ask.count;
	b->back.burst = q->ask.burst;
	b->back.on_failure = q->ask.on_failure;
	b->back.units = units;
}

/* What a worker holds of the authority: set up before any worker runs,
 * never changed after (the rings' contents and the table's slots are). */
struct sl_lanes {
	struct rte_ring *ask[RTE_MAX_LCORE]; /* worker -> authority */
	struct rte_ring *ans[RTE_MAX_LCORE]; /* authority -> worker */
	/* the store's refusals, written by the authority */
	const struct sl_refusals *refused;
	uint8_t store; /* a store stands behind the authority */
};

#endif /* SL_LANES_H */

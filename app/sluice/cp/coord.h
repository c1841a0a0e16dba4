/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_COORD_H
#define SLUICE_COORD_H

/*
 * The coordinator: the node's authority for every leased limit, run on
 * the main lcore. Each worker talks to it through its own pair of
 * single-producer/single-consumer rings; nothing is shared otherwise.
 * With no store configured it is the authority itself (exact across the
 * node's workers); a store, later, stands behind it with the same
 * messages.
 */

#include <stdint.h>
#include <string.h>

#include <rte_ring.h>

#include "sl_lease.h"
#include "sl_limit.h"
#include "usage.h"

enum sl_coord_type {
	SL_CO_ASK = 1,     /* reserve units for a lease */
	SL_CO_GIVE_BACK,   /* unspent units of an expired lease */
	SL_CO_ANSWER,      /* units granted (0: refused) */
	SL_CO_TIER,        /* which tier is this key in? */
	SL_CO_TIER_ANSWER, /* its name, if the keys hash has it */
	SL_CO_TAKEN,       /* units a worker admitted without a grant */
	/* a global rule's demand (ask.seen, ask.rid) between asks: a key
	 * at its limit asks once per lease, seconds apart, and the
	 * aggregator needs it every round */
	SL_CO_DEMAND,
};

/* One ring element: 128 bytes, two cache lines (a key fits in it). */
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
			uint8_t len;    /* of the key, or of the tier's name */
			uint8_t found;  /* answer: the hash names the key */
			char text[102]; /* the key, or the tier's name */
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

struct sl_coord_stats {
	uint64_t asks, granted_units, refusals, given_back, answers_dropped;
	uint64_t given_back_lost; /* never refunded: the owed table full */
	uint64_t reservations;    /* grants good from later on */
	uint64_t degraded; /* asks the node decided in the store's place */
	/* ... of them, after one late reply (the breaker closed) */
	uint64_t degraded_late;
	uint64_t late_waited;     /* late, the share spent: left to the reply */
	uint64_t taken_units;     /* admitted by workers alone, then charged */
	uint64_t taken_uncharged; /* ... the store out: not charged to it */
};

struct sl_store;

struct sl_coord {
	struct sl_store *store; /* NULL: the node is its own authority */
	char keys_hash[64];     /* Redis hash of key -> tier */
	struct rte_ring *ask[RTE_MAX_LCORE];
	struct rte_ring *ans[RTE_MAX_LCORE];
	uint32_t n;
	struct sl_bucket_table *state;
	uint64_t lease_ns; /* a lease lasts at most this long */
	/* the node's share of a limit: / expected appliances (fail_open),
	 * / every holder (local_strict) */
	uint32_t div_open, div_strict;
	struct sl_coord_stats st;
	/* the store's refusals, written here, read by the workers */
	struct sl_refusals refused;
	/* global rules' demand, reported every second (usage.c) */
	struct sl_usage usage;
	char node_name[96]; /* this node in the reports: host:pid */
};

struct sl_app;

struct sl_coord *sl_coord_create(uint32_t workers, uint32_t capacity);
/* Frees it, its store and its rings (the workers stopped; /sluice/store
 * answers an error from then on). */
void sl_coord_free(struct sl_coord *c);
struct sl_worker;
/* Registers /sluice/store over the coordinator and the workers. */
int sl_coord_telemetry(const struct sl_coord *c, const struct sl_worker *ws,
		       unsigned int n);

/* A Redis store behind the coordinator (c->store); -1: no memory. */
struct sl_store_conf;
int sl_coord_attach_store(struct sl_coord *c, const struct sl_store_conf *conf);

/* Serves what the workers asked; returns how many messages. */
uint32_t sl_coord_poll(struct sl_coord *c, uint64_t now_ns);

#endif /* SLUICE_COORD_H */

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

#include <rte_ring.h>

#include "sl_limit.h"

enum sl_coord_type {
	SL_CO_ASK = 1,     /* reserve units for a lease */
	SL_CO_GIVE_BACK,   /* unspent units of an expired lease */
	SL_CO_ANSWER,      /* units granted (0: refused) */
	SL_CO_TIER,        /* which tier is this key in? */
	SL_CO_TIER_ANSWER, /* its name, if the keys hash has it */
};

/* One ring element: 128 bytes, two cache lines (a key fits in it). */
struct sl_coord_msg {
	uint64_t k1, k2; /* the bucket: rule name and identity */
	uint8_t type;
	uint8_t algo;
	uint16_t worker;
	uint32_t period_ms;
	union {
		struct {
			uint64_t count, burst;
			uint32_t want, need;
			uint8_t on_failure; /* enum sl_store_fail */
			uint8_t pad[3];
			uint32_t div_open;   /* fail_open divides by this */
			uint32_t div_strict; /* local_strict by this */
		} ask;
		struct {
			uint64_t count, burst, units;
		} back;
		struct {
			uint32_t granted;
			uint32_t pad;
			uint64_t expires_ns, retry_ns, reset_ns, remaining;
		} ans;
		struct {
			uint8_t len;    /* of the key, or of the tier's name */
			uint8_t found;  /* answer: the hash names the key */
			char text[102]; /* the key, or the tier's name */
		} tier;
	};
};

struct sl_coord_stats {
	uint64_t asks, granted_units, refusals, given_back, answers_dropped;
	uint64_t degraded; /* answered by on_store_failure: the store was out */
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
	struct sl_coord_stats st;
};

struct sl_app;

struct sl_coord *sl_coord_create(uint32_t workers, uint32_t capacity);
struct sl_worker;
/* Registers /sluice/store over the coordinator and the workers. */
int sl_coord_telemetry(const struct sl_coord *c, const struct sl_worker *ws,
		       unsigned int n);

/* Answers an ask by its rule's on_store_failure (the store failed it). */
void sl_coord_answer_degraded(struct sl_coord *c, const struct sl_coord_msg *q,
			      uint64_t now_ns);

/* Serves what the workers asked; returns how many messages. */
uint32_t sl_coord_poll(struct sl_coord *c, uint64_t now_ns);

#endif /* SLUICE_COORD_H */

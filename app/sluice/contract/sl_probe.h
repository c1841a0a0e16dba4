/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_PROBE_H
#define SL_PROBE_H

/*
 * A look at one limit's state where it lives, for /sluice/why: the
 * control path cannot read a worker's or the authority's tables (they
 * change under it, entries move), so it asks their owner. One mailbox
 * per owner; the asker writes the key and bumps asked, the owner copies
 * what it holds of that key on its next loop and sets served to asked.
 * The owner pays one load a loop; nothing waits on the data path. One
 * asker at a time (telemetry handlers run one after another).
 */

#include <stdint.h>

#include "sl_lease.h"
#include "sl_limit.h"

struct sl_probe_state {
	struct sl_limit_state s;
	uint32_t log[SL_LOG_MAX]; /* a sliding_log's arrivals */
};

struct sl_probe {
	uint32_t asked;  /* the asker's, released after key */
	uint32_t served; /* the owner's, released after the answer */
	/* the question: the limit's key and numbers */
	struct sl_bucket_key key;
	uint64_t count, burst;
	uint32_t period_ms;
	uint8_t log;        /* a sliding_log rule: its own table on a worker */
	uint8_t on_failure; /* the rule's: which share the node's ledger is */
	/* the answer, as of now_ns on the owner's clock */
	uint8_t has_state;  /* a worker's own bucket, or the node's */
	uint8_t has_lease;  /* a worker's lease */
	uint8_t has_ledger; /* the node's ledger of a store's limit */
	uint8_t refused;    /* the store refused the key lately */
	uint64_t now_ns;
	struct sl_probe_state state;
	struct sl_lease lease;
	struct sl_ledger ledger;
	struct sl_share share; /* the node's part of the limit */
} __attribute__((aligned(64)));

/* The owner: whether a question waits (one load, every loop). */
static inline int
sl_probe_asked(const struct sl_probe *p)
{
	return __atomic_load_n(&p->asked, __ATOMIC_ACQUIRE) != p->served;
}

/* The owner: the answer is written. */
static inline void
sl_probe_answered(struct sl_probe *p)
{
	__atomic_store_n(&p->served, p->asked, __ATOMIC_RELEASE);
}

/* The owner: a state of its table into the answer (NULL: none); log:
 * the table's entries hold a sliding log's arrivals too. */
static inline void
sl_probe_copy_state(struct sl_probe *p, const struct sl_limit_state *s, int log)
{
	p->has_state = s != NULL;
	if (s != NULL)
		__builtin_memcpy(&p->state, s,
				 sizeof(struct sl_limit_state) +
					 (log ? sizeof(p->state.log) : 0));
}

#endif /* SL_PROBE_H */

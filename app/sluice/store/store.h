/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

/*
 * The Redis store behind the coordinator: a single node, or a Redis
 * Cluster (slot map from CLUSTER SLOTS, CRC16 routing of the hash tag,
 * MOVED and ASK followed). One hiredis asynchronous connection per node,
 * driven from the coordinator's own loop (no thread, no
 * blocking call), the two scripts loaded once (EVALSHA, EVAL again on
 * NOSCRIPT), asks pipelined as they come. A circuit breaker opens after
 * repeated failures or timeouts; while it is open the coordinator decides
 * by each rule's on_store_failure, and a probe every probe_interval_ms
 * tries the store again.
 */

#include <stdint.h>

#include <hiredis/async.h>

#include "redis.h"
#include "sl_lanes.h"
#include "sl_redis.h"
#include "sl_rules.h"

enum sl_breaker { SL_BR_CLOSED = 0, SL_BR_OPEN, SL_BR_HALF_OPEN };

/* How an ask failed. */
enum sl_store_failure {
	SL_SF_OUT = 0, /* the store is out, or refuses the appliance itself
			* (credentials, permissions): an outage */
	SL_SF_LATE,    /* timed out while the breaker is closed: one slow
			* reply, not an outage; the reply may still come */
	SL_SF_ERROR,   /* an error reply: not an outage, nothing to wait for */
};

struct sl_store;

/*
 * Where the store's answers go (the coordinator): called from
 * sl_store_poll, with the time of that poll. The store knows nothing of
 * its caller beyond these.
 */
struct sl_store_sink {
	/* ask q answered (a->ans: granted units, 0 refused, and the
	 * store's numbers; expires_ns is the caller's), or a tier found */
	void (*answer)(void *ctx, const struct sl_coord_msg *q,
		       struct sl_coord_msg *a, uint64_t now_ns);
	/* ask q failed (how: enum sl_store_failure). Returns 1 when the
	 * caller answered it in the store's place (*covered: the units it
	 * granted, reconciled with the store's reply if that still comes),
	 * or 0 when it waits for the reply (SL_SF_LATE only): it is then
	 * answered as if in time */
	int (*failed)(void *ctx, const struct sl_coord_msg *q, int how,
		      uint64_t now_ns, uint64_t *covered);
	/* the store's reply to ask q came after the caller answered it
	 * (a: the store's answer): what it says of the key */
	void (*late)(void *ctx, const struct sl_coord_msg *q,
		     const struct sl_coord_msg *a, uint64_t now_ns);
	void *ctx;
};

struct sl_store_conf {
	/* a single node (the first), or a cluster's seeds: the slot map is
	 * read from any node known or, none up, the next seed */
	const struct sl_endpoint *seeds;
	uint32_t n_seeds;
	int cluster;
	uint32_t timeout_ms, probe_ms;
	uint32_t refresh_ms; /* cluster: the slot map read again this often */
	struct sl_redis_auth auth; /* every node's, copied */
};

struct sl_store *sl_store_create(const struct sl_store_conf *conf,
				 const struct sl_store_sink *sink);

/* One node as /sluice/store lists it. */
struct sl_store_node {
	char name[72]; /* host:port */
	uint8_t up;
	uint32_t slots; /* cluster: slots it serves */
	uint64_t replies, errors, drops;
	uint8_t state; /* its breaker's: enum sl_breaker */
};
/* Node i (0 .. stats' nodes - 1); -1 past the last. */
int sl_store_node_info(const struct sl_store *s, uint32_t i,
		       struct sl_store_node *out);

/* Sends an ask; its answer is pushed to the worker's ring later. -1:
 * not sent (its node's breaker open, or its half-open probe out; no
 * connection; too many in flight): the store is out for it. */
int sl_store_ask(struct sl_store *s, const struct sl_coord_msg *q,
		 uint64_t now_ns);
/* Refunds units given back (q: SL_CO_GIVE_BACK). The store out: kept,
 * and refunded once it answers again (it counts them as spent until
 * told). -1 only when they cannot even be kept (fewer admissions, never
 * more). */
int sl_store_give_back(struct sl_store *s, const struct sl_coord_msg *q,
		       uint64_t now_ns);
/* Charges units already admitted (q: SL_CO_TAKEN); no answer goes out.
 * The store out (or its queue full): owed, and charged once it answers
 * again. -1 only when they cannot even be owed (counted). */
int sl_store_charge(struct sl_store *s, const struct sl_coord_msg *q,
		    uint64_t now_ns);
/* One command about key (argv[0] the command), sent to the node that
 * serves key, its reply unread: reports nothing waits for. -1: that
 * node is out (not connected, its breaker not closed). */
int sl_store_send(struct sl_store *s, const char *key, int argc,
		  const char **argv);
/* The same with its reply to fn(ac, reply, priv) (reply NULL: the
 * connection went before it came). */
int sl_store_cmd(struct sl_store *s, const char *key, int argc,
		 const char **argv, redisCallbackFn *fn, void *priv);
/* HGET of the key in the keys hash; the answer goes to the worker. */
int sl_store_tier(struct sl_store *s, const char *hash,
		  const struct sl_coord_msg *q, const char *key, uint32_t len);

/* Drives the connection: reads, writes, timeouts, probes. */
void sl_store_poll(struct sl_store *s, uint64_t now_ns);
/* Closes its connections (their pending asks answered as failed) and
 * frees it. */
void sl_store_free(struct sl_store *s);
/* What the node owes the store kept in o (a table in the node's state
 * file, sl_state.h): as a restart found it, charged once the store
 * answers; what was owed in memory so far moves into it. */
struct sl_owed;
void sl_store_keep_owed(struct sl_store *s, struct sl_owed *o);

/* For /sluice/store. */
struct sl_store_stats {
	uint8_t state;
	uint8_t connected;
	uint64_t calls, replies, errors, timeouts, opened, rtt_ns_last;
	uint64_t redirects;   /* cluster MOVED / ASK followed */
	uint64_t sub_retries; /* asks refused by one sub-bucket, sent on */
	uint64_t refreshes, refresh_failed; /* cluster: slot map read again */
	uint32_t nodes;
	uint32_t functions; /* nodes called through FCALL (Redis 7) */
	uint64_t rtt_ns_sum;
	/* replies to asks already decided by timeout, their units, and how
	 * they were squared: given back, or the node's extra charged */
	uint64_t late_answers, late_units, late_given_back, late_charged;
	/* units admitted in a late ask's place that its grant counted */
	uint64_t late_covered;
	uint64_t late_unmatched; /* slot reused before the reply came */
	uint64_t late_delivered; /* late, none decided instead: delivered */
	uint64_t charges, charged_units; /* units taken without a grant */
	/* units admitted while the store could not count them, charged
	 * once it answers again; keys owed now; dropped (table full) */
	uint64_t owed_units, owed_charged, owed_dropped;
	/* units given back while the store was out, refunded once it
	 * answers again (dropped with the owed ones when the table is full) */
	uint64_t refunds_owed, refunds_settled;
	uint32_t owed_keys;
	/* the keys hash read (HGET), and its error replies: a wrong type
	 * or no permission leaves every key outside the static map in the
	 * default tier */
	uint64_t tier_asks, tier_errors;
};
const struct sl_store_stats *sl_store_stats(const struct sl_store *s);

#endif /* SLUICE_STORE_H */

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

#include "coord.h"

enum sl_breaker { SL_BR_CLOSED = 0, SL_BR_OPEN, SL_BR_HALF_OPEN };

struct sl_store;

/* A single node, or (cluster) the seed the slot map is read from. */
struct sl_store *sl_store_create(const char *host, uint16_t port, int cluster,
				 uint32_t timeout_ms, uint32_t probe_ms);

/* Whether asks may go to the store now (breaker closed, or one probe). */
int sl_store_usable(struct sl_store *s, uint64_t now_ns);

/* Sends an ask; its answer is pushed to the worker's ring later. */
int sl_store_ask(struct sl_store *s, struct sl_coord *c,
		 const struct sl_coord_msg *q, uint64_t now_ns);
int sl_store_give_back(struct sl_store *s, const struct sl_coord_msg *q);
/* HGET of the key in the keys hash; the answer goes to the worker. */
int sl_store_tier(struct sl_store *s, struct sl_coord *c,
		  const struct sl_coord_msg *q);

/* Drives the connection: reads, writes, timeouts, probes. */
void sl_store_poll(struct sl_store *s, struct sl_coord *c, uint64_t now_ns);

/* For /sluice/store. */
struct sl_store_stats {
	uint8_t state;
	uint8_t connected;
	uint64_t calls, replies, errors, timeouts, opened, rtt_ns_last;
	uint64_t redirects; /* cluster MOVED / ASK followed */
	uint32_t nodes;
	uint32_t functions; /* nodes called through FCALL (Redis 7) */
	uint64_t rtt_ns_sum;
};
const struct sl_store_stats *sl_store_stats(const struct sl_store *s);

/* A Redis Cluster redirection: "MOVED slot host:port" or "ASK ...". */
struct sl_redirect {
	int moved; /* MOVED (the slot lives there now), else ASK (once) */
	unsigned int slot;
	uint16_t port;
	char host[256];
};
/* Whether err is a redirection; *r filled in when it is. */
int sl_redis_redirect(const char *err, struct sl_redirect *r);

#endif /* SLUICE_STORE_H */

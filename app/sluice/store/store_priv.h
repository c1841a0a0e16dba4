/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_STORE_PRIV_H
#define SLUICE_STORE_PRIV_H

/*
 * The store's insides, shared by its two halves: store.c (asks, replies,
 * the breaker, what is owed) and nodes.c (the connections, the scripts
 * they load, and the cluster's slot map as it changes).
 */

#include <stdint.h>

#include "sl_rules.h"
#include "owed.h"
#include "redis.h"
#include "store.h"

#define INFLIGHT        8192
#define FAILS_OPEN      3
#define SILENT_TIMEOUTS 4 /* no reply for this many timeouts: it is out */
#define MAX_NODES       16
#define SLOTS           SL_REDIS_SLOTS

struct inflight {
	struct sl_coord_msg q;
	uint64_t sent_ns;
	uint64_t covered; /* timed out: units the caller granted instead */
	uint32_t gen;
	uint8_t used;
	uint8_t timed_out; /* its reply, if it comes, is reconciled */
	uint8_t waiting;   /* ... or, none given in its place, delivered */
	uint8_t charge;    /* units already admitted: count, answer no one */
	uint8_t eval;      /* sent as EVAL already: no second try */
	uint8_t hops;      /* MOVED/ASK redirections followed */
	uint8_t node;
	uint8_t judged; /* the node whose breaker its outcome counts to */
	uint8_t probe;  /* sent as that node's half-open probe */
	uint8_t sub;    /* the sub-bucket it is sent to (q.subs > 1) */
	uint8_t tried;  /* sub-buckets that refused it so far */
	/* the soonest of their retry times (ms): when the first of them
	 * will have units again */
	uint64_t soonest_ms;
};

/*
 * A node's circuit breaker. Per node: in a cluster, one master out (dead,
 * paused, partitioned) is a third of the keyspace out, not the store —
 * the others keep answering, and its keys are decided by their rules'
 * on_store_failure (fail_closed refuses) rather than as one slow reply
 * after another, which a store-wide breaker that the other masters'
 * replies keep closed made them.
 */
struct breaker {
	uint8_t state; /* enum sl_breaker */
	uint8_t probe_out;
	uint32_t fails;
	uint32_t probes_failed; /* in a row, since the last reply */
	uint64_t last_reply_ns; /* any reply, in time or late: it is up */
	uint64_t next_probe_ns;
};

/* One Redis node (the only one, or a cluster master) and its connection. */
struct node {
	struct breaker br;
	struct sl_redis_conn conn;
	struct sl_store *s;
	char host[64];
	uint16_t port;
	char sha_reserve[48], sha_refund[48];
	uint8_t fn;     /* the function library is loaded: FCALL */
	uint8_t was_up; /* connected at the last poll */
	uint64_t retry_ns, backoff_ns; /* down: connect again then */
	uint64_t replies, errors, drops;
	uint32_t slots; /* cluster: slots it serves in the map */
	/* the connection its last reply came on (compared, never used) */
	const void *answered;
};

struct sl_store {
	struct node nodes[MAX_NODES];
	uint32_t n_nodes;
	uint8_t cluster;
	uint8_t slot_node[SLOTS]; /* cluster: which node serves a slot */
	uint64_t timeout_ns, probe_ns;
	struct inflight fl[INFLIGHT];
	uint32_t fifo[INFLIGHT]; /* in-flight indexes in send order */
	uint32_t head, tail, n;
	uint32_t gen;
	uint64_t now; /* of this poll, for the replies it reads */
	struct sl_store_sink sink;
	struct sl_store_stats st;
	/* admitted, not counted by the store yet: owed_own, or a table in
	 * the node's state file (sl_store_keep_owed) */
	struct sl_owed *owed;
	struct sl_owed owed_own;
	/* cluster: where the slot map is read from when it changes */
	struct sl_endpoint seeds[SL_MAX_ENDPOINTS];
	uint32_t n_seeds, next_seed;
	uint64_t refresh_ns, next_refresh_ns, last_refresh_ns;
	uint8_t refreshing, want_refresh;
	uint32_t refresh_gen, next_node;
	uint32_t moved;    /* MOVED replies since the last refresh */
	uint32_t next_sub; /* the next ask's sub-bucket, mod the rule's */
	struct sl_redis_auth auth;
	uint64_t err_logged_ns; /* the last error reply logged (said_error) */
};

/* ---- nodes.c ---- */

/* The scripts' function names (Redis 7) for a node that loaded them. */
extern char sl_fn_reserve[40], sl_fn_refund[40];

/* Loads the scripts again (a server that lost them: FUNCTION FLUSH, a
 * restart without persistence). */
void sl_node_load_functions(struct node *n);
/* The node at host:port, added (and connected) if new; -1: no room. */
int sl_node_of(struct sl_store *s, const char *host, uint16_t port);
/* The cluster slot of a key (its hash tag's). */
uint16_t sl_slot_of(const char *key);
/* A CLUSTER SLOTS reply applied to the map (host "" is the node asked, at
 * from); nodes new to it are added. Returns the slots mapped; a reply
 * that maps none changes nothing. */
uint32_t sl_nodes_apply_slots(struct sl_store *s, const redisReply *r,
			      const char *from);
/* The slot map from a seed, blocking (at start, before any worker). */
int sl_nodes_load_slots(struct sl_store *s, const char *host, uint16_t port);
/* Whether any node is connected. */
int sl_nodes_any_connected(const struct sl_store *s);
/* Nodes down connected again now, whatever their backoff (the breaker
 * going half-open: its probe needs somewhere to go); with up_too, those
 * up as well (probes unanswered over them time after time: dead without
 * a word, a partition). Nodes own their connections: here and in
 * sl_nodes_poll only. */
void sl_nodes_reconnect(struct sl_store *s, int up_too);
/* The same for one node. */
void sl_node_reconnect(struct node *n, int up_too);
/* Nodes down connected again with backoff; the slot map read again
 * when asked for (sl_nodes_refresh_soon) or every refresh_ns. */
void sl_nodes_poll(struct sl_store *s, uint64_t now_ns);
/* The slot map may be stale (a node went down, CLUSTERDOWN, MOVED in
 * numbers, timeouts): read it again soon. */
void sl_nodes_refresh_soon(struct sl_store *s);

/* ---- breaker.c: when a node is out ---- */
uint32_t sl_node_index(const struct sl_store *s, const struct node *nd);
void sl_breaker_open(struct sl_store *s, struct node *nd, uint64_t now_ns);
/* A reply came from nd, in time or late: it answers again. */
void sl_breaker_close(struct node *nd);
/* Whether a new ask may go to nd now (closed, or its half-open probe). */
int sl_node_usable(struct sl_store *s, struct node *nd, uint64_t now_ns);
/* The store's state for telemetry: its worst serving node's. */
void sl_store_state(struct sl_store *s);
/* Asks nobody answered in time: decided in the store's place, counted;
 * then each node judged. */
void sl_store_expire(struct sl_store *s, uint64_t now_ns);
/* Units covered for an ask whose reply can no longer come: owed. */
void sl_store_owe_covered(struct sl_store *s, struct inflight *f);

#endif /* SLUICE_STORE_PRIV_H */

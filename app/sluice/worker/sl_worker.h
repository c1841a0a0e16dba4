/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_WORKER_H
#define SL_WORKER_H

/*
 * The data path's face to main and sluice-bench: a worker's state and
 * its entry points. What the worker uses inside is in dp.h. The control
 * path never includes this: it reads a worker through sl_view.h.
 */

#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "sl_app.h"
#include "sl_flow.h"
#include "sl_limit.h"
#include "sl_net.h"
#include "sl_probe.h"
#include "sl_telemetry.h"

#include "parkq.h"

struct sl_txbuf {
	uint16_t n;
	struct rte_mbuf *m[SL_BURST];
};

/* A kept connection's shifts (xlate.c), beside its flow entry. */
struct sl_xlate {
	uint32_t c_del; /* client bytes the server never got: heads answered */
	uint32_t c_at;  /* client sequence of the last one */
	uint32_t s_ins; /* bytes the client got that the server never sent */
	uint32_t s_at;  /* the last reply's sequence, in the client's numbers */
	uint32_t c_ack; /* the client's highest ack, in its numbers */
	uint16_t c_len; /* the last head's length */
	uint16_t s_len; /* the last reply's length */
	/* the last reply, kept (a reference) until the client acknowledges
	 * it, to be sent again if the client shows it lost; NULL: not kept */
	struct rte_mbuf *reply;
	/* response.headers_on_allow: the budget of the last request
	 * allowed, for its response (b_ord: which of the connection's) */
	uint32_t b_limit, b_window_s, b_remaining, b_reset_s;
	uint16_t b_ord;
	uint16_t b_slot;   /* its strictest limit's rule slot; NONE: none */
	uint8_t b_claimed; /* that rule is keyed on a claimed identity */
	uint16_t txt_off;  /* where in reply the budget's bytes are */
	/* the last thing put in is a response's budget (fields inside the
	 * server's stream), not a reply: reply is the frame carrying them */
	uint8_t hdr;
};

/*
 * Requests whose cost the response says (a rule's cost_from_response),
 * in flight on one connection at one limit: its bucket as the decision
 * saw it, until their response heads pass (due bit i: response ord + i
 * of the connection; the flow's xflags say whether any is due).
 */
struct sl_cost_rec {
	struct sl_need need; /* need.cost: the cost it was admitted at */
	/* the head of response cut_ord, cut across segments: read so far */
	struct sl_resp_field cut;
	uint32_t due;
	uint16_t ord;
	uint16_t cut_ord;
	uint16_t rule;  /* the rule's index then, for its field name */
	uint8_t leased; /* spent from a lease (else this worker's bucket) */
	uint8_t cutting;
};
#define SL_XF_COST 0x01 /* a cost record waits for its response */

/* The requests in flight on one connection that the same rules matched,
 * for the backend's health per rule (health.c): due bit i is response
 * ord + i of the connection. 20 bytes per flow entry. */
#define SL_HEALTH_RULES 4
struct sl_health_rec {
	uint32_t due;
	uint32_t t_us; /* when response ord's request went (wraps) */
	uint16_t ord;
	uint16_t slot[SL_HEALTH_RULES]; /* the rules' counter slots */
	uint8_t n;
	uint8_t timed; /* response ord's request went with none before it */
};
#define SL_XF_HEALTH 0x02 /* a health record waits for its response */

/* Holds let go in one burst and freed at the next's end, at most. */
#define SL_LET_GO_MAX 64

/* Everything one worker writes; nothing here is shared. */
struct sl_worker {
	struct sl_counters ctr;
	struct sl_rule_ctr rules[SL_MAX_RULES];
	/* per tier, [0]: requests without an API key */
	struct sl_tier_ctr tiers_ctr[SL_MAX_TIERS + 1];
	const struct sl_app *app;
	struct sl_flow_table *flows;
	struct sl_xlate *xl; /* per flow entry; NULL: keep_alive off at start */
	uint32_t xl_held, xl_held_max; /* replies kept: a share of the mbufs */
	/* the client segment being read: its bytes, once decided and
	 * forwarded whole, are held (a reference) until the server
	 * acknowledges them, instead of digested; another share */
	struct rte_mbuf *hold_m;
	uint32_t rec_held, rec_held_max;
	/* holds let go in this burst, and in the one before (their headers
	 * asked for at its end): freed a burst later (sl_worker_let_go) */
	uint16_t n_let_go, n_going;
	struct rte_mbuf *let_go[SL_LET_GO_MAX];
	struct rte_mbuf *going[SL_LET_GO_MAX];
	/* benchmarks only: flow tables made without the stream normaliser,
	 * to price it inside the appliance */
	uint8_t no_normalise;
	/* per flow entry: costs the response settles; NULL when no rule
	 * took its cost from the response at start */
	struct sl_cost_rec *costs;
	/* the decision's, for its flow's entry once it is allowed */
	struct sl_cost_rec cost_next;
	uint8_t cost_next_set;
	struct sl_health_rec *health; /* per flow entry */
	struct sl_rule_health *hl;    /* per rule slot: SL_MAX_RULES */
	/* the slots of the rules that let the request being decided go */
	uint16_t hl_next[SL_HEALTH_RULES];
	uint8_t hl_n;
	struct sl_bucket_table *buckets;
	struct sl_bucket_table *logs; /* sliding_log state */
	uint64_t now_ns;
	uint64_t rng;
	uint64_t flow_seed;          /* keys this worker's flow hash */
	const struct sl_policy *pol; /* this burst's rules */
	char *norm_buf; /* max_head_bytes: a target's normal form */
	struct sl_top top;
	struct sl_hist latency;
	struct sl_hist park_latency; /* parked until decided */
	/* leases and the requests that wait for them (leased.c) */
	struct sl_bucket_table *leases;
	struct sl_bucket_table *tiers; /* keys hash answers, with a TTL */
	struct sl_parkq parkq;
	uint32_t lat_tick;   /* one transmitted frame in 16 is timed */
	uint32_t idle_polls; /* empty loops in a row (idle_sleep_us) */
	unsigned int lcore;
	uint16_t queue;
	uint64_t now;
	/* the TSC at its last loop's end, for the watchdog and telemetry
	 * (a relaxed store a loop; 0: not looping yet) */
	uint64_t beat;
	/* debug builds: /sluice/stall makes it sleep this long once (the
	 * watchdog's test); release builds never read it */
	uint32_t stall_ms;
	uint64_t next_drain;
	struct rte_ring *dec_ring; /* sampled decisions; NULL: off */
	/* mbufs for RSTs, taken in bulk; the next one's lines prefetched */
	struct rte_mbuf *rst[SL_RST_STASH];
	uint16_t n_rst;
	struct sl_txbuf
		tx[2]; /* [1] towards upstream, [0] towards downstream */
	struct sl_probe probe; /* /sluice/why's look at one key */
} __rte_cache_aligned;

int sl_worker_init(struct sl_worker *w, const struct sl_app *app,
		   unsigned int lcore, uint16_t queue, int track_only);
int sl_worker_main(void *arg);
/* Faults in the worker's tables from the calling thread (its NUMA node). */
void sl_worker_prefault(struct sl_worker *w);
void sl_worker_free(struct sl_worker *w);
int sl_worker_reset_flows(struct sl_worker *w);

/* One received burst from port index from (0 down, 1 up), then TX queued. */
void sl_worker_burst(struct sl_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     int from);
void sl_worker_flush(struct sl_worker *w);
/* A burst's end: the last burst's holds freed, this one's asked for;
 * all: both freed now. */
void sl_worker_let_go(struct sl_worker *w, int all);
/* Each loop with a coordinator: its answers, parked requests decided,
 * expired leases given back; returns how many answers came. */
unsigned int sl_worker_leases(struct sl_worker *w);

#endif /* SL_WORKER_H */

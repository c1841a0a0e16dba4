/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_H
#define SLUICE_H

/* The appliance: ports, lcores and the worker loop (app-private). */

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_rcu_qsbr.h>

#include "sl_flow.h"
#include "sl_http.h"
#include "sl_ident.h"
#include "sl_limit.h"
#include "sl_net.h"
#include "sl_rules.h"
#include "sl_telemetry.h"

#include "decisions.h"
#include "parkq.h"

struct sl_coord;
struct sl_blockfib;

#define SL_BURST         32
#define SL_DRAIN_US      100 /* a partly filled TX buffer waits at most this */
#define SL_IDLE_POLLS    256 /* empty loops before an idle_sleep_us nap */
#define SL_EXPIRE_BUDGET 32  /* flow entries examined for idleness per loop */
#define SL_RST_STASH     16  /* mbufs kept for RSTs to the backend */

extern int sl_logtype;
#define SL_LOG(level, fmt, ...)                                                \
	rte_log(RTE_LOG_##level, sl_logtype, "sluice: " fmt "\n", ##__VA_ARGS__)

/* A compiled rule set plus what the limiter derives from it. Immutable. */
struct sl_policy {
	struct sl_ruleset *rs;
	struct sl_blockfib *fib; /* the blocklist's CIDRs; NULL: none */
	uint32_t n_rules;
	uint8_t headers; /* SL_RH_* */
	uint8_t expose_rule;
	uint8_t keep_alive; /* response.keep_alive */
	uint8_t budget;     /* response.headers_on_allow */
	uint8_t any_cost;   /* a rule has cost_from_response */
	/* per rule: its budget may be given (headers_on_allow, enforcing),
	 * and it is keyed on an identity the client claims (key, user) */
	uint8_t budget_rule[SL_MAX_RULES];
	uint8_t claimed[SL_MAX_RULES];
	uint32_t jitter_ppm;
	uint32_t dec_ppm[2];     /* decisions sampled: [0] allowed, [1] not */
	struct sl_norm_cfg norm; /* how the backend resolves a target */
	struct sl_limit_params params[SL_MAX_RULES];
	uint32_t name_len[SL_MAX_RULES];
	/* counter slot per rule: stable for a rule name across reloads */
	uint16_t slot[SL_MAX_RULES];
	int16_t rule_of_slot[SL_MAX_RULES]; /* -1: no such rule now */
	/* per rule: its own limit and window baked in, and a template for
	 * the numbers of an override */
	struct sl_reply_tpl tpl429[SL_MAX_RULES];
	struct sl_reply_tpl tpl429_any[SL_MAX_RULES];
	/* keep_alive: each of those without "Connection: close" ([i] for
	 * tpl429[i], [SL_MAX_RULES + i] for tpl429_any[i]); NULL when off */
	struct sl_reply_tpl *tpl429_keep;
	struct sl_reply_tpl tpl403, tpl408, tpl431;
	struct sl_reply_tpl tpl400[SL_HTTP_E__COUNT];
};

/* The answer t (a 429) without "Connection: close", for a refusal that
 * keeps the connection; NULL when t is no 429 or keep_alive is off. */
static inline const struct sl_reply_tpl *
sl_policy_keep_tpl(const struct sl_policy *p, const struct sl_reply_tpl *t)
{
	if (p->tpl429_keep == NULL || t == NULL)
		return NULL;
	if (t >= p->tpl429 && t < p->tpl429 + SL_MAX_RULES)
		return &p->tpl429_keep[t - p->tpl429];
	if (t >= p->tpl429_any && t < p->tpl429_any + SL_MAX_RULES)
		return &p->tpl429_keep[SL_MAX_RULES + (t - p->tpl429_any)];
	return NULL;
}

/* A rule's limit (or an override's) as the limiter's parameters; the
 * loader already refused what cannot be represented. */
static inline int
sl_rule_params(const struct sl_rule *r, const struct sl_rate *rate,
	       uint64_t burst, struct sl_limit_params *out)
{
	static const uint8_t algo_of[] = {
		[SL_ALGO_TOKEN_BUCKET] = SL_LIM_TOKEN_BUCKET,
		[SL_ALGO_GCRA] = SL_LIM_GCRA,
		[SL_ALGO_FIXED_WINDOW] = SL_LIM_FIXED_WINDOW,
		[SL_ALGO_SLIDING_WINDOW] = SL_LIM_SLIDING_WINDOW,
		[SL_ALGO_SLIDING_LOG] = SL_LIM_SLIDING_LOG,
	};

	return sl_limit_params_init(out, algo_of[r->algo], rate->count,
				    rate->period_ms * 1000000ULL, burst);
}

/* Read-only after start-up: shared by every worker. */
struct sl_app {
	struct sl_config *cfg;
	struct rte_mempool *pool;
	uint16_t port[2]; /* [0] downstream, [1] upstream */
	uint16_t n_queues;
	uint64_t tsc_hz;
	uint64_t drain_tsc;
	uint64_t idle_tsc;
	uint32_t idle_sleep_us; /* 0: workers never sleep */
	uint64_t ns_mult; /* ns = (cycles * ns_mult) >> 20, for short spans */
	struct sl_http_cfg http;
	struct sl_ident_cfg ident;
	/*
	 * The running rules. Workers load it once per burst and report a
	 * quiescent state after each loop; a reload swaps it and frees the
	 * old one after the grace period (RCU), so workers never lock.
	 */
	struct sl_policy *policy;
	struct rte_rcu_qsbr *qs;
	struct sl_coord *coord; /* the node's authority; NULL: local buckets */
	struct sl_rulesync *rulesync; /* published rule sets; NULL: none */
	/* the aggregator's slices of global rules here (cp/slices.c); read
	 * by workers, swapped and freed after a grace period as the policy;
	 * NULL: the static slices */
	struct sl_slices *slices;
	struct sl_slicesync *slicesync; /* NULL: no store, or no regions */
	struct sl_decisions *decisions; /* the sampled stream; NULL: off */
	uint64_t store_timeout_ns;
	uint32_t holders;  /* leases per limit at once: workers x appliances */
	uint32_t expected; /* store.expected_appliances */
	const char *config_path;
	int64_t wall0_s; /* Unix time at TSC 0, for override expiry */
	int rx_tsc_off;  /* mbuf dynfield with the arrival TSC; <0: none */
	/* set (by a signal) when every loop is to end; NULL: never */
	const volatile sig_atomic_t *quit;
	uint8_t service[65536 / 8]; /* bitmap of inspected destination ports */
};

struct sl_txbuf {
	uint16_t n;
	struct rte_mbuf *m[SL_BURST];
};

/* A kept connection's shifts (dp/xlate.c), beside its flow entry. */
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
	/* per flow entry: costs the response settles; NULL when no rule
	 * took its cost from the response at start */
	struct sl_cost_rec *costs;
	/* the decision's, for its flow's entry once it is allowed */
	struct sl_cost_rec cost_next;
	uint8_t cost_next_set;
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
	uint64_t next_drain;
	struct rte_ring *dec_ring; /* sampled decisions; NULL: off */
	/* mbufs for RSTs, taken in bulk; the next one's lines prefetched */
	struct rte_mbuf *rst[SL_RST_STASH];
	uint16_t n_rst;
	struct sl_txbuf
		tx[2]; /* [1] towards upstream, [0] towards downstream */
} __rte_cache_aligned;

/*
 * The data path's face to main and sluice-bench (dp/worker.c); what the
 * worker uses inside is in dp/dp.h.
 */
int sl_ports_init(struct sl_app *app, uint16_t want_queues);
void sl_ports_close(const struct sl_app *app);

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
/* Each loop with a coordinator: its answers, parked requests decided,
 * expired leases given back; returns how many answers came. */
unsigned int sl_worker_leases(struct sl_worker *w);

/* Shared by sluice and sluice-bench. */
void sl_app_setup(struct sl_app *app, struct sl_config *cfg);

/* TSC to nanoseconds, exact, once per burst. */
static inline uint64_t
sl_tsc_ns(const struct sl_app *app, uint64_t tsc)
{
	return tsc / app->tsc_hz * 1000000000ULL +
	       tsc % app->tsc_hz * 1000000000ULL / app->tsc_hz;
}

static inline int
sl_is_service_port(const struct sl_app *app, uint16_t port)
{
	return (app->service[port >> 3] >> (port & 7)) & 1;
}

/* The arrival TSC stamped on m at RX (0 when stamping is off). */
static inline uint64_t *
sl_rx_stamp(const struct sl_app *app, struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, app->rx_tsc_off, uint64_t *);
}

#endif /* SLUICE_H */

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
#include "park.h"

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

#define SL_MAX_MATCH 32 /* limits checked per request */

/* A compiled rule set plus what the limiter derives from it. Immutable. */
struct sl_policy {
	struct sl_ruleset *rs;
	struct sl_blockfib *fib; /* the blocklist's CIDRs; NULL: none */
	uint32_t n_rules;
	uint8_t headers; /* SL_RH_* */
	uint8_t expose_rule;
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
	struct sl_reply_tpl tpl403, tpl408, tpl431;
	struct sl_reply_tpl tpl400[SL_HTTP_E__COUNT];
};

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
	struct sl_rulesync *rulesync;   /* published rule sets; NULL: none */
	struct sl_decisions *decisions; /* the sampled stream; NULL: off */
	uint64_t store_timeout_ns;
	uint32_t holders;  /* leases per limit at once: workers x appliances */
	uint32_t expected; /* store.expected_appliances */
	const char *config_path;
	int64_t wall0_s; /* Unix time at TSC 0, for override expiry */
	int rx_tsc_off;  /* mbuf dynfield with the arrival TSC; <0: none */
	uint8_t service[65536 / 8]; /* bitmap of inspected destination ports */
};

struct sl_txbuf {
	uint16_t n;
	struct rte_mbuf *m[SL_BURST];
};

/* The answer decided for the segment being inspected, if any. */
struct sl_pending {
	const struct sl_reply_tpl *tpl; /* NULL: none */
	struct sl_reply_nums nums;
};

/* Everything one worker writes; nothing here is shared. */
struct sl_worker {
	struct sl_counters ctr;
	struct sl_rule_ctr rules[SL_MAX_RULES];
	/* per tier, [0]: requests without an API key */
	struct sl_tier_ctr tiers_ctr[SL_MAX_TIERS + 1];
	const struct sl_app *app;
	struct sl_flow_table *flows;
	struct sl_bucket_table *buckets;
	struct sl_bucket_table *logs; /* sliding_log state */
	uint64_t now_ns;
	uint64_t rng;
	uint64_t flow_seed;          /* keys this worker's flow hash */
	const struct sl_policy *pol; /* this burst's rules */
	struct sl_pending pending;
	char *norm_buf; /* max_head_bytes: a target's normal form */
	struct sl_top top;
	struct sl_hist latency;
	struct sl_hist park_latency; /* parked until decided */
	/* leases and parked requests (park.c) */
	struct sl_bucket_table *leases;
	struct sl_bucket_table *tiers; /* keys hash answers, with a TTL */
	void *park;
	uint16_t park_free[SL_PARK_MAX];
	uint16_t n_park_free;
	uint16_t park_head, park_tail, park_new;
	uint8_t n_parked_timeouts_due;
	uint8_t parkable;    /* the event being decided may wait */
	uint8_t first;       /* ... and starts its segment's new bytes */
	uint32_t head_off;   /* where its head begins in the segment */
	uint8_t dec_flags;   /* SL_DF_* of the decision being made */
	int16_t cur_tier;    /* tier of the request being decided, -1: none */
	uint32_t rest_off;   /* where the bytes after its head start */
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
	const struct sl_pkt *cur; /* the segment being inspected */
	struct rte_mbuf *cur_m;   /* and its mbuf */
	struct sl_flow *cur_flow; /* its flow, once an event named it */
} __rte_cache_aligned;

extern volatile sig_atomic_t sl_quit;

/* The table a flow's bucket_hint names: the first limit each decision
 * looks up (leases with a coordinator, local buckets without). */
static inline struct sl_bucket_table *
sl_hint_table(const struct sl_worker *w)
{
	return w->app->coord != NULL ? w->leases : w->buckets;
}

/*
 * The first limit state of a decision, found through the current flow's
 * hint (a keep-alive connection sends the same identity), and the hint
 * renewed. A stale or foreign hint costs one compare.
 */
static inline struct sl_limit_state *
sl_hinted_get(struct sl_worker *w, const struct sl_bucket_key *k)
{
	struct sl_bucket_table *t = sl_hint_table(w);

	if (w->cur_flow == NULL)
		return sl_bucket_get(t, k, w->now_ns);
	return sl_bucket_get_hinted(t, k, w->now_ns, &w->cur_flow->bucket_hint);
}

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

/* Live reload (reload.c): from the file; returns 0, or -1 with errors. */
int sl_reload(struct sl_app *app, char *msg, size_t len);

/*
 * What a thread other than a worker may read of the running policy,
 * copied under the reload lock: every swap holds it until the old policy
 * is freed, and RCU covers only the workers, so a telemetry or signal
 * handler must not dereference app->policy on its own.
 */
struct sl_policy_peek {
	char version[32];
	uint32_t dec_ppm[2];
};
void sl_policy_peek(const struct sl_app *app, struct sl_policy_peek *out);
/* Held by every policy swap (reload.c) and by sl_policy_peek (policy.c). */
extern pthread_mutex_t sl_policy_lock;
int sl_reload_init(struct sl_app *app);
/* Applies a rule set published through the store (the file then yields). */
int sl_reload_text(struct sl_app *app, const char *version, const char *text,
		   size_t n, char *msg, size_t len);
/* Rule sets published through the store (rulesync.c). */
struct sl_rulesync;
struct sl_rulesync *sl_rulesync_create(struct sl_app *app, const char *host,
				       uint16_t port, const char *channel,
				       uint32_t reconcile_ms);
void sl_rulesync_poll(struct sl_rulesync *r, uint64_t now_ns);

/* Reloads when the file changed on disk; call every second or so. */
void sl_reload_poll(struct sl_app *app);

/* Shared by sluice and sluice-bench. */
void sl_app_setup(struct sl_app *app, struct sl_config *cfg);
struct sl_policy *sl_policy_build(const struct sl_config *cfg);
/* Recomputes rule_of_slot after slot[] changed. */
void sl_policy_index_slots(struct sl_policy *p);
void sl_policy_free(struct sl_policy *p);

/* Tier of a key outside the static map: cached, else asked (default now). */
int sl_tier_of(struct sl_worker *w, const char *key, uint32_t len);

/* Decides one parsed request; fills w->pending when it is answered. */
enum sl_req_action sl_decide(struct sl_worker *w, const struct sl_http_req *req,
			     const struct sl_pkt *p);
/* Sets w->pending for a head the parser refused (400) or too large (431). */
void sl_decide_invalid(struct sl_worker *w, const struct sl_flow_event *ev);

/* Turns the request segment m into the answer and resets the server. */
void sl_reply_send(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		   const struct sl_pkt *p);
/* Acknowledges an absorbed segment (m becomes the ACK). */
void sl_reply_ack(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		  const struct sl_pkt *p);
/*
 * The frame's first cut payload bytes go on to the backend alone (the
 * rest waits to be sent again): lengths and checksums rewritten.
 */
void sl_reply_prefix(struct sl_worker *w, struct rte_mbuf *m, struct sl_pkt *p,
		     uint32_t cut);
void sl_worker_send(struct sl_worker *w, int dir, struct rte_mbuf *m);
uint64_t sl_tsc_ns(const struct sl_app *app, uint64_t tsc);
/* Runs the coordinator and the housekeeping on the main lcore until quit. */
void sl_main_loop(struct sl_app *app, volatile sig_atomic_t *reload_flag);
/* One frame from port index from, as if just received. */
void sl_worker_handle(struct sl_worker *w, struct rte_mbuf *m, int from);
/*
 * A request refused by the limit in counter slot (local or leased path):
 * counted per rule and tier, ranked among the most throttled, sampled.
 */
void sl_count_rejected(struct sl_worker *w, uint16_t slot, uint64_t remaining,
		       uint64_t retry_ns, const struct sl_identity *id);
/* The 429 template of rule index r for these numbers. */
const struct sl_reply_tpl *sl_tpl429(const struct sl_policy *pol, uint32_t r,
				     const struct sl_reply_nums *v);
/* Retry-After seconds: never earlier than true, spread by the jitter. */
uint64_t sl_retry_seconds(struct sl_worker *w, uint64_t ns, uint32_t jitter_ppm,
			  uint64_t period_ns);

static inline int
sl_is_service_port(const struct sl_app *app, uint16_t port)
{
	return (app->service[port >> 3] >> (port & 7)) & 1;
}

/* A request let through, in the totals and its tier's. */
static inline void
sl_count_allowed(struct sl_worker *w)
{
	w->ctr.allowed++;
	w->tiers_ctr[w->cur_tier + 1].allowed++;
}

/* The worker's own xorshift: jitter and sampling, no shared state. */
static inline uint64_t
sl_rnd(struct sl_worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

/* Whether this decision goes to the decision stream (random, at the rate
 * of the running rules); one load and a branch when sampling is off. */
static inline int
sl_dec_pick(struct sl_worker *w, int rejected)
{
	uint32_t ppm = w->pol->dec_ppm[rejected != 0];

	if (likely(ppm == 0 || w->dec_ring == NULL))
		return 0;
	if (ppm >= 1000000)
		return 1;
	return sl_rnd(w) % 1000000 < ppm;
}

/* The arrival TSC stamped on m at RX (0 when stamping is off). */
static inline uint64_t *
sl_rx_stamp(const struct sl_app *app, struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, app->rx_tsc_off, uint64_t *);
}

#endif /* SLUICE_H */

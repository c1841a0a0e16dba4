/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_DP_H
#define SLUICE_DP_H

/*
 * Inside the data path. Calls point one way, down this list:
 *
 *   worker.c   the loop: RX, stage, inspect, carry out verdicts, leases
 *   decide.c   a request against the rules: returns a verdict
 *   leased.c   the lease client: a verdict from leases, or park
 *   degrade.c  the store's on_store_failure, from local buckets
 *   tiers.c    a key's tier, asked of the keys hash and cached
 *   verdict.c  the numbers of a 429, and every refusal counted
 *   account.c  counters, the throttled sketch, the decision stream
 *   reply.c    a verdict's frames: the answer, the RST, the ACK
 *   parkq.c    the queue of requests waiting for an answer
 *   tx.c       TX buffering; a leaf
 *
 * A decision is a value (struct sl_verdict) the caller carries out; none
 * of these files sends, parks or replays anything for another.
 */

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "sl_lease.h"
#include "blockfib.h"
#include "sl_decision.h"
#include "sl_lanes.h"
#include "sl_policy.h"
#include "sl_worker.h"

#define SL_DOWN 0
#define SL_UP   1

/* The request being decided. */
struct sl_req {
	const struct sl_http_req *http; /* NULL: a parked one, decided again */
	const struct sl_pkt *p;
	struct sl_flow *flow; /* its flow's hint finds the first limit */
	const struct sl_identity *id;
	int16_t tier;          /* -1: no API key */
	uint8_t flags;         /* SL_DF_* for the decision stream */
	uint8_t parkable;      /* it may wait for a lease (worker.c) */
	uint8_t tier_parkable; /* for its key's tier: not behind a grant */
	/* the bytes after its head in its segment: the heads pipelined
	 * there wait with it, and its ask is sized for them too */
	const uint8_t *rest;
	uint32_t rest_len;
};

/* What was decided, for the caller to carry out. */
struct sl_verdict {
	enum sl_req_action action;      /* CONTINUE, STOP or PARK */
	uint16_t park;                  /* PARK: the park queue's entry */
	const struct sl_reply_tpl *tpl; /* STOP: the answer; NULL: none */
	struct sl_reply_nums nums;
	/* CONTINUE with response.headers_on_allow: the rule index whose
	 * budget (nums) the response is given; -1: none */
	int16_t budget;
};

/*
 * A record of requests in flight on one connection (cost.c, health.c):
 * due bit i is response first + i of the connection. Response ord's bit
 * (0: outside the 32 the record covers).
 */
static inline uint32_t
sl_due_bit(uint16_t first, uint16_t ord)
{
	uint16_t k = (uint16_t)(ord - first);

	return k < 32 ? 1u << k : 0;
}
/* The responses settled at the front let go: the record starts at the
 * first still due. Returns how many it moved on. */
static inline uint32_t
sl_due_advance(uint32_t *due, uint16_t *first)
{
	uint32_t k = 0;

	while (*due != 0 && !(*due & 1)) {
		*due >>= 1;
		(*first)++;
		k++;
	}
	return k;
}

/* cost.c: cost settled from the response (a rule's cost_from_response) */
int sl_cost_init(struct sl_worker *w);
void sl_cost_free(struct sl_worker *w);
/* The decision spent need n of rule (first of the request's): kept for
 * its flow once the request is allowed (sl_cost_note). Inline: the lease
 * client sets it, and cost.c settles through the lease client. */
static inline void
sl_cost_set(struct sl_worker *w, const struct sl_need *n, uint16_t rule,
	    int leased)
{
	if (w->costs == NULL || w->cost_next_set)
		return; /* (the first such limit of the request) */
	w->cost_next.need = *n;
	w->cost_next.rule = rule;
	w->cost_next.leased = (uint8_t)leased;
	w->cost_next_set = 1;
}
/* The first of a leased or degraded decision's needs whose rule reads
 * its cost from the response, kept by sl_cost_set. Inline for the same
 * reason. */
static inline void
sl_cost_pick(struct sl_worker *w, const struct sl_need *ns, uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rule = ns[i].slot < SL_MAX_RULES
				   ? pol->rule_of_slot[ns[i].slot]
				   : -1;

		if (rule >= 0 &&
		    sl_ruleset_rule(pol->rs, (uint32_t)rule)->cost_header[0]) {
			sl_cost_set(w, &ns[i], (uint16_t)rule, 1);
			return;
		}
	}
}
void sl_cost_note(struct sl_worker *w, struct sl_flow *f, int parked);
/* f ends with costs still due (the flow table's gone callback; arg: the
 * worker): each charged the most its response could have said. */
void sl_cost_abandoned(void *arg, struct sl_flow *f);
/* Whether responses of f settle a cost: the framer lists them all. */
int sl_cost_due(struct sl_worker *w, const struct sl_flow *f);
/* A server segment's payload pl, mk where its status lines ended. */
void sl_cost_response(struct sl_worker *w, struct sl_flow *f, const uint8_t *pl,
		      uint32_t len, const struct sl_resp_mark *mk);
/* health.c: the backend's answers per rule */
int sl_health_init(struct sl_worker *w);
void sl_health_free(struct sl_worker *w);
/* The request being decided is allowed by (or, shadow, passes) the rule
 * in counter slot: counted, and kept for its response (the first
 * SL_HEALTH_RULES of a request's rules). */
static inline void
sl_health_keep(struct sl_worker *w, uint16_t slot)
{
	if (w->hl_n < SL_HEALTH_RULES && slot < SL_MAX_RULES)
		w->hl_next[w->hl_n++] = slot;
}
static inline void
sl_rule_allowed(struct sl_worker *w, uint16_t slot)
{
	w->rules[slot].allowed++;
	sl_health_keep(w, slot);
}
/* The request just allowed on f: its rules wait for its response. */
void sl_health_note(struct sl_worker *w, struct sl_flow *f, int parked);
/* Whether a response of f is due to rules: the framer lists them all. */
int sl_health_due(const struct sl_flow *f);
/* A server segment of f with len payload bytes, mk its status lines. */
void sl_health_response(struct sl_worker *w, struct sl_flow *f, uint32_t len,
			const struct sl_resp_mark *mk);
/* f ends: its responses due were never read. */
void sl_health_gone(struct sl_worker *w, struct sl_flow *f);

/* leased.c: d more units of need n spent (or -d not after all). */
void sl_leased_settle(struct sl_worker *w, const struct sl_need *n, int64_t d);

/* budget.c: an allowed response's budget (response.headers_on_allow) */
/* Allowed: the budget of the limit with the least left, as v's. */
/* (q, w_s: the limit's quota as told, sl_limit_quota) */
void sl_budget_set(struct sl_worker *w, struct sl_verdict *v, uint16_t rule,
		   uint64_t q, uint64_t w_s, uint64_t remaining,
		   uint64_t reset_ns);
/* Allowed request of f: its verdict's budget kept for its response,
 * decided before the flow counted it (parked: after). */
void sl_budget_note(struct sl_worker *w, struct sl_flow *f,
		    const struct sl_pkt *p, const struct sl_verdict *v,
		    int parked);
/* Which response of f is due a budget (0: none), for the framer. */
uint16_t sl_budget_due(struct sl_worker *w, const struct sl_flow *f);
/* A server segment of a translated flow: its response's budget put in
 * (or put in again). 1: m was sent or dropped here; 0: the caller goes
 * on with it (seq, ack: its numbers for the client). */
struct sl_resp_mark;
int sl_budget_server(struct sl_worker *w, struct sl_flow *f, struct rte_mbuf *m,
		     const struct sl_pkt *p, const struct sl_resp_mark *mk,
		     uint32_t seq, uint32_t ack);

/* decide.c */
void sl_decide(struct sl_worker *w, struct sl_req *r, struct sl_verdict *out);
/* A head the parser refused (400), too large (431) or too slow (408). */
struct sl_verdict sl_decide_invalid(struct sl_worker *w,
				    const struct sl_flow_event *ev);

/* leased.c: the request's enforcing limits, spent from leases. */
struct sl_verdict sl_leased_decide(struct sl_worker *w, struct sl_req *r,
				   const struct sl_need *ns, uint32_t n);
/* Parks a request until its key's tier is known (asked: its entry in
 * the tier cache), with the limits of every tier it could be in. */
struct sl_verdict sl_leased_wait_tier(struct sl_worker *w, struct sl_req *r,
				      const struct sl_need *ns, uint32_t n,
				      const struct sl_bucket_key *asked);
/* A parked request, decided again: 0 and *v set once it is decided. */
int sl_leased_resolve(struct sl_worker *w, struct sl_parked *e,
		      struct sl_verdict *v);
/* The coordinator's answers applied to the leases; returns how many. */
unsigned int sl_leased_answers(struct sl_worker *w);
/* Expired leases' unspent units given back, a few per call. */
void sl_leased_sweep(struct sl_worker *w);
/* Keeps l's entry for as long as anything in it matters (a lease, a
 * refusal, an answer to come, a slice not yet full again). */
void sl_lease_touch(struct sl_worker *w, struct sl_lease *l);
/* An ask unanswered this long is lost, as sl_lease_touch keeps it. */
static inline uint64_t
sl_ask_stale_ns(const struct sl_worker *w)
{
	return w->app->store_timeout_ns + SL_LEASE_LIFETIME_NS;
}
int sl_leased_init(struct sl_worker *w);

/*
 * A frame's TCP checksum: the port's verdict where it gave one, summed
 * where it did not. NONE (verified data, field not filled in: virtio)
 * is summed like unknown: forwarded as it is, such a frame would be
 * dropped by the backend, so it is counted as a bad checksum, where it
 * shows.
 */
static inline int
sl_dp_cksum_ok(const struct rte_mbuf *m, const uint8_t *frame,
	       const struct sl_pkt *p)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	if (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return 1;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return 0;
	return sl_tcp_cksum_ok(frame, p);
}

/* xlate.c: a kept connection's sequence numbers (response.keep_alive) */
enum { SL_XL_GO = 0, SL_XL_DROP, SL_XL_RESET };
int sl_xlate_init(struct sl_worker *w);
void sl_xlate_free(struct sl_worker *w);
/* A client segment of a translated flow, before the flow reads it: GO
 * with *ack its ack in the server's numbers; DROP an answered head sent
 * again (its answer acknowledged, or lost and sent again now), RESET
 * one whose lost answer was not kept. */
int sl_xlate_client_in(struct sl_worker *w, struct sl_flow *f, struct sl_pkt *p,
		       uint32_t *ack);
/* On its way to the server: sequence, ack and SACK blocks in the
 * server's numbers. */
void sl_xlate_client_out(struct sl_worker *w, const struct sl_flow *f,
			 uint8_t *frame, struct sl_pkt *p, uint32_t ack);
/* A server segment's ack in the client's numbers, before the flow. */
uint32_t sl_xlate_server_in(struct sl_worker *w, const struct sl_flow *f,
			    const struct sl_pkt *p);
/* On its way to the client: seq and ack (worked out before the flow,
 * which an RST removes) and its SACK blocks in the client's numbers. */
void sl_xlate_server_out(struct sl_worker *w, const struct sl_flow *f,
			 uint8_t *frame, struct sl_pkt *p, uint32_t seq,
			 uint32_t ack);
/* A client sequence number in the server's numbers (f may be NULL). */
uint32_t sl_xlate_client_seq(struct sl_worker *w, const struct sl_flow *f,
			     uint32_t seq);
/* A server sequence number in the client's numbers (f may be NULL). */
uint32_t sl_xlate_server_seq(struct sl_worker *w, const struct sl_flow *f,
			     uint32_t seq);
/* Whether the last answer put in was acknowledged (or there was none). */
int sl_xlate_answer_acked(struct sl_worker *w, const struct sl_flow *f);
/* A head answered in place and the connection kept; reply (about to be
 * sent) is kept until acknowledged, where the share of mbufs allows. */
void sl_xlate_answered(struct sl_worker *w, struct sl_flow *f,
		       uint32_t head_seq, uint32_t head_len, uint32_t reply_seq,
		       struct rte_mbuf *reply, uint32_t reply_len);
/* f's sequence numbers translated from here on (with no shift yet):
 * cseq, cack, its client's sequence and ack now. */
struct sl_xlate *sl_xlate_track(struct sl_worker *w, struct sl_flow *f,
				uint32_t cseq, uint32_t cack);
/* Keeps frame m (a reference) until the client acknowledges what was
 * put in last; 0, or -1 when the share for kept frames is full. */
int sl_xlate_keep(struct sl_worker *w, struct sl_xlate *x, struct rte_mbuf *m);
void sl_leased_free(struct sl_worker *w);

/* degrade.c: decided alone, from this worker's slice of each limit. */
struct sl_lease;
/* Units of lease l for the coordinator (given back, or taken); 0 or -1
 * when its ring is full. */
int sl_lease_units_msg(struct sl_worker *w, const struct sl_bucket_key *k,
		       const struct sl_lease *l, uint8_t type, uint64_t units);
/* Units admitted without a grant, reported for the authority to count. */
void sl_report_taken(struct sl_worker *w, const struct sl_bucket_key *k,
		     const struct sl_lease *l, uint64_t units);
/* The same, unless an ask is out: its answer's units cover them. */
void sl_lease_taken(struct sl_worker *w, const struct sl_bucket_key *k,
		    struct sl_lease *l, uint32_t units);
/* Decided from the worker's slices: late, no answer came in time (else
 * the request could not wait for one). */
struct sl_verdict sl_degrade(struct sl_worker *w, struct sl_req *r,
			     const struct sl_need *ns, struct sl_lease **ls,
			     uint32_t n, int late);

/* tiers.c: a key outside the static map: cached, else asked. Its tier
 * index; SL_TIER_ANY while the first answer is due (*asked then names
 * the entry to look it up by, sl_tier_known), the default when none
 * can be had. */
int sl_tier_of(struct sl_worker *w, const char *key, uint32_t len,
	       struct sl_bucket_key *asked);
int sl_tier_known(struct sl_worker *w, const struct sl_bucket_key *k);
int sl_tiers_init(struct sl_worker *w);
void sl_tiers_free(struct sl_worker *w);
struct sl_coord_msg;
void sl_tier_answer(struct sl_worker *w, const struct sl_coord_msg *a);

/* verdict.c */
/* Retry-After seconds: never earlier than true, spread by the jitter. */
uint64_t sl_retry_seconds(struct sl_worker *w, uint64_t ns, uint32_t jitter_ppm,
			  uint64_t period_ns);
/*
 * A request refused by a limit (local, leased or degraded): the 429 of
 * rule index rule (-1: removed since, no answer), counted per rule and
 * tier, ranked among the most throttled, sampled.
 */
struct sl_limit_refusal {
	int rule;
	uint16_t slot;
	uint8_t algo; /* the limit's (SL_LIM_*), with burst: its quota */
	uint64_t count, period_ns, burst;
	uint64_t retry_ns, reset_ns, remaining;
	uint32_t cost; /* of the refused request at that limit (0: 1) */
};
/* The quota and window a refusal or a budget tells for a limit of rule
 * (-1: none): the rule's own, worked out with its template, where the
 * numbers are its own (sl_limit_quota divides in 128 bits). */
void sl_rule_quota(const struct sl_policy *pol, int rule, uint8_t algo,
		   uint64_t count, uint64_t period_ns, uint64_t burst,
		   uint64_t *q, uint64_t *w_s);
struct sl_verdict sl_verdict_limited(struct sl_worker *w,
				     const struct sl_req *r,
				     const struct sl_limit_refusal *x);
/* The same for a lease client's need: its rule found by slot. */
struct sl_verdict sl_verdict_need(struct sl_worker *w, const struct sl_req *r,
				  const struct sl_need *n, uint64_t retry_ns,
				  uint64_t reset_ns, uint64_t remaining);
/* The 403 of a blocklisted identity, counted. */
struct sl_verdict sl_verdict_blocked(struct sl_worker *w,
				     const struct sl_req *r);
/*
 * A fixed answer (400, 408, 431), and the request let through. Only what
 * the action reads is written: a verdict is made per request, and
 * clearing its numbers each time is a cost on every allowed one.
 */
static inline struct sl_verdict
sl_verdict_stop(const struct sl_reply_tpl *tpl)
{
	struct sl_verdict v;

	v.action = SL_REQ_STOP;
	v.tpl = tpl;
	return v;
}

/* Whole seconds, rounded up: what a reply's numbers say of a time. */
static inline uint64_t
sl_secs_up(uint64_t ns)
{
	return ns / 1000000000ULL + (ns % 1000000000ULL != 0);
}

static inline struct sl_verdict
sl_verdict_go(void)
{
	struct sl_verdict v;

	v.action = SL_REQ_CONTINUE;
	v.budget = -1;
	return v;
}

/* account.c */
/* Queues the record of a sampled decision (after sl_dec_pick said yes). */
void sl_dec_record(struct sl_worker *w, const struct sl_req *r, uint8_t verdict,
		   uint16_t slot, uint64_t remaining, uint64_t retry_ns);
/* A refused request in counter slot: totals, rule, tier, sketch, stream. */
void sl_count_rejected(struct sl_worker *w, const struct sl_req *r,
		       uint16_t slot, uint64_t remaining, uint64_t retry_ns);

/* reply.c */
/* Turns the request segment m into the answer and resets the server. */
void sl_reply_send(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		   const struct sl_pkt *p, const struct sl_verdict *v);
/* Acknowledges an absorbed segment (m becomes the ACK). */
void sl_reply_ack(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		  const struct sl_pkt *p);
/*
 * The frame's first cut payload bytes go on to the backend alone (the
 * rest waits to be sent again): lengths and checksums rewritten.
 */
void sl_reply_keep(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		   const struct sl_pkt *p, const struct sl_verdict *v,
		   uint32_t head_off);
void sl_reply_reset(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
		    const struct sl_pkt *p);
void sl_reply_prefix(struct sl_worker *w, struct rte_mbuf *m, struct sl_pkt *p,
		     uint32_t cut);
/* Asks the server where it stands (an ACK one byte behind). */
void sl_reply_probe(struct sl_worker *w, struct rte_mbuf *m,
		    const struct sl_pkt *p);

/* tx.c */
void sl_tx_flush(struct sl_worker *w, int dir);

/* Buffered: out with a full burst, or at the drain interval. Inline, as
 * every forwarded frame takes it. */
static inline void
sl_tx_send(struct sl_worker *w, int dir, struct rte_mbuf *m)
{
	struct sl_txbuf *b = &w->tx[dir];

	b->m[b->n++] = m;
	if (b->n == SL_BURST)
		sl_tx_flush(w, dir);
}

/* How a lease of need n is sized (sl_lease_want, sl_lease_saturated). */
static inline struct sl_lease_sizing
sl_sizing_of(const struct sl_worker *w, const struct sl_need *n)
{
	return (struct sl_lease_sizing){.count = n->count,
					.period_ns = n->period_ms * 1000000ULL,
					.accuracy_ppm = n->accuracy_ppm,
					.holders = w->app->holders,
					.burst = n->burst,
					.now_ns = w->now_ns};
}

/* Whether lease l of need n is saturated (sl_lease_saturated). */
static inline int
sl_need_saturated(const struct sl_worker *w, const struct sl_need *n,
		  const struct sl_lease *l)
{
	struct sl_lease_sizing z = sl_sizing_of(w, n);

	return sl_lease_saturated(l, &z);
}

/*
 * Lease l holds need n's numbers (the authority's messages carry them,
 * and its slice is n's limit over every holder); the slice is computed
 * again only when they change.
 */
static inline void
sl_lease_number(const struct sl_worker *w, struct sl_lease *l,
		const struct sl_need *n)
{
	if (l->count != n->count || l->slice.period_ns == 0)
		sl_share_of(&l->slice, n->count, n->burst,
			    n->period_ms * 1000000ULL, w->app->holders);
	l->algo = n->algo;
	l->count = n->count;
	l->burst = n->burst;
	l->period_ms = n->period_ms;
	l->on_failure = n->on_failure;
	l->subs = n->subs;
}

/* Message m to the coordinator on this worker's ring; -1: ring full. */
static inline int
sl_to_coord(const struct sl_worker *w, struct sl_coord_msg *m)
{
	return rte_ring_enqueue_elem(w->app->lanes->ask[w->queue], m,
				     sizeof(*m));
}

/* The table a flow's bucket_hint names: the first limit each decision
 * looks up (leases with a coordinator, local buckets without). */
static inline struct sl_bucket_table *
sl_hint_table(const struct sl_worker *w)
{
	return w->app->lanes != NULL ? w->leases : w->buckets;
}

/*
 * The first limit state of a decision, found through the flow's hint (a
 * keep-alive connection sends the same identity), and the hint renewed.
 * A stale or foreign hint costs one compare.
 */
static inline struct sl_limit_state *
sl_hinted_get(struct sl_worker *w, struct sl_flow *f,
	      const struct sl_bucket_key *k)
{
	struct sl_bucket_table *t = sl_hint_table(w);

	if (f == NULL)
		return sl_bucket_get(t, k, w->now_ns);
	return sl_bucket_get_hinted(t, k, w->now_ns, &f->bucket_hint);
}

/* A request let through, in the totals and its tier's. */
static inline void
sl_count_allowed(struct sl_worker *w, const struct sl_req *r)
{
	w->ctr.allowed++;
	w->tiers_ctr[r->tier + 1].allowed++;
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

#endif /* SLUICE_DP_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_malloc.h>
#include <rte_ring.h>

#include "coord.h"
#include "park.h"
#include "sluice.h"

#define NIL 0xffff
#define NS  1000000000ULL
#define UP  1

enum { ST_OK = 0, ST_EMPTY, ST_REFUSED };

static size_t
stride(void)
{
	return sizeof(struct sl_parked) + SL_MAX_MATCH * sizeof(struct sl_need);
}

static struct sl_parked *
entry(struct sl_worker *w, uint16_t i)
{
	return (struct sl_parked *)((uint8_t *)w->park + (size_t)i * stride());
}

/* A key's tier as the keys hash said, for keys outside the static map. */
struct tier_cache {
	int16_t tier;  /* -1: not in the hash: the default tier */
	uint8_t state; /* 0 unknown, 1 asked, 2 known */
	uint64_t until_ns;
};

#define TIER_TTL_NS 60000000000ULL

int
sl_park_init(struct sl_worker *w)
{
	uint16_t i;

	w->park = rte_zmalloc("sl_park", SL_PARK_MAX * stride(), 64);
	w->leases = sl_bucket_table_create_sized(
		w->app->cfg->dataplane.buckets_per_worker,
		sizeof(struct sl_lease));
	w->tiers = sl_bucket_table_create_sized(
		RTE_MAX(w->app->cfg->dataplane.buckets_per_worker / 4, 1024u),
		sizeof(struct tier_cache));
	if (w->park == NULL || w->leases == NULL || w->tiers == NULL)
		return -1;
	for (i = 0; i < SL_PARK_MAX; i++)
		w->park_free[i] = (uint16_t)(SL_PARK_MAX - 1 - i);
	w->n_park_free = SL_PARK_MAX;
	w->park_head = w->park_tail = NIL;
	return 0;
}

void
sl_park_free(struct sl_worker *w)
{
	rte_free(w->park);
	sl_bucket_table_free(w->leases);
	sl_bucket_table_free(w->tiers);
}

static struct sl_bucket_key
tier_key(const char *key, uint32_t len)
{
	return (struct sl_bucket_key){sl_hash64(key, len, 0x7431),
				      sl_hash64(key, len, 0x7432)};
}

int
sl_tier_of(struct sl_worker *w, const char *key, uint32_t len)
{
	int def = sl_ruleset_default_tier(w->pol->rs);
	struct sl_bucket_key k = tier_key(key, len);
	struct tier_cache *e;
	struct sl_coord_msg m;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	if (e->state == 2 && w->now_ns < e->until_ns)
		return e->tier >= 0 ? e->tier : def;
	if (e->state == 1 && w->now_ns < e->until_ns)
		return def; /* asked already: the default until it answers */
	if (len > sizeof(m.tier.text))
		return def;
	memset(&m, 0, sizeof(m));
	m.k1 = k.k1;
	m.k2 = k.k2;
	m.type = SL_CO_TIER;
	m.worker = w->queue;
	m.tier.len = (uint8_t)len;
	memcpy(m.tier.text, key, len);
	if (rte_ring_enqueue_elem(w->app->coord->ask[w->queue], &m,
				  sizeof(m)) == 0) {
		e->state = 1;
		e->until_ns = w->now_ns + w->app->store_timeout_ns;
		sl_bucket_touch(w->tiers, (struct sl_limit_state *)e,
				e->until_ns);
	}
	return def;
}

static void
tier_answer(struct sl_worker *w, const struct sl_coord_msg *a)
{
	struct sl_bucket_key k = {a->k1, a->k2};
	struct tier_cache *e;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	e->tier = a->tier.found ? (int16_t)sl_ruleset_tier_index(
					  w->pol->rs, a->tier.text, a->tier.len)
				: -1;
	e->state = 2;
	e->until_ns = w->now_ns + TIER_TTL_NS;
	sl_bucket_touch(w->tiers, (struct sl_limit_state *)e, e->until_ns);
}

/* ---- leases ---- */

static struct sl_lease *
lease_of(struct sl_worker *w, const struct sl_bucket_key *k)
{
	return (struct sl_lease *)sl_bucket_get(w->leases, k, w->now_ns);
}

/* A lease entry may go once nothing in it matters any more. */
static void
touch(struct sl_worker *w, struct sl_lease *l)
{
	uint64_t t = l->expires_ns;

	if (l->refused_until > t)
		t = l->refused_until;
	if (l->asked_ns && l->asked_ns + w->app->store_timeout_ns > t)
		t = l->asked_ns + w->app->store_timeout_ns;
	sl_bucket_touch(w->leases, (struct sl_limit_state *)l, t);
}

static void
send_back(struct sl_worker *w, const struct sl_bucket_key *k,
	  const struct sl_lease *l, uint64_t units)
{
	struct sl_coord_msg m = {.k1 = k->k1,
				 .k2 = k->k2,
				 .type = SL_CO_GIVE_BACK,
				 .algo = l->algo,
				 .worker = w->queue,
				 .period_ms = l->period_ms};

	m.back.count = l->count;
	m.back.burst = l->burst;
	m.back.units = units;
	/* a full ring loses them: fewer admissions, never more */
	rte_ring_enqueue_elem(w->app->coord->ask[w->queue], &m, sizeof(m));
}

static int
ask(struct sl_worker *w, const struct sl_need *n, struct sl_lease *l,
    uint64_t want, uint64_t need)
{
	struct sl_coord_msg m = {.k1 = n->key.k1,
				 .k2 = n->key.k2,
				 .type = SL_CO_ASK,
				 .algo = n->algo,
				 .worker = w->queue,
				 .period_ms = n->period_ms};

	m.ask.count = n->count;
	m.ask.burst = n->burst;
	m.ask.want = (uint32_t)(want > UINT32_MAX ? UINT32_MAX : want);
	m.ask.need = (uint32_t)need;
	m.ask.on_failure = n->on_failure;
	m.ask.div_open = w->app->expected;
	m.ask.div_strict = w->app->holders;
	if (rte_ring_enqueue_elem(w->app->coord->ask[w->queue], &m,
				  sizeof(m)) != 0)
		return -1;
	l->asked_ns = w->now_ns;
	l->algo = n->algo;
	l->count = n->count;
	l->burst = n->burst;
	l->period_ms = n->period_ms;
	touch(w, l);
	w->ctr.coord_asks++;
	return 0;
}

static uint64_t
want_of(const struct sl_worker *w, const struct sl_need *n,
	const struct sl_lease *l)
{
	struct sl_lease_sizing z = {.count = n->count,
				    .period_ns = n->period_ms * 1000000ULL,
				    .accuracy_ppm = n->accuracy_ppm,
				    .holders = w->app->holders};

	/* the log is decided by the authority per request */
	if (n->algo == SL_LIM_SLIDING_LOG)
		return n->cost;
	return sl_lease_want(l, &z, n->cost);
}

static int
need_state(const struct sl_worker *w, const struct sl_need *n,
	   const struct sl_lease *l)
{
	if (w->now_ns < l->refused_until)
		return ST_REFUSED;
	if (l->units >= n->cost && w->now_ns < l->expires_ns)
		return ST_OK;
	return ST_EMPTY;
}

/*
 * A lease holds for the numbers it was granted under. After a reload or
 * an override changed them, its units are dropped and its refusal is
 * forgotten: the authority decides again under the new numbers. Dropped,
 * not given back: units granted under a raised limit (an override now
 * removed) would otherwise credit the lowered one's bucket, and a
 * lowered limit must hold at once; the authority counting a few units as
 * spent that were not is the safe side, within the lease budget.
 */
static void
renumber(const struct sl_need *n, struct sl_lease *l)
{
	if (l->count == 0 ||
	    (l->count == n->count && l->burst == n->burst &&
	     l->period_ms == n->period_ms && l->algo == n->algo))
		return;
	l->units = 0;
	l->refused_until = 0;
	l->asked_ns = 0;
	l->count = n->count;
	l->burst = n->burst;
	l->period_ms = n->period_ms;
	l->algo = n->algo;
}

/*
 * The worst state over all needs; *strict: the longest refusal. fresh: a
 * request of the current flow (not a parked one), whose first lease is
 * found through the flow's hint.
 */
/*
 * The state of a decision's leases: ST_OK, or ST_EMPTY while one must be
 * asked for, or ST_REFUSED when one is refused and none is unknown: the
 * strictest limit wins, so a refusal waits for what the others say
 * (*unknown is set then) rather than name a lesser one.
 */
static int
evaluate(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	 struct sl_lease **ls, int *strict, int fresh, int *unknown)
{
	int worst = ST_OK;
	uint32_t i;

	*strict = -1;
	*unknown = 0;
	sl_bucket_begin(w->leases);
	for (i = 0; i < n; i++) {
		int st;

		ls[i] = i == 0 && fresh ? (struct sl_lease *)sl_hinted_get(
						  w, &ns[i].key)
					: lease_of(w, &ns[i].key);
		renumber(&ns[i], ls[i]);
		st = need_state(w, &ns[i], ls[i]);
		if (st == ST_REFUSED &&
		    (*strict < 0 ||
		     ls[i]->refused_until > ls[*strict]->refused_until))
			*strict = (int)i;
		*unknown += st == ST_EMPTY;
		if (st > worst)
			worst = st;
	}
	return worst;
}

static int
ask_missing(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	    struct sl_lease **ls)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (need_state(w, &ns[i], ls[i]) != ST_EMPTY ||
		    sl_lease_pending(ls[i], w->now_ns,
				     w->app->store_timeout_ns))
			continue;
		if (ask(w, &ns[i], ls[i], want_of(w, &ns[i], ls[i]),
			ns[i].cost) != 0)
			return -1;
	}
	return 0;
}

/*
 * For the decision stream: the authority's count at its last grant plus
 * what this worker still holds, for the limit with the least of it.
 */
static void
note_spent(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	   struct sl_lease **ls, const struct sl_identity *id)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (ls[i]->remaining + ls[i]->units <
		    ls[best]->remaining + ls[best]->units)
			best = i;
	sl_dec_record(w, SL_V_ALLOWED, ns[best].slot,
		      ls[best]->remaining + ls[best]->units, 0, id);
}

static void
spend(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
      struct sl_lease **ls, const struct sl_identity *id)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t want;

		sl_lease_take(ls[i], ns[i].cost, w->now_ns);
		w->rules[ns[i].slot].allowed++;
		want = want_of(w, &ns[i], ls[i]);
		/* ask ahead, so that most requests never wait */
		if (ns[i].algo != SL_LIM_SLIDING_LOG &&
		    sl_lease_low(ls[i], want) &&
		    !sl_lease_pending(ls[i], w->now_ns,
				      w->app->store_timeout_ns))
			ask(w, &ns[i], ls[i], want, 1);
	}
	sl_count_allowed(w);
	if (sl_dec_pick(w, 0))
		note_spent(w, ns, n, ls, id);
}

/* Whether a rule slot is still in the running rules. */
static int
slot_live(const struct sl_policy *pol, uint16_t slot)
{
	return slot < SL_MAX_RULES && pol->rule_of_slot[slot] >= 0;
}

static void
refuse(struct sl_worker *w, const struct sl_need *n, uint64_t retry_ns,
       uint64_t reset_ns, uint64_t remaining, const struct sl_identity *id)
{
	struct sl_reply_nums *v = &w->pending.nums;

	v->retry_after_s = sl_retry_seconds(w, retry_ns, w->pol->jitter_ppm,
					    n->period_ms * 1000000ULL);
	v->limit = n->count;
	v->window_s = (n->period_ms + 999) / 1000;
	v->remaining = remaining;
	v->reset_s = (reset_ns + NS - 1) / NS;
	w->pending.tpl =
		slot_live(w->pol, n->slot)
			? sl_tpl429(w->pol,
				    (uint32_t)w->pol->rule_of_slot[n->slot], v)
			: NULL;
	sl_count_rejected(w, n->slot, remaining, retry_ns, id);
}

static void
refuse_lease(struct sl_worker *w, const struct sl_need *n,
	     const struct sl_lease *l, const struct sl_identity *id)
{
	refuse(w, n, l->refused_until - w->now_ns, l->reset_ns, l->remaining,
	       id);
}

/*
 * The store did not answer in time (or cannot be asked): each limit's
 * on_store_failure decides, from this worker's own buckets.
 */
static enum sl_req_action
degrade(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	const struct sl_identity *id)
{
	struct sl_limit_params p[SL_MAX_MATCH];
	struct sl_limit_state *s[SL_MAX_MATCH];
	struct sl_limit_result r;
	uint32_t i, div, best = 0;
	uint64_t left = UINT64_MAX;

	w->dec_flags |= SL_DF_DEGRADED;
	w->ctr.degraded++;
	w->tiers_ctr[w->cur_tier + 1].degraded++;
	sl_bucket_begin(w->buckets);
	for (i = 0; i < n; i++) {
		if (ns[i].on_failure == SL_FAIL_CLOSED) {
			refuse(w, &ns[i], NS, NS, 0, id);
			return SL_REQ_STOP;
		}
		div = ns[i].on_failure == SL_LOCAL_STRICT ? w->app->holders
							  : w->app->expected;
		sl_limit_params_init(&p[i], ns[i].algo,
				     RTE_MAX(ns[i].count / div, 1ULL),
				     ns[i].period_ms * 1000000ULL,
				     RTE_MAX(ns[i].burst / div, 1ULL));
		s[i] = sl_bucket_get(w->buckets, &ns[i].key, w->now_ns);
		sl_limit_check(&p[i], s[i], ns[i].cost, w->now_ns, &r);
		if (!r.allow) {
			refuse(w, &ns[i], r.retry_after_ns, r.reset_ns,
			       r.remaining, id);
			return SL_REQ_STOP;
		}
		if (r.remaining < left) {
			left = r.remaining;
			best = i;
		}
	}
	for (i = 0; i < n; i++) {
		sl_limit_commit(&p[i], s[i], ns[i].cost, w->now_ns);
		w->rules[ns[i].slot].allowed++;
	}
	sl_count_allowed(w);
	if (sl_dec_pick(w, 0))
		sl_dec_record(w, SL_V_ALLOWED, ns[best].slot, left, 0, id);
	return SL_REQ_CONTINUE;
}

/* ---- parking ---- */

static void
unlink_entry(struct sl_worker *w, uint16_t i)
{
	struct sl_parked *e = entry(w, i);

	if (e->prev != NIL)
		entry(w, e->prev)->next = e->next;
	else
		w->park_head = e->next;
	if (e->next != NIL)
		entry(w, e->next)->prev = e->prev;
	else
		w->park_tail = e->prev;
	e->in_use = 0;
	w->park_free[w->n_park_free++] = i;
}

enum sl_req_action
sl_park_decide(struct sl_worker *w, struct sl_need *ns, uint32_t n,
	       int parkable, const struct sl_identity *id)
{
	struct sl_lease *ls[SL_MAX_MATCH];
	struct sl_parked *e;
	uint16_t i;
	int unknown, strict, st = evaluate(w, ns, n, ls, &strict, 1, &unknown);
	uint32_t j;

	/* every arrival counts towards the rate, refused or waiting too */
	for (j = 0; j < n; j++)
		sl_lease_seen(ls[j], ns[j].cost, w->now_ns);

	if (st == ST_OK) {
		spend(w, ns, n, ls, id);
		return SL_REQ_CONTINUE;
	}
	if (st == ST_REFUSED && (!unknown || !parkable || w->n_park_free == 0 ||
				 ask_missing(w, ns, n, ls) != 0)) {
		refuse_lease(w, &ns[strict], ls[strict], id);
		return SL_REQ_STOP;
	}
	if (st != ST_REFUSED && (!parkable || w->n_park_free == 0 ||
				 ask_missing(w, ns, n, ls) != 0))
		return degrade(w, ns, n, id);
	i = w->park_free[--w->n_park_free];
	e = entry(w, i);
	memset(e, 0, sizeof(*e));
	e->in_use = 1;
	e->n_need = (uint8_t)n;
	memcpy(e->need, ns, n * sizeof(ns[0]));
	e->id = *id;
	e->tier = w->cur_tier;
	e->deadline_ns = w->now_ns + w->app->store_timeout_ns;
	e->next = NIL;
	e->prev = w->park_tail;
	if (w->park_tail != NIL)
		entry(w, w->park_tail)->next = i;
	else
		w->park_head = i;
	w->park_tail = i;
	w->park_new = i;
	w->ctr.parked++;
	return SL_REQ_PARK;
}

void
sl_park_attach(struct sl_worker *w, struct rte_mbuf *m, const struct sl_pkt *p,
	       const struct sl_flow_key *k, struct sl_flow *f,
	       uint32_t rest_off)
{
	struct sl_parked *e = entry(w, w->park_new);

	e->m = m;
	e->p = *p;
	e->fk = *k;
	e->rest_off = rest_off;
	e->rest_len = p->payload_len > rest_off ? p->payload_len - rest_off : 0;
	e->first = w->first;
	e->head_off = w->head_off;
	f->park_idx = w->park_new;
}

void
sl_park_hold(struct sl_worker *w, struct sl_flow *f, struct rte_mbuf *m)
{
	struct sl_parked *e = entry(w, f->park_idx);

	if (!e->in_use || e->n_held == SL_PARK_HELD) {
		/* the client sends it again: TCP does not lose it */
		w->ctr.park_dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	e->held[e->n_held++] = m;
}

/* The decision for a parked request is made: carry it out. */
static void
finish(struct sl_worker *w, uint16_t i, enum sl_req_action a)
{
	struct sl_parked *e = entry(w, i);
	struct sl_flow *f = sl_flow_lookup(w->flows, &e->fk);
	struct rte_mbuf *held[SL_PARK_HELD];
	uint8_t nh = e->n_held, k;

	memcpy(held, e->held, sizeof(held));
	/* how long it waited: the coordinator's added latency */
	sl_hist_add(&w->park_latency,
		    sl_tsc_ns(w->app, rte_rdtsc()) -
			    (e->deadline_ns - w->app->store_timeout_ns));
	if (f != NULL && f->park_idx != i)
		f = NULL; /* the flow was evicted and picked up again */
	if (a == SL_REQ_CONTINUE) {
		const uint8_t *pl = rte_pktmbuf_mtod(e->m, const uint8_t *) +
				    e->p.payload_off;

		/* body bytes that followed the head, before the mbuf is sent */
		if (f != NULL)
			sl_flow_resume(w->flows, f, pl + e->rest_off,
				       e->rest_len, NULL, NULL);
		sl_worker_send(w, UP, e->m);
	} else if (f != NULL && !e->first) {
		/*
		 * Refused behind requests of its segment that went on: its
		 * answer would take their place. They go on alone; it is
		 * decided again when the client sends it again.
		 */
		w->pending.tpl = NULL;
		sl_flow_cut_back(w->flows, f, e->p.seq,
				 rte_pktmbuf_mtod(e->m, const uint8_t *) +
					 e->p.payload_off,
				 e->head_off);
		sl_reply_prefix(w, e->m, &e->p, e->head_off);
	} else {
		if (f != NULL) {
			f->parked = 0;
			f->state = SL_FLOW_ABSORB;
		}
		sl_reply_send(w, e->m, f, &e->p);
	}
	unlink_entry(w, i);
	/* what the client sent meanwhile, in order, as if it came now */
	for (k = 0; k < nh; k++)
		sl_worker_handle(w, held[k], 0);
}

static void
try_resolve(struct sl_worker *w, uint16_t i)
{
	struct sl_parked *e = entry(w, i);
	struct sl_lease *ls[SL_MAX_MATCH];
	int unknown, strict,
		st = evaluate(w, e->need, e->n_need, ls, &strict, 0, &unknown);
	int late = w->now_ns >= e->deadline_ns;

	w->cur_tier = e->tier;
	w->dec_flags = SL_DF_PARKED;
	if (st == ST_OK) {
		spend(w, e->need, e->n_need, ls, &e->id);
		finish(w, i, SL_REQ_CONTINUE);
	} else if (st == ST_REFUSED && unknown && !late) {
		return; /* refused: waits to learn whether more strictly */
	} else if (st == ST_REFUSED &&
		   !slot_live(w->pol, e->need[strict].slot)) {
		/* the rule that refused was removed while it waited */
		finish(w, i, SL_REQ_CONTINUE);
	} else if (st == ST_REFUSED) {
		refuse_lease(w, &e->need[strict], ls[strict], &e->id);
		finish(w, i, SL_REQ_STOP);
	} else if (w->now_ns >= e->deadline_ns ||
		   ask_missing(w, e->need, e->n_need, ls) != 0) {
		finish(w, i, degrade(w, e->need, e->n_need, &e->id));
	}
}

static void
give_back(void *arg, const struct sl_bucket_key *k, void *value)
{
	struct sl_worker *w = arg;
	struct sl_lease *l = value;

	if (l->units > 0)
		send_back(w, k, l, l->units);
}

unsigned int
sl_park_poll(struct sl_worker *w)
{
	struct sl_coord_msg a[64];
	unsigned int n, j;
	uint16_t i, next;

	n = rte_ring_dequeue_burst_elem(w->app->coord->ans[w->queue], a,
					sizeof(a[0]), RTE_DIM(a), NULL);
	sl_bucket_begin(w->leases);
	for (j = 0; j < n; j++) {
		struct sl_bucket_key k = {a[j].k1, a[j].k2};
		struct sl_lease *l;
		uint64_t old;

		if (a[j].type == SL_CO_TIER_ANSWER) {
			tier_answer(w, &a[j]);
			continue;
		}
		l = lease_of(w, &k);
		old = sl_lease_expire(l, w->now_ns);

		/* units of an expired lease go back before new ones count */
		if (old > 0)
			send_back(w, &k, l, old);
		sl_lease_granted(l, a[j].ans.granted, a[j].ans.expires_ns,
				 a[j].ans.retry_ns, a[j].ans.reset_ns,
				 a[j].ans.remaining, w->now_ns);
		touch(w, l);
	}
	/* oldest first: the first to wait is the first served */
	for (i = w->park_head; i != NIL && (n > 0 || w->n_parked_timeouts_due);
	     i = next) {
		next = entry(w, i)->next;
		try_resolve(w, i);
	}
	w->n_parked_timeouts_due =
		w->park_head != NIL &&
		w->now_ns >= entry(w, w->park_head)->deadline_ns;
	sl_bucket_sweep(w->leases, w->now_ns, 32, give_back, w);
	return n;
}

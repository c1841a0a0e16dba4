/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lease client: a request's enforcing limits spent from leases the
 * coordinator granted, more asked for ahead of need, and a request that
 * finds a lease empty parked until the answer (or degraded by its rule's
 * on_store_failure when it cannot wait). Returns verdicts; the worker
 * carries them out.
 */
#include <string.h>

#include <rte_lcore.h>

#include "dp.h"

enum { ST_OK = 0, ST_EMPTY, ST_REFUSED };

static struct sl_lease *
lease_of(struct sl_worker *w, const struct sl_bucket_key *k)
{
	return (struct sl_lease *)sl_bucket_get(w->leases, k, w->now_ns);
}

static void
send_back(struct sl_worker *w, const struct sl_bucket_key *k,
	  const struct sl_lease *l, uint64_t units)
{
	/* a full ring loses them: fewer admissions, never more */
	if (sl_lease_units_msg(w, k, l, SL_CO_GIVE_BACK, units) != 0)
		w->ctr.back_unreported += units;
}

static int
ask(struct sl_worker *w, const struct sl_need *n, struct sl_lease *l,
    uint64_t want, uint64_t need)
{
	struct sl_coord_msg m = {.k1 = n->key.k1,
				 .k2 = n->key.k2,
				 .type = SL_CO_ASK,
				 .algo = n->algo,
				 .worker = (uint8_t)w->queue,
				 .subs = n->subs,
				 .period_ms = n->period_ms};

	m.ask.count = n->count;
	m.ask.burst = n->burst;
	m.ask.want = (uint32_t)(want > UINT32_MAX ? UINT32_MAX : want);
	m.ask.need = (uint32_t)need;
	m.ask.on_failure = n->on_failure;
	m.ask.global = n->global;
	m.ask.rid = n->rid;
	m.ask.gcount = n->gcount;
	m.ask.seen = l->seen;
	m.ask.div_open = w->app->expected;
	m.ask.div_strict = w->app->holders;
	/* a key above its limit queues for its next lease in the store */
	if (sl_need_saturated(w, n, l))
		m.ask.ahead_ms = SL_LEASE_AHEAD_MS;
	if (sl_to_coord(w, &m) != 0)
		return -1;
	l->seen = 0;
	l->seen_ms = (uint32_t)(w->now_ns / 1000000);
	sl_lease_asked(l, w->now_ns, sl_ask_stale_ns(w));
	sl_lease_number(w, l, n);
	sl_lease_touch(w, l);
	w->ctr.coord_asks++;
	return 0;
}

/* A global rule's demand sent on its own when no ask carried it lately
 * (a full ring keeps it for the next). */
static void
report_demand(struct sl_worker *w, const struct sl_need *n, struct sl_lease *l)
{
	uint32_t now_ms = (uint32_t)(w->now_ns / 1000000);
	struct sl_coord_msg m = {.k1 = n->key.k1,
				 .k2 = n->key.k2,
				 .type = SL_CO_DEMAND,
				 .worker = (uint8_t)w->queue,
				 .period_ms = n->period_ms};

	if (now_ms - l->seen_ms < SL_DEMAND_MS)
		return;
	m.ask.global = 1;
	m.ask.rid = n->rid;
	m.ask.gcount = n->gcount;
	m.ask.seen = l->seen;
	if (sl_to_coord(w, &m) != 0)
		return;
	l->seen = 0;
	l->seen_ms = now_ms;
}

static uint64_t
want_of(const struct sl_worker *w, const struct sl_need *n,
	const struct sl_lease *l, uint32_t behind)
{
	struct sl_lease_sizing z = sl_sizing_of(w, n);

	/* the log is decided by the authority per request: a grant is
	 * logged when given, so only what is spent on it is asked for (the
	 * request and the heads behind it, read on as it comes) */
	if (n->algo == SL_LIM_SLIDING_LOG)
		return (uint64_t)n->cost * (1 + behind);
	z.waiting = (uint64_t)n->cost * (1 + behind);
	return sl_lease_want(l, &z, n->cost);
}

static int
need_state(const struct sl_worker *w, const struct sl_need *n,
	   const struct sl_lease *l)
{
	if (sl_lease_until(l, n->cost, w->now_ns) > w->now_ns)
		return ST_REFUSED;
	if (sl_lease_holds(l, n->cost, w->now_ns))
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
renumber(struct sl_worker *w, const struct sl_need *n, struct sl_lease *l)
{
	struct sl_share old;
	/* a global rule's slice moved (the aggregator): the same bucket in
	 * the region's store at a new rate, which it keeps (no refill is
	 * handed out, a lowered burst binds at once), and the key's demand
	 * is the same demand. Raised, the units the store already granted
	 * this holder are spent as granted: dropping them at every
	 * rebalance would refuse a saturated key a whole lease each time.
	 * Lowered, they go back: reserved up to SL_LEASE_AHEAD_MS ahead at
	 * the old rate, they are the store bucket's debt, which the lower
	 * rate would repay for seconds (a region back at its static slice
	 * admitted 0.45 x it for 6 s, 0.84 x with them given back). */
	int resliced = n->global && l->period_ms == n->period_ms &&
		       l->algo == n->algo && l->subs == n->subs;

	if (l->count == 0 || (l->count == n->count && l->burst == n->burst &&
			      l->period_ms == n->period_ms &&
			      l->algo == n->algo && l->subs == n->subs))
		return;
	l->refused_until = 0;
	if (resliced && n->count < l->count && l->units > 0) {
		send_back(w, &n->key, l, l->units); /* at the old numbers */
		l->units = 0;
		l->paced_ns = 0;
	}
	if (!resliced) {
		l->units = 0;
		l->paced_ns = 0;
		l->asked_ns = 0;
	}
	/* an edit hands out nothing, as the store's buckets do: what the
	 * slice had left carries over, at most the new burst (it restarted
	 * full, and every reload gave each key a slice's burst more: 321
	 * admitted where at most 120 could be, test_race) */
	sl_lease_charge_pending(l, w->now_ns); /* under the old numbers */
	old = l->slice;
	sl_share_of(&l->slice, n->count, n->burst, n->period_ms * 1000000ULL,
		    w->app->holders);
	if (old.period_ns != 0)
		sl_ledger_renumber(&l->share, &old, &l->slice, w->now_ns);
	else
		memset(&l->share, 0, sizeof(l->share));
	l->spent_pending = 0;
	/* new numbers: not known to be at the limit, and the demand seen
	 * under the old ones no measure of it */
	if (!resliced) {
		l->refused_at = 0;
		l->refused_n = 0;
		l->gap = 0;
		l->last_ns = 0;
		l->win_units = 0;
	}
	l->count = n->count;
	l->burst = n->burst;
	l->period_ms = n->period_ms;
	l->algo = n->algo;
	l->subs = n->subs;
}

/*
 * The state of a decision's leases: ST_OK, or ST_EMPTY while one must be
 * asked for, or ST_REFUSED when one is refused and none is unknown: the
 * strictest limit wins, so a refusal waits for what the others say
 * (*unknown is set then) rather than name a lesser one. *strict: the
 * longest refusal. f: the flow of a fresh request (not a parked one),
 * whose first lease is found through its hint.
 */
static int
evaluate(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	 struct sl_lease **ls, int *strict, struct sl_flow *f, int *unknown)
{
	int worst = ST_OK;
	uint32_t i;

	*strict = -1;
	*unknown = 0;
	sl_bucket_begin(w->leases);
	for (i = 0; i < n; i++) {
		int st;

		ls[i] = i == 0 && f != NULL ? (struct sl_lease *)sl_hinted_get(
						      w, f, &ns[i].key)
					    : lease_of(w, &ns[i].key);
		renumber(w, &ns[i], ls[i]);
		st = need_state(w, &ns[i], ls[i]);
		if (st == ST_REFUSED &&
		    (*strict < 0 ||
		     sl_lease_until(ls[i], ns[i].cost, w->now_ns) >
			     sl_lease_until(ls[*strict], ns[*strict].cost,
					    w->now_ns)))
			*strict = (int)i;
		*unknown += st == ST_EMPTY;
		if (st > worst)
			worst = st;
	}
	return worst;
}

/*
 * How many heads a waiting request's segment holds behind it, at most
 * 255: past its own Content-Length body, each blank line ends one (a
 * later body's count too: units asked for and not spent go back with
 * the lease).
 */
static uint32_t
heads_behind(const struct sl_req *r)
{
	const uint8_t *b = r->rest, *end = r->rest + r->rest_len, *q;
	uint32_t k = 0;

	if (r->http->has_cl && !r->http->chunked)
		b += r->http->content_length < r->rest_len
			     ? r->http->content_length
			     : r->rest_len;
	while (k < 255 && b < end &&
	       (q = memmem(b, (size_t)(end - b), "\r\n\r\n", 4)) != NULL) {
		k++;
		b = q + 4;
	}
	return k;
}

/* The units a request and the heads behind it spend of a limit, as
 * many as one grant can hold (sl_lease_want: never beyond the burst). */
static uint64_t
units_for(const struct sl_need *n, uint32_t behind)
{
	uint64_t want = (uint64_t)n->cost * (1 + behind);

	return n->burst > 0 && want > n->burst ? n->burst : want;
}

static int
pending(const struct sl_worker *w, const struct sl_lease *l)
{
	return sl_lease_pending(l, w->now_ns, w->app->store_timeout_ns);
}

/* One limit's ask, sized for a request and the heads behind it. */
static int
ask_for(struct sl_worker *w, const struct sl_need *n, struct sl_lease *l,
	uint32_t behind)
{
	uint64_t want = want_of(w, n, l, behind);

	/* a saturated key asks for its whole lease or nothing where the
	 * store reserves it (its units come good at the rate, one call a
	 * lease); the node's own authority does not, and a whole lease
	 * refused there would refuse the key until all of it refilled (2 s
	 * of a 10/s key just raised from 2/min, its client at 0.67 of the
	 * new limit refused throughout) */
	return ask(w, n, l, want,
		   sl_need_saturated(w, n, l) && w->app->reserves ? want
								  : n->cost);
}

/*
 * Asks for the leases a request lacks; behind: the heads that wait with
 * it (read on once it is granted, none of them can wait again), so that
 * the grant is sized for them too, within a lease's bounds.
 */
static int
ask_missing(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	    struct sl_lease **ls, uint32_t behind)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (need_state(w, &ns[i], ls[i]) == ST_EMPTY &&
		    !pending(w, ls[i]) &&
		    ask_for(w, &ns[i], ls[i], behind) != 0)
			return -1;
	return 0;
}

/* What a lease's limit has left as this worker knows it: the authority's
 * count at its last grant plus what the worker still holds. */
static uint64_t
left_of(const struct sl_lease *l)
{
	return l->remaining + l->units;
}

/* The limit of the request with the least left. */
static uint32_t
least_left(struct sl_lease **ls, uint32_t n)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (left_of(ls[i]) < left_of(ls[best]))
			best = i;
	return best;
}

/* For the decision stream: the limit with the least left. */
static void
note_spent(struct sl_worker *w, const struct sl_req *r,
	   const struct sl_need *ns, uint32_t n, struct sl_lease **ls)
{
	uint32_t best = least_left(ls, n);

	sl_dec_record(w, r, SL_V_ALLOWED, ns[best].slot, left_of(ls[best]), 0);
}

/* A request decided with units of a degraded answer is counted so, as
 * one decided by the worker alone is (degrade.c). */
static void
note_degraded(struct sl_worker *w, struct sl_req *r, const struct sl_need *ns,
	      uint32_t n, struct sl_lease **ls)
{
	uint32_t i, any = 0;

	for (i = 0; i < n; i++)
		if (ls[i]->degraded) {
			w->rules[ns[i].slot].degraded++;
			any = 1;
		}
	if (!any)
		return;
	r->flags |= SL_DF_DEGRADED;
	w->ctr.degraded++;
	w->tiers_ctr[r->tier + 1].degraded++;
}

/*
 * What an allowed response says is left (r): never more than the client
 * could spend now without a refusal. Where this worker is the limit's
 * only holder, the authority's count at its last answer plus the lease
 * (the count only grows as it refills); where other workers or
 * appliances hold leases of it too, what they took since is unknown
 * here, so only the lease's units good now: a lower bound, and the
 * next lease usually comes before they are spent (asked at half).
 */
static uint64_t
told_left(const struct sl_worker *w, const struct sl_lease *l)
{
	if (w->app->holders <= 1)
		return left_of(l);
	return sl_lease_until(l, 1, w->now_ns) == 0 ? l->units : 0;
}

/* The response's budget: the limit with the least left. */
static void
budget_of(struct sl_worker *w, struct sl_verdict *v, const struct sl_need *ns,
	  uint32_t n, struct sl_lease **ls)
{
	uint32_t i, best = 0;
	uint64_t q, w_s;
	int rule;

	for (i = 1; i < n; i++)
		if (told_left(w, ls[i]) < told_left(w, ls[best]))
			best = i;
	rule = ns[best].slot < SL_MAX_RULES
		       ? w->pol->rule_of_slot[ns[best].slot]
		       : -1;
	if (rule < 0)
		return;
	sl_rule_quota(w->pol, rule, ns[best].algo, ns[best].count,
		      ns[best].period_ms * 1000000ULL, ns[best].burst, &q,
		      &w_s);
	sl_budget_set(w, v, (uint16_t)rule, q, w_s, told_left(w, ls[best]),
		      ls[best]->reset_ns);
}

static struct sl_verdict
spend(struct sl_worker *w, struct sl_req *r, const struct sl_need *ns,
      uint32_t n, struct sl_lease **ls)
{
	struct sl_verdict v = sl_verdict_go();
	uint32_t i;

	note_degraded(w, r, ns, n, ls);
	for (i = 0; i < n; i++) {
		uint64_t want;
		int sat;

		sl_lease_take(ls[i], ns[i].cost, w->now_ns);
		/* the worker's slice is charged with every unit it admits */
		ls[i]->spent_pending += ns[i].cost;
		sl_lease_touch(w, ls[i]);
		sl_rule_allowed(w, ns[i].slot);
		want = want_of(w, &ns[i], ls[i], 0);
		sat = sl_need_saturated(w, &ns[i], ls[i]);
		/* ask ahead, so that most requests never wait (not while
		 * the authority's refusal holds: units held are spent under
		 * it, and each ask would be refused again) */
		if (ns[i].algo != SL_LIM_SLIDING_LOG &&
		    ls[i]->refused_until <= w->now_ns &&
		    sl_lease_ask_ahead(ls[i], want, sat, w->app->reserves,
				       w->now_ns) &&
		    !sl_lease_pending(ls[i], w->now_ns,
				      w->app->store_timeout_ns))
			ask(w, &ns[i], ls[i], want, sat ? want : 1);
	}
	sl_count_allowed(w, r);
	if (sl_dec_pick(w, 0))
		note_spent(w, r, ns, n, ls);
	if (w->pol->budget)
		budget_of(w, &v, ns, n, ls);
	if (w->pol->any_cost)
		sl_cost_pick(w, ns, n);
	return v;
}

/* Whether a rule slot is still in the running rules. */
static int
slot_live(const struct sl_policy *pol, uint16_t slot)
{
	return slot < SL_MAX_RULES && pol->rule_of_slot[slot] >= 0;
}

/* Refused by the authority: its words, until its retry time. */
static struct sl_verdict
refuse_lease(struct sl_worker *w, struct sl_req *r, const struct sl_need *n,
	     struct sl_lease *l)
{
	note_degraded(w, r, n, 1, &l);
	return sl_verdict_need(
		w, r, n, sl_lease_until(l, n->cost, w->now_ns) - w->now_ns,
		l->reset_ns, l->remaining);
}

/* Every arrival counts towards the rate, refused or waiting too. */
static void
arrived(struct sl_worker *w, const struct sl_need *ns, uint32_t n,
	struct sl_lease **ls)
{
	uint32_t j;

	for (j = 0; j < n; j++) {
		sl_lease_seen(ls[j], ns[j].cost, w->now_ns);
		if (ns[j].global)
			report_demand(w, &ns[j], ls[j]);
	}
}

static uint16_t
park(struct sl_worker *w, const struct sl_req *r, const struct sl_need *ns,
     uint32_t n, uint32_t behind)
{
	uint16_t i = sl_parkq_add(&w->parkq, ns, n, r->id, r->tier,
				  w->now_ns + w->app->store_timeout_ns);

	sl_parkq_entry(&w->parkq, i)->behind = (uint8_t)behind;
	return i;
}

struct sl_verdict
sl_leased_decide(struct sl_worker *w, struct sl_req *r,
		 const struct sl_need *ns, uint32_t n)
{
	struct sl_lease *ls[SL_MAX_MATCH];
	int unknown, strict, st;
	int wait = r->parkable && !sl_parkq_full(&w->parkq);
	uint32_t behind;

	st = evaluate(w, ns, n, ls, &strict, r->flow, &unknown);
	arrived(w, ns, n, ls);

	if (st == ST_OK)
		return spend(w, r, ns, n, ls);
	behind = wait && r->rest_len > 0 ? heads_behind(r) : 0;
	if (st == ST_REFUSED &&
	    (!unknown || !wait || ask_missing(w, ns, n, ls, behind) != 0))
		return refuse_lease(w, r, &ns[strict], ls[strict]);
	if (st != ST_REFUSED &&
	    (!wait || ask_missing(w, ns, n, ls, behind) != 0))
		return sl_degrade(w, r, ns, ls, n, 0);
	w->ctr.parked++;
	return (struct sl_verdict){.action = SL_REQ_PARK,
				   .park = park(w, r, ns, n, behind)};
}

struct sl_verdict
sl_leased_wait_tier(struct sl_worker *w, struct sl_req *r,
		    const struct sl_need *ns, uint32_t n,
		    const struct sl_bucket_key *asked)
{
	uint16_t i = park(w, r, ns, n,
			  r->parkable && r->rest_len > 0 ? heads_behind(r) : 0);
	struct sl_parked *e = sl_parkq_entry(&w->parkq, i);

	e->tier_wait = 1;
	e->tier_k = *asked;
	w->ctr.parked++;
	w->ctr.tier_waits++;
	return (struct sl_verdict){.action = SL_REQ_PARK, .park = i};
}

/*
 * A request that waited for its key's tier: the limits of other tiers
 * dropped once it is known (the default tier's where the answer did not
 * come in time). 0 while it still waits.
 */
static int
tier_known(struct sl_worker *w, struct sl_parked *e)
{
	int t = sl_tier_known(w, &e->tier_k);
	uint32_t i, k = 0;
	uint64_t th;

	if (t == SL_TIER_ANY && w->now_ns < e->deadline_ns)
		return 0;
	if (t == SL_TIER_ANY)
		t = sl_ruleset_default_tier(w->pol->rs);
	th = sl_ruleset_tier_hash_of(w->pol->rs, t);
	for (i = 0; i < e->n_need; i++)
		if (e->need[i].tier_h == 0 || e->need[i].tier_h == th)
			e->need[k++] = e->need[i];
	e->n_need = (uint8_t)k;
	e->tier = (int16_t)t;
	e->tier_wait = 0;
	return 1;
}

/*
 * A grant that covers the waiting request but not the heads behind it
 * (asked for by an earlier request of the key while this one parked, or
 * spent by it): asked again once, and waited for while an ask for it is
 * out, rather than the heads being decided by the worker alone. 1 while
 * it waits. Called with every lease holding the request's own units.
 */
static int
short_of(struct sl_worker *w, struct sl_parked *e, struct sl_lease **ls)
{
	uint32_t i;
	int wait = 0;

	if (e->behind == 0)
		return 0;
	for (i = 0; i < e->n_need; i++) {
		const struct sl_need *n = &e->need[i];
		uint64_t want = units_for(n, e->behind);

		/* the log's grants are a request's each (want_of): asking
		 * again would not cover more */
		if (n->algo == SL_LIM_SLIDING_LOG || ls[i]->units >= want)
			continue;
		/* at the limit's edge (the authority's count at its last
		 * answer short of it) the answer could only refuse: a
		 * store call and a wait for nothing; they go on with what
		 * the lease holds, as they did */
		if (ls[i]->remaining < want - ls[i]->units)
			continue;
		if (pending(w, ls[i]))
			wait = 1;
		else if (!e->topped && ask_for(w, n, ls[i], e->behind) == 0)
			wait = 1;
	}
	e->topped = 1;
	return wait;
}

int
sl_leased_resolve(struct sl_worker *w, struct sl_parked *e,
		  struct sl_verdict *v)
{
	struct sl_lease *ls[SL_MAX_MATCH];
	struct sl_req r = {.id = &e->id, .flags = SL_DF_PARKED};
	int unknown, strict, st, late = w->now_ns >= e->deadline_ns;
	int waited_tier = e->tier_wait;

	if (waited_tier && !tier_known(w, e))
		return -1;
	r.tier = e->tier;
	st = evaluate(w, e->need, e->n_need, ls, &strict, NULL, &unknown);
	/* its arrival, counted once its limits were known */
	if (waited_tier)
		arrived(w, e->need, e->n_need, ls);
	w->cost_next_set = 0;
	w->hl_n = 0;
	if (st == ST_OK && !late && short_of(w, e, ls)) {
		return -1;
	} else if (st == ST_OK) {
		*v = spend(w, &r, e->need, e->n_need, ls);
	} else if (st == ST_REFUSED && unknown && !late) {
		return -1; /* refused: waits to learn whether more strictly */
	} else if (st == ST_REFUSED &&
		   !slot_live(w->pol, e->need[strict].slot)) {
		/* the rule that refused was removed while it waited */
		*v = sl_verdict_go();
	} else if (st == ST_REFUSED) {
		*v = refuse_lease(w, &r, &e->need[strict], ls[strict]);
	} else if (late ||
		   ask_missing(w, e->need, e->n_need, ls, e->behind) != 0) {
		*v = sl_degrade(w, &r, e->need, ls, e->n_need, late);
	} else {
		return -1;
	}
	return 0;
}

/*
 * An answer to an ask for units this worker has meanwhile admitted alone
 * (the answer was late): its units cover them first; what they do not
 * cover waits for the next answer while more asks are out (the authority
 * may well have granted them to those already: reported now, a unit and
 * its grant crossed, and up to 167 were admitted where 120 could be,
 * test_race under ThreadSanitizer), and is reported taken by the last —
 * each admission counted once.
 */
static void
settle(struct sl_worker *w, const struct sl_bucket_key *k, struct sl_lease *l,
       struct sl_coord_msg *a)
{
	uint64_t cover;

	if (l->owed == 0)
		return;
	cover = RTE_MIN((uint64_t)a->ans.granted, (uint64_t)l->owed);
	a->ans.granted -= (uint32_t)cover;
	l->owed -= (uint32_t)cover;
	/* this answer is the last */
	if (l->owed > 0 &&
	    sl_lease_asks_out(l, w->now_ns, sl_ask_stale_ns(w)) <= 1) {
		sl_report_taken(w, k, l, l->owed);
		l->owed = 0;
	}
}

static void
give_back(void *arg, const struct sl_bucket_key *k, void *value)
{
	struct sl_worker *w = arg;
	struct sl_lease *l = value;

	if (l->units > 0)
		send_back(w, k, l, l->units);
	/* an answer that never came: what it was to cover is taken */
	if (l->owed > 0)
		sl_report_taken(w, k, l, l->owed);
	l->owed = 0;
}

unsigned int
sl_leased_answers(struct sl_worker *w)
{
	struct sl_coord_msg a[64];
	unsigned int n, j;

	n = rte_ring_dequeue_burst_elem(w->app->lanes->ans[w->queue], a,
					sizeof(a[0]), RTE_DIM(a), NULL);
	sl_bucket_begin(w->leases);
	for (j = 0; j < n; j++) {
		struct sl_bucket_key k = {a[j].k1, a[j].k2};
		struct sl_lease *l;
		uint64_t old;

		if (a[j].type == SL_CO_TIER_ANSWER) {
			sl_tier_answer(w, &a[j]);
			continue;
		}
		l = lease_of(w, &k);
		old = sl_lease_expire(l, w->now_ns);

		/* units of an expired lease go back before new ones count */
		if (old > 0)
			send_back(w, &k, l, old);
		settle(w, &k, l, &a[j]);
		sl_lease_charge_pending(l, w->now_ns);
		sl_lease_granted(l, a[j].ans.granted, a[j].ans.expires_ns,
				 a[j].ans.retry_ns, a[j].ans.reset_ns,
				 a[j].ans.remaining, w->now_ns);
		l->degraded = a[j].ans.degraded;
		/* the store answers again: the next outage drains again */
		if (!a[j].ans.degraded)
			l->drained = 0;
		sl_lease_touch(w, l);
	}
	return n;
}

void
sl_leased_sweep(struct sl_worker *w)
{
	sl_bucket_sweep(w->leases, w->now_ns, 32, give_back, w);
}

int
sl_leased_init(struct sl_worker *w)
{
	w->leases = sl_bucket_table_create_sized(
		w->app->cfg->dataplane.buckets_per_worker,
		sizeof(struct sl_lease));
	if (w->leases == NULL || sl_tiers_init(w) != 0 ||
	    sl_parkq_init(&w->parkq, rte_lcore_to_socket_id(w->lcore)) != 0)
		return -1;
	return 0;
}

void
sl_leased_free(struct sl_worker *w)
{
	sl_parkq_free(&w->parkq);
	sl_bucket_table_free(w->leases);
	w->leases = NULL;
	sl_tiers_free(w);
}

void
sl_leased_settle(struct sl_worker *w, const struct sl_need *n, int64_t d)
{
	struct sl_lease *l;
	uint64_t u = d > 0 ? (uint64_t)d : (uint64_t)-d, from_lease = 0;

	sl_bucket_begin(w->leases);
	l = lease_of(w, &n->key);
	renumber(w, n, l);
	sl_lease_number(w, l, n);
	if (d > 0) {
		/* units held cover it first; the rest the authority is told
		 * of, as units taken (its bucket into debt if need be) */
		if (w->now_ns < l->expires_ns)
			from_lease = l->units < u ? l->units : u;
		l->units -= from_lease;
		l->spent_pending += (uint32_t)u;
		if (u > from_lease)
			sl_lease_taken(w, &n->key, l,
				       (uint32_t)(u - from_lease));
	} else {
		sl_lease_charge_pending(l, w->now_ns);
		sl_ledger_credit(&l->share, &l->slice, u, w->now_ns);
		send_back(w, &n->key, l, u);
	}
	sl_lease_touch(w, l);
}

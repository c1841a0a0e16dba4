/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decision for one request: blocklist, then every matching limit
 * checked, all charged or none, the strictest denial answered.
 */
#include <string.h>

#include "dp.h"

#define NS 1000000000ULL

/* A rule's scope for this request, hashed once per scope per request. */
struct scope_id {
	struct sl_scope_id id;
	uint8_t done;
};

static void
scope_bytes(struct scope_id *s, uint8_t scope, const struct sl_http_req *req,
	    const struct sl_identity *id)
{
	sl_scope_of(scope, req, id, &s->id);
	s->done = 1;
}

struct check {
	uint16_t rule;
	uint8_t denied;
	struct sl_bucket_key key;
	struct sl_limit_state *st;
	struct sl_limit_params params;
	struct sl_limit_result res;
};

/* The bucket of a rule for this request, and its numbers (overrides in). */
static struct sl_bucket_key
rule_key(struct sl_worker *w, const struct sl_policy *pol, uint16_t rule,
	 const struct scope_id *s, struct sl_limit_params *params,
	 const struct sl_override **op)
{
	const struct sl_rule *r = sl_ruleset_rule(pol->rs, rule);
	uint64_t w2[2];
	struct sl_bucket_key k;
	const struct sl_override *o = NULL;

	sl_bucket_words(sl_ruleset_rule_id(pol->rs, rule), &s->id, w2);
	k = (struct sl_bucket_key){w2[0], w2[1]};
	*params = pol->params[rule];
	if (s->id.kind != 0xff)
		o = sl_ruleset_override(
			pol->rs, rule, s->id.kind, s->id.b, s->id.len,
			w->app->wall0_s + (int64_t)(w->now_ns / NS));
	if (o != NULL)
		sl_rule_params(r, &o->limit, o->burst, params);
	if (op != NULL)
		*op = o;
	return k;
}

/* first: the decision's first limit, found through the flow's hint */
static void
check_one(struct sl_worker *w, const struct sl_req *q, struct check *c,
	  struct scope_id *s, int first)
{
	const struct sl_policy *pol = w->pol;
	const struct sl_rule *r = sl_ruleset_rule(pol->rs, c->rule);
	struct sl_bucket_key k = rule_key(w, pol, c->rule, s, &c->params, NULL);
	struct sl_bucket_table *t =
		r->algo == SL_ALGO_SLIDING_LOG ? w->logs : w->buckets;

	c->key = k;
	c->st = first && t == sl_hint_table(w)
			? sl_hinted_get(w, q->flow, &k)
			: sl_bucket_get(t, &k, w->now_ns);
	sl_limit_check(&c->params, c->st, r->cost, w->now_ns, &c->res);
}

static void
count_identity(struct sl_worker *w, const struct sl_identity *id)
{
	if (id->kind == SL_ID_KEY)
		w->ctr.ident_key++;
	else if (id->kind == SL_ID_USER)
		w->ctr.ident_user++;
	else
		w->ctr.ident_ip++;
}

/* Charges every limit that allowed; counts per rule. */
static void
commit_all(struct sl_worker *w, struct check *cs, uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, cs[i].rule);
		struct sl_bucket_table *t =
			r->algo == SL_ALGO_SLIDING_LOG ? w->logs : w->buckets;

		if (cs[i].denied) { /* a shadow rule that would have said no */
			w->rules[pol->slot[cs[i].rule]].shadow_rejected++;
			sl_health_keep(w, pol->slot[cs[i].rule]);
			continue;
		}
		sl_limit_commit(&cs[i].params, cs[i].st, r->cost, w->now_ns);
		/* full again once what it holds has drained: the check's
		 * reset already counts this charge */
		sl_bucket_touch(t, cs[i].st, w->now_ns + cs[i].res.reset_ns);
		sl_rule_allowed(w, pol->slot[cs[i].rule]);
	}
}

/* A shadow rule that would have rejected counts once per request. */
static void
count_shadow(struct sl_worker *w, const struct sl_req *q,
	     uint32_t shadow_denied)
{
	w->ctr.shadow_rejected += shadow_denied > 0;
	w->tiers_ctr[q->tier + 1].shadow_rejected += shadow_denied > 0;
}

/* The enforcing limit closest to refusing; n when none enforces. */
static uint32_t
least_left(const struct sl_policy *pol, const struct check *cs, uint32_t n)
{
	uint32_t i, best = n;

	for (i = 0; i < n; i++)
		if (!sl_ruleset_rule(pol->rs, cs[i].rule)->shadow &&
		    (best == n || cs[i].res.remaining < cs[best].res.remaining))
			best = i;
	return best;
}

/* For the decision stream: the enforcing limit closest to refusing. */
static void
note_allowed(struct sl_worker *w, const struct sl_req *q,
	     const struct check *cs, uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	uint32_t best = least_left(pol, cs, n);

	sl_dec_record(w, q, SL_V_ALLOWED,
		      best == n ? SL_DEC_NO_RULE : pol->slot[cs[best].rule],
		      best == n ? 0 : cs[best].res.remaining, 0);
}

/* The response's budget: the enforcing limit with the least left. */
static void
budget_of(struct sl_worker *w, struct sl_verdict *v, const struct check *cs,
	  uint32_t n)
{
	uint32_t best = least_left(w->pol, cs, n);

	if (best < n) {
		const struct sl_limit_params *p = &cs[best].params;
		uint64_t q, w_s;

		sl_rule_quota(w->pol, cs[best].rule, p->algo, p->count,
			      p->period_ns, p->burst, &q, &w_s);
		sl_budget_set(w, v, cs[best].rule, q, w_s,
			      cs[best].res.remaining, cs[best].res.reset_ns);
	}
}

static struct sl_verdict
allowed(struct sl_worker *w, struct sl_req *q, uint32_t shadow_denied,
	const struct check *cs, uint32_t n)
{
	struct sl_verdict v = sl_verdict_go();

	sl_count_allowed(w, q);
	count_shadow(w, q, shadow_denied);
	if (sl_dec_pick(w, 0)) {
		q->flags |= shadow_denied ? SL_DF_SHADOW : 0;
		note_allowed(w, q, cs, n);
	}
	if (w->pol->budget)
		budget_of(w, &v, cs, n);
	return v;
}

/*
 * A global rule's limit here: the slice the aggregator gave this identity
 * in this region, where it gave one (else the static slice, already in
 * n). The slices are read, never kept: a new set is freed after a
 * quiescent point, as the policy is.
 */
static void
sliced(const struct sl_worker *w, const struct sl_rule *r,
       const struct sl_override *o, struct sl_need *n)
{
	const struct sl_slices *t =
		__atomic_load_n(&w->app->slices, __ATOMIC_ACQUIRE);
	uint32_t parts;

	if (!sl_slices_find(t, n->key.k1, n->key.k2, &parts))
		return;
	sl_slice_apply(o != NULL ? o->global_count : r->global_count,
		       o != NULL ? o->global_burst : r->global_burst, parts,
		       &n->count, &n->burst);
}

/* The lease client's view of a rule for this request. */
static void
need_of(struct sl_worker *w, uint16_t rule, const struct scope_id *s,
	struct sl_need *n)
{
	const struct sl_policy *pol = w->pol;
	const struct sl_rule *r = sl_ruleset_rule(pol->rs, rule);
	const struct sl_override *o;
	struct sl_limit_params lp;

	n->key = rule_key(w, pol, rule, s, &lp, &o);
	n->count = lp.count;
	n->burst = lp.burst;
	n->period_ms = lp.period_ms;
	n->algo = lp.algo;
	n->cost = r->cost;
	n->accuracy_ppm = r->accuracy_ppm;
	n->slot = pol->slot[rule];
	n->on_failure = r->on_store_failure;
	n->subs = r->sub_buckets;
	n->tier_h = sl_ruleset_tier_hash_of(pol->rs, r->tier);
	n->global = r->global;
	/* only a global rule's demand is reported, under its id */
	n->rid = r->global ? sl_ruleset_rule_id(pol->rs, rule) : 0;
	n->gcount = 0;
	if (r->global) {
		n->gcount = o != NULL ? o->global_count : r->global_count;
		sliced(w, r, o, n);
	}
}

/*
 * The key's tier is being asked for the first time (asked names its
 * entry) and a rule of some tier matched: the request waits for the
 * answer with every tier's limits, the others dropped once it is known
 * (sl_leased_resolve). Decided under the default tier meanwhile, a pro
 * client's first burst met the free limit. One that cannot wait is
 * decided under the default tier: its limits only.
 */
static struct sl_verdict
wait_for_tier(struct sl_worker *w, struct sl_req *q, struct sl_need *ns,
	      uint32_t k, const struct sl_bucket_key *asked)
{
	uint64_t def = sl_ruleset_tier_hash_of(
		w->pol->rs, sl_ruleset_default_tier(w->pol->rs));
	uint32_t i, j = 0, tiered = 0;

	for (i = 0; i < k; i++)
		tiered += ns[i].tier_h != 0;
	if (tiered == 0)
		return sl_leased_decide(w, q, ns, k);
	if (q->tier_parkable && !sl_parkq_full(&w->parkq))
		return sl_leased_wait_tier(w, q, ns, k, asked);
	for (i = 0; i < k; i++)
		if (ns[i].tier_h == 0 || ns[i].tier_h == def)
			ns[j++] = ns[i];
	return j > 0 ? sl_leased_decide(w, q, ns, j)
		     : allowed(w, q, 0, NULL, 0);
}

/*
 * With a coordinator: every enforcing limit is spent from a lease; shadow
 * rules are counted from this worker's own buckets, never waited for.
 */
static struct sl_verdict
decide_leased(struct sl_worker *w, struct sl_req *q, const uint16_t *idx,
	      uint32_t n, struct scope_id *scopes,
	      const struct sl_bucket_key *asked)
{
	const struct sl_policy *pol = w->pol;
	struct sl_need ns[SL_MAX_MATCH];
	uint32_t i, k = 0, shadow_denied = 0;
	struct sl_verdict v;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, idx[i]);
		struct scope_id *s = &scopes[r->scope];

		if (!s->done)
			scope_bytes(s, r->scope, q->http, q->id);
		if (!r->shadow) {
			need_of(w, idx[i], s, &ns[k++]);
			continue;
		}
		/* a shadow rule's check, zeroed here alone: a check is over
		 * a hundred bytes, cleared for every leased rule before */
		struct check c = {.rule = idx[i]};

		/* a shadow rule of a tier not known yet: not counted */
		if (asked != NULL && r->tier >= 0 &&
		    r->tier != sl_ruleset_default_tier(pol->rs))
			continue;
		check_one(w, q, &c, s, 0);
		c.denied = !c.res.allow;
		shadow_denied += c.denied;
		commit_all(w, &c, 1);
	}
	if (k == 0)
		return allowed(w, q, shadow_denied, NULL, 0);
	q->flags |= shadow_denied ? SL_DF_SHADOW : 0;
	v = asked != NULL ? wait_for_tier(w, q, ns, k, asked)
			  : sl_leased_decide(w, q, ns, k);
	if (v.action != SL_REQ_STOP)
		count_shadow(w, q, shadow_denied);
	return v;
}

static struct sl_verdict
refuse(struct sl_worker *w, int err)
{
	w->ctr.invalid++;
	w->ctr.parse_error[err]++;
	return sl_verdict_stop(&w->pol->tpl400[err]);
}

/*
 * 403 for a blocklisted key (in either credential) or client address,
 * 400 for two credentials naming two keys; *key_tier: the key's tier in
 * the static map. CONTINUE when neither.
 */
static struct sl_verdict
screen(struct sl_worker *w, const struct sl_req *q, int *key_tier)
{
	const struct sl_ruleset *rs = w->pol->rs;
	const struct sl_http_req *req = q->http;
	struct sl_str k = req->api_key, b = req->bearer, p = req->key_param;
	int conflict = sl_http_credentials_conflict(req);

	if ((k.len && sl_ruleset_key_info(rs, k.p, k.len, key_tier)) ||
	    (conflict && sl_ruleset_key_blocked(rs, b.p, b.len)) ||
	    (conflict && p.len && sl_ruleset_key_blocked(rs, p.p, p.len)) ||
	    (w->pol->fib != NULL &&
	     sl_blockfib_blocked(w->pol->fib, q->id->ip_af, q->id->addr)))
		return sl_verdict_blocked(w, q);
	if (conflict)
		return refuse(w, SL_HTTP_E_CREDENTIALS);
	return sl_verdict_go();
}

/* The request's tier: the static map's, else the keys hash's (cached;
 * SL_TIER_ANY while it is first asked, *asked naming the entry). */
static int16_t
tier_of(struct sl_worker *w, const struct sl_http_req *req, int key_tier,
	struct sl_bucket_key *asked)
{
	if (key_tier >= 0)
		return (int16_t)key_tier;
	if (w->app->lanes != NULL && w->app->lanes->store)
		return (int16_t)sl_tier_of(w, req->api_key.p, req->api_key.len,
					   asked);
	return (int16_t)sl_ruleset_default_tier(w->pol->rs);
}

/* The first enforcing limit whose response says its cost, kept for the
 * flow (cost.c). */
static void
cost_of(struct sl_worker *w, const struct check *cs, uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, cs[i].rule);

		if (r->shadow || r->cost_header[0] == '\0')
			continue;
		sl_cost_set(
			w,
			&(struct sl_need){.key = cs[i].key,
					  .count = cs[i].params.count,
					  .burst = cs[i].params.burst,
					  .period_ms = cs[i].params.period_ms,
					  .cost = r->cost,
					  .slot = pol->slot[cs[i].rule],
					  .algo = cs[i].params.algo},
			cs[i].rule, 0);
		return;
	}
}

/* Without a coordinator: every limit from this worker's own buckets. */
static struct sl_verdict
decide_local(struct sl_worker *w, struct sl_req *q, const uint16_t *idx,
	     uint32_t n, struct scope_id *scopes)
{
	const struct sl_policy *pol = w->pol;
	struct check cs[SL_MAX_MATCH];
	uint32_t i, shadow_denied = 0;
	int strict = -1;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, idx[i]);
		struct scope_id *s = &scopes[r->scope];

		if (!s->done)
			scope_bytes(s, r->scope, q->http, q->id);
		cs[i].rule = idx[i];
		check_one(w, q, &cs[i], s, i == 0);
		cs[i].denied = !cs[i].res.allow;
		if (!cs[i].denied)
			continue;
		if (r->shadow) {
			shadow_denied++;
			continue;
		}
		/* the strictest limit is the one that makes the client wait
		 * longest */
		if (strict < 0 ||
		    cs[i].res.retry_after_ns > cs[strict].res.retry_after_ns)
			strict = (int)i;
	}
	if (strict < 0) {
		commit_all(w, cs, n);
		if (pol->any_cost)
			cost_of(w, cs, n);
		return allowed(w, q, shadow_denied, cs, n);
	}
	q->flags |= shadow_denied ? SL_DF_SHADOW : 0;
	return sl_verdict_limited(
		w, q,
		&(struct sl_limit_refusal){
			.rule = cs[strict].rule,
			.slot = pol->slot[cs[strict].rule],
			.algo = cs[strict].params.algo,
			.count = cs[strict].params.count,
			.burst = cs[strict].params.burst,
			.period_ns = cs[strict].params.period_ns,
			.retry_ns = cs[strict].res.retry_after_ns,
			.reset_ns = cs[strict].res.reset_ns,
			.remaining = cs[strict].res.remaining,
			.cost = sl_ruleset_rule(pol->rs,
						(uint32_t)cs[strict].rule)
					->cost});
}

static inline struct sl_verdict
decide(struct sl_worker *w, struct sl_req *q)
{
	const struct sl_policy *pol = w->pol;
	const struct sl_http_req *req = q->http;
	struct sl_identity id;
	struct sl_match_req m;
	struct sl_http_norm nt;
	struct scope_id scopes[5];
	uint16_t idx[SL_MAX_MATCH];
	struct sl_verdict v;
	uint32_t n, i;
	int key_tier = -1, err;
	struct sl_bucket_key asked;

	w->hl_n = 0;
	q->flags = 0;
	q->tier = -1;
	q->id = &id;
	w->cost_next_set = 0;
	err = sl_ident_extract(&w->app->ident, req, q->p->af, q->p->src, &id);
	if (err != 0)
		return refuse(w, err);
	count_identity(w, &id);
	v = screen(w, q, &key_tier);
	if (v.action == SL_REQ_STOP)
		return v;
	err = sl_http_normalize(&pol->norm, req, w->norm_buf,
				w->app->cfg->dataplane.max_head_bytes, &nt);
	if (err != 0)
		return refuse(w, err);
	sl_match_req_init(&m, pol->rs, req, &nt);
	if (m.has_key)
		m.tier = tier_of(w, req, key_tier, &asked);
	/* (counted in the default tier unless it waits to be known) */
	q->tier = m.tier != SL_TIER_ANY
			  ? m.tier
			  : (int16_t)sl_ruleset_default_tier(pol->rs);
	n = sl_ruleset_match(pol->rs, &m, idx, SL_MAX_MATCH);
	/* only the flags: each scope is ~0.5 kB, filled when first used */
	for (i = 0; i < 5; i++)
		scopes[i].done = 0;
	sl_bucket_begin(w->buckets);
	sl_bucket_begin(w->logs);
	if (w->app->lanes != NULL)
		return decide_leased(w, q, idx, n, scopes,
				     m.tier == SL_TIER_ANY ? &asked : NULL);
	return decide_local(w, q, idx, n, scopes);
}

/*
 * Written where the caller keeps it, field by field: a verdict returned
 * whole, or copied whole, was read back 16 bytes at a time over the
 * narrower stores that had just written it, and waited for them to
 * retire (30 % of on_event's samples, on the copy's first load).
 */
void
sl_decide(struct sl_worker *w, struct sl_req *q, struct sl_verdict *out)
{
	struct sl_verdict v = decide(w, q);

	/* a field added to the numbers must be copied below too */
	_Static_assert(sizeof(struct sl_reply_nums) == 5 * sizeof(uint64_t),
		       "sl_decide copies sl_reply_nums field by field");

	out->action = v.action;
	out->park = v.park;
	out->tpl = v.tpl;
	out->nums.retry_after_s = v.nums.retry_after_s;
	out->nums.limit = v.nums.limit;
	out->nums.window_s = v.nums.window_s;
	out->nums.remaining = v.nums.remaining;
	out->nums.reset_s = v.nums.reset_s;
	out->budget = v.budget;
}

struct sl_verdict
sl_decide_invalid(struct sl_worker *w, const struct sl_flow_event *ev)
{
	const struct sl_policy *pol = w->pol;

	w->ctr.invalid++;
	if (ev->kind == SL_EV_HEAD_TOO_LARGE) {
		w->ctr.head_too_large++;
		return sl_verdict_stop(&pol->tpl431);
	}
	if (ev->kind == SL_EV_HEAD_TIMEOUT) {
		w->ctr.head_timeout++;
		return sl_verdict_stop(&pol->tpl408);
	}
	w->ctr.parse_error[ev->req->error]++;
	return sl_verdict_stop(&pol->tpl400[ev->req->error]);
}

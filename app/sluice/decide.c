/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decision for one request: blocklist, then every matching limit
 * checked, all charged or none, the strictest denial answered.
 */
#include <string.h>

#include <rte_malloc.h>

#include "blockfib.h"
#include "coord.h"
#include "sluice.h"

#define NS 1000000000ULL

static const uint8_t algo_of[] = {
	[SL_ALGO_TOKEN_BUCKET] = SL_LIM_TOKEN_BUCKET,
	[SL_ALGO_GCRA] = SL_LIM_GCRA,
	[SL_ALGO_FIXED_WINDOW] = SL_LIM_FIXED_WINDOW,
	[SL_ALGO_SLIDING_WINDOW] = SL_LIM_SLIDING_WINDOW,
	[SL_ALGO_SLIDING_LOG] = SL_LIM_SLIDING_LOG,
};

static int
rule_params(const struct sl_rule *r, const struct sl_rate *rate, uint64_t burst,
	    struct sl_limit_params *out)
{
	return sl_limit_params_init(out, algo_of[r->algo], rate->count,
				    rate->period_ms * 1000000ULL, burst);
}

/* 403, 408, 431 and one 400 per parser error: nothing in them varies. */
static int
build_fixed_replies(struct sl_policy *p)
{
	struct sl_reply_info ri = {.status = 403};
	int e;

	if (sl_reply_tpl_build(&p->tpl403, &ri) != 0)
		return -1;
	ri.status = 431;
	if (sl_reply_tpl_build(&p->tpl431, &ri) != 0)
		return -1;
	ri.status = 408;
	if (sl_reply_tpl_build(&p->tpl408, &ri) != 0)
		return -1;
	ri.status = 400;
	for (e = 0; e < SL_HTTP_E__COUNT; e++) {
		ri.reason = sl_http_err_name(e);
		if (sl_reply_tpl_build(&p->tpl400[e], &ri) != 0)
			return -1;
	}
	return 0;
}

struct sl_policy *
sl_policy_build(const struct sl_config *cfg)
{
	struct sl_policy *p = rte_zmalloc("sl_policy", sizeof(*p), 64);
	uint32_t i;
	int err;

	if (p == NULL)
		return NULL;
	p->rs = sl_ruleset_build(cfg);
	if (p->rs == NULL) {
		rte_free(p);
		return NULL;
	}
	p->fib = sl_blockfib_build(cfg, &err);
	if (err != 0)
		goto fail;
	p->n_rules = sl_ruleset_count(p->rs);
	p->headers = cfg->response.headers == SL_HDR_DRAFT ? SL_RH_DRAFT
		     : cfg->response.headers == SL_HDR_LEGACY
			     ? SL_RH_LEGACY
			     : SL_RH_DRAFT | SL_RH_LEGACY;
	p->expose_rule = cfg->response.expose_rule;
	p->jitter_ppm = cfg->response.retry_jitter_ppm;
	p->dec_ppm[0] = cfg->decisions.sample_ppm;
	p->dec_ppm[1] = cfg->decisions.rejected_ppm;
	p->norm = cfg->request;
	for (i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = sl_ruleset_rule(p->rs, i);
		struct sl_reply_info ri = {.status = 429,
					   .headers = p->headers,
					   .expose_rule = p->expose_rule,
					   .rule = r->name};

		/* the loader already refused what cannot be represented */
		rule_params(r, &r->limit, r->burst, &p->params[i]);
		p->name_len[i] = (uint32_t)strlen(r->name);
		p->slot[i] = (uint16_t)i; /* the reloader maps names to slots */
		ri.rule_len = p->name_len[i];
		if (sl_reply_tpl_build(&p->tpl429_any[i], &ri) != 0)
			goto fail;
		ri.bake = 1;
		ri.limit = r->limit.count;
		ri.window_s = (r->limit.period_ms + 999) / 1000;
		if (sl_reply_tpl_build(&p->tpl429[i], &ri) != 0)
			goto fail;
	}
	if (build_fixed_replies(p) != 0)
		goto fail;
	sl_policy_index_slots(p);
	return p;
fail:
	sl_policy_free(p);
	return NULL;
}

void
sl_policy_index_slots(struct sl_policy *p)
{
	uint32_t i;

	for (i = 0; i < SL_MAX_RULES; i++)
		p->rule_of_slot[i] = -1;
	for (i = 0; i < p->n_rules; i++)
		p->rule_of_slot[p->slot[i]] = (int16_t)i;
}

void
sl_policy_free(struct sl_policy *p)
{
	if (p == NULL)
		return;
	sl_blockfib_free(p->fib);
	sl_ruleset_free(p->rs);
	rte_free(p);
}

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
	struct sl_limit_state *st;
	struct sl_limit_params params;
	struct sl_limit_result res;
};

/* The bucket of a rule for this request, and its numbers (overrides in). */
static struct sl_bucket_key
rule_key(struct sl_worker *w, const struct sl_policy *pol, uint16_t rule,
	 const struct scope_id *s, struct sl_limit_params *params)
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
		rule_params(r, &o->limit, o->burst, params);
	return k;
}

/* first: the decision's first limit, found through the flow's hint */
static void
check_one(struct sl_worker *w, const struct sl_policy *pol, struct check *c,
	  struct scope_id *s, int first)
{
	const struct sl_rule *r = sl_ruleset_rule(pol->rs, c->rule);
	struct sl_bucket_key k = rule_key(w, pol, c->rule, s, &c->params);
	struct sl_bucket_table *t =
		r->algo == SL_ALGO_SLIDING_LOG ? w->logs : w->buckets;

	c->st = first && t == sl_hint_table(w)
			? sl_hinted_get(w, &k)
			: sl_bucket_get(t, &k, w->now_ns);
	sl_limit_check(&c->params, c->st, r->cost, w->now_ns, &c->res);
}

static uint64_t
secs_up(uint64_t ns)
{
	return ns / NS + (ns % NS != 0);
}

/* Retry-After: never earlier than true, spread by up to the jitter. */
uint64_t
sl_retry_seconds(struct sl_worker *w, uint64_t ns, uint32_t jitter_ppm,
		 uint64_t period_ns)
{
	uint64_t s = ns == SL_NEVER ? secs_up(period_ns) : secs_up(ns);
	uint64_t spread;

	if (s == 0)
		s = 1;
	spread = (s * jitter_ppm + 999999) / 1000000;
	return s + (spread ? sl_rnd(w) % (spread + 1) : 0);
}

static void
pend_429(struct sl_worker *w, const struct sl_policy *pol,
	 const struct check *c)
{
	struct sl_reply_nums *v = &w->pending.nums;

	v->retry_after_s = sl_retry_seconds(
		w, c->res.retry_after_ns, pol->jitter_ppm, c->params.period_ns);
	v->limit = c->params.count;
	v->window_s = secs_up(c->params.period_ns);
	v->remaining = c->res.remaining;
	v->reset_s = secs_up(c->res.reset_ns);
	w->pending.tpl = sl_tpl429(pol, c->rule, v);
}

const struct sl_reply_tpl *
sl_tpl429(const struct sl_policy *pol, uint32_t r,
	  const struct sl_reply_nums *v)
{
	const struct sl_reply_tpl *t = &pol->tpl429[r];

	return t->limit == v->limit && t->window_s == v->window_s
		       ? t
		       : &pol->tpl429_any[r];
}

void
sl_count_rejected(struct sl_worker *w, uint16_t slot, uint64_t remaining,
		  uint64_t retry_ns, const struct sl_identity *id)
{
	w->ctr.rejected++;
	w->rules[slot].rejected++;
	w->tiers_ctr[w->cur_tier + 1].rejected++;
	if (id != NULL)
		sl_top_add(&w->top, sl_ident_hash(id), slot, id->kind,
			   id->ip_af, id->id, id->len);
	if (sl_dec_pick(w, 1))
		sl_dec_record(w, SL_V_REJECTED, slot, remaining, retry_ns, id);
}

static enum sl_req_action
block(struct sl_worker *w, const struct sl_identity *id)
{
	w->pending.tpl = &w->pol->tpl403;
	w->ctr.blocked++;
	sl_top_add(&w->top, sl_ident_hash(id), SL_SLOT_BLOCKLIST, id->kind,
		   id->ip_af, id->id, id->len);
	if (sl_dec_pick(w, 1))
		sl_dec_record(w, SL_V_BLOCKED, SL_SLOT_BLOCKLIST, 0, 0, id);
	return SL_REQ_STOP;
}

static void
count_identity(struct sl_worker *w, const struct sl_identity *id, int rc)
{
	if (rc != 0)
		w->ctr.xff_fallback++;
	if (id->kind == SL_ID_KEY)
		w->ctr.ident_key++;
	else if (id->kind == SL_ID_USER)
		w->ctr.ident_user++;
	else
		w->ctr.ident_ip++;
}

/* Charges every limit that allowed; counts per rule. */
static void
commit_all(struct sl_worker *w, const struct sl_policy *pol, struct check *cs,
	   uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, cs[i].rule);
		struct sl_bucket_table *t =
			r->algo == SL_ALGO_SLIDING_LOG ? w->logs : w->buckets;
		struct sl_limit_result after;

		if (cs[i].denied) { /* a shadow rule that would have said no */
			w->rules[pol->slot[cs[i].rule]].shadow_rejected++;
			continue;
		}
		sl_limit_commit(&cs[i].params, cs[i].st, r->cost, w->now_ns);
		/* full again once what it holds has drained */
		sl_limit_check(&cs[i].params, cs[i].st, 0, w->now_ns, &after);
		sl_bucket_touch(t, cs[i].st, w->now_ns + after.reset_ns);
		w->rules[pol->slot[cs[i].rule]].allowed++;
	}
}

/* A shadow rule that would have rejected counts once per request. */
static void
count_shadow(struct sl_worker *w, uint32_t shadow_denied)
{
	w->ctr.shadow_rejected += shadow_denied > 0;
	w->tiers_ctr[w->cur_tier + 1].shadow_rejected += shadow_denied > 0;
}

/* For the decision stream: the enforcing limit closest to refusing. */
static void
note_allowed(struct sl_worker *w, const struct sl_policy *pol,
	     const struct check *cs, uint32_t n, const struct sl_identity *id)
{
	uint32_t i, best = n;

	for (i = 0; i < n; i++)
		if (!sl_ruleset_rule(pol->rs, cs[i].rule)->shadow &&
		    (best == n || cs[i].res.remaining < cs[best].res.remaining))
			best = i;
	sl_dec_record(w, SL_V_ALLOWED,
		      best == n ? SL_DEC_NO_RULE : pol->slot[cs[best].rule],
		      best == n ? 0 : cs[best].res.remaining, 0, id);
}

static enum sl_req_action
allowed(struct sl_worker *w, uint32_t shadow_denied, const struct check *cs,
	uint32_t n, const struct sl_identity *id)
{
	sl_count_allowed(w);
	count_shadow(w, shadow_denied);
	if (sl_dec_pick(w, 0)) {
		w->dec_flags |= shadow_denied ? SL_DF_SHADOW : 0;
		note_allowed(w, w->pol, cs, n, id);
	}
	return SL_REQ_CONTINUE;
}

/*
 * With a coordinator: every enforcing limit is spent from a lease; shadow
 * rules are counted from this worker's own buckets, never waited for.
 */
static enum sl_req_action
decide_leased(struct sl_worker *w, const struct sl_policy *pol,
	      const struct sl_http_req *req, const struct sl_identity *id,
	      const uint16_t *idx, uint32_t n, struct scope_id *scopes)
{
	struct sl_need ns[SL_MAX_MATCH];
	uint32_t i, k = 0, shadow_denied = 0;
	enum sl_req_action a;

	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(pol->rs, idx[i]);
		struct scope_id *s = &scopes[r->scope];
		struct sl_limit_params lp;
		struct check c = {.rule = idx[i]};

		if (!s->done)
			scope_bytes(s, r->scope, req, id);
		if (r->shadow) {
			check_one(w, pol, &c, s, 0);
			c.denied = !c.res.allow;
			shadow_denied += c.denied;
			commit_all(w, pol, &c, 1);
			continue;
		}
		ns[k].key = rule_key(w, pol, idx[i], s, &lp);
		ns[k].count = lp.count;
		ns[k].burst = lp.burst;
		ns[k].period_ms = lp.period_ms;
		ns[k].algo = lp.algo;
		ns[k].cost = r->cost;
		ns[k].accuracy_ppm = r->accuracy_ppm;
		ns[k].slot = pol->slot[idx[i]];
		ns[k].on_failure = r->on_store_failure;
		k++;
	}
	if (k == 0)
		return allowed(w, shadow_denied, NULL, 0, id);
	w->dec_flags |= shadow_denied ? SL_DF_SHADOW : 0;
	a = sl_park_decide(w, ns, k, w->parkable, id);
	if (a != SL_REQ_STOP)
		count_shadow(w, shadow_denied);
	return a;
}

static enum sl_req_action
refuse(struct sl_worker *w, int err)
{
	w->ctr.invalid++;
	w->ctr.parse_error[err]++;
	w->pending.tpl = &w->pol->tpl400[err];
	return SL_REQ_STOP;
}

/*
 * 403 for a blocklisted key (in either credential) or client address,
 * 400 for two credentials naming two keys; *key_tier: the key's tier in
 * the static map. Returns SL_REQ_CONTINUE when neither.
 */
static enum sl_req_action
screen(struct sl_worker *w, const struct sl_http_req *req,
       const struct sl_identity *id, int *key_tier)
{
	const struct sl_ruleset *rs = w->pol->rs;
	struct sl_str k = req->api_key, b = req->bearer;
	int conflict = sl_http_credentials_conflict(req);

	if ((k.len && sl_ruleset_key_info(rs, k.p, k.len, key_tier)) ||
	    (conflict && sl_ruleset_key_blocked(rs, b.p, b.len)) ||
	    (w->pol->fib != NULL &&
	     sl_blockfib_blocked(w->pol->fib, id->ip_af, id->addr)))
		return block(w, id);
	if (conflict)
		return refuse(w, SL_HTTP_E_CREDENTIALS);
	return SL_REQ_CONTINUE;
}

enum sl_req_action
sl_decide(struct sl_worker *w, const struct sl_http_req *req,
	  const struct sl_pkt *p)
{
	const struct sl_policy *pol = w->pol;
	const struct sl_ruleset *rs = pol->rs;
	struct sl_identity id;
	struct sl_match_req m;
	struct sl_http_norm nt;
	struct scope_id scopes[5];
	struct check cs[SL_MAX_MATCH];
	uint16_t idx[SL_MAX_MATCH];
	uint32_t n, i, shadow_denied = 0;
	int strict = -1, key_tier = -1, err;

	w->dec_flags = 0;
	count_identity(
		w, &id,
		sl_ident_extract(&w->app->ident, req, p->af, p->src, &id));
	if (screen(w, req, &id, &key_tier) == SL_REQ_STOP)
		return SL_REQ_STOP;
	err = sl_http_normalize(&pol->norm, req, w->norm_buf,
				w->app->cfg->dataplane.max_head_bytes, &nt);
	if (err != 0)
		return refuse(w, err);
	sl_match_req_init(&m, req, &nt);
	if (m.has_key) {
		m.tier = (int16_t)key_tier;
		if (m.tier < 0 && w->app->coord != NULL &&
		    w->app->coord->store != NULL)
			m.tier = (int16_t)sl_tier_of(w, req->api_key.p,
						     req->api_key.len);
		else if (m.tier < 0)
			m.tier = (int16_t)sl_ruleset_default_tier(rs);
	}
	w->cur_tier = m.tier;
	n = sl_ruleset_match(rs, &m, idx, SL_MAX_MATCH);
	/* only the flags: each scope is ~0.5 kB, filled when first used */
	for (i = 0; i < 5; i++)
		scopes[i].done = 0;
	sl_bucket_begin(w->buckets);
	sl_bucket_begin(w->logs);
	if (w->app->coord != NULL)
		return decide_leased(w, pol, req, &id, idx, n, scopes);
	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(rs, idx[i]);
		struct scope_id *s = &scopes[r->scope];

		if (!s->done)
			scope_bytes(s, r->scope, req, &id);
		cs[i].rule = idx[i];
		check_one(w, pol, &cs[i], s, i == 0);
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
		commit_all(w, pol, cs, n);
		return allowed(w, shadow_denied, cs, n, &id);
	}
	pend_429(w, pol, &cs[strict]);
	w->dec_flags |= shadow_denied ? SL_DF_SHADOW : 0;
	sl_count_rejected(w, pol->slot[cs[strict].rule],
			  cs[strict].res.remaining,
			  cs[strict].res.retry_after_ns, &id);
	return SL_REQ_STOP;
}

void
sl_decide_invalid(struct sl_worker *w, const struct sl_flow_event *ev)
{
	const struct sl_policy *pol = w->pol;

	w->ctr.invalid++;
	if (ev->kind == SL_EV_HEAD_TOO_LARGE) {
		w->ctr.head_too_large++;
		w->pending.tpl = &pol->tpl431;
		return;
	}
	if (ev->kind == SL_EV_HEAD_TIMEOUT) {
		w->ctr.head_timeout++;
		w->pending.tpl = &pol->tpl408;
		return;
	}
	w->ctr.parse_error[ev->req->error]++;
	w->pending.tpl = &pol->tpl400[ev->req->error];
}

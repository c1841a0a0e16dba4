/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The policy's life: built from a configuration (the one place a rule
 * becomes limiter parameters and reply templates), freed after its
 * grace period, and read by threads other than the workers.
 *
 * The workers read app->policy under RCU; everyone else (telemetry
 * handlers, signal and file-watch reloads, the decision stream's status)
 * goes through sl_policy_peek: every swap (reload.c) holds
 * the policy lock (sl_policy_hold) until the old policy is freed, so a copy
 * taken under it is never of freed memory. It calls nothing of app/ but the
 * blocklist's FIB, so the readers depend on it and not on the reload code.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "blockfib.h"
#include "policy.h"

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;

void
sl_policy_hold(void)
{
	pthread_mutex_lock(&policy_lock);
}

void
sl_policy_release(void)
{
	pthread_mutex_unlock(&policy_lock);
}

void
sl_policy_peek(const struct sl_app *app, struct sl_policy_peek *out)
{
	const struct sl_policy *p;

	sl_policy_hold();
	p = app->policy;
	snprintf(out->version, sizeof(out->version), "%s",
		 sl_ruleset_version(p->rs));
	out->dec_ppm[0] = p->dec_ppm[0];
	out->dec_ppm[1] = p->dec_ppm[1];
	sl_policy_release();
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

/*
 * Rule i's 429s without "Connection: close", for refusals that keep the
 * connection (response.keep_alive): indexed as tpl429 and tpl429_any,
 * which stay the answers that close it. ri is the baked one's.
 */
static int
keep_templates(struct sl_policy *p, uint32_t i, struct sl_reply_info *ri)
{
	if (p->tpl429_keep == NULL) {
		p->tpl429_keep = rte_zmalloc(
			"sl_tpl_keep",
			2 * SL_MAX_RULES * sizeof(*p->tpl429_keep), 64);
		if (p->tpl429_keep == NULL)
			return -1;
	}
	ri->keep_alive = 1;
	if (sl_reply_tpl_build(&p->tpl429_keep[i], ri) != 0)
		return -1;
	ri->bake = 0;
	ri->limit = ri->window_s = 0;
	return sl_reply_tpl_build(&p->tpl429_keep[SL_MAX_RULES + i], ri);
}

/*
 * The name a rule goes by in what a client is sent. With expose_rule off
 * not the name but "p" and 12 hex digits of a digest of it: stable across
 * reloads and appliances (a client may still tell its limits apart), the
 * name itself in no byte sent. A name an attacker can guess can be
 * checked against it, as any unsalted digest can.
 */
static void
field_name(struct sl_policy *p, uint32_t i, const char *name)
{
	char salted[SL_NAME_MAX + 16];
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *c;

	if (p->expose_rule) {
		snprintf(p->field_name[i], sizeof(p->field_name[i]), "%s",
			 name);
	} else {
		snprintf(salted, sizeof(salted), "sluice-policy:%s", name);
		for (c = salted; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
		snprintf(p->field_name[i], sizeof(p->field_name[i]), "p%012llx",
			 (unsigned long long)(h >> 16));
	}
	p->name_len[i] = (uint32_t)strlen(p->field_name[i]);
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
	p->keep_alive = cfg->response.keep_alive;
	p->budget = cfg->response.keep_alive && cfg->response.headers_on_allow;
	p->jitter_ppm = cfg->response.retry_jitter_ppm;
	p->dec_ppm[0] = cfg->decisions.sample_ppm;
	p->dec_ppm[1] = cfg->decisions.rejected_ppm;
	p->norm = cfg->request;
	for (i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = sl_ruleset_rule(p->rs, i);
		struct sl_reply_info ri = {
			.status = 429,
			.headers = p->headers,
			.expose_rule = p->expose_rule,
			.problem = cfg->response.body == SL_BODY_PROBLEM,
			.problem_type = cfg->response.problem_type[0]
						? cfg->response.problem_type
						: NULL};

		/* the loader already refused what cannot be represented */
		sl_rule_params(r, &r->limit, r->burst, &p->params[i]);
		field_name(p, i, r->name);
		ri.rule = p->field_name[i];
		if (!r->headers)
			ri.headers = 0;   /* its numbers nowhere */
		p->slot[i] = (uint16_t)i; /* the reloader maps names to slots */
		p->budget_rule[i] =
			r->headers_on_allow && r->headers && !r->shadow;
		p->claimed[i] =
			r->scope == SL_SCOPE_KEY || r->scope == SL_SCOPE_USER;
		p->any_cost |= r->cost_header[0] != '\0' && !r->shadow;
		ri.rule_len = p->name_len[i];
		if (sl_reply_tpl_build(&p->tpl429_any[i], &ri) != 0)
			goto fail;
		ri.bake = 1;
		sl_limit_quota(p->params[i].algo, p->params[i].count,
			       p->params[i].period_ns, p->params[i].burst,
			       &ri.limit, &ri.window_s);
		if (sl_reply_tpl_build(&p->tpl429[i], &ri) != 0)
			goto fail;
		if (p->keep_alive && keep_templates(p, i, &ri) != 0)
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
	rte_free(p->tpl429_keep);
	rte_free(p);
}

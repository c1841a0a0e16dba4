/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_POLICY_H
#define SL_POLICY_H

/*
 * The running policy as the workers read it: built by policy/ from a
 * config, published under RCU (app->policy), never changed once
 * published. Every option a worker acts on is read from here, so that a
 * reload changes it for every worker at once.
 */

#include <stdint.h>

#include "sl_http.h"
#include "sl_limit.h"
#include "sl_net.h"
#include "sl_rules.h"

struct sl_blockfib;

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
	/* per rule: the name its fields and body give a client — the rule's
	 * own, or with response.expose_rule off an opaque id (sl_policy_id) */
	char field_name[SL_MAX_RULES][SL_NAME_MAX];
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

#endif /* SL_POLICY_H */

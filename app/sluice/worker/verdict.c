/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Refusals: the one place a limit's "no" becomes an answer's numbers and
 * is counted, whichever path (local buckets, leases, degraded) said it.
 */
#include "dp.h"

uint64_t
sl_retry_seconds(struct sl_worker *w, uint64_t ns, uint32_t jitter_ppm,
		 uint64_t period_ns)
{
	uint64_t s = ns == SL_NEVER ? sl_secs_up(period_ns) : sl_secs_up(ns);
	uint64_t spread;
	unsigned __int128 draw;

	if (s == 0)
		s = 1;
	spread = (s * jitter_ppm + 999999) / 1000000;
	if (spread == 0)
		return s;
	/* uniform in [0, spread] from the draw's high half: a multiply
	 * where a remainder was a division on every refusal */
	draw = (unsigned __int128)(sl_rnd(w) >> 32) * (spread + 1);
	return s + (uint64_t)(draw >> 32);
}

void
sl_rule_quota(const struct sl_policy *pol, int rule, uint8_t algo,
	      uint64_t count, uint64_t period_ns, uint64_t burst, uint64_t *q,
	      uint64_t *w_s)
{
	const struct sl_limit_params *p;

	if (rule >= 0 && rule < SL_MAX_RULES) {
		p = &pol->params[rule];
		if (p->algo == algo && p->count == count &&
		    p->period_ns == period_ns && p->burst == burst) {
			*q = pol->tpl429[rule].limit;
			*w_s = pol->tpl429[rule].window_s;
			return;
		}
	}
	sl_limit_quota(algo, count, period_ns, burst, q, w_s);
}

/* The rule's own template when the numbers are its own, else the one
 * that prints them. */
static const struct sl_reply_tpl *
tpl429(const struct sl_policy *pol, uint32_t r, const struct sl_reply_nums *v)
{
	const struct sl_reply_tpl *t = &pol->tpl429[r];

	return t->limit == v->limit && t->window_s == v->window_s
		       ? t
		       : &pol->tpl429_any[r];
}

struct sl_verdict
sl_verdict_limited(struct sl_worker *w, const struct sl_req *r,
		   const struct sl_limit_refusal *x)
{
	const struct sl_policy *pol = w->pol;
	struct sl_verdict v = {.action = SL_REQ_STOP};

	uint64_t cost = x->cost ? x->cost : 1;

	v.nums.retry_after_s =
		sl_retry_seconds(w, x->retry_ns, pol->jitter_ppm, x->period_ns);
	sl_rule_quota(pol, x->rule, x->algo, x->count, x->period_ns, x->burst,
		      &v.nums.limit, &v.nums.window_s);
	/* numbers that agree with the refusal: what is left is less than
	 * the request's cost (a count that says otherwise -- the leased
	 * path's remainder plus a lease, units not good yet -- was never
	 * this request's to spend), and the time until it is there again
	 * is Retry-After's, jitter included, not the time until the
	 * limit is whole */
	v.nums.remaining = x->remaining < cost ? x->remaining : cost - 1;
	v.nums.reset_s = v.nums.retry_after_s;
	v.tpl = x->rule >= 0 ? tpl429(pol, (uint32_t)x->rule, &v.nums) : NULL;
	sl_count_rejected(w, r, x->slot, x->remaining, x->retry_ns);
	return v;
}

struct sl_verdict
sl_verdict_need(struct sl_worker *w, const struct sl_req *r,
		const struct sl_need *n, uint64_t retry_ns, uint64_t reset_ns,
		uint64_t remaining)
{
	const struct sl_policy *pol = w->pol;
	int rule = n->slot < SL_MAX_RULES ? pol->rule_of_slot[n->slot] : -1;

	return sl_verdict_limited(
		w, r,
		&(struct sl_limit_refusal){.rule = rule,
					   .slot = n->slot,
					   .algo = n->algo,
					   .count = n->count,
					   .burst = n->burst,
					   .period_ns =
						   n->period_ms * 1000000ULL,
					   .retry_ns = retry_ns,
					   .reset_ns = reset_ns,
					   .remaining = remaining,
					   .cost = n->cost});
}

struct sl_verdict
sl_verdict_blocked(struct sl_worker *w, const struct sl_req *r)
{
	const struct sl_identity *id = r->id;

	w->ctr.blocked++;
	sl_top_add(&w->top, sl_ident_hash(id), SL_SLOT_BLOCKLIST, id->kind,
		   id->ip_af, id->id, id->len);
	if (sl_dec_pick(w, 1))
		sl_dec_record(w, r, SL_V_BLOCKED, SL_SLOT_BLOCKLIST, 0, 0);
	return sl_verdict_stop(&w->pol->tpl403);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost settled from the response (a rule's cost_from_response): the
 * request is admitted at the rule's declared cost, and when its response
 * head passes, the integer the backend put in the named field is what it
 * cost; the difference is charged (into debt, if need be: the next
 * requests wait) or given back, to the bucket the decision spent from —
 * this worker's own, or the lease's and through it the store's (the
 * seed's bulk endpoint that fans out to fifty calls).
 *
 * One record per connection, for the request decided last (as the
 * budget is, budget.c): a pipelined request's record replaces the one
 * before it, which is counted unsettled. The field is read from the
 * segment the status line ends in; a head cut across segments before
 * the field is read is counted unsettled too, as is a value that is not
 * a number. Unsettled means the declared cost stands.
 */
#include <rte_malloc.h>

#include "dp.h"

#define COST_MAX 1000000 /* the most a rule's cost may be, as configured */

int
sl_cost_init(struct sl_worker *w)
{
	const struct sl_config *c = w->app->cfg;
	uint32_t i, n = c->dataplane.flows_per_worker;

	for (i = 0; i < c->n_rules && c->rules[i].cost_header[0] == '\0'; i++)
		;
	if (i == c->n_rules)
		return 0; /* no table: a rule added by a reload is not settled
			   */
	w->costs = rte_zmalloc_socket("sl_costs", (size_t)n * sizeof(*w->costs),
				      64, rte_lcore_to_socket_id(w->lcore));
	return w->costs == NULL ? -1 : 0;
}

void
sl_cost_free(struct sl_worker *w)
{
	rte_free(w->costs);
	w->costs = NULL;
}

void
sl_cost_note(struct sl_worker *w, struct sl_flow *f, int parked)
{
	struct sl_cost_rec *r;
	int ord = sl_resp_ord_last(&f->resp, parked);

	if (!w->cost_next_set)
		return;
	w->cost_next_set = 0;
	if (ord < 0) { /* responses no longer framed */
		w->ctr.cost_unsettled++;
		return;
	}
	r = &w->costs[sl_flow_index(w->flows, f)];
	if (f->xflags & SL_XF_COST) /* the one before, pipelined */
		w->ctr.cost_unsettled++;
	*r = w->cost_next;
	r->ord = (uint16_t)ord;
	f->xflags |= SL_XF_COST;
}

uint16_t
sl_cost_due(struct sl_worker *w, const struct sl_flow *f)
{
	if (w->costs == NULL || !(f->xflags & SL_XF_COST))
		return 0;
	return w->costs[sl_flow_index(w->flows, f)].ord;
}

/* What was charged at admission set right: d more units, or -d back. */
static void
settle_local(struct sl_worker *w, const struct sl_need *n, int64_t d)
{
	struct sl_bucket_table *t =
		n->algo == SL_LIM_SLIDING_LOG ? w->logs : w->buckets;
	struct sl_limit_params lp;
	struct sl_limit_state *st;
	struct sl_limit_result after;

	if (sl_limit_params_init(&lp, n->algo, n->count,
				 n->period_ms * 1000000ULL, n->burst) != 0)
		return;
	sl_bucket_begin(t);
	st = sl_bucket_get(t, &n->key, w->now_ns);
	if (d > 0)
		sl_limit_commit(&lp, st, (uint32_t)d, w->now_ns);
	else
		sl_limit_refund(&lp, st, (uint64_t)-d, w->now_ns);
	sl_limit_check(&lp, st, 0, w->now_ns, &after);
	sl_bucket_touch(t, st, w->now_ns + after.reset_ns);
}

/* The most one response may charge: a burst (a window's count where
 * there is no burst), so that a backend's word can make its client wait
 * a whole refill at most, and no bucket's debt overflows. */
static uint64_t
cap_of(const struct sl_need *n)
{
	if (n->algo == SL_LIM_TOKEN_BUCKET || n->algo == SL_LIM_GCRA)
		return n->burst;
	return n->count;
}

void
sl_cost_response(struct sl_worker *w, struct sl_flow *f, const uint8_t *pl,
		 uint32_t len, const struct sl_resp_mark *mk)
{
	struct sl_cost_rec *r;
	const struct sl_policy *pol = w->pol;
	const struct sl_rule *rule;
	uint64_t said = 0;
	int64_t d;
	int got;

	if (w->costs == NULL || !(f->xflags & SL_XF_COST) ||
	    mk->off == UINT32_MAX)
		return;
	r = &w->costs[sl_flow_index(w->flows, f)];
	if (r->ord != mk->ord)
		return;
	f->xflags &= (uint8_t)~SL_XF_COST;
	/* the rule as it was decided: a reload since may have moved it */
	if (r->rule >= pol->n_rules || pol->slot[r->rule] != r->need.slot) {
		w->ctr.cost_unsettled++;
		return;
	}
	rule = sl_ruleset_rule(pol->rs, r->rule);
	got = rule->cost_header[0] != '\0'
		      ? sl_resp_field_u64(pl + mk->off, len - mk->off,
					  rule->cost_header, COST_MAX, &said)
		      : -1;
	if (got < 0) {
		w->ctr.cost_unsettled++;
		return;
	}
	w->ctr.cost_settled++;
	if (got == 0 || said == r->need.cost)
		return; /* (no field: the declared cost was right) */
	d = (int64_t)said - (int64_t)r->need.cost;
	if (d > (int64_t)cap_of(&r->need))
		d = (int64_t)cap_of(&r->need);
	if (d > 0)
		w->ctr.cost_charged += (uint64_t)d;
	else
		w->ctr.cost_refunded += (uint64_t)-d;
	if (r->leased)
		sl_leased_settle(w, &r->need, d);
	else
		settle_local(w, &r->need, d);
}

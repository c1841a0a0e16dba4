/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost settled from the response (a rule's cost_from_response): the
 * request is admitted at the rule's declared cost, and when its response
 * head passes, the integer the backend put in the named field is what it
 * cost; the difference is charged (into debt, if need be: the next
 * requests wait) or given back, to the bucket the decision spent from —
 * this worker's own, or the lease's and through it the store's (the
 * seed's bulk endpoint that fans out to fifty calls). Degraded
 * admissions are settled too: they were charged to the lease's slice.
 *
 * One record per connection, for every request in flight on it at the
 * same limit (a pipelining client's: one key, one rule): which of the
 * next 32 responses settle a cost at it. A request that cannot join it
 * (another limit while the record waits) is charged at once what its
 * response could charge at most: pipelining never undercharges; so is
 * every request still due when its connection ends, however it ends (a
 * client must not save by not listening, resetting, or holding its
 * window shut until the connection times out). The field is read from
 * the head as its segments pass, however they cut it. A value that is not a
 * number is counted unsettled, as is a response the framer could not follow and
 * a record whose rule a reload moved. Unsettled: the declared cost stands.
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

/* The units a response said its request cost set right, d from the
 * declared: charged (at most a cap) or given back. */
static void
settle(struct sl_worker *w, const struct sl_cost_rec *r, int64_t d)
{
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

/* A request whose response will not be read for it: charged now the
 * most that response could have said. */
static void
presume(struct sl_worker *w, const struct sl_cost_rec *r)
{
	w->ctr.cost_presumed++;
	settle(w, r, (int64_t)cap_of(&r->need) - (int64_t)r->need.cost);
}

/* Whether a request's cost may wait in the flow's record: the same
 * limit, bucket and declared cost, its response within the window. */
static int
joins(const struct sl_cost_rec *r, const struct sl_cost_rec *n, int ord)
{
	return sl_due_bit(r->ord, (uint16_t)ord) != 0 && n->rule == r->rule &&
	       n->leased == r->leased && n->need.slot == r->need.slot &&
	       n->need.cost == r->need.cost &&
	       n->need.key.k1 == r->need.key.k1 &&
	       n->need.key.k2 == r->need.key.k2;
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
	if (f->s_fin) { /* the server closed while it was parked */
		w->ctr.cost_unanswered++;
		return;
	}
	r = &w->costs[sl_flow_index(w->flows, f)];
	if (!(f->xflags & SL_XF_COST)) {
		*r = w->cost_next;
		r->ord = (uint16_t)ord;
		r->due = 1;
		r->cutting = 0;
		f->xflags |= SL_XF_COST;
	} else if (joins(r, &w->cost_next, ord)) {
		r->due |= sl_due_bit(r->ord, (uint16_t)ord);
	} else {
		presume(w, &w->cost_next);
	}
}

int
sl_cost_due(struct sl_worker *w, const struct sl_flow *f)
{
	return w->costs != NULL && (f->xflags & SL_XF_COST);
}

/* Response ord's head, its next n bytes at h: settled once it ends. */
static void
read_head(struct sl_worker *w, struct sl_cost_rec *r, uint16_t ord,
	  const uint8_t *h, uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	uint64_t said = 0;
	int got = -1;

	/* the rule as it was decided: a reload since may have moved it */
	if (r->rule < pol->n_rules && pol->slot[r->rule] == r->need.slot)
		got = sl_resp_field_feed(
			&r->cut, h, n,
			sl_ruleset_rule(pol->rs, r->rule)->cost_header,
			COST_MAX, &said);
	r->cutting = got == 2;
	r->cut_ord = ord;
	if (got == 2)
		return; /* read on in the next segment */
	r->due &= ~sl_due_bit(r->ord, ord);
	if (got < 0) {
		w->ctr.cost_unsettled++;
		return;
	}
	w->ctr.cost_settled++;
	if (got == 1 && said != r->need.cost) /* (none: it was right) */
		settle(w, r, (int64_t)said - (int64_t)r->need.cost);
}

/* Responses the record waited for that passed unread (a gap, a
 * retransmission's new bytes, the framer lost): the declared cost. */
static void
drop_passed(struct sl_worker *w, struct sl_cost_rec *r, const struct sl_flow *f)
{
	uint32_t gone = r->due; /* all of them, if the framer is lost */
	uint16_t done = (uint16_t)(f->resp.served - r->ord + 1);

	if (sl_resp_due(&f->resp) >= 0) {
		if (done < 32)
			gone &= (1u << done) - 1;
		else if (done >= 0x8000)
			gone = 0; /* (none of them yet) */
	}
	w->ctr.cost_unsettled += (uint64_t)__builtin_popcount(gone);
	r->due &= ~gone;
}

void
sl_cost_response(struct sl_worker *w, struct sl_flow *f, const uint8_t *pl,
		 uint32_t len, const struct sl_resp_mark *mk)
{
	struct sl_cost_rec *r;
	uint32_t i;

	if (!sl_cost_due(w, f))
		return;
	r = &w->costs[sl_flow_index(w->flows, f)];
	if (r->cutting && mk->from != UINT32_MAX)
		read_head(w, r, r->cut_ord, pl + mk->from, len - mk->from);
	for (i = 0; i < mk->n_ends; i++) {
		if (!(r->due & sl_due_bit(r->ord, mk->end[i].ord)))
			continue;
		sl_resp_field_init(&r->cut);
		read_head(w, r, mk->end[i].ord, pl + mk->end[i].off,
			  len - mk->end[i].off);
	}
	drop_passed(w, r, f);
	/*
	 * The server's FIN, every byte before it seen and framed: those still
	 * due were never answered, and never will be. Mostly one a client sent
	 * as the server closed a connection it thought kept (the keep-alive
	 * race; it retries on a new one): the backend's stack resets it
	 * unread. Nothing the client did kept a response from being read, so
	 * it is not presumed when the connection ends (the retry would be
	 * refused for a request the backend never read); nothing said its
	 * cost, so the declared cost stands, as for a response not read.
	 */
	if (mk->closed) {
		w->ctr.cost_unanswered += (uint64_t)__builtin_popcount(r->due);
		r->due = 0;
	}
	if (!(r->due & sl_due_bit(r->ord, r->cut_ord)))
		r->cutting = 0;
	sl_due_advance(&r->due, &r->ord);
	if (r->due == 0)
		f->xflags &= (uint8_t)~SL_XF_COST;
}

void
sl_cost_abandoned(void *arg, struct sl_flow *f)
{
	struct sl_worker *w = arg;
	struct sl_cost_rec *r;

	if (!sl_cost_due(w, f))
		return;
	r = &w->costs[sl_flow_index(w->flows, f)];
	for (; r->due != 0; r->due &= r->due - 1)
		presume(w, r);
	f->xflags &= (uint8_t)~SL_XF_COST;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend's health per rule: what the backend answered to the
 * requests each rule matched and let through. A limit set too high shows
 * here first (the backend slows or fails while the rule refuses almost
 * nothing), where no refusal count can show it.
 *
 * One record per connection, beside its flow entry, for the requests in
 * flight on it that the same rules matched (a pipelining client's: one
 * key, one route): which of the next 32 responses answer them, and when
 * the first of them went. A response is timed only when its request went
 * with nothing due before it: behind another, its wait would be that
 * one's too. A request matched by other rules while the record waits is
 * not attributed (counted). Only status lines are read: the framer
 * already finds them, so this costs a compare per server segment of a
 * connection with nothing due.
 */
#include <rte_malloc.h>

#include "dp.h"

int
sl_health_init(struct sl_worker *w)
{
	uint32_t n = w->app->cfg->dataplane.flows_per_worker;
	int node = (int)rte_lcore_to_socket_id(w->lcore);

	w->health = rte_zmalloc_socket(
		"sl_health", (size_t)n * sizeof(*w->health), 64, node);
	w->hl = rte_zmalloc_socket("sl_rule_health",
				   SL_MAX_RULES * sizeof(*w->hl), 64, node);
	return w->health == NULL || w->hl == NULL ? -1 : 0;
}

void
sl_health_free(struct sl_worker *w)
{
	rte_free(w->health);
	rte_free(w->hl);
	w->health = NULL;
	w->hl = NULL;
}

static int
same_rules(const struct sl_health_rec *r, const struct sl_worker *w)
{
	return r->n == w->hl_n &&
	       memcmp(r->slot, w->hl_next, r->n * sizeof(r->slot[0])) == 0;
}

void
sl_health_note(struct sl_worker *w, struct sl_flow *f, int parked)
{
	struct sl_health_rec *r;
	int ord = sl_resp_ord_last(&f->resp, parked);

	if (w->hl_n == 0 || w->health == NULL)
		return;
	r = &w->health[sl_flow_index(w->flows, f)];
	if (ord < 0) { /* responses no longer framed */
		w->ctr.health_unattributed++;
	} else if (!(f->xflags & SL_XF_HEALTH)) {
		memcpy(r->slot, w->hl_next, sizeof(r->slot));
		r->n = w->hl_n;
		r->ord = (uint16_t)ord;
		r->due = 1;
		/* alone: nothing of the connection's was due before it */
		r->timed = sl_resp_due(&f->resp) <= (parked ? 1 : 0);
		r->t_us = (uint32_t)(w->now_ns / 1000);
		f->xflags |= SL_XF_HEALTH;
	} else if (sl_due_bit(r->ord, (uint16_t)ord) != 0 && same_rules(r, w)) {
		r->due |= sl_due_bit(r->ord, (uint16_t)ord);
	} else {
		w->ctr.health_unattributed++;
	}
	w->hl_n = 0;
}

int
sl_health_due(const struct sl_flow *f)
{
	return (f->xflags & SL_XF_HEALTH) != 0;
}

/* An answer (status, and its time when us >= 0) for each rule of r. */
static void
answered(struct sl_worker *w, const struct sl_health_rec *r, uint32_t status,
	 int64_t us)
{
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		struct sl_rule_health *h = &w->hl[r->slot[i]];

		if (us >= 0)
			sl_health_time(h, (uint64_t)us);
		sl_health_status(h, status);
	}
}

static void
add_bytes(struct sl_worker *w, const struct sl_health_rec *r, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		w->hl[r->slot[i]].bytes += len;
}

/* The responses still due will never come (the connection ended). */
static void
unanswered(struct sl_worker *w, struct sl_health_rec *r)
{
	uint32_t due;

	for (due = r->due; due != 0; due &= due - 1)
		answered(w, r, 0, -1);
	r->due = 0;
}

/* The framer lost count: whatever comes is not read for them. Not the
 * backend's doing (a gap, a framing it cannot follow): kept apart from
 * what it answered, so that no alert takes it for a failure. */
static void
unread(struct sl_worker *w, struct sl_health_rec *r)
{
	uint32_t i, k = (uint32_t)__builtin_popcount(r->due);

	for (i = 0; i < r->n; i++)
		w->hl[r->slot[i]].unframed += k;
	r->due = 0;
}

void
sl_health_response(struct sl_worker *w, struct sl_flow *f, uint32_t len,
		   const struct sl_resp_mark *mk)
{
	struct sl_health_rec *r = &w->health[sl_flow_index(w->flows, f)];
	uint32_t i;

	add_bytes(w, r, len);
	for (i = 0; i < mk->n_ends; i++) {
		uint32_t b = sl_due_bit(r->ord, mk->end[i].ord);
		int64_t us = -1;

		if (!(r->due & b))
			continue;
		if (b == 1 && r->timed)
			us = (int64_t)(uint32_t)((uint32_t)(w->now_ns / 1000) -
						 r->t_us);
		answered(w, r, mk->end[i].status, us);
		r->due &= ~b;
	}
	if (sl_resp_due(&f->resp) < 0)
		unread(w, r);
	else if (mk->closed)
		unanswered(w, r); /* framed to the server's FIN: none comes */
	if (sl_due_advance(&r->due, &r->ord) != 0)
		r->timed = 0; /* the first due now waited behind another */
	if (r->due == 0)
		f->xflags &= (uint8_t)~SL_XF_HEALTH;
}

void
sl_health_gone(struct sl_worker *w, struct sl_flow *f)
{
	struct sl_health_rec *r;

	if (!sl_health_due(f) || w->health == NULL)
		return;
	r = &w->health[sl_flow_index(w->flows, f)];
	if (sl_resp_due(&f->resp) < 0)
		unread(w, r);
	else
		unanswered(w, r);
	f->xflags &= (uint8_t)~SL_XF_HEALTH;
}

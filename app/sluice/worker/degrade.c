/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A request decided without the authority: it cannot wait (more of its
 * segment follows its head, the park queue is full, the ring to the
 * coordinator is) or no answer came in time. It is decided from this
 * worker's slice of each limit — the limit divided among every holder
 * (workers x appliances) — which every unit the worker admits is charged
 * to, leased or not (sl_lease.share); so what a worker decides alone is
 * what its slice has left after what it spent, never a second budget.
 * What it admits so is reported to the coordinator, which charges the
 * authority with it. Whether the store is out is the coordinator's to
 * know: a rule's on_store_failure is applied there.
 */
#include "dp.h"

int
sl_lease_units_msg(struct sl_worker *w, const struct sl_bucket_key *k,
		   const struct sl_lease *l, uint8_t type, uint64_t units)
{
	struct sl_coord_msg m = {.k1 = k->k1,
				 .k2 = k->k2,
				 .type = type,
				 .algo = l->algo,
				 .worker = (uint8_t)w->queue,
				 .subs = l->subs,
				 .period_ms = l->period_ms};

	m.back.count = l->count;
	m.back.burst = l->burst;
	m.back.units = units;
	m.back.on_failure = l->on_failure;
	return sl_to_coord(w, &m);
}

void
sl_report_taken(struct sl_worker *w, const struct sl_bucket_key *k,
		const struct sl_lease *l, uint64_t units)
{
	/* a full ring loses it: the authority grants a few units more */
	if (sl_lease_units_msg(w, k, l, SL_CO_TAKEN, units) != 0)
		w->ctr.taken_unreported += units;
}

/* An ask is out for this lease: its answer's units will cover these.
 * Any ask, not only the last one: reported while an earlier one is on
 * its way, a unit and the grant that already counted it crossed (up to
 * 156 admitted where 120 could be, test_race under ThreadSanitizer). */
void
sl_lease_taken(struct sl_worker *w, const struct sl_bucket_key *k,
	       struct sl_lease *l, uint32_t units)
{
	if (sl_lease_asks_out(l, w->now_ns, sl_ask_stale_ns(w)) > 0) {
		l->owed += units;
		return;
	}
	sl_report_taken(w, k, l, units);
}

/* Whether the store refused the key lately, to this worker or to any
 * other of the node (the coordinator's word). */
static int
refused_lately(const struct sl_worker *w, const struct sl_need *n,
	       const struct sl_lease *l)
{
	return sl_refused_lately(l->refused_at, w->now_ns) ||
	       (w->app->lanes != NULL &&
		sl_refusals_lately(w->app->lanes->refused, n->key.k1, n->key.k2,
				   w->now_ns));
}

/*
 * The store had no burst left for this key when it last answered, and
 * its demand goes on: a key at its limit (refused lately, demand above
 * the share), or one the store refused lately — this worker or another
 * of the node — whose answer now did not come at all. Its slice,
 * refilled at its rate while others spent the store's, keeps only its
 * rate from now: its full burst on top of what the other holders
 * reserved would be the fleet's limit again (measured 1.16 x over a 3 s
 * outage; an outpaced node admitted 10-14 of 20 at once where 4 were
 * due, and 5 while only the worker the store had refused knew it).
 * Nor its rate while the store's bucket is promised to reservations
 * (sl_store_promised_until). Once per answer of the store.
 */
static void
drain_if_empty_in_store(const struct sl_worker *w, const struct sl_need *n,
			struct sl_lease *l, int late)
{
	int empty =
		sl_need_saturated(w, n, l) || (late && refused_lately(w, n, l));

	if (!empty || l->drained)
		return;
	sl_ledger_drain(&l->share, &l->slice, w->now_ns,
			sl_store_promised_until(
				l->refused_at,
				sl_store_ahead_ns(l->algo, l->count, l->burst,
						  l->period_ms, l->reset_ns,
						  l->retry_ns),
				w->now_ns));
	l->drained = 1;
}

struct sl_verdict
sl_degrade(struct sl_worker *w, struct sl_req *r, const struct sl_need *ns,
	   struct sl_lease **ls, uint32_t n, int late)
{
	uint32_t i, best = 0;
	uint64_t left = UINT64_MAX;

	/* degraded: the authority (or the store behind it) did not answer
	 * in time. A request that could not wait for it (pipelined behind,
	 * the park queue or the ring full) is decided alone from the same
	 * slice, charged to the authority all the same: nothing failed */
	if (late) {
		r->flags |= SL_DF_DEGRADED;
		w->ctr.degraded++;
		w->tiers_ctr[r->tier + 1].degraded++;
	} else {
		w->ctr.decided_alone++;
	}
	for (i = 0; i < n; i++) {
		struct sl_lease *l = ls[i];
		uint64_t u;

		sl_lease_number(w, l, &ns[i]);
		sl_lease_charge_pending(l, w->now_ns);
		if (late)
			w->rules[ns[i].slot].degraded++;
		drain_if_empty_in_store(w, &ns[i], l, late);
		if (!sl_ledger_room(&l->share, &l->slice, ns[i].cost,
				    w->now_ns)) {
			sl_lease_touch(w, l); /* drained: kept so */
			return sl_verdict_need(
				w, r, &ns[i],
				sl_ledger_wait_ns(&l->share, &l->slice,
						  ns[i].cost, w->now_ns),
				sl_ledger_wait_ns(&l->share, &l->slice,
						  l->slice.burst, w->now_ns),
				0);
		}
		u = sl_ledger_left(&l->share, &l->slice, w->now_ns);
		if (u < left) {
			left = u;
			best = i;
		}
	}
	for (i = 0; i < n; i++) {
		sl_ledger_charge(&ls[i]->share, &ls[i]->slice, ns[i].cost,
				 w->now_ns);
		sl_rule_allowed(w, ns[i].slot);
		sl_lease_taken(w, &ns[i].key, ls[i], ns[i].cost);
		sl_lease_touch(w, ls[i]);
	}
	sl_count_allowed(w, r);
	if (sl_dec_pick(w, 0))
		sl_dec_record(w, r, SL_V_ALLOWED, ns[best].slot,
			      left - ns[best].cost, 0);
	if (w->pol->any_cost)
		sl_cost_pick(w, ns, n);
	return sl_verdict_go();
}

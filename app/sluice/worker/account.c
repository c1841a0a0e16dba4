/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a decision leaves behind besides its answer: counters per rule and
 * tier, the most-throttled sketch, and sampled records for the decision
 * stream (one fixed record into the worker's own ring: no allocation, no
 * formatting; a full ring drops it and counts).
 */
#include <string.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "dp.h"

void
sl_dec_record(struct sl_worker *w, const struct sl_req *r, uint8_t verdict,
	      uint16_t slot, uint64_t remaining, uint64_t retry_ns)
{
	const struct sl_identity *id = r->id;
	struct sl_dec_rec d;

	d.t_ns = w->now_ns;
	d.remaining = remaining;
	d.retry_ms = retry_ns / 1000000 > UINT32_MAX
			     ? UINT32_MAX
			     : (uint32_t)(retry_ns / 1000000);
	d.slot = slot;
	d.tier = r->tier;
	d.verdict = verdict;
	d.flags = r->flags;
	d.worker = (uint8_t)w->queue;
	d.kind = id != NULL ? id->kind : SL_ID_NONE;
	d.ip_af = id != NULL ? id->ip_af : 0;
	d.len = id != NULL ? id->len : 0;
	if (d.len)
		memcpy(d.id, id->id, d.len);
	if (rte_ring_sp_enqueue_elem(w->dec_ring, &d, sizeof(d)) == 0)
		w->ctr.decisions_sampled++;
	else
		w->ctr.decisions_dropped++;
}

void
sl_count_rejected(struct sl_worker *w, const struct sl_req *r, uint16_t slot,
		  uint64_t remaining, uint64_t retry_ns)
{
	const struct sl_identity *id = r->id;

	w->ctr.rejected++;
	w->rules[slot].rejected++;
	w->tiers_ctr[r->tier + 1].rejected++;
	if (id != NULL)
		sl_top_add(&w->top, sl_ident_hash(id), slot, id->kind,
			   id->ip_af, id->id, id->len);
	if (sl_dec_pick(w, 1))
		sl_dec_record(w, r, SL_V_REJECTED, slot, remaining, retry_ns);
}

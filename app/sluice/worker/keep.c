/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How long a lease entry is kept in the worker's table: a leaf called by
 * the lease client (leased.c) and by the degraded answers (degrade.c);
 * in either of them, the two would call each other.
 */
#include "dp.h"

/*
 * A lease entry may go once nothing in it matters any more: a refusal
 * lately does (the key is at its limit), an answer still to come does, for a
 * while after the ask timed out here (the store's own timeout may be later), so
 * that its units settle what was admitted meanwhile rather than land in a new
 * entry.
 */
void
sl_lease_touch(struct sl_worker *w, struct sl_lease *l)
{
	uint64_t t = l->expires_ns, late;

	if (l->refused_until > t)
		t = l->refused_until;
	late = l->asked_ns + sl_ask_stale_ns(w);
	if (l->asked_ns && late > t)
		t = late;
	/* a key at its limit keeps what tells it so: dropped between two
	 * requests once its refusal ran out, it came back as a key never
	 * seen, asked for a unit, was refused, and so on, a store call each */
	if (l->refused_at != 0 && l->refused_at + SL_LEASE_HOT_NS > t)
		t = l->refused_at + SL_LEASE_HOT_NS;
	/* a slice spent keeps its entry until it is full again: dropped
	 * sooner, the key came back with a full slice, and a worker that
	 * decided alone admitted a slice's burst again each time (151 where
	 * at most 120 could be, test_race under ThreadSanitizer) */
	sl_lease_charge_pending(l, w->now_ns);
	if (l->share.used && l->slice.period_ns != 0) {
		uint64_t full = w->now_ns +
				sl_ledger_wait_ns(&l->share, &l->slice,
						  l->slice.burst, w->now_ns);

		if (full > t)
			t = full;
	}
	sl_bucket_touch(w->leases, (struct sl_limit_state *)l, t);
}

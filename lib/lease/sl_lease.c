/* SPDX-License-Identifier: BSD-3-Clause */
#include "sl_lease.h"

#define NS 1000000000ULL

static void
observe(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	uint64_t dt = now > l->last_ns ? now - l->last_ns : 1;
	uint64_t inst;

	if (l->last_ns == 0) {
		l->last_ns = now;
		return;
	}
	/* units per second x 256, smoothed with weight 1/8 — from the first
	 * gap seen, not from zero: climbing from zero took a dozen requests,
	 * each one an ask, before a key seen a few times a second had a lease
	 * that covered its next request */
	inst = dt >= NS ? cost * 256ULL : (uint64_t)cost * 256ULL * NS / dt;
	l->rate = l->rate == 0 ? inst : l->rate - l->rate / 8 + inst / 8;
	l->last_ns = now;
}

void
sl_lease_seen(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	observe(l, cost, now);
}

enum sl_lease_take
sl_lease_take(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	if (now < l->refused_until)
		return SL_LEASE_REFUSED;
	if (l->units >= cost && now < l->expires_ns) {
		l->units -= cost;
		return SL_LEASE_SPENT;
	}
	return SL_LEASE_EMPTY;
}

/*
 * A lease is sized for what the key spends in a lease's lifetime: units
 * beyond that would go back unspent, and fewer make a key seen a few
 * times a second ask every other request (at 500 ms, a key seen every
 * 250 ms got two units). The accuracy budget caps what this strands in
 * holders that go quiet, as before.
 */
uint64_t
sl_lease_want(const struct sl_lease *l, const struct sl_lease_sizing *z,
	      uint32_t cost)
{
	uint64_t budget = z->count * z->accuracy_ppm / 1000000ULL /
			  (z->holders ? z->holders : 1);
	uint64_t want = l->rate * SL_LEASE_LIFETIME_NS / NS / 256;

	if (want > budget)
		want = budget;
	return want > cost ? want : cost;
}

int
sl_lease_pending(const struct sl_lease *l, uint64_t now, uint64_t timeout_ns)
{
	return l->asked_ns != 0 && now - l->asked_ns < timeout_ns;
}

int
sl_lease_low(const struct sl_lease *l, uint64_t want)
{
	return want > 1 && l->units < want / 2;
}

void
sl_lease_granted(struct sl_lease *l, uint64_t units, uint64_t expires_ns,
		 uint64_t retry_ns, uint64_t reset_ns, uint64_t remaining,
		 uint64_t now)
{
	l->asked_ns = 0;
	l->remaining = remaining; /* the authority's count, after this grant */
	if (units == 0) {
		l->refused_until = now + retry_ns;
		l->retry_ns = retry_ns;
		l->reset_ns = reset_ns;
		return;
	}
	l->refused_until = 0;
	l->units += units;
	if (expires_ns > l->expires_ns)
		l->expires_ns = expires_ns;
}

uint64_t
sl_lease_expire(struct sl_lease *l, uint64_t now)
{
	uint64_t u;

	if (l->units == 0 || now < l->expires_ns)
		return 0;
	u = l->units;
	l->units = 0;
	return u;
}

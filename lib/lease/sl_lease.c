/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "sl_lease.h"

#define NS 1000000000ULL

/*
 * The rate a key is seen at, from the mean gap between its arrivals over
 * windows of at least SL_LEASE_WINDOW_NS, smoothed with weight 1/8. Not
 * from each gap alone: requests of one burst share its timestamp, and a
 * rate read per gap took each for a unit per nanosecond (a key at 11 k/s
 * was seen at the cap: every lease the accuracy budget's 60 k, 11 x its
 * use, and 100 k of burst reserved until the authority refused), and an
 * average of per-gap gaps sampled inside a burst still read it at twice
 * its rate. The first gap seen gives the first estimate at once (climbing
 * from nothing took a dozen requests, each one an ask, before a key seen
 * a few times a second had a lease that covered its next request). A
 * window's gap is at most a second: a key seen again after a pause is
 * seen at a unit a second, not at nothing.
 */
static void
observe(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	uint64_t dt, g;

	l->win_units += cost;
	if (l->last_ns == 0) {
		l->last_ns = now;
		l->win_units = 0;
		return;
	}
	dt = now > l->last_ns ? now - l->last_ns : 0;
	if (dt < SL_LEASE_WINDOW_NS && (l->gap != 0 || dt == 0))
		return;
	g = dt * SL_LEASE_GAP_ONE / l->win_units;
	if (g > NS * SL_LEASE_GAP_ONE)
		g = NS * SL_LEASE_GAP_ONE;
	g = l->gap == 0 ? g : l->gap - l->gap / 8 + g / 8;
	l->gap = g > 0 ? g : 1;
	l->last_ns = now;
	l->win_units = 0;
}

void
sl_lease_seen(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	observe(l, cost, now);
	l->seen = l->seen > UINT32_MAX - cost ? UINT32_MAX : l->seen + cost;
}

enum sl_lease_take
sl_lease_take(struct sl_lease *l, uint32_t cost, uint64_t now)
{
	if (sl_lease_until(l, cost, now) > now)
		return SL_LEASE_REFUSED;
	if (sl_lease_holds(l, cost, now)) {
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
 * holders that go quiet; a quarter of the burst per holder caps what they
 * hold against a client that is below its rate.
 */
uint64_t
sl_lease_want(const struct sl_lease *l, const struct sl_lease_sizing *z,
	      uint32_t cost)
{
	uint64_t holders = z->holders ? z->holders : 1;
	uint64_t acc = z->count * z->accuracy_ppm / 1000000ULL, budget;
	uint64_t want = sl_lease_rate(l) * SL_LEASE_LIFETIME_NS / NS / 256;

	if (sl_lease_saturated(l, z) && z->period_ns > 0) {
		/* what the holder spends in a horizon every holder shares:
		 * SL_LEASE_SATURATED_MS, or the time the limit's rate takes
		 * to fill its burst where that is less. Reserved in the store
		 * and good at the rate, its size costs store calls, not
		 * accuracy. In proportion to the holder's demand, blocks
		 * queued in the store come good in turn, each at the whole
		 * rate, so a holder's units outlast the others' blocks
		 * before its next exactly while the client is below its
		 * limit; blocks of a burst each (a holder seen at 0.28 of
		 * the limit took all of it) left the busier holder refused
		 * for 100 ms at a time while an ideal bucket had 80-130 */
		unsigned __int128 fill = (unsigned __int128)z->burst *
					 z->period_ns /
					 (z->count ? z->count : 1);
		uint64_t tau = SL_LEASE_SATURATED_MS * 1000000ULL;

		if (fill < tau)
			tau = (uint64_t)fill;
		want = (uint64_t)((unsigned __int128)sl_lease_rate(l) * tau /
				  NS / 256);
		budget = UINT64_MAX;
	} else {
		/* what every holder holds at once stays within three
		 * quarters of the burst: units a client's other workers
		 * hold unspent are charged to its bucket, and a client
		 * below its rate keeps that bucket full, so the next ask
		 * finds a quarter of it whatever the others hold (each
		 * holds up to 1.5 leases: it asks ahead at half of one).
		 * A sixth of the burst each (half of it in all) cost a hot
		 * key's first seconds twice the store calls. The budget's
		 * and that bound's share in one division, on every spend:
		 * min(a / h, b / 2h) is min(a, b / 2) / h, floors and all */
		uint64_t half = z->burst / 2, cap = acc < half ? acc : half;

		budget = holders > 1 ? cap / holders : cap;
	}
	if (want > budget)
		want = budget;
	/* spent as soon as the grant comes, not held unspent: beyond the
	 * accuracy budget, never beyond the burst */
	if (want < z->waiting)
		want = z->waiting;
	if (z->burst > 0 && want > z->burst)
		want = z->burst;
	return want > cost ? want : cost;
}

int
sl_lease_saturated(const struct sl_lease *l, const struct sl_lease_sizing *z)
{
	uint64_t holders = z->holders ? z->holders : 1;

	if (l->refused_n < 2 || z->now_ns - l->refused_at >= SL_LEASE_HOT_NS ||
	    z->period_ns == 0)
		return 0;
	/* rate is units per second x 256; the share's is count / period.
	 * More than half the share, not all of it: a key at its limit is
	 * seen by its holders at about their share (clients wait for the
	 * answers), not above it, and where its connections fell unevenly
	 * on the holders some see less (one at 0.88 of its share asked
	 * twice as often as the others, at the accuracy budget's size) */
	return (unsigned __int128)sl_lease_rate(l) * holders * z->period_ns *
		       2 >
	       (unsigned __int128)z->count * 256 * NS;
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

/* How many of the units held are not good yet at now. */
static uint64_t
paced_left(const struct sl_lease *l, uint64_t now)
{
	uint64_t gap, n;

	if (l->paced_ns <= now || l->count == 0)
		return 0;
	gap = sl_lease_interval(l);
	n = gap ? (l->paced_ns - now + gap - 1) / gap : l->units;
	if (n > l->paced_n)
		n = l->paced_n;
	return n < l->units ? n : l->units;
}

/*
 * A saturated holder asked only once empty waited out the other holders'
 * blocks queued in the store with nothing, and was refused while the
 * client was below its limit. Asked before its own block is all good,
 * its units would queue behind the others' (sl_lease_granted), their
 * slots unspent. The node's authority reserves nothing: its answers to
 * a key at its limit trickle a unit a call.
 */
int
sl_lease_ask_ahead(const struct sl_lease *l, uint64_t want, int saturated,
		   int reserves, uint64_t now)
{
	if (!saturated)
		return sl_lease_low(l, want);
	return reserves && l->paced_ns <= now && l->units < want;
}

void
sl_lease_granted(struct sl_lease *l, uint64_t units, uint64_t expires_ns,
		 uint64_t retry_ns, uint64_t reset_ns, uint64_t remaining,
		 uint64_t now)
{
	if (l->asks_out > 0)
		l->asks_out--;
	l->asked_ns = 0;
	/* refused, reserved (units good only from retry_ns on), or granted
	 * the last units there were: either way the key is at its limit */
	if (units == 0 || retry_ns > 0 || remaining == 0) {
		int again = sl_refused_lately(l->refused_at, now);

		l->refused_n =
			again && l->refused_n < 255 ? l->refused_n + 1 : 1;
		l->refused_at = now;
	}
	l->remaining = remaining; /* the authority's count, after this grant */
	if (units == 0) {
		l->refused_until = now + retry_ns;
		l->retry_ns = retry_ns;
		l->reset_ns = reset_ns;
		return;
	}
	/* a reservation: each unit good when the bucket would have had it
	 * (spent as it comes, not all at the last one's time: a holder that
	 * waited for the whole block would leave the rate unspent meanwhile) */
	l->refused_until = 0;
	if (retry_ns > 0) {
		/* what the last reservation has not made good yet queues
		 * before this one's units; what it has stays good */
		uint64_t wait = paced_left(l, now);

		l->paced_ns = now + retry_ns;
		l->paced_n = (uint32_t)(wait + units < UINT32_MAX ? wait + units
								  : UINT32_MAX);
	}
	l->retry_ns = retry_ns;
	l->reset_ns = reset_ns;
	l->units += units;
	if (expires_ns > l->expires_ns)
		l->expires_ns = expires_ns;
	/* a reservation's units not spent within twice the time its holder
	 * takes at the rate it is seen at go back sooner than the store's
	 * lifetime says: a client that moved to another worker (a new
	 * connection) left them stranded here, the key's other holders
	 * waiting meanwhile */
	if (retry_ns > 0 && l->gap > 0) {
		uint64_t spend = l->units * 2 * (l->gap / SL_LEASE_GAP_ONE);
		uint64_t end = l->paced_ns + (spend > SL_LEASE_LIFETIME_NS
						      ? spend
						      : SL_LEASE_LIFETIME_NS);

		if (end < l->expires_ns)
			l->expires_ns = end;
	}
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

/* Units granted now stay good until the lease or the window ends. */
static uint64_t
lease_end(const struct sl_limit_params *p, uint64_t now, uint64_t lease_ns)
{
	uint64_t end = now + lease_ns;

	if (p->algo == SL_LIM_FIXED_WINDOW ||
	    p->algo == SL_LIM_SLIDING_WINDOW) {
		uint64_t w = (now / p->period_ns + 1) * p->period_ns;

		if (w < end)
			end = w;
	}
	return end;
}

/* The most units in [lo, hi) allowed now, lo being allowed and hi not
 * (allowing is monotonic in the cost). */
static uint64_t
most_allowed(const struct sl_limit_params *p, struct sl_limit_state *s,
	     uint64_t lo, uint64_t hi, uint64_t now)
{
	struct sl_limit_result r;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		sl_limit_check(p, s, (uint32_t)mid, now, &r);
		if (r.allow)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void
sl_lease_grant(const struct sl_limit_params *p, struct sl_limit_state *s,
	       uint64_t want, uint64_t need, uint64_t now, uint64_t lease_ns,
	       struct sl_lease_grant *g)
{
	struct sl_limit_result r, after;
	uint64_t n = 0;

	memset(g, 0, sizeof(*g));
	sl_limit_check(p, s, want, now, &r);
	if (r.allow) {
		n = want;
	} else if (need < want) {
		sl_limit_check(p, s, need, now, &r);
		n = r.allow ? need : 0;
		/* the most there is between need and want, as the store's
		 * script grants (the log grants the need alone there too) */
		if (n && p->algo != SL_LIM_SLIDING_LOG)
			n = most_allowed(p, s, need, want, now);
	}
	if (n == 0) {
		g->retry_ns = r.retry_after_ns;
		g->reset_ns = r.reset_ns;
		g->remaining = r.remaining;
		return;
	}
	sl_limit_commit(p, s, n, now);
	sl_limit_check(p, s, 0, now, &after);
	g->granted = n;
	g->expires_ns = lease_end(p, now, lease_ns);
	g->remaining = after.remaining;
	g->reset_ns = after.reset_ns;
}

void
sl_lease_give_back(const struct sl_limit_params *p, struct sl_limit_state *s,
		   uint64_t units, uint64_t now)
{
	sl_limit_refund(p, s, units, now);
}

/* ---- ledgers ---- */

void
sl_share_of(struct sl_share *s, uint64_t count, uint64_t burst,
	    uint64_t period_ns, uint32_t div)
{
	if (div < 1)
		div = 1;
	s->count = count / div > 0 ? count / div : 1;
	s->burst = burst / div > 0 ? burst / div : 1;
	s->period_ns = period_ns > 0 ? period_ns : 1;
}

/* n / d for n >= 0: in 64 bits where n fits, as it does for any limit
 * whose burst x period is under 584 years of nanoseconds (a 128-bit
 * division is a library call, on every spend's touch). */
static uint64_t
quot(__int128 n, uint64_t d)
{
	if (n <= (__int128)UINT64_MAX)
		return (uint64_t)n / d;
	return (uint64_t)(n / d);
}

static __int128
cap_of(const struct sl_share *s)
{
	return (__int128)s->burst * s->period_ns;
}

void
sl_ledger_open(struct sl_ledger *g, const struct sl_share *s, int full,
	       uint64_t now)
{
	if (g->used)
		return;
	g->credit = full ? cap_of(s) : 0;
	g->last_ns = now;
	g->used = 1;
}

/* Refilled to now: count units per period, never above full (nothing
 * before last_ns, which a drain may set ahead). */
static void
refill(struct sl_ledger *g, const struct sl_share *s, uint64_t now)
{
	__int128 cap = cap_of(s);

	if (!g->used) {
		g->credit = cap;
		g->last_ns = now;
		g->used = 1;
		return;
	}
	if (now > g->last_ns) {
		g->credit += (__int128)(now - g->last_ns) * s->count;
		g->last_ns = now;
	}
	if (g->credit > cap)
		g->credit = cap;
}

int
sl_ledger_room(struct sl_ledger *g, const struct sl_share *s, uint64_t units,
	       uint64_t now)
{
	refill(g, s, now);
	return g->credit >= (__int128)units * s->period_ns;
}

void
sl_ledger_set(struct sl_ledger *g, const struct sl_share *s, uint64_t units,
	      uint64_t now)
{
	__int128 c = (__int128)units * s->period_ns;

	refill(g, s, now);
	g->credit = c < cap_of(s) ? c : cap_of(s);
}

void
sl_ledger_drain(struct sl_ledger *g, const struct sl_share *s, uint64_t now,
		uint64_t until)
{
	refill(g, s, now);
	if (g->credit > 0)
		g->credit = 0;
	if (until > g->last_ns)
		g->last_ns = until;
}

uint64_t
sl_store_ahead_ns(uint8_t algo, uint64_t count, uint64_t burst,
		  uint32_t period_ms, uint64_t reset_ns, uint64_t retry_ns)
{
	uint64_t fill;

	if (algo > SL_LIM_GCRA)
		return retry_ns;
	if (count == 0)
		return 0;
	/* a day's period and a burst of a million overflow 64 bits */
	fill = (uint64_t)((unsigned __int128)burst * period_ms * 1000000ULL /
			  count);
	return reset_ns > fill ? reset_ns - fill : 0;
}

unsigned int
sl_lease_asks_out(const struct sl_lease *l, uint64_t now_ns, uint64_t stale_ns)
{
	uint32_t age = (uint32_t)(now_ns / 1000000) - l->last_ask_ms;

	return (uint64_t)age * 1000000 < stale_ns ? l->asks_out : 0;
}

void
sl_lease_asked(struct sl_lease *l, uint64_t now_ns, uint64_t stale_ns)
{
	unsigned int out = sl_lease_asks_out(l, now_ns, stale_ns);

	l->asks_out = (uint8_t)(out < UINT8_MAX ? out + 1 : out);
	l->last_ask_ms = (uint32_t)(now_ns / 1000000);
	l->asked_ns = now_ns;
}

void
sl_ledger_renumber(struct sl_ledger *g, const struct sl_share *old,
		   const struct sl_share *s, uint64_t now)
{
	__int128 units, floor = -(__int128)SL_LEDGER_DEBT * cap_of(s);

	if (!g->used)
		return;
	refill(g, old, now);
	/* whole units, rounded towards fewer */
	units = g->credit >= 0
			? g->credit / old->period_ns
			: -((-g->credit + old->period_ns - 1) / old->period_ns);
	g->credit = units * s->period_ns;
	if (g->credit > cap_of(s))
		g->credit = cap_of(s);
	if (g->credit < floor)
		g->credit = floor;
}

void
sl_ledger_charge(struct sl_ledger *g, const struct sl_share *s, uint64_t units,
		 uint64_t now)
{
	__int128 floor = -(__int128)SL_LEDGER_DEBT * cap_of(s);

	refill(g, s, now);
	g->credit -= (__int128)units * s->period_ns;
	if (g->credit < floor)
		g->credit = floor;
}

void
sl_ledger_credit(struct sl_ledger *g, const struct sl_share *s, uint64_t units,
		 uint64_t now)
{
	refill(g, s, now);
	g->credit += (__int128)units * s->period_ns;
	if (g->credit > cap_of(s))
		g->credit = cap_of(s);
}

uint64_t
sl_ledger_left(struct sl_ledger *g, const struct sl_share *s, uint64_t now)
{
	refill(g, s, now);
	return g->credit > 0 ? quot(g->credit, s->period_ns) : 0;
}

uint64_t
sl_ledger_wait_ns(struct sl_ledger *g, const struct sl_share *s, uint64_t units,
		  uint64_t now)
{
	__int128 need = (__int128)units * s->period_ns;

	refill(g, s, now);
	if (g->credit >= need)
		return 0;
	if (units > s->burst)
		return SL_NEVER;
	return (g->last_ns > now ? g->last_ns - now : 0) +
	       quot(need - g->credit + s->count - 1, s->count);
}

/* The key's mix: its slot from the low bits, its tag from the high. */
static uint64_t
refusal_mix(uint64_t k1, uint64_t k2)
{
	uint64_t x = k1 ^ (k2 * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return x;
}

/* The high 32 bits of a slot's word, never 0 (an empty slot is 0). */
static uint64_t
refusal_tag(uint64_t h)
{
	return (h | 1ULL << 63) & ~0xffffffffULL;
}

void
sl_refusals_note(struct sl_refusals *r, uint64_t k1, uint64_t k2,
		 uint64_t now_ns)
{
	uint64_t h = refusal_mix(k1, k2);

	__atomic_store_n(&r->slot[h & (SL_REFUSALS_SLOTS - 1)],
			 refusal_tag(h) | (uint32_t)(now_ns / 1000000),
			 __ATOMIC_RELAXED);
}

int
sl_refusals_lately(const struct sl_refusals *r, uint64_t k1, uint64_t k2,
		   uint64_t now_ns)
{
	uint64_t h = refusal_mix(k1, k2);
	uint64_t word = __atomic_load_n(&r->slot[h & (SL_REFUSALS_SLOTS - 1)],
					__ATOMIC_RELAXED);
	uint32_t age_ms = (uint32_t)(now_ns / 1000000) - (uint32_t)word;

	return (word & ~0xffffffffULL) == refusal_tag(h) &&
	       (uint64_t)age_ms * 1000000 < SL_LEASE_HOT_NS;
}

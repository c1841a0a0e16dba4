/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "sl_limit.h"

#define PPM  1000000ULL
#define NSMS 1000000ULL

static inline uint64_t
div_ceil(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/*
 * n / d by m = floor((2^64 - 1) / d), the remainder in *rem: the high
 * half of n x m is the quotient or short of it (by one for any n below
 * 2^63, as a limit's credit is; by two at most for any n), and the
 * remainder puts it right. A division takes 15-40 cycles, and a token
 * bucket's check made two for every rule a request matches.
 */
static inline uint64_t
quot_by(uint64_t n, uint64_t d, uint64_t m, uint64_t *rem)
{
	uint64_t q, r;

	if (m == 0) {
		*rem = n % d;
		return n / d;
	}
	q = (uint64_t)(((unsigned __int128)n * m) >> 64);
	r = n - q * d;
	while (r >= d) {
		q++;
		r -= d;
	}
	*rem = r;
	return q;
}

static inline uint64_t
per_period(const struct sl_limit_params *p, uint64_t n)
{
	uint64_t r;

	return quot_by(n, p->period_ns, p->m_period, &r);
}

static inline uint64_t
ceil_per_count(const struct sl_limit_params *p, uint64_t n)
{
	uint64_t r, q = quot_by(n, p->count, p->m_count, &r);

	return q + (r != 0);
}

static uint64_t
secs_up(uint64_t ns)
{
	return ns / 1000000000ULL + (ns % 1000000000ULL != 0);
}

void
sl_limit_quota(uint8_t algo, uint64_t count, uint64_t period_ns, uint64_t burst,
	       uint64_t *q, uint64_t *w_s)
{
	*q = count;
	*w_s = secs_up(period_ns);
	if ((algo != SL_LIM_TOKEN_BUCKET && algo != SL_LIM_GCRA) ||
	    burst == 0 || count == 0 || burst >= count)
		return;
	*q = burst;
	*w_s = secs_up(
		(uint64_t)(((unsigned __int128)burst * period_ns + count - 1) /
			   count));
}

int
sl_limit_params_init(struct sl_limit_params *p, uint8_t algo, uint64_t count,
		     uint64_t period_ns, uint64_t burst)
{
	memset(p, 0, sizeof(*p));
	if (count == 0 || period_ns == 0)
		return -1;
	p->algo = algo;
	p->count = count;
	p->period_ns = period_ns;
	p->period_ms = (uint32_t)(period_ns / 1000000ULL);
	p->burst = burst ? burst : count;
	p->m_period = UINT64_MAX / period_ns;
	p->m_count = UINT64_MAX / count;
	switch (algo) {
	case SL_LIM_TOKEN_BUCKET:
		/* credit is kept in ns*count units: exact for any rate */
		if (p->burst > (UINT64_MAX >> 2) / period_ns)
			return -1;
		p->cap = p->burst * period_ns;
		p->fill_ns = div_ceil(p->cap, count);
		return 0;
	case SL_LIM_GCRA:
		if (p->burst > (UINT64_MAX >> 2) / period_ns)
			return -1;
		p->t_q = period_ns / count;
		p->t_r = period_ns % count;
		p->tau = p->burst * p->t_q + (p->burst * p->t_r) / count;
		p->tau_frac = (p->burst * p->t_r) % count;
		return 0;
	case SL_LIM_FIXED_WINDOW:
		return 0;
	case SL_LIM_SLIDING_WINDOW:
		return count <= UINT32_MAX ? 0 : -1;
	case SL_LIM_SLIDING_LOG:
		return count <= SL_LOG_MAX && period_ns % NSMS == 0 &&
				       period_ns / NSMS < INT32_MAX
			       ? 0
			       : -1;
	}
	return -1;
}

/* ---- token bucket: deficit below full, refilled at count per period ---- */

static uint64_t
tb_deficit(const struct sl_limit_params *p, const struct sl_limit_state *s,
	   uint64_t now)
{
	uint64_t elapsed, refill;

	if (!s->used)
		return 0;
	/* a clock that went backwards refills nothing */
	elapsed = now > s->b ? now - s->b : 0;
	if (elapsed >= p->fill_ns)
		return 0; /* also keeps elapsed * count from overflowing */
	refill = elapsed * p->count;
	/* owed beyond a (lowered) burst is an empty bucket, not a negative one
	 */
	if (s->a > refill)
		return s->a - refill < p->cap ? s->a - refill : p->cap;
	return 0;
}

static void
tb_check(const struct sl_limit_params *p, const struct sl_limit_state *s,
	 uint32_t cost, uint64_t now, struct sl_limit_result *r)
{
	uint64_t deficit = tb_deficit(p, s, now);
	uint64_t credit = p->cap - deficit;
	uint64_t need = (uint64_t)cost * p->period_ns;

	r->allow = need <= credit;
	if (r->allow) {
		r->remaining = per_period(p, credit - need);
		r->reset_ns = ceil_per_count(p, deficit + need);
	} else {
		r->remaining = per_period(p, credit);
		r->retry_after_ns = need > p->cap
					    ? SL_NEVER
					    : ceil_per_count(p, need - credit);
		r->reset_ns = ceil_per_count(p, deficit);
	}
}

static void
tb_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
	  uint32_t cost, uint64_t now)
{
	s->a = tb_deficit(p, s, now) + (uint64_t)cost * p->period_ns;
	if (!s->used || now > s->b)
		s->b = now;
	s->used = 1;
}

/* ---- GCRA: virtual scheduling on a theoretical arrival time ---- */

struct gcra_step {
	uint64_t tat, new_tat, new_frac, tau, tau_frac;
};

static void
gcra_step(const struct sl_limit_params *p, const struct sl_limit_state *s,
	  uint32_t cost, uint64_t now, struct gcra_step *g)
{
	uint64_t frac = 0, f;

	g->tat = now;
	if (s->used && (s->a > now || (s->a == now && s->b > 0))) {
		g->tat = s->a;
		frac = s->b;
	}
	/* tat advances by cost * (t_q + t_r / count), kept exact */
	f = frac + (uint64_t)cost * p->t_r;
	g->new_tat = g->tat + (uint64_t)cost * p->t_q +
		     quot_by(f, p->count, p->m_count, &g->new_frac);
	g->tau = p->tau;
	g->tau_frac = p->tau_frac;
}

/* new_tat <= now + tau, comparing the sub-nanosecond fractions too */
static int
gcra_conforms(const struct gcra_step *g, uint64_t limit_at)
{
	return g->new_tat < limit_at ||
	       (g->new_tat == limit_at && g->new_frac <= g->tau_frac);
}

static uint64_t
gcra_units(const struct sl_limit_params *p, uint64_t ns)
{
	if (ns < (p->m_count ? p->m_count : UINT64_MAX / p->count))
		return per_period(p, ns * p->count);
	return ns / (p->t_q ? p->t_q : 1);
}

static void
gcra_check(const struct sl_limit_params *p, const struct sl_limit_state *s,
	   uint32_t cost, uint64_t now, struct sl_limit_result *r)
{
	struct gcra_step g;
	uint64_t limit_at;

	gcra_step(p, s, cost, now, &g);
	limit_at = now + g.tau;
	r->allow = gcra_conforms(&g, limit_at);
	if (r->allow) {
		r->remaining = gcra_units(p, limit_at - g.new_tat);
		r->reset_ns = g.new_tat - now;
	} else {
		r->remaining =
			gcra_units(p, limit_at > g.tat ? limit_at - g.tat : 0);
		r->retry_after_ns = g.new_tat - g.tat > g.tau
					    ? SL_NEVER
					    : g.new_tat - limit_at +
						      (g.new_frac > g.tau_frac);
		r->reset_ns = g.tat - now;
	}
}

static void
gcra_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
	    uint32_t cost, uint64_t now)
{
	struct gcra_step g;

	gcra_step(p, s, cost, now, &g);
	s->a = g.new_tat;
	s->b = g.new_frac;
	s->used = 1;
}

/* ---- fixed window ---- */

static uint64_t
fw_window(const struct sl_limit_params *p, const struct sl_limit_state *s,
	  uint64_t now, uint64_t *n)
{
	uint64_t wid = now / p->period_ns;

	*n = 0;
	if (s->used && s->a - 1 >= wid) {
		*n = s->b; /* same window, or the clock went back into it */
		wid = s->a - 1;
	}
	return wid;
}

static void
fw_check(const struct sl_limit_params *p, const struct sl_limit_state *s,
	 uint32_t cost, uint64_t now, struct sl_limit_result *r)
{
	uint64_t n, wid = fw_window(p, s, now, &n);
	uint64_t end = (wid + 1) * p->period_ns;
	uint64_t left = end > now ? end - now : 0;

	r->allow = n + cost <= p->count;
	r->remaining = r->allow ? p->count - n - cost
				: (n < p->count ? p->count - n : 0);
	if (!r->allow)
		r->retry_after_ns = cost > p->count ? SL_NEVER : left;
	r->reset_ns = (n + (r->allow ? cost : 0)) ? left : 0;
}

static void
fw_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
	  uint32_t cost, uint64_t now)
{
	uint64_t n, wid = fw_window(p, s, now, &n);

	s->a = wid + 1;
	s->b = n + cost;
	s->used = 1;
}

/* ---- sliding window counter: this window plus a weighted previous ---- */

struct sw_view {
	uint64_t wid, e, prev, cur;
};

static void
sw_view(const struct sl_limit_params *p, const struct sl_limit_state *s,
	uint64_t now, struct sw_view *v)
{
	uint64_t wid = now / p->period_ns;

	v->prev = v->cur = 0;
	if (s->used && s->a - 1 > wid)
		wid = s->a - 1; /* the clock went back: stay in our window */
	v->wid = wid;
	v->e = now > wid * p->period_ns ? now - wid * p->period_ns : 0;
	if (v->e > p->period_ns)
		v->e = p->period_ns;
	if (s->used && s->a - 1 == wid) {
		v->cur = s->b & 0xffffffffu;
		v->prev = s->b >> 32;
	} else if (s->used && s->a == wid) {
		v->prev = s->b & 0xffffffffu;
	}
}

/* ns into the window after which the previous window's weight is <= w
 * (w in millionths: w x a day's ns needs more than 64 bits) */
static uint64_t
sw_when_weight(const struct sl_limit_params *p, uint64_t w)
{
	return p->period_ns -
	       (uint64_t)((unsigned __int128)w * p->period_ns / PPM);
}

static void
sw_check(const struct sl_limit_params *p, const struct sl_limit_state *s,
	 uint32_t cost, uint64_t now, struct sl_limit_result *r)
{
	struct sw_view v;
	unsigned __int128 est, cap;

	sw_view(p, s, now, &v);
	/* exact, in units x ns: the store's script weighs the previous
	 * window the same way (a rounded weight disagreed with it at the
	 * edges) */
	est = (unsigned __int128)v.prev * (p->period_ns - v.e) +
	      (unsigned __int128)(v.cur + cost) * p->period_ns;
	cap = (unsigned __int128)p->count * p->period_ns;
	r->allow = est <= cap;
	r->remaining = r->allow ? (uint64_t)((cap - est) / p->period_ns) : 0;
	r->reset_ns = (p->period_ns - v.e) +
		      ((v.cur + (r->allow ? cost : 0)) ? p->period_ns : 0);
	if (r->allow)
		return;
	if (cost > p->count) {
		r->retry_after_ns = SL_NEVER;
	} else if (v.cur + cost <= p->count) {
		uint64_t e2 = sw_when_weight(p, (p->count - v.cur - cost) *
							PPM / v.prev);

		r->retry_after_ns = e2 > v.e ? e2 - v.e : 1;
	} else {
		uint64_t e2 =
			sw_when_weight(p, (p->count - cost) * PPM / v.cur);

		r->retry_after_ns = (p->period_ns - v.e) + e2;
	}
}

static void
sw_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
	  uint32_t cost, uint64_t now)
{
	struct sw_view v;

	sw_view(p, s, now, &v);
	s->a = v.wid + 1;
	s->b = v.prev << 32 | (v.cur + cost);
	s->used = 1;
}

/* ---- sliding log: every arrival in the window, at most count of them ---- */

static uint32_t
log_at(const struct sl_limit_state *s, uint32_t i)
{
	return s->log[(s->log_head + i) % SL_LOG_MAX];
}

/* Entries at the old end that have left the window. */
static uint32_t
log_expired(const struct sl_limit_params *p, const struct sl_limit_state *s,
	    uint32_t now_ms)
{
	int32_t win = (int32_t)(p->period_ns / NSMS);
	uint32_t i;

	for (i = 0; i < s->log_n; i++) {
		/* a negative age (clock went back) counts as just now */
		if ((int32_t)(now_ms - log_at(s, i)) < win)
			break;
	}
	return i;
}

static void
log_check(const struct sl_limit_params *p, const struct sl_limit_state *s,
	  uint32_t cost, uint64_t now, struct sl_limit_result *r)
{
	uint32_t now_ms = (uint32_t)(now / NSMS);
	uint32_t gone = log_expired(p, s, now_ms);
	uint64_t valid = s->log_n - gone, win = p->period_ns / NSMS;

	r->allow = valid + cost <= p->count;
	r->remaining = r->allow ? p->count - valid - cost
				: (valid < p->count ? p->count - valid : 0);
	if (!r->allow) {
		if (cost > p->count) {
			r->retry_after_ns = SL_NEVER;
		} else {
			/* the entry whose expiry makes room for cost units */
			uint32_t k = (uint32_t)(valid + cost - p->count) - 1;
			int32_t age = (int32_t)(now_ms - log_at(s, gone + k));

			r->retry_after_ns =
				(win - (uint64_t)(age > 0 ? age : 0)) * NSMS;
		}
	}
	if (r->allow)
		r->reset_ns = win * NSMS;
	else if (valid > 0) {
		int32_t age = (int32_t)(now_ms - log_at(s, s->log_n - 1));

		r->reset_ns = (win - (uint64_t)(age > 0 ? age : 0)) * NSMS;
	}
}

static void
log_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
	   uint32_t cost, uint64_t now)
{
	uint32_t now_ms = (uint32_t)(now / NSMS);
	uint32_t gone = log_expired(p, s, now_ms), i;

	s->log_head = (uint8_t)((s->log_head + gone) % SL_LOG_MAX);
	s->log_n = (uint8_t)(s->log_n - gone);
	for (i = 0; i < cost && s->log_n < SL_LOG_MAX; i++) {
		s->log[(s->log_head + s->log_n) % SL_LOG_MAX] = now_ms;
		s->log_n++;
	}
	s->used = 1;
}

/* ---- a rule's numbers changed under existing state ---- */

#define unlikely_stale(p, s) __builtin_expect(stale(p, s), 0)

static uint32_t
burst_tag(const struct sl_limit_params *p)
{
	return p->burst > UINT32_MAX ? UINT32_MAX : (uint32_t)p->burst;
}

/* Records the numbers the state is now written under. */
static void
tag(const struct sl_limit_params *p, struct sl_limit_state *s)
{
	s->tag_period_ms = p->period_ms;
	s->tag_count = (uint32_t)p->count;
	s->tag_burst = burst_tag(p);
}

static int
stale(const struct sl_limit_params *p, const struct sl_limit_state *s)
{
	return s->used && (s->tag_period_ms != p->period_ms ||
			   s->tag_count != (uint32_t)p->count ||
			   s->tag_burst != burst_tag(p));
}

/* How much the capacity grew: charged as used, to come back by refill. */
static uint64_t
raised(uint64_t now_cap, uint64_t was_cap)
{
	return now_cap > was_cap ? now_cap - was_cap : 0;
}

/* x * num / den in 128 bits, saturated. */
static uint64_t
scale(uint64_t x, unsigned __int128 num, unsigned __int128 den)
{
	unsigned __int128 v = x * num / (den ? den : 1);

	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static void
restate_tb(const struct sl_limit_params *p, const struct sl_limit_params *old,
	   struct sl_limit_state *s, uint64_t now)
{
	/* what is owed now, in the new credit unit: since the last charge
	 * the bucket refilled at one of the two rates (the state cannot know
	 * when the rule changed), so at the slower one; from now at the new */
	struct sl_limit_state t = *s;
	uint64_t d = scale(tb_deficit(old, s, now), p->period_ns,
			   old->period_ns),
		 dn;

	t.a = scale(s->a, p->period_ns, old->period_ns);
	dn = tb_deficit(p, &t, now);
	d = d > dn ? d : dn;

	d += raised(p->burst, old->burst) * p->period_ns;
	s->a = d < p->cap ? d : p->cap;
	s->b = now;
}

static void
restate_gcra(const struct sl_limit_params *p, const struct sl_limit_params *old,
	     struct sl_limit_state *s, uint64_t now)
{
	/* units used: how far the arrival time runs ahead of now */
	uint64_t ahead = s->a > now ? s->a - now : 0;
	uint64_t tau = p->tau;

	/* in the new emission interval: ahead * new / old, one exact step */
	ahead = scale(ahead, (unsigned __int128)old->count * p->period_ns,
		      (unsigned __int128)old->period_ns * p->count);
	if (ahead > tau)
		ahead = tau;
	ahead += scale(raised(p->burst, old->burst), p->period_ns, p->count);
	s->a = now + (ahead < tau ? ahead : tau);
	s->b = 0;
}

static void
restate_fw(const struct sl_limit_params *p, const struct sl_limit_params *old,
	   struct sl_limit_state *s, uint64_t now)
{
	uint64_t n, wid = fw_window(old, s, now, &n);

	if (old->period_ns != p->period_ns) {
		/* the last window's usage carried into the new one */
		wid = now / p->period_ns;
		n = s->b;
	}
	s->a = wid + 1;
	s->b = n + raised(p->count, old->count);
}

static void
restate_sw(const struct sl_limit_params *p, const struct sl_limit_params *old,
	   struct sl_limit_state *s, uint64_t now)
{
	struct sw_view v;
	uint64_t cur;

	sw_view(old, s, now, &v);
	if (old->period_ns != p->period_ns) {
		/* the old windows' usage, all in this one */
		v.cur = (s->b & 0xffffffffu) + (s->b >> 32);
		v.prev = 0;
		v.wid = now / p->period_ns;
	}
	cur = v.cur + raised(p->count, old->count);
	s->a = v.wid + 1;
	s->b = v.prev << 32 | (cur > 0xffffffffu ? 0xffffffffu : cur);
}

/* A raised quota: arrivals stamped now, leaving as the window slides. */
static void
restate_log(const struct sl_limit_params *p, const struct sl_limit_params *old,
	    struct sl_limit_state *s, uint64_t now)
{
	uint64_t k = raised(p->count, old->count);
	uint32_t now_ms = (uint32_t)(now / NSMS);

	for (; k > 0 && s->log_n < SL_LOG_MAX; k--) {
		s->log[(s->log_head + s->log_n) % SL_LOG_MAX] = now_ms;
		s->log_n++;
	}
}

/*
 * Re-reads state written under other numbers (the tags): first brought
 * up to now under the numbers it was written with, then carried over.
 */
static void
restate(const struct sl_limit_params *p, struct sl_limit_state *s, uint64_t now)
{
	struct sl_limit_params old;

	if (sl_limit_params_init(&old, p->algo, s->tag_count,
				 (uint64_t)s->tag_period_ms * NSMS,
				 s->tag_burst) != 0)
		old = *p; /* no usable tags: keep what it says */
	switch (p->algo) {
	case SL_LIM_TOKEN_BUCKET:
		restate_tb(p, &old, s, now);
		break;
	case SL_LIM_GCRA:
		restate_gcra(p, &old, s, now);
		break;
	case SL_LIM_FIXED_WINDOW:
		restate_fw(p, &old, s, now);
		break;
	case SL_LIM_SLIDING_WINDOW:
		restate_sw(p, &old, s, now);
		break;
	case SL_LIM_SLIDING_LOG:
		restate_log(p, &old, s, now);
		break;
	}
	tag(p, s);
}

/* ---- refunds ---- */

void
sl_limit_refund(const struct sl_limit_params *p, struct sl_limit_state *s,
		uint64_t units, uint64_t now)
{
	uint64_t wid, back;

	if (!s->used || units == 0 || stale(p, s))
		return;
	switch (p->algo) {
	case SL_LIM_TOKEN_BUCKET:
		s->a = tb_deficit(p, s, now);
		back = units * p->period_ns;
		s->a = s->a > back ? s->a - back : 0;
		if (now > s->b)
			s->b = now;
		break;
	case SL_LIM_GCRA:
		back = units * p->t_q + units * p->t_r / p->count;
		s->a = s->a > now + back ? s->a - back : now;
		break;
	case SL_LIM_FIXED_WINDOW:
		wid = now / p->period_ns;
		if (s->a == wid + 1)
			s->b = s->b > units ? s->b - units : 0;
		break;
	case SL_LIM_SLIDING_WINDOW:
		wid = now / p->period_ns;
		/* as far as this window's count goes, as the store does */
		if (s->a == wid + 1)
			s->b -= (s->b & 0xffffffffu) < units
					? (s->b & 0xffffffffu)
					: units;
		break;
	}
}

/* ---- dispatch ---- */

void
sl_limit_check(const struct sl_limit_params *p, struct sl_limit_state *s,
	       uint32_t cost, uint64_t now_ns, struct sl_limit_result *r)
{
	memset(r, 0, sizeof(*r));
	if (unlikely_stale(p, s))
		restate(p, s, now_ns);
	switch (p->algo) {
	case SL_LIM_TOKEN_BUCKET:
		tb_check(p, s, cost, now_ns, r);
		break;
	case SL_LIM_GCRA:
		gcra_check(p, s, cost, now_ns, r);
		break;
	case SL_LIM_FIXED_WINDOW:
		fw_check(p, s, cost, now_ns, r);
		break;
	case SL_LIM_SLIDING_WINDOW:
		sw_check(p, s, cost, now_ns, r);
		break;
	case SL_LIM_SLIDING_LOG:
		log_check(p, s, cost, now_ns, r);
		break;
	}
}

void
sl_limit_commit(const struct sl_limit_params *p, struct sl_limit_state *s,
		uint32_t cost, uint64_t now_ns)
{
	if (unlikely_stale(p, s))
		restate(p, s, now_ns);
	tag(p, s);
	switch (p->algo) {
	case SL_LIM_TOKEN_BUCKET:
		tb_commit(p, s, cost, now_ns);
		break;
	case SL_LIM_GCRA:
		gcra_commit(p, s, cost, now_ns);
		break;
	case SL_LIM_FIXED_WINDOW:
		fw_commit(p, s, cost, now_ns);
		break;
	case SL_LIM_SLIDING_WINDOW:
		sw_commit(p, s, cost, now_ns);
		break;
	case SL_LIM_SLIDING_LOG:
		log_commit(p, s, cost, now_ns);
		break;
	}
}

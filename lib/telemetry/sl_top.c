/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sl_top.h"

static void
write_entry(struct sl_top *t, uint32_t i, uint64_t hash, uint16_t rule_slot,
	    uint8_t kind, uint8_t ip_af, const uint8_t *id, uint32_t len,
	    uint64_t count, uint64_t err)
{
	struct sl_top_entry *e = &t->e[i];

	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	t->hash[i] = hash;
	t->tag[i] = (uint8_t)(hash >> 56);
	e->rule_slot = rule_slot;
	e->kind = kind;
	e->ip_af = ip_af;
	e->len = (uint8_t)(len < SL_TOP_ID_MAX ? len : SL_TOP_ID_MAX);
	memcpy(e->id, id, e->len);
	e->count = count;
	e->err = err;
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
}

/*
 * The entries in use whose tag is h's top byte, as a mask (bit i: entry
 * i), all 32 compared at once: most refusals under a flood are of
 * identities not listed, and one in eight of those meets a tag, whose
 * hash alone the caller then reads.
 */
static inline uint32_t
tagged(const struct sl_top *t, uint64_t h)
{
	uint8_t tag = (uint8_t)(h >> 56);
	uint32_t m = 0, i;
#ifdef __SSE2__
	const __m128i k = _mm_set1_epi8((char)tag);

	for (i = 0; i < SL_TOP_K; i += 16)
		m |= (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(
			     _mm_loadu_si128((const __m128i *)&t->tag[i]), k))
		     << i;
#else
	for (i = 0; i < SL_TOP_K; i++)
		m |= (uint32_t)(t->tag[i] == tag) << i;
#endif
	return m & (uint32_t)((1ULL << t->n) - 1);
}

void
sl_top_add(struct sl_top *t, uint64_t hash, uint16_t rule_slot, uint8_t kind,
	   uint8_t ip_af, const uint8_t *id, uint32_t len)
{
	uint32_t i, m, min = 0;

	hash ^= (uint64_t)rule_slot * 0x9e3779b97f4a7c15ULL;
	for (m = tagged(t, hash); m != 0; m &= m - 1) {
		i = (uint32_t)__builtin_ctz(m);
		if (t->hash[i] == hash && t->e[i].rule_slot == rule_slot) {
			/* a counter alone: a torn read is off by one at worst
			 */
			__atomic_store_n(&t->e[i].count, t->e[i].count + 1,
					 __ATOMIC_RELAXED);
			return;
		}
	}
	if (t->n < SL_TOP_K) {
		write_entry(t, t->n, hash, rule_slot, kind, ip_af, id, len, 1,
			    0);
		t->n++;
		return;
	}
	/*
	 * Full: under a flood of distinct identities most rejections are
	 * newcomers that will never rank. One in eight gets in (a cheap
	 * stride, no random numbers); a heavy hitter arrives often enough to
	 * get in within a few of its rejections.
	 */
	if ((++t->misses & 7) != 0)
		return;
	/* space-saving: the newcomer inherits the smallest count as error */
	for (i = 1; i < SL_TOP_K; i++)
		if (t->e[i].count < t->e[min].count)
			min = i;
	write_entry(t, min, hash, rule_slot, kind, ip_af, id, len,
		    t->e[min].count + 1, t->e[min].count);
}

uint32_t
sl_top_snapshot(const struct sl_top *t, struct sl_top_entry *out)
{
	uint32_t i, n = 0, lim = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);

	for (i = 0; i < lim && i < SL_TOP_K; i++) {
		uint32_t s1 = __atomic_load_n(&t->e[i].seq, __ATOMIC_ACQUIRE);

		if (s1 & 1)
			continue;
		memcpy(&out[n], &t->e[i], sizeof(out[n]));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->e[i].seq, __ATOMIC_RELAXED) == s1)
			n++;
	}
	return n;
}

/*
 * Values below 8 have a bucket each; a value with its top bit at e >= 3
 * goes to one of 8 buckets of width 2^(e-3), picked by the three bits
 * below the top one.
 */
static uint32_t
hist_index(uint64_t ns)
{
	uint32_t e;

	if (ns < SL_HIST_SUB)
		return (uint32_t)ns;
	e = 63 - (uint32_t)__builtin_clzll(ns);
	return SL_HIST_SUB + (e - 3) * SL_HIST_SUB +
	       (uint32_t)((ns >> (e - 3)) & (SL_HIST_SUB - 1));
}

/* The first value past bucket i: what a quantile in it reports. */
static uint64_t
hist_upper(uint32_t i)
{
	uint32_t e, sub;

	if (i < SL_HIST_SUB)
		return i + 1;
	e = (i - SL_HIST_SUB) / SL_HIST_SUB + 3;
	sub = (i - SL_HIST_SUB) % SL_HIST_SUB;
	return (uint64_t)(SL_HIST_SUB + sub + 1) << (e - 3);
}

void
sl_hist_add(struct sl_hist *h, uint64_t ns)
{
	uint32_t i = hist_index(ns);

	if (i >= SL_HIST_BUCKETS)
		i = SL_HIST_BUCKETS - 1;
	h->b[i]++;
}

uint64_t
sl_hist_quantile(const struct sl_hist *h, double q)
{
	uint64_t total = 0, seen = 0, want;
	uint32_t i;

	for (i = 0; i < SL_HIST_BUCKETS; i++)
		total += h->b[i];
	if (total == 0)
		return 0;
	want = (uint64_t)(q * (double)total);
	if (want >= total)
		want = total - 1;
	for (i = 0; i < SL_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return hist_upper(i);
	}
	return hist_upper(SL_HIST_BUCKETS - 1);
}

/* A backend's answer, from half a millisecond to ten seconds: the
 * buckets a latency SLO is usually written against. */
const uint32_t sl_health_le_us[SL_HEALTH_BUCKETS - 1] = {
	500,    1000,   2000,   5000,    10000,   20000,   50000,
	100000, 200000, 500000, 1000000, 2000000, 5000000, 10000000};

void
sl_health_time(struct sl_rule_health *h, uint64_t us)
{
	uint32_t i = 0;

	while (i < SL_HEALTH_BUCKETS - 1 && us > sl_health_le_us[i])
		i++;
	h->le[i]++;
	h->sum_us += us;
	h->timed++;
}

void
sl_health_status(struct sl_rule_health *h, uint32_t status)
{
	uint32_t k = status / 100;

	h->cls[k >= 1 && k <= 5 ? k : 0]++;
}

void
sl_health_sum(struct sl_rule_health *sum, const struct sl_rule_health *a)
{
	uint32_t i;

	for (i = 0; i < SL_HEALTH_BUCKETS; i++)
		sum->le[i] += a->le[i];
	for (i = 0; i < 6; i++)
		sum->cls[i] += a->cls[i];
	sum->sum_us += a->sum_us;
	sum->timed += a->timed;
	sum->unframed += a->unframed;
	sum->bytes += a->bytes;
}

uint64_t
sl_health_quantile(const struct sl_rule_health *h, double q)
{
	uint64_t total = 0, seen = 0;
	double rank, lo, hi;
	uint32_t i;

	for (i = 0; i < SL_HEALTH_BUCKETS; i++)
		total += h->le[i];
	if (total == 0)
		return 0;
	rank = q * (double)total;
	for (i = 0; i < SL_HEALTH_BUCKETS - 1; i++) {
		if ((double)(seen + h->le[i]) >= rank && h->le[i] > 0)
			break;
		seen += h->le[i];
	}
	if (i == SL_HEALTH_BUCKETS - 1)
		return sl_health_le_us[i - 1];
	lo = i == 0 ? 0 : sl_health_le_us[i - 1];
	hi = sl_health_le_us[i];
	return (uint64_t)(lo +
			  (hi - lo) * (rank - (double)seen) / (double)h->le[i]);
}

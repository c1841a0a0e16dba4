/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parameters of the query that a backend reads as more than a query: an
 * API key, a method override. Names are compared as they are decoded,
 * and as PHP registers them (leading blanks dropped, ' ', '.' and '['
 * read as '_'), so that no spelling a backend resolves to the name
 * escapes it.
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sl_http.h"
#include "sl_http_priv.h"

#define QNAME_MAX 64 /* the longest parameter name compared */

int
sl_form_decode(const char *p, uint32_t n, char *out, uint32_t cap)
{
	uint32_t i, o = 0;

	for (i = 0; i < n; i++, o++) {
		int hi, lo;

		if (o == cap)
			return -2;
		out[o] = p[i] == '+' ? ' ' : p[i];
		if (p[i] != '%')
			continue;
		if (i + 2 >= n ||
		    (hi = sl_hexval((unsigned char)p[i + 1])) < 0 ||
		    (lo = sl_hexval((unsigned char)p[i + 2])) < 0)
			return -1;
		out[o] = (char)(hi << 4 | lo);
		i += 2;
	}
	return (int)o;
}

/* Whether the raw name p[0..n) reads as want[0..wl). */
static int
names(const char *p, uint32_t n, const char *want, uint32_t wl)
{
	char d[QNAME_MAX];
	int len, i = 0, k;

	/* most names are not it: one without an escape ends in want's
	 * last byte (unless that is the '_' PHP writes for three others);
	 * the shorter ones one_param has passed over */
	if (wl > sizeof(d) || (memchr(p, '%', n) == NULL &&
			       want[wl - 1] != '_' && p[n - 1] != want[wl - 1]))
		return 0;
	len = sl_form_decode(p, n, d, sizeof(d));
	if (len == (int)wl && memcmp(d, want, wl) == 0)
		return 1;
	while (i < len && d[i] == ' ')
		i++;
	if (len - i != (int)wl)
		return 0;
	for (k = i; k < len; k++)
		if (d[k] == ' ' || d[k] == '.' || d[k] == '[')
			d[k] = '_';
	return memcmp(d + i, want, wl) == 0;
}

/* The parameter from p to e, its first '=' at eq (NULL: none). */
static void
one_param(const char *p, const char *eq, const char *e, const char *want,
	  uint32_t wl, void (*fn)(void *ctx, const char *v, uint32_t len),
	  void *ctx)
{
	/* decoding never lengthens a name: most are ruled out here,
	 * before names() is called */
	if (eq != NULL && eq - p >= wl &&
	    names(p, (uint32_t)(eq - p), want, wl))
		fn(ctx, eq + 1, (uint32_t)(e - eq - 1));
}

#ifdef __SSE2__
/* Bit i: t[i] is c, for the 16 bytes from t. */
static inline uint64_t
bits16(const char *t, __m128i c)
{
	return (uint64_t)(uint32_t)_mm_movemask_epi8(
		_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)t), c));
}

/*
 * A target of 16 to 64 bytes split on bitmasks of its '?', '&' and
 * '=', a parameter a round, where a memchr for each cost 39 cycles of a
 * cache-resident keep-alive decision on a two-parameter query. The last
 * block is read from the 16 bytes that end t, and shifted into place:
 * no load passes t's end.
 */
static void
each_vec(const char *t, uint32_t n, const char *want, uint32_t wl,
	 void (*fn)(void *ctx, const char *v, uint32_t len), void *ctx)
{
	const __m128i cq = _mm_set1_epi8('?'), ca = _mm_set1_epi8('&'),
		      ce = _mm_set1_epi8('=');
	uint64_t mq = 0, ma = 0, me = 0, below;
	uint32_t o, at, start;

	for (o = 0; o < n; o += 16) {
		at = o + 16 <= n ? o : n - 16;
		mq |= bits16(t + at, cq) << at;
		ma |= bits16(t + at, ca) << at;
		me |= bits16(t + at, ce) << at;
	}
	if (mq == 0)
		return;
	start = (uint32_t)__builtin_ctzll(mq) + 1;
	for (;;) {
		uint32_t e;
		uint64_t eqs;

		below = start < 64 ? ~0ULL << start : 0;
		ma &= below;
		e = ma != 0 ? (uint32_t)__builtin_ctzll(ma) : n;
		eqs = me & below & (e < 64 ? (1ULL << e) - 1 : ~0ULL);
		if (eqs != 0)
			one_param(t + start, t + __builtin_ctzll(eqs), t + e,
				  want, wl, fn, ctx);
		if (e >= n)
			return;
		start = e + 1;
	}
}
#endif

void
sl_query_each(struct sl_str target, const char *want, uint32_t wl,
	      void (*fn)(void *ctx, const char *v, uint32_t len), void *ctx)
{
	const char *q, *end, *p;

	if (wl == 0 || wl > QNAME_MAX)
		return;
#ifdef __SSE2__
	if (target.len >= 16 && target.len <= 64) {
		each_vec(target.p, target.len, want, wl, fn, ctx);
		return;
	}
#endif
	q = target.len ? memchr(target.p, '?', target.len) : NULL;
	if (q == NULL)
		return;
	end = target.p + target.len;
	for (p = q + 1; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp != NULL ? amp : end;

		one_param(p, memchr(p, '=', (size_t)(e - p)), e, want, wl, fn,
			  ctx);
		p = e + 1;
	}
}

struct methods {
	void (*fn)(void *ctx, const char *v, uint32_t len);
	void *ctx;
};

static void
one_method(void *ctx, const char *v, uint32_t len)
{
	const struct methods *m = ctx;
	char d[15];
	int n = sl_form_decode(v, len, d, sizeof(d));

	if (n > 0)
		m->fn(m->ctx, d, (uint32_t)n);
}

void
sl_http_query_methods(struct sl_str target,
		      void (*fn)(void *ctx, const char *v, uint32_t len),
		      void *ctx)
{
	struct methods m = {fn, ctx};

	sl_query_each(target, "_method", 7, one_method, &m);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>
#ifdef __SSE4_2__
#include <nmmintrin.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sl_http.h"
#include "sl_http_priv.h"
#include "sl_mem.h"

/* tchar per RFC 9110 5.6.2: the bytes allowed in methods and field names. */
static const uint8_t tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
	['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
	['`'] = 1, ['|'] = 1, ['~'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1,
	['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1,
	['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,
	['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,
	['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1,
	['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1,
	['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,
	['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
	['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1,
	['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
	['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Per-parse state that does not belong in the result. */
struct pstate {
	const char *buf;
	size_t len;
	size_t pos;
	const struct sl_http_cfg *cfg;
	struct sl_http_req *req;
	struct sl_str bearer;
	uint8_t host_seen;
	uint8_t auth_seen;
	uint8_t te_seen;
	uint8_t te_chunked_last;
	uint8_t conn_upgrade;
	uint8_t upgrade_hdr;
};

/*
 * Skips bytes outside the given ranges, 16 at a time (SSE4.2 PCMPESTRI,
 * as picohttpparser does). Returns how many were skipped; the caller's
 * scalar loop checks the byte it stopped at and the tail under 16 bytes,
 * so the ranges may be a superset of the bytes that must stop a scan.
 */
static inline size_t
skip_outside(const char *p, size_t n, const char *ranges, int rlen)
{
	size_t i = 0;
#ifdef __SSE4_2__
	__m128i r = _mm_loadu_si128((const __m128i *)ranges);

	while (n - i >= 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(p + i));
		int k = _mm_cmpestri(r, rlen, b, 16,
				     _SIDD_UBYTE_OPS | _SIDD_CMP_RANGES |
					     _SIDD_LEAST_SIGNIFICANT);

		if (k != 16)
			return i + (size_t)k;
		i += 16;
	}
#else
	(void)p;
	(void)n;
	(void)ranges;
	(void)rlen;
#endif
	return i;
}

/*
 * Skips the bytes of a field value that cannot end it: 32 at a time with
 * two compares per 16 (below 0x20, or DEL), which issue every cycle where
 * PCMPESTRI costs several. HTAB stops it too; the caller's scalar loop
 * steps over it.
 */
static inline size_t
skip_value(const char *p, size_t n)
{
	size_t i = 0;
#ifdef __SSE2__
	const __m128i c1f = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f);

	while (n - i >= 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(p + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(p + i + 16));
		__m128i sa =
			_mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(a, c1f), a),
				     _mm_cmpeq_epi8(a, del));
		__m128i sb =
			_mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(b, c1f), b),
				     _mm_cmpeq_epi8(b, del));
		uint32_t m = (uint32_t)_mm_movemask_epi8(sa) |
			     (uint32_t)_mm_movemask_epi8(sb) << 16;

		if (m != 0)
			return i + (size_t)__builtin_ctz(m);
		i += 32;
	}
	if (n - i >= 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(p + i));
		uint32_t m = (uint32_t)_mm_movemask_epi8(
			_mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(a, c1f), a),
				     _mm_cmpeq_epi8(a, del)));

		if (m != 0)
			return i + (size_t)__builtin_ctz(m);
		i += 16;
	}
#else
	(void)p;
	(void)n;
#endif
	return i;
}
/* Bytes that end a token, as ranges ('|' '~' '`' are rechecked). */
static const char token_stop[16] = "\x00 \"\"(),,//:@[]{\xff";
/* Bytes that end a request target. */
static const char target_stop[16] = "\x00 \x7f\xff";

static inline int
is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static inline unsigned char
lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/* Case-insensitive equality with a lowercase literal of the same length. */
static int
ieq(const char *a, const char *lit, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != (unsigned char)lit[i])
			return 0;
	return 1;
}

/*
 * A field name against a configured one: with underscores read as the
 * backend's framework reads them, '_' and '-' are one byte.
 */
static int
same_header(struct sl_str a, struct sl_str b, uint8_t us)
{
	size_t i;

	if (a.len != b.len)
		return 0;
	for (i = 0; i < a.len; i++) {
		unsigned char x = lower((unsigned char)a.p[i]);
		unsigned char y = lower((unsigned char)b.p[i]);

		if (x != y && !(us == SL_US_SAME && (x == '_' || x == '-') &&
				(y == '_' || y == '-')))
			return 0;
	}
	return 1;
}

static int
fail(struct pstate *s, enum sl_http_err e)
{
	s->req->error = (uint8_t)e;
	return SL_HTTP_ERROR;
}

/* Classifies a byte that ended a token where it should not have. */
static int
bad_byte(struct pstate *s, unsigned char c, enum sl_http_err otherwise)
{
	if (c == '\r')
		return fail(s, SL_HTTP_E_BARE_CR);
	if (c == '\n')
		return fail(s, SL_HTTP_E_BARE_LF);
	if (is_ctl(c))
		return fail(s, SL_HTTP_E_CTL);
	return fail(s, otherwise);
}

/* Expects CRLF at pos. Returns 0, or an error / incomplete code. */
static int
expect_crlf(struct pstate *s)
{
	if (s->pos >= s->len)
		return SL_HTTP_INCOMPLETE;
	if (s->buf[s->pos] == '\n')
		return fail(s, SL_HTTP_E_BARE_LF);
	if (s->buf[s->pos] != '\r')
		return bad_byte(s, (unsigned char)s->buf[s->pos],
				SL_HTTP_E_VERSION);
	if (s->pos + 1 >= s->len)
		return SL_HTTP_INCOMPLETE;
	if (s->buf[s->pos + 1] != '\n')
		return fail(s, SL_HTTP_E_BARE_CR);
	s->pos += 2;
	return 0;
}

static int
parse_method(struct pstate *s)
{
	size_t start = s->pos;

	while (s->pos < s->len && tchar[(unsigned char)s->buf[s->pos]])
		s->pos++;
	if (s->pos >= s->len)
		return SL_HTTP_INCOMPLETE;
	if (s->buf[s->pos] != ' ' || s->pos == start)
		return bad_byte(s, (unsigned char)s->buf[s->pos],
				SL_HTTP_E_METHOD);
	s->req->method.p = s->buf + start;
	s->req->method.len = (uint32_t)(s->pos - start);
	s->pos++;
	return 0;
}

static int
parse_target(struct pstate *s)
{
	size_t start = s->pos;
	unsigned char c = 0;

	s->pos +=
		skip_outside(s->buf + s->pos, s->len - s->pos, target_stop, 4);
	while (s->pos < s->len) {
		c = (unsigned char)s->buf[s->pos];
		if (c <= 0x20 || c >= 0x7f)
			break;
		s->pos++;
	}
	if (s->pos >= s->len)
		return SL_HTTP_INCOMPLETE;
	if ((c == '\r' || c == '\n') && s->pos > start)
		return fail(s, SL_HTTP_E_HTTP09); /* served by some at the LF */
	if (c != ' ' || s->pos == start)
		return bad_byte(s, c, SL_HTTP_E_TARGET);
	s->req->target.p = s->buf + start;
	s->req->target.len = (uint32_t)(s->pos - start);
	s->pos++;
	return 0;
}

static int
parse_version(struct pstate *s)
{
	static const char v[] = "HTTP/1.";
	size_t i;

	for (i = 0; i < 8; i++) {
		unsigned char c;

		if (s->pos + i >= s->len)
			return SL_HTTP_INCOMPLETE;
		c = (unsigned char)s->buf[s->pos + i];
		if (i < 7 && c != (unsigned char)v[i])
			return bad_byte(s, c, SL_HTTP_E_VERSION);
		if (i == 7 && c != '0' && c != '1')
			return bad_byte(s, c, SL_HTTP_E_VERSION);
	}
	s->req->minor_version = (uint8_t)(s->buf[s->pos + 7] - '0');
	s->pos += 8;
	return expect_crlf(s);
}

/* Content-Length: 1*DIGIT, or a list of identical values (RFC 9110 8.6). */
static int
on_content_length(struct pstate *s, struct sl_str v)
{
	struct sl_http_req *r = s->req;
	uint32_t i = 0;

	while (i <= v.len) {
		uint64_t n = 0;
		uint32_t digits = 0;

		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
			i++;
		while (i < v.len && v.p[i] >= '0' && v.p[i] <= '9') {
			if (n > (UINT64_MAX >> 1) / 10)
				return fail(s, SL_HTTP_E_CL_BAD);
			n = n * 10 + (uint64_t)(v.p[i] - '0');
			digits++;
			i++;
		}
		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
			i++;
		if (digits == 0 || (i < v.len && v.p[i] != ','))
			return fail(s, SL_HTTP_E_CL_BAD);
		if (r->has_cl && r->content_length != n)
			return fail(s, SL_HTTP_E_CL_DIFF);
		r->has_cl = 1;
		r->content_length = n;
		i++; /* past the comma, or past the end */
	}
	return 0;
}

/*
 * Calls fn for each comma-separated element of a field value, trimmed of
 * whitespace and of any ";parameters". Empty elements are skipped.
 */
static int
for_each_elem(struct pstate *s, struct sl_str v,
	      int (*fn)(struct pstate *, struct sl_str))
{
	uint32_t i = 0;

	while (i < v.len) {
		uint32_t b, e;
		int rc;

		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
			i++;
		b = i;
		while (i < v.len && v.p[i] != ',' && v.p[i] != ';')
			i++;
		e = i;
		while (e > b && (v.p[e - 1] == ' ' || v.p[e - 1] == '\t'))
			e--;
		while (i < v.len && v.p[i] != ',')
			i++;
		i++;
		if (e == b)
			continue;
		rc = fn(s, (struct sl_str){v.p + b, e - b});
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int
te_elem(struct pstate *s, struct sl_str c)
{
	int is_chunked = c.len == 7 && ieq(c.p, "chunked", 7);

	/* chunked must be applied once and last: anything after it is TE.TE. */
	if (s->te_chunked_last || (is_chunked && s->req->chunked))
		return fail(s, SL_HTTP_E_TE_NOT_CHUNKED);
	s->te_chunked_last = (uint8_t)is_chunked;
	s->req->chunked |= (uint8_t)is_chunked;
	return 0;
}

static int
conn_elem(struct pstate *s, struct sl_str c)
{
	if (c.len == 5 && ieq(c.p, "close", 5))
		s->req->conn_close = 1;
	else if (c.len == 7 && ieq(c.p, "upgrade", 7))
		s->conn_upgrade = 1;
	return 0;
}

/* "/version" after websocket: a token. */
static int
websocket_version(const char *p, uint32_t n)
{
	uint32_t i;

	if (n < 2 || p[0] != '/')
		return 0;
	for (i = 1; i < n; i++)
		if (!tchar[(uint8_t)p[i]])
			return 0;
	return 1;
}

/*
 * Upgrade (RFC 9110 7.8) may name only websocket, with or without a
 * version: a tunnel of messages, decided as a whole by its request.
 * After a 101 to h2c the backend reads HTTP/2 requests sluice cannot
 * decide, one upgrade opening unlimited streams (curl --http2 does it
 * on its own); to TLS/1.x, requests sluice cannot see. Refused whether
 * Connection names upgrade or not, and on the whole value, not the
 * comma list with parameters cut that other fields are read as: a
 * backend that finds "h2c" anywhere in it must find nothing to take.
 */
static int
on_upgrade(struct pstate *s, struct sl_str v)
{
	uint32_t i = 0;

	s->upgrade_hdr = 1;
	while (i < v.len) {
		uint32_t b;

		while (i < v.len &&
		       (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
			i++;
		if (i == v.len)
			break;
		b = i;
		while (i < v.len && v.p[i] != ',' && v.p[i] != ' ' &&
		       v.p[i] != '\t')
			i++;
		if (i - b < 9 || !ieq(v.p + b, "websocket", 9) ||
		    (i - b > 9 && !websocket_version(v.p + b + 9, i - b - 9)))
			return fail(s, SL_HTTP_E_UPGRADE);
		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
			i++;
		if (i < v.len && v.p[i] != ',')
			return fail(s, SL_HTTP_E_UPGRADE);
	}
	return 0;
}

/*
 * A comma in a credential is two of them: it is how a server joins a
 * field sent twice (Node does, for any field it does not know), so a
 * backend that takes the first of the list serves "k1, x" as k1, each
 * x a new identity to a limit keyed on the whole. No key or token
 * holds one (RFC 6750's b64token has none).
 */
static int
listed(struct sl_str v)
{
	return memchr(v.p, ',', v.len) != NULL;
}

/*
 * Authorization is one credential (RFC 9110 11.6.2, no list): of two
 * fields a backend may take either, Go's the first, a framework that
 * keeps the last the other, so a Bearer beside a Basic or a second
 * Bearer would be keyed on one while the backend serves the other.
 */
static int
on_authorization(struct pstate *s, struct sl_str v)
{
	uint32_t i = 6;

	if (s->auth_seen++)
		return fail(s, SL_HTTP_E_DUP_IDENT);
	if (v.len <= 6 || !ieq(v.p, "bearer", 6) || tchar[(uint8_t)v.p[6]])
		return 0; /* another scheme */
	/* RFC 9110 11.4: only SP after the scheme. A server that reads
	 * "Bearer<TAB>k" as no credential would serve what sluice keyed on
	 * k, so it is refused rather than keyed on either reading. */
	if (v.p[6] != ' ')
		return fail(s, SL_HTTP_E_AUTH_SCHEME);
	while (i < v.len && v.p[i] == ' ')
		i++;
	/* a b64token has no blank either (RFC 6750 2.1): "Bearer k1 k2" is
	 * k1 to a backend that splits the field at its blanks, the common
	 * way to take the token, and each k2 a new key to a limit keyed on
	 * the whole */
	if (listed(v) || memchr(v.p + i, ' ', v.len - i) != NULL ||
	    memchr(v.p + i, '\t', v.len - i) != NULL)
		return fail(s, SL_HTTP_E_DUP_IDENT);
	s->bearer = (struct sl_str){v.p + i, v.len - i};
	return 0;
}

/* An identity header seen twice could name two identities: refuse it. */
static int
set_once(struct pstate *s, struct sl_str *dst, struct sl_str v)
{
	if (dst->p != NULL || listed(v))
		return fail(s, SL_HTTP_E_DUP_IDENT);
	*dst = v;
	return 0;
}

/*
 * The configured key (or user) field is Authorization: the credential
 * is read as an auth middleware takes it, after its scheme, so that no
 * spelling of the scheme is a fresh key ("Bearer k1", "bearer  k1" and
 * "Token k1" are k1, as without the setting; a bare "k1" is k1). What
 * the scheme's check refuses, this refuses too.
 */
static __attribute__((noinline, cold)) int
on_auth_credential(struct pstate *s, struct sl_str *dst, struct sl_str v)
{
	uint32_t i = 0;

	if (s->auth_seen++ || listed(v))
		return fail(s, SL_HTTP_E_DUP_IDENT);
	while (i < v.len && tchar[(uint8_t)v.p[i]])
		i++;
	if (i < v.len && v.p[i] == '\t')
		return fail(s, SL_HTTP_E_AUTH_SCHEME);
	if (i < v.len && v.p[i] == ' ') {
		while (i < v.len && v.p[i] == ' ')
			i++;
		v = (struct sl_str){v.p + i, v.len - i};
	}
	if (memchr(v.p, ' ', v.len) != NULL || memchr(v.p, '\t', v.len) != NULL)
		return fail(s, SL_HTTP_E_DUP_IDENT);
	return set_once(s, dst, v);
}

/*
 * A method override: Symfony (and so Laravel), ASP.NET, Express's
 * method-override and Google's APIs serve a POST carrying one as the
 * method it names, so rules for that method must see it too. Two that
 * name two methods are refused: frameworks differ on which wins.
 *
 * A path override: Zend Framework 1 (and Magento 1 on it), and Symfony
 * before 2.7.49, route a request by X-Original-URL, else X-Rewrite-URL
 * (fields IIS rewriters set), over its request line; rules for that
 * path must see it too.
 */
enum override { OV_NONE, OV_METHOD, OV_PATH };

static __attribute__((noinline)) enum override
override_kind(struct sl_str n, uint8_t us)
{
	static const struct {
		struct sl_str name;
		enum override kind;
	} names[] = {
		{{"x-http-method-override", 22}, OV_METHOD},
		{{"x-http-method", 13}, OV_METHOD},
		{{"x-method-override", 17}, OV_METHOD},
		{{"x-original-url", 14}, OV_PATH},
		{{"x-rewrite-url", 13}, OV_PATH},
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (same_header(n, names[i].name, us))
			return names[i].kind;
	return OV_NONE;
}

/* Kept out of line, as the credential below: few requests carry one,
 * and inlined into the field loop they cost every request (parse alone
 * 20-40 cycles more a head in sluice-bench). */
static __attribute__((noinline, cold)) int
on_override(struct pstate *s, struct sl_str v)
{
	struct sl_str *o = &s->req->method_override;

	uint32_t i;

	if (v.len == 0)
		return 0; /* names no method */
	if (o->p != NULL && o->len != v.len)
		return fail(s, SL_HTTP_E_METHOD_OVERRIDE);
	for (i = 0; o->p != NULL && i < v.len; i++)
		if (lower((unsigned char)o->p[i]) !=
		    lower((unsigned char)v.p[i]))
			return fail(s, SL_HTTP_E_METHOD_OVERRIDE);
	*o = v;
	return 0;
}

/* Both fields, or one twice, naming two targets: a backend reading one
 * and a proxy before it the other could route apart, so refused. An
 * empty one is kept: a framework that finds the field set routes by it
 * (to its root), and the normal form refuses it. */
static __attribute__((noinline, cold)) int
on_path_override(struct pstate *s, struct sl_str v)
{
	struct sl_str *o = &s->req->path_override;

	if (o->p != NULL && (o->len != v.len || memcmp(o->p, v.p, v.len) != 0))
		return fail(s, SL_HTTP_E_PATH_OVERRIDE);
	*o = v;
	return 0;
}

static int
on_any_override(struct pstate *s, struct sl_str n, struct sl_str v)
{
	switch (override_kind(n, s->cfg != NULL ? s->cfg->underscores : 0)) {
	case OV_METHOD:
		return on_override(s, v);
	case OV_PATH:
		return on_path_override(s, v);
	default:
		return 0;
	}
}

static int
is_authorization(struct sl_str n)
{
	return n.len == 13 && ieq(n.p, "authorization", 13);
}

/* The newest fields are the ones our proxies wrote: kept in a ring. */
static void
forwarded_field(struct sl_http_req *r, struct sl_str v)
{
	if (v.len == 0)
		return; /* no address in it */
	r->xff[r->n_xff % SL_HTTP_MAX_XFF] = v;
	r->n_xff++; /* at most SL_HTTP_MAX_HEADERS */
}

static int
on_header(struct pstate *s, struct sl_str n, struct sl_str v)
{
	struct sl_http_req *r = s->req;
	const struct sl_http_cfg *cfg = s->cfg;

	if (cfg != NULL && cfg->api_key_header.len &&
	    same_header(n, cfg->api_key_header, cfg->underscores))
		return is_authorization(n)
			       ? on_auth_credential(s, &r->api_key, v)
			       : set_once(s, &r->api_key, v);
	if (cfg != NULL && cfg->user_header.len &&
	    same_header(n, cfg->user_header, cfg->underscores))
		return is_authorization(n) ? on_auth_credential(s, &r->user, v)
					   : set_once(s, &r->user, v);
	if ((n.len == 13 || n.len == 14 || n.len == 17 || n.len == 22) &&
	    (n.p[0] | 0x20) == 'x')
		return on_any_override(s, n, v);
	switch (n.len) {
	case 4:
		if (!ieq(n.p, "host", 4))
			break;
		if (s->host_seen || v.len == 0)
			return fail(s, SL_HTTP_E_HOST);
		s->host_seen = 1;
		r->host = v;
		break;
	case 7:
		if (ieq(n.p, "upgrade", 7))
			return on_upgrade(s, v);
		break;
	case 10:
		if (ieq(n.p, "connection", 10))
			return for_each_elem(s, v, conn_elem);
		break;
	case 13:
		if (ieq(n.p, "authorization", 13))
			return on_authorization(s, v);
		break;
	case 14:
		if (ieq(n.p, "content-length", 14))
			return on_content_length(s, v);
		break;
	case 9:
		if (cfg != NULL && cfg->forwarded && ieq(n.p, "forwarded", 9))
			forwarded_field(r, v);
		break;
	case 15:
		if ((cfg == NULL || !cfg->forwarded) &&
		    ieq(n.p, "x-forwarded-for", 15))
			forwarded_field(r, v);
		break;
	case 17:
		if (!ieq(n.p, "transfer-encoding", 17))
			break;
		s->te_seen = 1;
		return for_each_elem(s, v, te_elem);
	}
	return 0;
}

/* Scans a field value up to CRLF; trailing whitespace is not part of it. */
static int
parse_value(struct pstate *s, struct sl_str *v)
{
	size_t start, end;

	while (s->pos < s->len &&
	       (s->buf[s->pos] == ' ' || s->buf[s->pos] == '\t'))
		s->pos++;
	start = s->pos;
	s->pos += skip_value(s->buf + s->pos, s->len - s->pos);
	for (;;) {
		unsigned char c;

		if (s->pos >= s->len)
			return SL_HTTP_INCOMPLETE;
		c = (unsigned char)s->buf[s->pos];
		/* hottest loop: printable ASCII and obs-text */
		if ((c >= 0x20 && c != 0x7f) || c == '\t') {
			s->pos++;
			continue;
		}
		if (c != '\r')
			return bad_byte(s, c, SL_HTTP_E_CTL);
		break;
	}
	end = s->pos;
	while (end > start &&
	       (s->buf[end - 1] == ' ' || s->buf[end - 1] == '\t'))
		end--;
	v->p = s->buf + start;
	v->len = (uint32_t)(end - start);
	return expect_crlf(s);
}

static int
parse_header_line(struct pstate *s)
{
	size_t start = s->pos;
	struct sl_str name, value;
	unsigned char c;
	int rc;

	c = (unsigned char)s->buf[s->pos];
	if (c == ' ' || c == '\t')
		return fail(s, SL_HTTP_E_OBS_FOLD);
	s->pos +=
		skip_outside(s->buf + s->pos, s->len - s->pos, token_stop, 16);
	while (s->pos < s->len && tchar[(unsigned char)s->buf[s->pos]])
		s->pos++;
	if (s->pos >= s->len)
		return SL_HTTP_INCOMPLETE;
	c = (unsigned char)s->buf[s->pos];
	if (c == ' ' || c == '\t')
		return fail(s, SL_HTTP_E_WS_COLON);
	if (c != ':' || s->pos == start)
		return bad_byte(s, c, SL_HTTP_E_HDR_NAME);
	name.p = s->buf + start;
	name.len = (uint32_t)(s->pos - start);
	s->pos++;
	rc = parse_value(s, &value);
	if (rc != 0)
		return rc;
	if (++s->req->n_headers > SL_HTTP_MAX_HEADERS)
		return fail(s, SL_HTTP_E_TOO_MANY);
	return on_header(s, name, value);
}

struct key_seen {
	const char *v;
	uint32_t len, n;
};

static void
key_seen(void *ctx, const char *v, uint32_t len)
{
	struct key_seen *k = ctx;

	k->v = v;
	k->len = len;
	k->n++;
}

/*
 * The key in the query, where the config names its parameter: decoded
 * as a backend reads it (so "k%31" is "k1"), one parameter at most
 * (frameworks differ on which of two they take).
 */
static __attribute__((noinline, cold)) int
key_param(struct pstate *s, struct sl_str name)
{
	struct sl_http_req *r = s->req;
	struct key_seen k = {NULL, 0, 0};
	int n;

	sl_query_each(r->target, name.p, name.len, key_seen, &k);
	if (k.n > 1)
		return fail(s, SL_HTTP_E_DUP_IDENT);
	if (k.n == 0 || k.len == 0)
		return 0;
	if (memchr(k.v, '%', k.len) == NULL &&
	    memchr(k.v, '+', k.len) == NULL) {
		r->key_param = (struct sl_str){k.v, k.len};
		return 0;
	}
	n = sl_form_decode(k.v, k.len, r->key_param_buf,
			   sizeof(r->key_param_buf));
	if (n < 0)
		return fail(s, n == -1 ? SL_HTTP_E_PCT : SL_HTTP_E_KEY_PARAM);
	r->key_param = (struct sl_str){r->key_param_buf, (uint32_t)n};
	return 0;
}

/* Checks that only make sense once every field has been seen. */
static int
finish(struct pstate *s)
{
	struct sl_http_req *r = s->req;

	if (r->minor_version == 1 && !s->host_seen)
		return fail(s, SL_HTTP_E_HOST);
	if (s->te_seen && r->has_cl)
		return fail(s, SL_HTTP_E_CL_TE);
	if (s->te_seen && r->minor_version == 0)
		return fail(s, SL_HTTP_E_TE_HTTP10);
	if (s->te_seen && !s->te_chunked_last)
		return fail(s, SL_HTTP_E_TE_NOT_CHUNKED);
	/* in any case: a lenient backend may take "connect" as CONNECT */
	if (r->method.len == 7 && ieq(r->method.p, "connect", 7))
		return fail(s, SL_HTTP_E_CONNECT);
	r->bearer = s->bearer;
	if (s->cfg != NULL && s->cfg->api_key_param.len &&
	    key_param(s, s->cfg->api_key_param) != 0)
		return SL_HTTP_ERROR;
	if (r->api_key.p == NULL && r->key_param.len != 0)
		r->api_key = r->key_param;
	if (r->api_key.p == NULL && s->bearer.len != 0)
		r->api_key = s->bearer;
	r->upgrade = (uint8_t)(s->conn_upgrade && s->upgrade_hdr);
	return 0;
}

int
sl_http_parse_request(const char *buf, size_t len,
		      const struct sl_http_cfg *cfg, struct sl_http_req *req)
{
	struct pstate s = {.buf = buf, .len = len, .cfg = cfg, .req = req};
	int rc;

	sl_mem_zero(req, offsetof(struct sl_http_req, xff));
	req->method_override = (struct sl_str){NULL, 0};
	req->path_override = (struct sl_str){NULL, 0};
	req->key_param = (struct sl_str){NULL, 0};
	/* RFC 9112 2.2: ignore empty lines before the request line. */
	while (s.pos + 1 < len && buf[s.pos] == '\r' && buf[s.pos + 1] == '\n')
		s.pos += 2;
	if (s.pos >= len || (s.pos + 1 == len && buf[s.pos] == '\r'))
		return SL_HTTP_INCOMPLETE;
	if ((rc = parse_method(&s)) != 0 || (rc = parse_target(&s)) != 0 ||
	    (rc = parse_version(&s)) != 0)
		return rc;
	for (;;) {
		if (s.pos >= len)
			return SL_HTTP_INCOMPLETE;
		if (buf[s.pos] == '\r' || buf[s.pos] == '\n') {
			if ((rc = expect_crlf(&s)) != 0)
				return rc;
			break;
		}
		if ((rc = parse_header_line(&s)) != 0)
			return rc;
	}
	if ((rc = finish(&s)) != 0)
		return rc;
	return (int)s.pos;
}

const char *
sl_http_err_name(enum sl_http_err e)
{
	static const char *const names[SL_HTTP_E__COUNT] = {
		[SL_HTTP_E_NONE] = "none",
		[SL_HTTP_E_METHOD] = "method",
		[SL_HTTP_E_TARGET] = "target",
		[SL_HTTP_E_VERSION] = "version",
		[SL_HTTP_E_CTL] = "control_byte",
		[SL_HTTP_E_BARE_CR] = "bare_cr",
		[SL_HTTP_E_BARE_LF] = "bare_lf",
		[SL_HTTP_E_OBS_FOLD] = "obs_fold",
		[SL_HTTP_E_HDR_NAME] = "header_name",
		[SL_HTTP_E_WS_COLON] = "space_before_colon",
		[SL_HTTP_E_CL_TE] = "cl_and_te",
		[SL_HTTP_E_CL_DIFF] = "cl_differs",
		[SL_HTTP_E_CL_BAD] = "cl_invalid",
		[SL_HTTP_E_TE_NOT_CHUNKED] = "te_not_chunked",
		[SL_HTTP_E_TE_HTTP10] = "te_in_http10",
		[SL_HTTP_E_HOST] = "host",
		[SL_HTTP_E_TOO_MANY] = "too_many_headers",
		[SL_HTTP_E_DUP_IDENT] = "duplicate_identity",
		[SL_HTTP_E_CHUNK] = "chunked_body",
		[SL_HTTP_E_PCT] = "bad_percent_encoding",
		[SL_HTTP_E_PCT_CTL] = "encoded_control_byte",
		[SL_HTTP_E_ESC_SLASH] = "escaped_slash",
		[SL_HTTP_E_FORM] = "target_form",
		[SL_HTTP_E_AUTHORITY] = "authority",
		[SL_HTTP_E_HOST_MISMATCH] = "host_mismatch",
		[SL_HTTP_E_CREDENTIALS] = "conflicting_credentials",
		[SL_HTTP_E_AUTH_SCHEME] = "authorization_scheme",
		[SL_HTTP_E_PATH_PARAMS] = "path_parameters",
		[SL_HTTP_E_HTTP09] = "http09",
		[SL_HTTP_E_FORWARDED] = "forwarded_unreadable",
		[SL_HTTP_E_CLIENT_ADDR] = "client_address",
		[SL_HTTP_E_UPGRADE] = "upgrade_protocol",
		[SL_HTTP_E_CONNECT] = "connect",
		[SL_HTTP_E_BODY_REQUEST] = "body_request",
		[SL_HTTP_E_UPGRADE_PIPELINED] = "upgrade_pipelined",
		[SL_HTTP_E_UPGRADE_FRAMING] = "upgrade_framing",
		[SL_HTTP_E_BACKSLASH] = "backslash",
		[SL_HTTP_E_METHOD_OVERRIDE] = "method_override",
		[SL_HTTP_E_KEY_PARAM] = "key_parameter",
		[SL_HTTP_E_PATH_OVERRIDE] = "path_override",
	};
	return (unsigned)e < SL_HTTP_E__COUNT ? names[e] : "unknown";
}

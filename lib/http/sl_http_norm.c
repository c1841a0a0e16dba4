/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The request target as the backend resolves it: what rules match.
 * Nothing here rewrites what is forwarded.
 */
#include <assert.h>
#include <string.h>
#include <strings.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sl_http.h"
#include "sl_http_priv.h"

/* RFC 3986 2.3 unreserved: decoded wherever it was escaped. */
static const uint8_t unreserved[256] = {
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['0'] = 1, ['1'] = 1,
	['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
	['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1,
	['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
	['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
	['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1,
	['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1,
	['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
	['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
	['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Where the path ends: the query, or the end of the bytes. */
static uint32_t
path_end(const char *p, uint32_t n)
{
	const char *q = memchr(p, '?', n);

	return q != NULL ? (uint32_t)(q - p) : n;
}

/* Bytes the clean-path scan must look at: '/', '%', '#', '\\', '?', ';'. */
enum { C_PLAIN, C_SLASH, C_DIRTY, C_QUERY, C_PARAM };
static const uint8_t path_class[256] = {
	['/'] = C_SLASH,  ['%'] = C_DIRTY, ['#'] = C_DIRTY,
	['\\'] = C_DIRTY, ['?'] = C_QUERY, [';'] = C_PARAM,
};

/*
 * The length of the path when it resolves to itself (no escape, no empty
 * or dot segment, no fragment), else -1. One pass over the bytes up to
 * the query: most requests are clean and keep their bytes where they lie.
 * A byte at a time from i on; the reference of the vector scan below.
 */
static int
clean_path_from(const struct sl_norm_cfg *cfg, const char *p, uint32_t n,
		uint32_t i)
{
	for (; i < n; i++) {
		uint8_t k = path_class[(unsigned char)p[i]];

		if (k == C_PLAIN ||
		    (k == C_PARAM && cfg->path_params == SL_PARAMS_KEEP))
			continue;
		if (k == C_QUERY)
			break;
		if (k == C_DIRTY || k == C_PARAM ||
		    (i + 1 < n && (p[i + 1] == '/' || p[i + 1] == '.')))
			return -1;
	}
	return (int)i;
}

#ifdef __SSE2__
/* The lanes of v equal to c, a bit each. */
static inline uint32_t
lanes_eq(__m128i v, char c)
{
	return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)));
}
#endif

/*
 * The same, 16 bytes at a time while 17 are there (the byte after each
 * slash is read with it), the rest a byte at a time.
 */
static int
clean_path_vec(const struct sl_norm_cfg *cfg, const char *p, uint32_t n)
{
	uint32_t i = 0;
#ifdef __SSE2__
	int semi = cfg->path_params != SL_PARAMS_KEEP;

	for (; i + 17 <= n; i += 16) {
		__m128i v =
			_mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i nx = _mm_loadu_si128(
			(const __m128i *)(const void *)(p + i + 1));
		uint32_t q = lanes_eq(v, '?');
		uint32_t bad = lanes_eq(v, '%') | lanes_eq(v, '#') |
			       lanes_eq(v, '\\') |
			       (semi ? lanes_eq(v, ';') : 0) |
			       (lanes_eq(v, '/') &
				(lanes_eq(nx, '/') | lanes_eq(nx, '.')));
		uint32_t before = q != 0 ? (q & (0u - q)) - 1 : 0xffffu;

		if (bad & before)
			return -1;
		if (q != 0)
			return (int)(i + (uint32_t)__builtin_ctz(q));
	}
#endif
	return clean_path_from(cfg, p, n, i);
}

/* Debug and fuzz builds check every answer against the byte-wise scan. */
static int
clean_path_len(const struct sl_norm_cfg *cfg, const char *p, uint32_t n)
{
	int r = clean_path_vec(cfg, p, n);

	assert(r == clean_path_from(cfg, p, n, 0));
	return r;
}

/* One decoded segment byte and what it means. */
enum { B_BYTE, B_SEP, B_END };

/*
 * Reads the byte (or escape) at p[*i] into out[*w..]. Returns B_SEP when
 * it separates segments, B_BYTE when it was written, B_END when what is
 * left of the path is stripped parameters, or -(sl_http_err).
 */
static int
read_byte(const struct sl_norm_cfg *cfg, const char *p, uint32_t n, uint32_t *i,
	  char *out, uint32_t *w)
{
	static const char hex[] = "0123456789ABCDEF";
	unsigned char c = (unsigned char)p[*i];
	int hi, lo;

	if (c == '/') {
		(*i)++;
		return B_SEP;
	}
	if (c == '#')
		return -SL_HTTP_E_FORM; /* a fragment is not sent (RFC 9112) */
	if (c == ';' && cfg->path_params != SL_PARAMS_KEEP) {
		if (cfg->path_params == SL_PARAMS_REJECT)
			return -SL_HTTP_E_PATH_PARAMS;
		/* the rest of the segment is parameters: gone */
		while (*i < n && p[*i] != '/')
			(*i)++;
		return *i < n ? ((*i)++, B_SEP) : B_END;
	}
	/* a slash to IIS, a byte to nginx: where they may disagree, as
	 * for %5C, refused unless the setting says which */
	if (c == '\\' && cfg->escaped_slashes == SL_ESC_REJECT)
		return -SL_HTTP_E_BACKSLASH;
	if (c != '%') {
		out[(*w)++] = (char)c;
		(*i)++;
		return B_BYTE;
	}
	if (*i + 2 >= n || (hi = sl_hexval((unsigned char)p[*i + 1])) < 0 ||
	    (lo = sl_hexval((unsigned char)p[*i + 2])) < 0)
		return -SL_HTTP_E_PCT;
	*i += 3;
	c = (unsigned char)(hi << 4 | lo);
	if (c < 0x20 || c == 0x7f)
		return -SL_HTTP_E_PCT_CTL;
	if (c == '/' || c == '\\') {
		if (cfg->escaped_slashes == SL_ESC_REJECT)
			return -SL_HTTP_E_ESC_SLASH;
		if (cfg->escaped_slashes == SL_ESC_DECODE) {
			if (c == '/')
				return B_SEP;
			out[(*w)++] = (char)c;
			return B_BYTE;
		}
	} else if (unreserved[c]) {
		out[(*w)++] = (char)c;
		return B_BYTE;
	}
	out[(*w)++] = '%';
	out[(*w)++] = hex[c >> 4];
	out[(*w)++] = hex[c & 15];
	return B_BYTE;
}

/* Drops the last segment written: out ends before its '/'. */
static uint32_t
pop_segment(const char *out, uint32_t o)
{
	while (o > 0 && out[o - 1] != '/')
		o--;
	return o > 0 ? o - 1 : 0;
}

/*
 * RFC 3986 5.2.4 over decoded segments, one pass: each segment is
 * decoded after a '/' in out, then kept, dropped (".", or an empty one
 * when merging), or dropped with its predecessor (".."). A last "." or
 * ".." leaves the trailing '/' it resolves to. p[0] is '/' (or n is 0).
 */
static int
norm_segments(const struct sl_norm_cfg *cfg, const char *p, uint32_t n,
	      char *out)
{
	uint32_t i = n > 0 ? 1 : 0, o = 0;

	for (;;) {
		uint32_t w = o + 1, len;
		int sep = 0, dot, dotdot, rc;
		const char *s;

		out[o] = '/';
		while (i < n) {
			rc = read_byte(cfg, p, n, &i, out, &w);
			if (rc < 0)
				return rc;
			if (rc == B_SEP) {
				sep = 1;
				break;
			}
			if (rc == B_END)
				break;
		}
		s = out + o + 1;
		len = w - o - 1;
		dot = len == 1 && s[0] == '.';
		dotdot = len == 2 && s[0] == '.' && s[1] == '.';
		if (dotdot)
			o = pop_segment(out, o);
		else if (!dot && !(len == 0 && sep && cfg->merge_slashes))
			o = w;
		if (!sep) {
			/* "/a/b/.." is "/a/": the dot leaves its '/' */
			if (dot || dotdot)
				out[o++] = '/';
			break;
		}
	}
	if (o == 0)
		out[o++] = '/';
	return (int)o;
}

int
sl_http_normalize_path(const struct sl_norm_cfg *cfg, const char *path,
		       uint32_t len, char *out)
{
	if (len == 0 || path[0] != '/')
		return -SL_HTTP_E_FORM;
	return norm_segments(cfg, path, len, out);
}

/* ---- the host ---- */

static const uint8_t host_byte[256] = {
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['0'] = 1, ['1'] = 1,
	['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
	['8'] = 1, ['9'] = 1, ['A'] = 2, ['B'] = 2, ['C'] = 2, ['D'] = 2,
	['E'] = 2, ['F'] = 2, ['G'] = 2, ['H'] = 2, ['I'] = 2, ['J'] = 2,
	['K'] = 2, ['L'] = 2, ['M'] = 2, ['N'] = 2, ['O'] = 2, ['P'] = 2,
	['Q'] = 2, ['R'] = 2, ['S'] = 2, ['T'] = 2, ['U'] = 2, ['V'] = 2,
	['W'] = 2, ['X'] = 2, ['Y'] = 2, ['Z'] = 2, ['a'] = 1, ['b'] = 1,
	['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
	['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
	['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/*
 * Splits host[:port] (or [v6]:port). Returns 0 with the name in *name,
 * the port digits in *port (len 0: none) and their value in *pv, or -1;
 * *upper is set when the name has a capital letter.
 */
static int
split_authority(struct sl_str a, struct sl_str *name, struct sl_str *port,
		uint32_t *pv, uint32_t *upper)
{
	uint32_t i, end = a.len;

	if (a.len > 0 && a.p[0] == '[') {
		const char *rb = memchr(a.p, ']', a.len);

		if (rb == NULL)
			return -1;
		end = (uint32_t)(rb - a.p) + 1;
		for (i = 1; i + 1 < end; i++) {
			unsigned char c = (unsigned char)a.p[i];

			if (sl_hexval(c) < 0 && c != ':' && c != '.')
				return -1;
			*upper |= c >= 'A' && c <= 'F';
		}
		if (end < a.len && a.p[end] != ':')
			return -1;
	} else {
		for (i = 0; i < a.len && a.p[i] != ':'; i++) {
			uint8_t k = host_byte[(unsigned char)a.p[i]];

			if (k == 0)
				return -1;
			*upper |= k == 2;
		}
		end = i;
	}
	*name = (struct sl_str){a.p, end};
	*port = (struct sl_str){a.p + end, 0};
	*pv = 0;
	if (end == a.len)
		return 0;
	*port = (struct sl_str){a.p + end + 1, a.len - end - 1};
	if (port->len > 5)
		return -1;
	for (i = 0; i < port->len; i++) {
		if (port->p[i] < '0' || port->p[i] > '9')
			return -1;
		*pv = *pv * 10 + (uint32_t)(port->p[i] - '0');
	}
	return *pv <= 65535 ? 0 : -1;
}

#ifdef __SSE2__
/* The lanes of v a host name keeps as they are: a-z, 0-9, - . _ ~. */
static inline uint32_t
host_plain_lanes(__m128i v)
{
	__m128i l = _mm_sub_epi8(v, _mm_set1_epi8('a'));
	__m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
	__m128i ok = _mm_or_si128(
		_mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(25)), l),
		_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));

	return (uint32_t)_mm_movemask_epi8(ok) | lanes_eq(v, '-') |
	       lanes_eq(v, '.') | lanes_eq(v, '_') | lanes_eq(v, '~');
}

static inline __m128i
load8(const char *p)
{
	return _mm_loadl_epi64((const __m128i *)(const void *)p);
}
#endif

/*
 * Whether a host is already as a server compares it, told 16 bytes at a
 * time: plain bytes only (no capital, no port, no brackets) and no
 * trailing dot. Read only within its bytes: under 8, not told here.
 */
static int
host_plain(struct sl_str a)
{
#ifdef __SSE2__
	uint32_t i;

	if (a.len < 8 || a.p[a.len - 1] == '.')
		return 0;
	if (a.len < 16)
		return (host_plain_lanes(load8(a.p)) & 0xff) == 0xff &&
		       (host_plain_lanes(load8(a.p + a.len - 8)) & 0xff) ==
			       0xff;
	for (i = 0; i + 16 <= a.len; i += 16)
		if (host_plain_lanes(_mm_loadu_si128((
			    const __m128i *)(const void *)(a.p + i))) != 0xffff)
			return 0;
	return host_plain_lanes(_mm_loadu_si128(
		       (const __m128i *)(const void *)(a.p + a.len - 16))) ==
	       0xffff;
#else
	(void)a;
	return 0;
#endif
}

/*
 * The host as a server compares it: lower case, one trailing dot gone,
 * the scheme's default port gone. Written to out only when it differs
 * from the raw bytes; returns bytes used in out, or -1.
 */
static int
norm_host(struct sl_str a, uint16_t dflt, char *out, struct sl_str *res)
{
	struct sl_str name, port;
	uint32_t i, o = 0, upper = 0, pv;

	if (host_plain(a)) {
#ifndef NDEBUG
		/* the byte-wise reading below agrees: as it is */
		assert(split_authority(a, &name, &port, &pv, &upper) == 0 &&
		       !upper && port.len == 0 && name.len == a.len);
#endif
		*res = a;
		return 0;
	}

	if (split_authority(a, &name, &port, &pv, &upper) != 0)
		return -1;
	if (name.len > 1 && name.p[name.len - 1] == '.' && name.p[0] != '[')
		name.len--;
	if (name.len == 0 || name.p[name.len - 1] == '.')
		return -1; /* "" or "a.." */
	if (port.len == 0 || pv == dflt)
		port.len = 0; /* "host:" and "host:80" are "host" */
	/* any change (a dot or a port dropped) makes it shorter */
	if (!upper && name.len + (port.len ? port.len + 1 : 0) == a.len) {
		*res = a;
		return 0;
	}
	for (i = 0; i < name.len; i++) {
		unsigned char c = (unsigned char)name.p[i];

		out[o++] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
	}
	if (port.len) {
		out[o++] = ':';
		memcpy(out + o, port.p, port.len);
		o += port.len;
	}
	*res = (struct sl_str){out, o};
	return (int)o;
}

int
sl_http_normalize_host(const char *host, uint32_t len, char *out)
{
	struct sl_str res;

	if (norm_host((struct sl_str){host, len}, 80, out, &res) < 0)
		return -1;
	if (res.p != out)
		memcpy(out, res.p, res.len);
	return (int)res.len;
}

static int
str_eq(struct sl_str a, struct sl_str b)
{
	return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* ---- the target's forms ---- */

static int
is_method(const struct sl_http_req *req, const char *m)
{
	size_t n = strlen(m);

	return req->method.len == n && req->method.p[0] == m[0] &&
	       memcmp(req->method.p, m, n) == 0;
}

/* "http://" or "https://", the scheme in any case; its default port. */
static int
scheme_len(struct sl_str t, uint16_t *dflt)
{
	uint32_t i = 0;

	while (i < t.len && i < 5 && (t.p[i] | 0x20) >= 'a' &&
	       (t.p[i] | 0x20) <= 'z')
		i++;
	if (i + 3 > t.len || memcmp(t.p + i, "://", 3) != 0)
		return -1;
	if (i == 4 && strncasecmp(t.p, "http", 4) == 0)
		*dflt = 80;
	else if (i == 5 && strncasecmp(t.p, "https", 5) == 0)
		*dflt = 443;
	else
		return -1;
	return (int)i + 3;
}

struct nstate {
	const struct sl_norm_cfg *cfg;
	const struct sl_http_req *req;
	char *buf;
	uint32_t used;
	struct sl_http_norm *out;
};

/* The path part of a target, from its first byte up to the query. */
static int
path_into(struct nstate *s, const char *p, uint32_t n, struct sl_str *dst)
{
	int rc = p[0] == '/' ? clean_path_len(s->cfg, p, n) : -1;

	if (rc > 0) {
		*dst = (struct sl_str){p, (uint32_t)rc};
		return 0;
	}
	n = path_end(p, n);
	if (n > 0 && p[0] != '/')
		return SL_HTTP_E_FORM;
	rc = norm_segments(s->cfg, p, n, s->buf + s->used);
	if (rc < 0)
		return -rc;
	*dst = (struct sl_str){s->buf + s->used, (uint32_t)rc};
	s->out->rewritten |= dst == &s->out->path;
	s->used += (uint32_t)rc;
	return 0;
}

static int
set_path(struct nstate *s, const char *p, uint32_t n)
{
	return path_into(s, p, n, &s->out->path);
}

static int
set_host(struct nstate *s, struct sl_str raw, uint16_t dflt, struct sl_str *res)
{
	int rc = norm_host(raw, dflt, s->buf + s->used, res);

	if (rc < 0)
		return SL_HTTP_E_AUTHORITY;
	s->used += (uint32_t)rc;
	return 0;
}

/* http://authority/path: the authority is the host (RFC 9112 3.2.2). */
static int
absolute_form(struct nstate *s, int sl, uint16_t dflt)
{
	struct sl_str t = s->req->target, auth, hdr;
	uint32_t a = (uint32_t)sl, e = a;
	int rc;

	while (e < t.len && t.p[e] != '/' && t.p[e] != '?' && t.p[e] != '#')
		e++;
	auth = (struct sl_str){t.p + a, e - a};
	if (memchr(auth.p, '@', auth.len) != NULL)
		return SL_HTTP_E_AUTHORITY; /* userinfo: deprecated, refused */
	if ((rc = set_host(s, auth, dflt, &s->out->host)) != 0)
		return rc;
	s->out->form = SL_FORM_ABSOLUTE;
	if (s->req->host.len > 0 && s->cfg->host_mismatch == SL_HOST_REJECT) {
		if ((rc = set_host(s, s->req->host, 80, &hdr)) != 0)
			return rc;
		if (!str_eq(hdr, s->out->host))
			return SL_HTTP_E_HOST_MISMATCH;
	}
	if (e == t.len || t.p[e] == '?') {
		s->out->path = (struct sl_str){"/", 1};
		s->out->rewritten = 1;
		return 0;
	}
	return set_path(s, t.p + e, t.len - e);
}

static int
target_of(struct nstate *s)
{
	const struct sl_http_req *req = s->req;
	struct sl_str t = req->target;
	uint16_t dflt = 80;
	int sl, rc;

	if (is_method(req, "CONNECT")) {
		s->out->form = SL_FORM_AUTHORITY;
		if (memchr(t.p, '/', t.len) != NULL ||
		    memchr(t.p, '@', t.len) != NULL)
			return SL_HTTP_E_FORM;
		return set_host(s, t, 443, &s->out->host);
	}
	if (t.len > 0 && t.p[0] == '/') {
		if (req->host.len > 0 &&
		    (rc = set_host(s, req->host, 80, &s->out->host)) != 0)
			return rc;
		return set_path(s, t.p, t.len);
	}
	if ((sl = scheme_len(t, &dflt)) > 0)
		return absolute_form(s, sl, dflt);
	if (t.len == 1 && t.p[0] == '*' && is_method(req, "OPTIONS")) {
		s->out->form = SL_FORM_ASTERISK;
		if (req->host.len > 0)
			return set_host(s, req->host, 80, &s->out->host);
		return 0;
	}
	return SL_HTTP_E_FORM;
}

/*
 * The path a path-override field names, as the framework that honours
 * it routes: an origin-form target, or an absolute one's path (its
 * authority is not the framework's to route by). Anything else is no
 * path sluice could match as the framework does: refused.
 */
static __attribute__((noinline, cold)) int
override_of(struct nstate *s)
{
	struct sl_str t = s->req->path_override;
	uint16_t dflt = 80;
	uint32_t e;
	int sl;

	if (t.len > 0 && t.p[0] == '/')
		return path_into(s, t.p, t.len, &s->out->alt_path);
	if ((sl = scheme_len(t, &dflt)) <= 0)
		return SL_HTTP_E_PATH_OVERRIDE;
	e = (uint32_t)sl;
	while (e < t.len && t.p[e] != '/' && t.p[e] != '?' && t.p[e] != '#')
		e++;
	if (e < t.len && t.p[e] == '/')
		return path_into(s, t.p + e, t.len - e, &s->out->alt_path);
	s->out->alt_path = (struct sl_str){"/", 1};
	return 0;
}

int
sl_http_normalize(const struct sl_norm_cfg *cfg, const struct sl_http_req *req,
		  char *scratch, size_t cap, struct sl_http_norm *out)
{
	struct nstate s = {cfg, req, scratch, 0, out};
	int rc;

	memset(out, 0, sizeof(*out));
	if (cap <
	    (size_t)req->target.len + req->host.len + req->path_override.len)
		return SL_HTTP_E_TARGET; /* never: the caller sizes it */
	rc = target_of(&s);
	if (rc == 0 && req->path_override.p != NULL)
		rc = override_of(&s);
	return rc;
}

/* Credential c beside the key: one that names another key. */
static int
names_other(struct sl_str c, struct sl_str k)
{
	return c.len > 0 && c.p != k.p &&
	       (c.len != k.len || memcmp(c.p, k.p, k.len) != 0);
}

int
sl_http_credentials_conflict(const struct sl_http_req *req)
{
	return names_other(req->bearer, req->api_key) ||
	       names_other(req->key_param, req->api_key);
}

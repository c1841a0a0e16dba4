/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <stdio.h>
#include <strings.h>
#include <stddef.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sl_ident.h"

#define AF4 4
#define AF6 6

static inline uint64_t
mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

#define HASH_STEP 0x9e3779b97f4a7c15ULL

static inline uint64_t
hash_init(uint32_t len, uint64_t seed)
{
	return seed ^ (HASH_STEP * (len + 1));
}

/*
 * The last n (1..7) bytes as a little-endian word, with their count on
 * top. Read in whole loads, not byte by byte: a word loaded from bytes
 * just stored one at a time waits for all of them (no store forwarding).
 * whole: the 8 bytes before p + n belong to the buffer.
 */
static inline uint64_t
hash_tail(const uint8_t *p, uint32_t n, int whole)
{
	uint64_t v;

	if (whole) {
		memcpy(&v, p + n - 8, 8);
		v >>= 8 * (8 - n);
	} else if (n >= 4) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		v = lo | (uint64_t)hi << (8 * (n - 4));
	} else {
		v = p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) |
		    (uint64_t)p[n - 1] << (8 * (n - 1));
	}
	return v ^ ((uint64_t)n << 56);
}

uint64_t
sl_hash64(const void *buf, uint32_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	uint64_t h = hash_init(len, seed);
	int whole = len >= 8;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		h = mix(h ^ v) + HASH_STEP;
	}
	if (len)
		h = mix(h ^ hash_tail(p, len, whole));
	return mix(h);
}

/* A rule's two bucket-key words come from one pass over the identity. */
void
sl_hash64x2(const void *buf, uint32_t len, uint64_t seed1, uint64_t seed2,
	    uint64_t out[2])
{
	const uint8_t *p = buf;
	uint64_t a = hash_init(len, seed1), b = hash_init(len, seed2);
	int whole = len >= 8;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		a = mix(a ^ v) + HASH_STEP;
		b = mix(b ^ v) + HASH_STEP;
	}
	if (len) {
		uint64_t v = hash_tail(p, len, whole);

		a = mix(a ^ v);
		b = mix(b ^ v);
	}
	out[0] = mix(a);
	out[1] = mix(b);
}

/*
 * n bytes, at most SL_IDENT_MAX, in 16-byte moves that overlap at the
 * end, never past n either side: a length the compiler cannot see was
 * copied with `rep movsq`, whose start-up was most of a key's copy
 * (set_id 4.6 % of a cache-resident keep-alive profile).
 */
static void
copy_id(uint8_t *d, const uint8_t *s, uint32_t n)
{
	uint32_t o;

	if (n >= 16) {
		for (o = 0; o + 16 < n; o += 16)
			memcpy(d + o, s + o, 16);
		memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		memcpy(d, s, 8);
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else if (n > 0) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

static void
set_id(struct sl_identity *out, uint8_t kind, struct sl_str s)
{
	uint32_t n = s.len;

	out->kind = kind;
	if (n <= SL_IDENT_MAX) {
		copy_id(out->id, (const uint8_t *)s.p, n);
	} else {
		/* Two long keys with one prefix must not share a bucket. */
		uint64_t h = sl_hash64(s.p, s.len, kind);

		n = SL_IDENT_MAX;
		memcpy(out->id, s.p, n - 8);
		memcpy(out->id + n - 8, &h, 8);
	}
	out->len = (uint8_t)n;
}

/*
 * One address family per client: ::ffff:a.b.c.d (mapped) and ::a.b.c.d
 * (compatible, deprecated) are a.b.c.d, so that a dual-stack proxy's
 * spelling neither escapes an IPv4 blocklist entry nor pools every
 * such client in one bucket. Returns -1 for the unspecified address.
 */
static int
one_family(uint8_t *af, uint8_t addr[16])
{
	static const uint8_t zero[16];
	uint32_t v4;
	int v4_tail;

	/* an IPv4 address decided on its own word: with the family's
	 * size in a variable, every request went through the branches of
	 * a copy and a compare of either size */
	if (*af != AF6) {
		memcpy(&v4, addr, 4);
		return v4 == 0 ? -1 : 0;
	}
	v4_tail = addr[12] | addr[13] | addr[14] || addr[15] > 1;
	if (memcmp(addr, zero, 10) == 0 &&
	    ((addr[10] == 0xff && addr[11] == 0xff) ||
	     (addr[10] == 0 && addr[11] == 0 && v4_tail))) {
		memmove(addr, addr + 12, 4);
		memset(addr + 4, 0, 12);
		*af = AF4;
		memcpy(&v4, addr, 4);
		return v4 == 0 ? -1 : 0; /* ::ffff:0.0.0.0 */
	}
	return memcmp(addr, zero, 16) == 0 ? -1 : 0;
}

/* Parses one element: "a.b.c.d", "a.b.c.d:port", "v6" or "[v6]:port". */
static int
parse_addr(struct sl_str s, uint8_t *af, uint8_t addr[16])
{
	char tmp[64];
	const char *p = s.p;
	uint32_t n = s.len;
	const char *colon;
	int bracketed = n > 0 && p[0] == '[';

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	if (bracketed) {
		const char *rb = memchr(p, ']', n);

		if (rb == NULL || (rb + 1 < p + n && rb[1] != ':'))
			return -1;
		n = (uint32_t)(rb - p - 1);
		p++;
	}
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET6, tmp, addr) == 1) {
		*af = AF6;
		return 0;
	}
	if (bracketed) /* only IPv6 goes in brackets */
		return -1;
	colon = strchr(tmp, ':');
	if (colon != NULL && strchr(colon + 1, ':') == NULL)
		tmp[colon - tmp] = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, tmp, addr) == 1) {
		*af = AF4;
		return 0;
	}
	return -1;
}

static struct sl_str
trimmed(const char *p, uint32_t lo, uint32_t hi)
{
	while (lo < hi && (p[lo] == ' ' || p[lo] == '\t'))
		lo++;
	while (hi > lo && (p[hi - 1] == ' ' || p[hi - 1] == '\t'))
		hi--;
	return (struct sl_str){p + lo, hi - lo};
}

/*
 * Where the part that starts at i ends: the next sep outside a quoted
 * string (Forwarded's values may be quoted, and hold ',' and ';';
 * X-Forwarded-For has none, and a '"' in it makes the element no
 * address anyway).
 */
static uint32_t
part_end(struct sl_str v, uint32_t i, char sep)
{
	int q = 0;

	for (; i < v.len; i++) {
		if (v.p[i] == '"')
			q = !q;
		else if (v.p[i] == '\\' && q && i + 1 < v.len)
			i++;
		else if (v.p[i] == sep && !q)
			break;
	}
	return i;
}

/* The field's elements (empty ones are not elements), counted; *at, the
 * k-th (from 0) when k < the count. */
static uint32_t
elements(struct sl_str v, uint32_t k, struct sl_str *at)
{
	uint32_t i = 0, n = 0;

	while (i <= v.len) {
		uint32_t e = part_end(v, i, ',');
		struct sl_str x = trimmed(v.p, i, e);

		if (x.len > 0 && n++ == k)
			*at = x;
		i = e + 1;
	}
	return n;
}

/*
 * The element trusted_hops from the right across all fields: our own
 * proxies appended those; everything to its left is written by the client
 * and must never be believed. With fewer elements than hops, every element
 * was written by us and the leftmost is the client. -1 where the fields
 * that would hold it were not kept.
 */
static int
xff_pick(const struct sl_http_req *req, uint32_t hops, struct sl_str *out)
{
	uint32_t kept =
		req->n_xff < SL_HTTP_MAX_XFF ? req->n_xff : SL_HTTP_MAX_XFF;
	uint32_t i, seen = 0;

	for (i = 0; i < kept; i++) {
		struct sl_str v =
			req->xff[(req->n_xff - 1 - i) % SL_HTTP_MAX_XFF];
		struct sl_str first;
		uint32_t n = elements(v, 0, &first);

		if (n == 0)
			continue;
		if (seen + n >= hops) {
			elements(v, n - (hops - seen), out);
			return 0;
		}
		seen += n;
		*out = first; /* the leftmost so far */
	}
	return seen > 0 && req->n_xff <= SL_HTTP_MAX_XFF ? 0 : -1;
}

/*
 * Forwarded's element (RFC 7239 4): pairs split by ';', the address in
 * "for", maybe quoted. "unknown", an obfuscated "_name" or no "for" at
 * all: no address (and parse_addr says so).
 */
static struct sl_str
forwarded_for(struct sl_str e)
{
	uint32_t i = 0;

	while (i < e.len) {
		uint32_t j = part_end(e, i, ';');
		struct sl_str pr = trimmed(e.p, i, j);

		i = j + 1;
		if (pr.len < 4 || strncasecmp(pr.p, "for=", 4) != 0)
			continue;
		pr = trimmed(pr.p, 4, pr.len);
		if (pr.len >= 2 && pr.p[0] == '"' && pr.p[pr.len - 1] == '"')
			pr = (struct sl_str){pr.p + 1, pr.len - 2};
		return pr;
	}
	return (struct sl_str){e.p, 0};
}

/* The forwarded address, or an sl_http_err; 1 when there is none. */
static int
forwarded_addr(const struct sl_ident_cfg *cfg, const struct sl_http_req *req,
	       uint8_t *af, uint8_t addr[16])
{
	struct sl_str e;

	if (req->n_xff == 0)
		return 1; /* no proxy of ours on the way: the peer is it */
	if (xff_pick(req, cfg->trusted_hops, &e) != 0)
		return SL_HTTP_E_FORWARDED;
	if (cfg->client_ip == SL_CIP_FORWARDED)
		e = forwarded_for(e);
	if (parse_addr(e, af, addr) != 0)
		return SL_HTTP_E_FORWARDED;
	return 0;
}

static void
apply_prefix(uint8_t addr[16], uint8_t prefix)
{
	uint32_t i;

	if (prefix >= 128)
		return;
	for (i = 0; i < 16; i++) {
		uint32_t bit = i * 8;

		if (bit >= prefix)
			addr[i] = 0;
		else if (bit + 8 > prefix)
			addr[i] &= (uint8_t)(0xff00 >> (prefix - bit));
	}
}

int
sl_ident_group_addr(uint8_t *af, uint8_t addr[16], uint8_t ipv6_prefix)
{
	if (one_family(af, addr) != 0)
		return -1;
	if (*af == AF6)
		apply_prefix(addr, ipv6_prefix);
	return 0;
}

/*
 * The peer's address, the rest zero, in one 16-byte store: the copy to
 * addr below reads all 16 at once, and over the stores of the clear
 * and of the 4-byte address it waited for them to retire (no store
 * forwarding; 70 % of client_ip's samples on that load).
 */
static inline void
put_addr(uint8_t dst[16], uint8_t af, const uint8_t peer[16])
{
#ifdef __SSE2__
	uint32_t v4;

	if (af == AF6) {
		_mm_storeu_si128(
			(__m128i *)(void *)dst,
			_mm_loadu_si128((const __m128i *)(const void *)peer));
		return;
	}
	memcpy(&v4, peer, 4);
	_mm_storeu_si128((__m128i *)(void *)dst, _mm_cvtsi32_si128((int)v4));
#else
	memset(dst, 0, 16);
	memcpy(dst, peer, af == AF6 ? 16 : 4);
#endif
}

static int
client_ip(const struct sl_ident_cfg *cfg, const struct sl_http_req *req,
	  uint8_t af, const uint8_t peer[16], struct sl_identity *out)
{
	out->ip_af = af;
	put_addr(out->client_ip, af, peer);
	if (cfg->client_ip != SL_CIP_PEER && cfg->trusted_hops > 0 &&
	    req != NULL) {
		int rc = forwarded_addr(cfg, req, &out->ip_af, out->client_ip);

		if (rc > 1)
			return rc;
		out->xff_used = rc == 0;
	}
	if (one_family(&out->ip_af, out->client_ip) != 0)
		return SL_HTTP_E_CLIENT_ADDR;
	memcpy(out->addr, out->client_ip, 16);
	if (out->ip_af == AF6)
		apply_prefix(out->client_ip, cfg->ipv6_prefix);
	return 0;
}

int
sl_ident_extract(const struct sl_ident_cfg *cfg, const struct sl_http_req *req,
		 uint8_t af, const uint8_t peer[16], struct sl_identity *out)
{
	int rc;

	memset(out, 0, offsetof(struct sl_identity, id));
	rc = client_ip(cfg, req, af, peer, out);
	if (req != NULL && req->api_key.len > 0) {
		set_id(out, SL_ID_KEY, req->api_key);
	} else if (req != NULL && req->user.len > 0) {
		set_id(out, SL_ID_USER, req->user);
	} else {
		uint8_t n = out->ip_af == AF6 ? 16 : 4;

		out->kind = SL_ID_IP;
		out->len = n;
		memcpy(out->id, out->client_ip, n);
	}
	return rc;
}

uint64_t
sl_ident_hash(const struct sl_identity *id)
{
	return sl_hash64(id->id, id->len, id->kind);
}

int
sl_ident_format(const struct sl_identity *id, char *buf, uint32_t size)
{
	char ip[INET6_ADDRSTRLEN];

	switch (id->kind) {
	case SL_ID_KEY:
		return snprintf(buf, size, "key:%.*s", id->len, id->id);
	case SL_ID_USER:
		return snprintf(buf, size, "user:%.*s", id->len, id->id);
	case SL_ID_IP:
		inet_ntop(id->ip_af == AF6 ? AF_INET6 : AF_INET, id->id, ip,
			  sizeof(ip));
		return snprintf(buf, size, "ip:%s", ip);
	}
	return snprintf(buf, size, "none");
}

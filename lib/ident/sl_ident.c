/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

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

static void
set_id(struct sl_identity *out, uint8_t kind, struct sl_str s)
{
	uint32_t n = s.len;

	out->kind = kind;
	if (n <= SL_IDENT_MAX) {
		memcpy(out->id, s.p, n);
	} else {
		/* Two long keys with one prefix must not share a bucket. */
		uint64_t h = sl_hash64(s.p, s.len, kind);

		n = SL_IDENT_MAX;
		memcpy(out->id, s.p, n - 8);
		memcpy(out->id + n - 8, &h, 8);
	}
	out->len = (uint8_t)n;
}

/* Parses one XFF element: "a.b.c.d", "a.b.c.d:port", "v6" or "[v6]:port". */
static int
parse_addr(struct sl_str s, uint8_t *af, uint8_t addr[16])
{
	char tmp[64];
	const char *p = s.p;
	uint32_t n = s.len;
	const char *colon;

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	if (p[0] == '[') {
		const char *rb = memchr(p, ']', n);

		if (rb == NULL)
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

/*
 * The element trusted_hops from the right across all XFF fields: our own
 * proxies appended those; everything to its left is written by the client
 * and must never be believed. With fewer elements than hops, every element
 * was written by us and the leftmost is the client.
 */
static int
xff_pick(const struct sl_http_req *req, uint32_t hops, struct sl_str *out)
{
	int f;
	uint32_t seen = 0;

	if (req->xff_overflow)
		return -1;
	for (f = req->n_xff - 1; f >= 0; f--) {
		struct sl_str v = req->xff[f];
		int32_t end = (int32_t)v.len;

		while (end > 0) {
			int32_t b = end - 1;
			uint32_t lo, hi;

			while (b >= 0 && v.p[b] != ',')
				b--;
			lo = (uint32_t)(b + 1);
			hi = (uint32_t)end;
			while (lo < hi && (v.p[lo] == ' ' || v.p[lo] == '\t'))
				lo++;
			while (hi > lo &&
			       (v.p[hi - 1] == ' ' || v.p[hi - 1] == '\t'))
				hi--;
			end = b;
			if (hi == lo)
				continue;
			*out = (struct sl_str){v.p + lo, hi - lo};
			if (++seen == hops)
				return 0;
		}
	}
	return seen > 0 ? 0 : -1;
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

static int
client_ip(const struct sl_ident_cfg *cfg, const struct sl_http_req *req,
	  uint8_t af, const uint8_t peer[16], struct sl_identity *out)
{
	struct sl_str e;
	int fallback = 0;

	out->ip_af = af;
	memcpy(out->client_ip, peer, af == AF6 ? 16 : 4);
	if (cfg->use_xff && cfg->trusted_hops > 0 && req != NULL) {
		uint8_t xaf;
		uint8_t xa[16];

		if (xff_pick(req, cfg->trusted_hops, &e) == 0 &&
		    parse_addr(e, &xaf, xa) == 0) {
			out->ip_af = xaf;
			memcpy(out->client_ip, xa, 16);
			out->xff_used = 1;
		} else if (req->n_xff > 0) {
			fallback = 1;
		}
	}
	memcpy(out->addr, out->client_ip, 16);
	if (out->ip_af == AF6)
		apply_prefix(out->client_ip, cfg->ipv6_prefix);
	return fallback;
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

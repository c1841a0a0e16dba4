/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_IDENT_H
#define SL_IDENT_H

/*
 * Who is asking: the API key, else the user, else the client address —
 * the TCP peer, or the X-Forwarded-For entry our own proxies wrote.
 * Pure C; the limiter keys its buckets by the result.
 */

#include <stdint.h>

#include "sl_http.h"

#define SL_IDENT_MAX 96 /* longer keys keep a prefix and a hash of the rest */

enum sl_ident_kind {
	SL_ID_NONE = 0,
	SL_ID_KEY,
	SL_ID_USER,
	SL_ID_IP,
};

struct sl_ident_cfg {
	uint8_t use_xff;      /* client_ip: x-forwarded-for */
	uint8_t trusted_hops; /* proxies of ours that append to XFF */
	uint8_t ipv6_prefix;  /* IPv6 clients grouped by this prefix */
};

struct sl_identity {
	uint8_t kind;          /* enum sl_ident_kind */
	uint8_t len;           /* bytes used in id */
	uint8_t ip_af;         /* SL_AF_INET / SL_AF_INET6 of client_ip */
	uint8_t xff_used;      /* client_ip came from X-Forwarded-For */
	uint8_t client_ip[16]; /* grouped by ipv6_prefix for IPv6 */
	uint8_t addr[16];      /* client_ip whole: what blocklists match */
	uint8_t id[SL_IDENT_MAX];
};

/*
 * Fills out from a parsed request and the TCP peer (af 4 or 6, addr in
 * network order). Returns 0, or 1 when X-Forwarded-For was configured but
 * unusable and the peer address was used instead.
 */
int sl_ident_extract(const struct sl_ident_cfg *cfg,
		     const struct sl_http_req *req, uint8_t af,
		     const uint8_t peer[16], struct sl_identity *out);

/*
 * Hash of an identity's kind and bytes (a table index, never trusted
 * alone). Computed on demand: only rejections need it.
 */
uint64_t sl_ident_hash(const struct sl_identity *id);

/*
 * 64-bit hash of identities and rule names (not cryptographic). Its values
 * name shared state (Redis keys): they must not change between releases.
 */
uint64_t sl_hash64(const void *buf, uint32_t len, uint64_t seed);
/* sl_hash64 under two seeds at once, the two chains interleaved. */
void sl_hash64x2(const void *buf, uint32_t len, uint64_t seed1, uint64_t seed2,
		 uint64_t out[2]);

/* Writes a printable form of the identity ("key:abc", "ip:198.18.0.1"). */
int sl_ident_format(const struct sl_identity *id, char *buf, uint32_t size);

#endif /* SL_IDENT_H */

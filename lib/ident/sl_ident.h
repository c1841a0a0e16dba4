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

/* Where the client address comes from. */
enum sl_client_ip {
	SL_CIP_PEER = 0,  /* the TCP peer */
	SL_CIP_XFF,       /* X-Forwarded-For, by trusted hops */
	SL_CIP_FORWARDED, /* Forwarded (RFC 7239) for=, by trusted hops */
};

struct sl_ident_cfg {
	uint8_t client_ip;    /* enum sl_client_ip */
	uint8_t trusted_hops; /* proxies of ours that append to the list */
	uint8_t ipv6_prefix;  /* IPv6 clients grouped by this prefix */
};

struct sl_identity {
	uint8_t kind;          /* enum sl_ident_kind */
	uint8_t len;           /* bytes used in id */
	uint8_t ip_af;         /* SL_AF_INET / SL_AF_INET6 of client_ip */
	uint8_t xff_used;      /* client_ip came from a forwarded field */
	uint8_t client_ip[16]; /* grouped by ipv6_prefix for IPv6 */
	uint8_t addr[16];      /* client_ip whole: what blocklists match */
	uint8_t id[SL_IDENT_MAX];
};

/*
 * Fills out from a parsed request and the TCP peer (af 4 or 6, addr in
 * network order). One address family per client: IPv4-mapped and
 * IPv4-compatible IPv6 addresses are read as the IPv4 address, wherever
 * they come from. The forwarded address is the trusted_hops-th from the
 * right across every field, however many there are; with fewer, the
 * leftmost; with none, the peer. Returns 0, or the sl_http_err to refuse
 * the request with (400): SL_HTTP_E_FORWARDED where the list cannot be
 * read whole or the address picked is not one, SL_HTTP_E_CLIENT_ADDR
 * where the address is unspecified. Never another address in its place.
 */
int sl_ident_extract(const struct sl_ident_cfg *cfg,
		     const struct sl_http_req *req, uint8_t af,
		     const uint8_t peer[16], struct sl_identity *out);

/*
 * An address as a client at it is counted: *af 4 or 6, addr in network
 * order (the first 4 bytes for IPv4), rewritten in place. A mapped or
 * compatible IPv6 address becomes its IPv4 one, an IPv6 address is cut
 * to ipv6_prefix bits. Returns -1 for the unspecified address, which no
 * client has (its requests are refused).
 */
int sl_ident_group_addr(uint8_t *af, uint8_t addr[16], uint8_t ipv6_prefix);

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

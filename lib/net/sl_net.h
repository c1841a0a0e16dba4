/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_NET_H
#define SL_NET_H

/*
 * Frame classification: Ethernet (+ up to two 802.1Q/802.1ad tags),
 * IPv4 (with options) or IPv6 (with extension headers), then TCP.
 *
 * Pure C over a byte range: no mbufs, no EAL, so the unit tests and the
 * fuzzer drive it directly. Every read is bounds-checked against the frame
 * length; lengths written in headers are trusted only after they are checked
 * against the bytes actually present.
 */

#include <stdint.h>
#include <stddef.h>

enum sl_pkt_class {
	SL_PKT_OTHER = 0, /* not TCP over IP: bridged untouched */
	SL_PKT_TCP,       /* a whole, consistent TCP segment */
	SL_PKT_FRAG,      /* an IP fragment (ports unknown or incomplete) */
	SL_PKT_MALFORMED, /* claims to be IP but is truncated or inconsistent */
};

enum sl_malformed {
	SL_BAD_NONE = 0,
	SL_BAD_L2_TRUNC,
	SL_BAD_IP_VERSION,
	SL_BAD_IP_HDRLEN,
	SL_BAD_IP_TOTLEN,
	SL_BAD_IP_CKSUM,
	SL_BAD_IP6_EXT,
	SL_BAD_TCP_TRUNC,
	SL_BAD_TCP_DOFF,
	SL_BAD_VLAN_DEPTH, /* more tags than the two read here */
	SL_BAD__COUNT
};

#define SL_AF_INET  4
#define SL_AF_INET6 6

#define SL_TCP_FIN 0x01
#define SL_TCP_SYN 0x02
#define SL_TCP_RST 0x04
#define SL_TCP_PSH 0x08
#define SL_TCP_ACK 0x10
#define SL_TCP_URG 0x20

struct sl_pkt {
	uint16_t l3_off;      /* after Ethernet and VLAN tags */
	uint16_t l4_off;      /* after IP header and extension headers */
	uint16_t payload_off; /* after TCP header and options */
	uint16_t l3_len;      /* IP datagram length (header + payload) */
	uint32_t payload_len; /* TCP payload bytes */
	uint16_t vlan_tci;    /* outermost tag, valid if n_vlan > 0 */
	uint8_t n_vlan;
	uint8_t af; /* SL_AF_INET or SL_AF_INET6 */
	uint8_t l4_proto;
	uint8_t tcp_flags;
	uint8_t tcp_hlen;
	uint8_t reason; /* enum sl_malformed when SL_PKT_MALFORMED */
	uint16_t sport, dport, win;
	uint32_t seq, ack;
	/* Addresses in network order; IPv4 in the first four bytes. */
	uint8_t src[16];
	uint8_t dst[16];
};

/* Classifies a frame of len bytes; fills p as far as it got. */
enum sl_pkt_class sl_pkt_parse(const uint8_t *frame, uint32_t len,
			       struct sl_pkt *p);

/* What the normaliser reads of a segment's TCP options. */
struct sl_tcp_opts {
	uint32_t tsval;
	uint32_t tsecr;
	uint8_t has_ts;
	uint8_t has_sig; /* MD5 (RFC 2385, kind 19) or TCP-AO (RFC 5925, 29) */
	uint16_t mss;    /* a SYN's maximum segment size; 0: none */
};

/*
 * Reads the options of a segment classified SL_PKT_TCP the way Linux's
 * tcp_parse_options does: a length below 2 or past the header ends the
 * walk (Linux ignores the rest, so the segment still counts).
 */
void sl_tcp_opts_parse(const uint8_t *frame, const struct sl_pkt *p,
		       struct sl_tcp_opts *o);

/* Whether a classified IPv4 datagram carries IP options. */
static inline int
sl_ip4_has_options(const struct sl_pkt *p)
{
	return p->af == SL_AF_INET && p->l4_off - p->l3_off > 20;
}

/*
 * Whether an IP fragment could carry TCP, or an IPv6 header chain that
 * leads to it: an IPv6 fragment header names the first header of the
 * fragmentable part, which may be another extension header before TCP.
 */
int sl_frag_may_carry_tcp(const struct sl_pkt *p);

/*
 * Shortens a classified TCP segment to its first keep payload bytes
 * (and drops its FIN, which came after the rest): IP length, IPv4 and
 * TCP checksums rewritten. Returns the new frame length.
 */
uint32_t sl_tcp_trim(uint8_t *frame, struct sl_pkt *p, uint32_t keep);
/*
 * The IP header's length fields (and the IPv4 checksum) rewritten for a
 * TCP payload of len bytes, and p with them; the TCP checksum is the
 * caller's. IPv6: no extension headers (l3_len counts the 40 bytes).
 */
void sl_ip_set_payload_len(uint8_t *frame, struct sl_pkt *p, uint32_t len);

/*
 * A classified TCP segment's sequence and acknowledgment numbers
 * rewritten in place (the checksum adjusted, RFC 1624), and p with them.
 */
void sl_tcp_set_seq_ack(uint8_t *frame, struct sl_pkt *p, uint32_t seq,
			uint32_t ack);
/*
 * Its SACK blocks put in the peer's numbers (blocks in a sequence space
 * the peer does not share would mislead its recovery): each edge mapped
 * by map; a block left empty (it named only bytes the peer never sent) is
 * dropped, the option made NOP when none is left (checksum adjusted).
 * map NULL: every block dropped. Returns blocks dropped.
 */
typedef uint32_t (*sl_seq_map)(const void *ctx, uint32_t seq);
uint32_t sl_tcp_map_sack(uint8_t *frame, const struct sl_pkt *p, sl_seq_map map,
			 const void *ctx);

/* Internet checksum helpers (RFC 1071), host-order partial sums. */
uint32_t sl_cksum_partial(const void *buf, size_t len, uint32_t sum);
uint16_t sl_cksum_fold(uint32_t sum);

/*
 * Verifies the TCP checksum of a segment classified SL_PKT_TCP.
 * Returns 1 when it is correct. The appliance parses only segments the
 * backend's stack will also accept; otherwise a segment with a bad
 * checksum would advance our view of the stream and not the backend's.
 */
int sl_tcp_cksum_ok(const uint8_t *frame, const struct sl_pkt *p);

/* Recomputes and writes the TCP checksum of a classified segment. */
void sl_tcp_cksum_set(uint8_t *frame, const struct sl_pkt *p);

/*
 * Adjusts the TCP checksum of a segment whose payload has had n bytes
 * put in at off, the rest moved up (frame holds the new bytes; p, the
 * headers, still the old lengths). A wrong checksum stays wrong.
 */
void sl_tcp_cksum_insert(uint8_t *frame, const struct sl_pkt *p, uint32_t off,
			 uint32_t n);
/* Recomputes and writes the IPv4 header checksum. */
void sl_ipv4_cksum_set(uint8_t *frame, const struct sl_pkt *p);

const char *sl_malformed_name(enum sl_malformed r);

/* ---- replies built on the data path (sl_reply.c) ---- */

#define SL_RH_DRAFT  0x1 /* RateLimit-Policy + RateLimit */
#define SL_RH_LEGACY 0x2 /* RateLimit-Limit / -Remaining / -Reset */

struct sl_reply_info {
	uint16_t status; /* 429, 403, 400, 408 or 431 */
	uint8_t headers; /* SL_RH_* (429 only) */
	uint8_t expose_rule;
	/* 429: an RFC 9457 problem details body of the ratelimit draft's
	 * quota-exceeded type, not sluice's own JSON */
	uint8_t problem;
	const char *problem_type; /* its "type" URI; NULL: the draft's */
	uint8_t keep_alive; /* 429: no "Connection: close" (the stream goes on)
			     */
	const char *rule;   /* the deciding rule (429, 403) */
	uint32_t rule_len;
	const char *reason; /* 400: what the parser refused */
	uint64_t retry_after_s;
	uint64_t limit;    /* quota of the deciding rule */
	uint64_t window_s; /* its window */
	uint64_t remaining;
	uint64_t reset_s;
	/* template: limit and window_s written as constant text (a rule's
	 * own numbers; an override needs a template without it) */
	uint8_t bake;
};

/*
 * A reply as constant segments and numeric slots: built once per rule,
 * filled per rejection with a copy per segment and a few digits, its
 * checksum summed from the segments' precomputed sums.
 */
enum sl_reply_slot {
	SL_SLOT_NONE = 0,
	SL_SLOT_RETRY,
	SL_SLOT_LIMIT,
	SL_SLOT_WINDOW,
	SL_SLOT_REMAINING,
	SL_SLOT_RESET,
	SL_SLOT_CLEN,
};

#define SL_TPL_SEGS 16

struct sl_reply_tpl_seg {
	uint16_t off, len;
	uint16_t sum; /* ones' complement sum as if at an even offset */
	uint8_t slot; /* the number that follows it */
};

struct sl_reply_tpl {
	uint8_t n;
	uint8_t baked; /* limit and window_s are in the text */
	uint64_t limit, window_s;
	uint16_t body_fixed; /* body length without the retry digits */
	uint8_t body_has_retry;
	struct sl_reply_tpl_seg seg[SL_TPL_SEGS];
	char text[800]; /* 768 of reply, 32 of copy_over's slack */
};

struct sl_reply_nums {
	uint64_t retry_after_s, limit, window_s, remaining, reset_s;
};

/* Builds the template for ri's status, rule and header style. */
int sl_reply_tpl_build(struct sl_reply_tpl *t, const struct sl_reply_info *ri);

/*
 * Writes the reply into dst; *sum receives its ones' complement sum for
 * sl_reply_segment_sum(). Returns the length, 0 if room is too small.
 */
uint32_t sl_reply_tpl_fill(const struct sl_reply_tpl *t,
			   const struct sl_reply_nums *v, uint8_t *dst,
			   uint32_t room, uint32_t *sum);

/*
 * Writes the HTTP response for ri into buf: constant pieces copied and a
 * few numbers converted by hand, no formatting library. Returns its length,
 * or 0 if size is too small.
 */
uint32_t sl_reply_http(char *buf, uint32_t size,
		       const struct sl_reply_info *ri);
/*
 * Writes into buf the RateLimit field lines of ri (ri->headers: draft,
 * legacy or both), each ending in CRLF: what an allowed response is
 * given. Returns their length, or 0 if size is too small.
 */
uint32_t sl_reply_budget(char *buf, uint32_t size,
			 const struct sl_reply_info *ri);

/*
 * Writes into out one TCP segment answering (to_client = 1) or following
 * (to_client = 0) the classified frame req: the same Ethernet header and
 * VLAN tags (MACs swapped towards the client), a fresh IPv4 or IPv6 header
 * without options, and a 20-byte TCP header, checksums computed. out may
 * be req itself. Returns the frame length, or 0 if room is too small.
 */
uint32_t sl_reply_segment(uint8_t *out, uint32_t room, const uint8_t *req,
			  const struct sl_pkt *p, int to_client, uint32_t seq,
			  uint32_t ack, uint8_t flags, const void *payload,
			  uint32_t plen);

/* sl_reply_segment with the payload's sum known (UINT32_MAX: compute). */
uint32_t sl_reply_segment_sum(uint8_t *out, uint32_t room, const uint8_t *req,
			      const struct sl_pkt *p, int to_client,
			      uint32_t seq, uint32_t ack, uint8_t flags,
			      const void *payload, uint32_t plen,
			      uint32_t payload_sum);

/*
 * Where sl_reply_segment puts the payload for a reply to p: the HTTP text
 * can be written there directly (it never overlaps what the builder still
 * reads: the Ethernet header, and the addresses and ports already in p).
 */
uint32_t sl_reply_payload_off(const struct sl_pkt *p);

/* Decimal digits of v into buf (at least 20 bytes); returns the count. */
uint32_t sl_utoa(uint64_t v, char *buf);

#endif /* SL_NET_H */

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
	SL_BAD__COUNT
};

#define SL_AF_INET  4
#define SL_AF_INET6 6

#define SL_TCP_FIN 0x01
#define SL_TCP_SYN 0x02
#define SL_TCP_RST 0x04
#define SL_TCP_PSH 0x08
#define SL_TCP_ACK 0x10

struct sl_pkt {
	uint16_t l3_off;      /* after Ethernet and VLAN tags */
	uint16_t l4_off;      /* after IP header and extension headers */
	uint16_t payload_off; /* after TCP header and options */
	uint16_t l3_len;      /* IP datagram length (header + payload) */
	uint32_t payload_len; /* TCP payload bytes */
	uint16_t vlan_tci;    /* outermost tag, valid if n_vlan > 0 */
	uint8_t n_vlan;
	uint8_t af;      /* SL_AF_INET or SL_AF_INET6 */
	uint8_t l4_proto;
	uint8_t tcp_flags;
	uint8_t tcp_hlen;
	uint8_t reason;  /* enum sl_malformed when SL_PKT_MALFORMED */
	uint16_t sport, dport, win;
	uint32_t seq, ack;
	/* Addresses in network order; IPv4 in the first four bytes. */
	uint8_t src[16];
	uint8_t dst[16];
};

/* Classifies a frame of len bytes; fills p as far as it got. */
enum sl_pkt_class sl_pkt_parse(const uint8_t *frame, uint32_t len,
			       struct sl_pkt *p);

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
/* Recomputes and writes the IPv4 header checksum. */
void sl_ipv4_cksum_set(uint8_t *frame, const struct sl_pkt *p);

const char *sl_malformed_name(enum sl_malformed r);

#endif /* SL_NET_H */

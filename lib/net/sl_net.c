/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#ifdef __SSSE3__
#include <tmmintrin.h>
#endif

#include "sl_net.h"
#include "sl_net_priv.h"

#define ETH_HLEN     14
#define ETYPE_IPV4   0x0800
#define ETYPE_IPV6   0x86DD
#define ETYPE_VLAN   0x8100
#define ETYPE_QINQ   0x88A8
#define IPPROTO_TCP_ 6
#define IP6_MAX_EXT  8

static inline uint16_t
rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t
rd32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static enum sl_pkt_class
bad(struct sl_pkt *p, enum sl_malformed r)
{
	p->reason = (uint8_t)r;
	return SL_PKT_MALFORMED;
}

static enum sl_pkt_class
parse_tcp(const uint8_t *f, uint32_t end, struct sl_pkt *p)
{
	const uint8_t *t = f + p->l4_off;
	uint32_t avail = end - p->l4_off;

	if (avail < 20)
		return bad(p, SL_BAD_TCP_TRUNC);
	p->tcp_hlen = (uint8_t)((t[12] >> 4) * 4);
	if (p->tcp_hlen < 20)
		return bad(p, SL_BAD_TCP_DOFF);
	if (p->tcp_hlen > avail)
		return bad(p, SL_BAD_TCP_TRUNC);
	p->sport = rd16(t);
	p->dport = rd16(t + 2);
	p->seq = rd32(t + 4);
	p->ack = rd32(t + 8);
	p->tcp_flags = t[13];
	p->win = rd16(t + 14);
	p->payload_off = (uint16_t)(p->l4_off + p->tcp_hlen);
	p->payload_len = avail - p->tcp_hlen;
	return SL_PKT_TCP;
}

/* The usual option-less header: five words, no loop, no call. */
static inline uint32_t
ip4_hdr_sum(const uint8_t *ip)
{
	uint32_t w[5];
	uint64_t s;

	memcpy(w, ip, 20);
	s = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)(s & 0xffff) + (uint32_t)((s >> 16) & 0xffff);
}

static enum sl_pkt_class
parse_ipv4(const uint8_t *f, uint32_t len, struct sl_pkt *p)
{
	const uint8_t *ip = f + p->l3_off;
	uint32_t avail = len - p->l3_off;
	uint32_t ihl, tot;

	if (avail < 20)
		return bad(p, SL_BAD_IP_HDRLEN);
	if ((ip[0] >> 4) != 4)
		return bad(p, SL_BAD_IP_VERSION);
	ihl = (uint32_t)(ip[0] & 0xf) * 4;
	tot = rd16(ip + 2);
	if (ihl < 20 || ihl > avail)
		return bad(p, SL_BAD_IP_HDRLEN);
	/* Frames may carry Ethernet padding after the datagram; never less. */
	if (tot < ihl || tot > avail)
		return bad(p, SL_BAD_IP_TOTLEN);
	if (sl_cksum_fold(ihl == 20 ? ip4_hdr_sum(ip)
				    : sl_cksum_partial(ip, ihl, 0)) != 0)
		return bad(p, SL_BAD_IP_CKSUM);
	p->af = SL_AF_INET;
	p->l3_len = (uint16_t)tot;
	p->l4_proto = ip[9];
	memcpy(p->src, ip + 12, 4);
	memcpy(p->dst, ip + 16, 4);
	p->l4_off = (uint16_t)(p->l3_off + ihl);
	if ((rd16(ip + 6) & 0x3fff) != 0)
		return SL_PKT_FRAG; /* MF set or a non-zero offset */
	if (p->l4_proto != IPPROTO_TCP_)
		return SL_PKT_OTHER;
	return parse_tcp(f, p->l3_off + tot, p);
}

/* Walks the extension header chain to the upper-layer header. */
static enum sl_pkt_class
parse_ipv6_ext(const uint8_t *f, uint32_t end, struct sl_pkt *p, uint8_t nh)
{
	uint32_t off = p->l3_off + 40u;
	int i;

	for (i = 0; i < IP6_MAX_EXT; i++) {
		uint32_t hl;

		switch (nh) {
		case 0:  /* hop-by-hop */
		case 43: /* routing */
		case 60: /* destination options */
			if (off + 8 > end)
				return bad(p, SL_BAD_IP6_EXT);
			hl = (f[off + 1] + 1u) * 8;
			break;
		case 51: /* AH: length in 4-octet units minus 2 */
			if (off + 8 > end)
				return bad(p, SL_BAD_IP6_EXT);
			hl = (f[off + 1] + 2u) * 4;
			break;
		case 44: /* fragment */
			if (off + 8 > end)
				return bad(p, SL_BAD_IP6_EXT);
			p->l4_off = (uint16_t)off;
			p->l4_proto = f[off];
			return SL_PKT_FRAG;
		default:
			p->l4_off = (uint16_t)off;
			p->l4_proto = nh;
			if (nh != IPPROTO_TCP_)
				return SL_PKT_OTHER;
			return parse_tcp(f, end, p);
		}
		if (off + hl > end)
			return bad(p, SL_BAD_IP6_EXT);
		nh = f[off];
		off += hl;
	}
	return bad(p, SL_BAD_IP6_EXT);
}

static enum sl_pkt_class
parse_ipv6(const uint8_t *f, uint32_t len, struct sl_pkt *p)
{
	const uint8_t *ip = f + p->l3_off;
	uint32_t avail = len - p->l3_off;
	uint32_t plen;

	if (avail < 40)
		return bad(p, SL_BAD_IP_HDRLEN);
	if ((ip[0] >> 4) != 6)
		return bad(p, SL_BAD_IP_VERSION);
	plen = rd16(ip + 4);
	/* A zero payload length means a jumbogram; we never see those. */
	if (plen == 0 || plen + 40 > avail)
		return bad(p, SL_BAD_IP_TOTLEN);
	p->af = SL_AF_INET6;
	p->l3_len = (uint16_t)(plen + 40);
	memcpy(p->src, ip + 8, 16);
	memcpy(p->dst, ip + 24, 16);
	return parse_ipv6_ext(f, p->l3_off + 40 + plen, p, ip[6]);
}

enum sl_pkt_class
sl_pkt_parse(const uint8_t *frame, uint32_t len, struct sl_pkt *p)
{
	uint32_t off = 12;
	uint16_t et;

	memset(p, 0, sizeof(*p));
	if (len < ETH_HLEN)
		return bad(p, SL_BAD_L2_TRUNC);
	et = rd16(frame + off);
	while (et == ETYPE_VLAN || et == ETYPE_QINQ) {
		/* a third tag: Linux strips it and may deliver the frame;
		 * uninspected, it would carry a request past the parser */
		if (p->n_vlan == 2)
			return bad(p, SL_BAD_VLAN_DEPTH);
		if (off + 6 > len)
			return bad(p, SL_BAD_L2_TRUNC);
		if (p->n_vlan == 0)
			p->vlan_tci = rd16(frame + off + 2);
		p->n_vlan++;
		off += 4;
		et = rd16(frame + off);
	}
	p->l3_off = (uint16_t)(off + 2);
	if (et == ETYPE_IPV4)
		return parse_ipv4(frame, len, p);
	if (et == ETYPE_IPV6)
		return parse_ipv6(frame, len, p);
	return SL_PKT_OTHER;
}

/*
 * The ones' complement sum does not depend on byte order (RFC 1071 2(B)):
 * words are summed as the CPU loads them into a 64-bit accumulator whose
 * high half collects the carries, and only the folded result is swapped
 * to network order.
 */
static uint64_t
sum_scalar(const uint8_t *b, size_t len)
{
	uint64_t s = 0;
	uint16_t w;

	while (len >= 32) {
		uint64_t v[4];

		memcpy(v, b, 32);
		s += (v[0] & 0xffffffffu) + (v[0] >> 32) +
		     (v[1] & 0xffffffffu) + (v[1] >> 32) +
		     (v[2] & 0xffffffffu) + (v[2] >> 32) +
		     (v[3] & 0xffffffffu) + (v[3] >> 32);
		b += 32;
		len -= 32;
	}
	while (len >= 4) {
		uint32_t v;

		memcpy(&v, b, 4);
		s += v;
		b += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w, b, 2);
		s += w;
		b += 2;
		len -= 2;
	}
	if (len) {
		uint8_t last[2] = {b[0], 0};

		memcpy(&w, last, 2);
		s += w;
	}
	return s;
}

#ifdef __SSSE3__
/* pshufb controls: the last t bytes of a 16-byte load moved to its
 * front, the others zeroed (a control byte with its top bit set) */
#define TAIL_B(t, i) ((i) < (t) ? 16 - (t) + (i) : -128)
#define TAIL_ROW(t)                                                            \
	{                                                                      \
		TAIL_B(t, 0), TAIL_B(t, 1), TAIL_B(t, 2), TAIL_B(t, 3),        \
			TAIL_B(t, 4), TAIL_B(t, 5), TAIL_B(t, 6),              \
			TAIL_B(t, 7), TAIL_B(t, 8), TAIL_B(t, 9),              \
			TAIL_B(t, 10), TAIL_B(t, 11), TAIL_B(t, 12),           \
			TAIL_B(t, 13), TAIL_B(t, 14), TAIL_B(t, 15)            \
	}
static const int8_t tail_shuf[16][16] __attribute__((aligned(16))) = {
	TAIL_ROW(0),  TAIL_ROW(1),  TAIL_ROW(2),  TAIL_ROW(3),
	TAIL_ROW(4),  TAIL_ROW(5),  TAIL_ROW(6),  TAIL_ROW(7),
	TAIL_ROW(8),  TAIL_ROW(9),  TAIL_ROW(10), TAIL_ROW(11),
	TAIL_ROW(12), TAIL_ROW(13), TAIL_ROW(14), TAIL_ROW(15)};

/* One pass of sum_chunk sees at most this many bytes: 2049 rounds, each
 * adding at most 2^17 in magnitude to a lane, keep the four lanes' total
 * below 2^31. */
#define SUM_CHUNK (64u << 10)

/*
 * Sixteen words summed with one multiply-add: pmaddwd adds pairs of
 * signed words, so each word is first flipped by 0x8000, which turns the
 * unsigned w into the signed w - 32768 exactly; the 32768 a word is owed
 * back is added once a chunk. Four instructions a 16-byte block where
 * widening each half to 32 bits took six (keep-alive counted 337
 * instructions of checksum a request that way).
 */
static inline __m128i
sum_block(__m128i v)
{
	const __m128i flip = _mm_set1_epi16((short)0x8000);
	const __m128i ones = _mm_set1_epi16(1);

	return _mm_madd_epi16(_mm_xor_si128(v, flip), ones);
}

static int64_t
sum_lanes(__m128i a)
{
	a = _mm_add_epi32(a, _mm_shuffle_epi32(a, 0x4e));
	a = _mm_add_epi32(a, _mm_shuffle_epi32(a, 0xb1));
	return _mm_cvtsi128_si32(a);
}

/*
 * len >= 16, at most SUM_CHUNK + 15: 32 bytes a round, the two blocks'
 * sums added together before the accumulator (with an accumulator each,
 * gcc spent two register copies a round). The last 0-15 bytes are taken
 * from the 16 that end the buffer, moved to the front: they begin at an
 * even offset, so their words pair there as in the buffer; the zeroes
 * beside them are flipped and owed back as any word is (the tail block
 * is summed even when empty). A word at a time, the tail's trip count
 * (the frame's length modulo 32) was a branch mispredicted about once a
 * frame.
 */
static uint64_t
sum_chunk(const uint8_t *b, size_t len)
{
	const uint8_t *end = b + len;
	uint64_t blocks = len / 16 + 1; /* the tail's among them */
	__m128i a = _mm_setzero_si128(), v;

	while (len >= 32) {
		a = _mm_add_epi32(
			a, _mm_add_epi32(sum_block(_mm_loadu_si128(
						 (const __m128i *)b)),
					 sum_block(_mm_loadu_si128(
						 (const __m128i *)(b + 16)))));
		b += 32;
		len -= 32;
	}
	if (len >= 16) {
		a = _mm_add_epi32(
			a, sum_block(_mm_loadu_si128((const __m128i *)b)));
		len -= 16;
	}
	v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(end - 16)),
			     _mm_load_si128((const __m128i *)tail_shuf[len]));
	a = _mm_add_epi32(a, sum_block(v));
	/* exact: the words' sum, never negative */
	return (uint64_t)(sum_lanes(a) + (int64_t)(blocks << 18));
}

static uint64_t
sum_ssse3(const uint8_t *b, size_t len)
{
	uint64_t s = 0;

	while (len > SUM_CHUNK + 15) {
		s += sum_chunk(b, SUM_CHUNK);
		b += SUM_CHUNK;
		len -= SUM_CHUNK;
	}
	return s + sum_chunk(b, len);
}
#endif

/* The words' sum as the CPU loads them (the byte order RFC 1071 lets
 * the sum stay in), not folded. */
static uint64_t
sum_raw(const uint8_t *b, size_t len)
{
#ifdef __SSSE3__
	if (len >= 16)
		return sum_ssse3(b, len);
#endif
	return sum_scalar(b, len);
}

uint32_t
sl_cksum_partial(const void *buf, size_t len, uint32_t sum)
{
	return (uint32_t)sl_raw16(sl_fold_raw(sum_raw(buf, len))) + sum;
}

uint16_t
sl_cksum_fold(uint32_t sum)
{
	return (uint16_t)~sl_fold16(sum);
}

static uint32_t
tcp_len(const struct sl_pkt *p)
{
	return (uint32_t)p->tcp_hlen + p->payload_len;
}

/* The pseudo-header's sum in sum_raw's byte order. */
static uint64_t
pseudo_raw(const uint8_t *f, const struct sl_pkt *p, uint32_t l4len)
{
	uint32_t n = p->af == SL_AF_INET ? 4 : 16;
	const uint8_t *a = f + p->l3_off + (n == 4 ? 12 : 8);
	uint64_t s = sl_sum_addrs(a, a + n, n);

	return s + sl_raw16((uint16_t)l4len) +
	       sl_raw16((uint16_t)(l4len >> 16)) + sl_raw16(IPPROTO_TCP_);
}

/* The same in network order, folded. */
static uint32_t
pseudo_sum(const uint8_t *f, const struct sl_pkt *p, uint32_t l4len)
{
	return sl_raw16(sl_fold_raw(pseudo_raw(f, p, l4len)));
}

/*
 * The header, payload and pseudo-header summed in one byte order and
 * folded once: all ones is all ones in either order. Folded and swapped
 * apart, then summed again, the pseudo-header and payload took 70
 * instructions of a keep-alive request beside the bytes' own sum.
 */
int
sl_tcp_cksum_ok(const uint8_t *frame, const struct sl_pkt *p)
{
	uint32_t l = tcp_len(p);

	return sl_fold_raw(pseudo_raw(frame, p, l) +
			   sum_raw(frame + p->l4_off, l)) == 0xffff;
}

void
sl_tcp_cksum_set(uint8_t *frame, const struct sl_pkt *p)
{
	uint8_t *t = frame + p->l4_off;
	uint32_t l = tcp_len(p);
	uint16_t c;

	t[16] = t[17] = 0;
	c = sl_cksum_fold(sl_cksum_partial(t, l, pseudo_sum(frame, p, l)));
	t[16] = (uint8_t)(c >> 8);
	t[17] = (uint8_t)c;
}

/*
 * The checksum adjusted for n bytes put into the payload at off (RFC 1624
 * over the parts): the payload's old sum is what the checksum it came
 * with says, so only the bytes before off, the new bytes and the header
 * are read. The bytes moved n further on keep their sum, byte-swapped
 * where n is odd. A segment that came with a wrong checksum keeps one:
 * summed again, its corruption would reach the client as good data.
 */
void
sl_tcp_cksum_insert(uint8_t *frame, const struct sl_pkt *p, uint32_t off,
		    uint32_t n)
{
	uint8_t *t = frame + p->l4_off;
	const uint8_t *pay = frame + p->payload_off;
	uint32_t ps = pseudo_sum(frame, p, tcp_len(p));
	uint32_t hdr = sl_cksum_partial(t, p->tcp_hlen, 0);
	uint16_t all, head, tail, txt, c;

	all = (uint16_t)~sl_fold16(ps + hdr);
	head = (uint16_t)sl_fold16(sl_cksum_partial(pay, off, 0));
	tail = (uint16_t)sl_fold16((uint32_t)all + (uint16_t)~head);
	txt = (uint16_t)sl_fold16(sl_cksum_partial(pay + off, n, 0));
	if (off & 1)
		txt = __builtin_bswap16(txt);
	if (n & 1)
		tail = __builtin_bswap16(tail);
	/* the length n longer: + n, in ones' complement (2^16 is 1) */
	c = sl_cksum_fold(ps + n + hdr + (uint16_t)~rd16(t + 16) + head + txt +
			  tail);
	t[16] = (uint8_t)(c >> 8);
	t[17] = (uint8_t)c;
}

void
sl_ipv4_cksum_set(uint8_t *frame, const struct sl_pkt *p)
{
	uint8_t *ip = frame + p->l3_off;
	uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4;
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = sl_cksum_fold(sl_cksum_partial(ip, ihl, 0));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

const char *
sl_malformed_name(enum sl_malformed r)
{
	static const char *const names[SL_BAD__COUNT] = {
		[SL_BAD_NONE] = "none",
		[SL_BAD_L2_TRUNC] = "l2_truncated",
		[SL_BAD_IP_VERSION] = "ip_version",
		[SL_BAD_IP_HDRLEN] = "ip_header_length",
		[SL_BAD_IP_TOTLEN] = "ip_total_length",
		[SL_BAD_IP_CKSUM] = "ip_checksum",
		[SL_BAD_IP6_EXT] = "ipv6_extension_header",
		[SL_BAD_TCP_TRUNC] = "tcp_truncated",
		[SL_BAD_TCP_DOFF] = "tcp_data_offset",
		[SL_BAD_VLAN_DEPTH] = "vlan_depth",
	};
	return (unsigned)r < SL_BAD__COUNT ? names[r] : "unknown";
}

void
sl_tcp_opts_parse(const uint8_t *frame, const struct sl_pkt *p,
		  struct sl_tcp_opts *o)
{
	const uint8_t *b = frame + p->l4_off + 20;
	uint32_t n = p->tcp_hlen - 20u, i = 0;

	o->has_ts = o->has_sig = 0;
	o->tsval = o->tsecr = 0;
	o->mss = 0;
	while (i < n) {
		uint8_t kind = b[i], l;

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= n)
			break;
		l = b[i + 1];
		if (l < 2 || i + l > n)
			break;
		if (kind == 8 && l == 10) {
			o->has_ts = 1;
			o->tsval = rd32(b + i + 2);
			o->tsecr = rd32(b + i + 6);
		} else if (kind == 19 || kind == 29) {
			o->has_sig = 1;
		} else if (kind == 2 && l == 4) {
			o->mss = (uint16_t)(b[i + 2] << 8 | b[i + 3]);
		}
		i += l;
	}
}

int
sl_frag_may_carry_tcp(const struct sl_pkt *p)
{
	switch (p->l4_proto) {
	case IPPROTO_TCP_:
		return 1;
	case 0:   /* hop-by-hop */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimental */
	case 254:
		return p->af == SL_AF_INET6;
	default:
		return 0;
	}
}

void
sl_ip_set_payload_len(uint8_t *frame, struct sl_pkt *p, uint32_t len)
{
	uint8_t *ip = frame + p->l3_off;

	p->l3_len = (uint16_t)(p->payload_off - p->l3_off + len);
	p->payload_len = len;
	if (p->af == SL_AF_INET) {
		ip[2] = (uint8_t)(p->l3_len >> 8);
		ip[3] = (uint8_t)p->l3_len;
		sl_ipv4_cksum_set(frame, p);
	} else {
		uint32_t pl = p->l3_len - 40u;

		ip[4] = (uint8_t)(pl >> 8);
		ip[5] = (uint8_t)pl;
	}
}

uint32_t
sl_tcp_trim(uint8_t *frame, struct sl_pkt *p, uint32_t keep)
{
	if (keep >= p->payload_len)
		return p->payload_off + p->payload_len;
	sl_ip_set_payload_len(frame, p, keep);
	p->tcp_flags &= (uint8_t)~SL_TCP_FIN;
	frame[p->l4_off + 13] = p->tcp_flags;
	sl_tcp_cksum_set(frame, p);
	return p->payload_off + keep;
}

/*
 * The TCP checksum at ck adjusted for the 16-bit-aligned span that was
 * old and is now new (n even; RFC 1624, eqn. 3).
 */
static void
cksum_adjust(uint8_t *ck, const uint8_t *old, const uint8_t *new, uint32_t n)
{
	uint32_t s = (uint16_t)~rd16(ck), i;

	for (i = 0; i < n; i += 2) {
		s += (uint16_t)~rd16(old + i);
		s += rd16(new + i);
	}
	s = (uint16_t)~sl_fold16(s);
	ck[0] = (uint8_t)(s >> 8);
	ck[1] = (uint8_t)s;
}

static void
wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

void
sl_tcp_set_seq_ack(uint8_t *frame, struct sl_pkt *p, uint32_t seq, uint32_t ack)
{
	uint8_t *th = frame + p->l4_off, old[8];

	if (seq == p->seq && ack == p->ack)
		return;
	memcpy(old, th + 4, 8);
	wr32(th + 4, seq);
	wr32(th + 8, ack);
	cksum_adjust(th + 16, old, th + 4, 8);
	p->seq = seq;
	p->ack = ack;
}

/* One SACK option of l bytes at opt, its blocks mapped (or all dropped:
 * map NULL); NOPs where blocks were. Returns blocks dropped. */
static uint32_t
map_sack_option(uint8_t *opt, uint8_t l, sl_seq_map map, const void *ctx)
{
	uint32_t n = (l - 2u) % 8u ? 0 : (l - 2u) / 8u, i, kept = 0;
	uint8_t out[40];

	for (i = 0; map != NULL && i < n; i++) {
		uint32_t le = map(ctx, rd32(opt + 2 + 8 * i));
		uint32_t re = map(ctx, rd32(opt + 6 + 8 * i));

		/* empty: it named only bytes the peer never sent */
		if ((int32_t)(re - le) <= 0)
			continue;
		wr32(out + 8 * kept, le);
		wr32(out + 8 * kept + 4, re);
		kept++;
	}
	memset(opt, 1, l);
	if (kept > 0) {
		opt[0] = 5;
		opt[1] = (uint8_t)(2 + 8 * kept);
		memcpy(opt + 2, out, 8 * kept);
	}
	return (l - 2u) / 8u - kept;
}

uint32_t
sl_tcp_map_sack(uint8_t *frame, const struct sl_pkt *p, sl_seq_map map,
		const void *ctx)
{
	uint8_t *th = frame + p->l4_off, *b = th + 20;
	uint32_t n = p->tcp_hlen - 20u, i = 0, dropped = 0;

	while (i < n) {
		uint8_t kind = b[i], l, old[44];
		uint32_t from, to;

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= n || b[i + 1] < 2 || i + b[i + 1] > n)
			break;
		l = b[i + 1];
		if (kind == 5) {
			/* the words the option touches, from the header's
			 * start (20 + i is even when i is) */
			from = (20 + i) & ~1u;
			to = (20 + i + l + 1) & ~1u;
			memcpy(old, th + from, to - from);
			dropped += map_sack_option(b + i, l, map, ctx);
			cksum_adjust(th + 16, old, th + from, to - from);
		}
		i += l;
	}
	return dropped;
}

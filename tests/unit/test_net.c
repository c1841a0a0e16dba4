/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sl_net.h"
#include "frames.h"

static void
ipv4_with_options(void **state)
{
	struct sl_pkt p;

	(void)state;
	assert_int_equal(sl_pkt_parse(FRAME_V4, sizeof(FRAME_V4), &p),
			 SL_PKT_TCP);
	assert_int_equal(p.af, SL_AF_INET);
	assert_int_equal(p.l3_off, 14);
	assert_int_equal(p.l4_off, 14 + 24);
	assert_int_equal(p.tcp_hlen, 32);
	assert_int_equal(p.sport, 40000);
	assert_int_equal(p.dport, 80);
	assert_int_equal(p.seq, 1001);
	assert_int_equal(p.ack, 7);
	assert_int_equal(p.payload_len, 27);
	assert_memory_equal(FRAME_V4 + p.payload_off, "GET / HTTP/1.1\r\n", 16);
	assert_memory_equal(p.src, "\xc6\x12\x00\x01", 4);
	assert_true(sl_tcp_cksum_ok(FRAME_V4, &p));
}

static void
ipv6_vlan_ext_headers(void **state)
{
	struct sl_pkt p;

	(void)state;
	assert_int_equal(sl_pkt_parse(FRAME_V6, sizeof(FRAME_V6), &p),
			 SL_PKT_TCP);
	assert_int_equal(p.af, SL_AF_INET6);
	assert_int_equal(p.n_vlan, 1);
	assert_int_equal(p.vlan_tci & 0xfff, 42);
	assert_int_equal(p.l3_off, 18);
	assert_int_equal(p.l4_off, 18 + 40 + 16);
	assert_int_equal(p.dport, 8080);
	assert_int_equal(p.payload_len, 28);
	assert_true(sl_tcp_cksum_ok(FRAME_V6, &p));
}

static void
fragments_and_other(void **state)
{
	struct sl_pkt p;

	(void)state;
	assert_int_equal(sl_pkt_parse(FRAME_V4FRAG, sizeof(FRAME_V4FRAG), &p),
			 SL_PKT_FRAG);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(sl_pkt_parse(FRAME_V6FRAG, sizeof(FRAME_V6FRAG), &p),
			 SL_PKT_FRAG);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(
		sl_pkt_parse(FRAME_QINQ_UDP, sizeof(FRAME_QINQ_UDP), &p),
		SL_PKT_OTHER);
	assert_int_equal(p.n_vlan, 2);
	assert_int_equal(p.l4_proto, 17);
}

/* Every prefix of a frame: never read past it, never call it whole TCP. */
static void
every_truncation(void **state)
{
	const uint8_t *frames[] = {FRAME_V4, FRAME_V6};
	size_t lens[] = {sizeof(FRAME_V4), sizeof(FRAME_V6)};
	size_t f, n;

	(void)state;
	for (f = 0; f < 2; f++) {
		for (n = 0; n < lens[f]; n++) {
			/* An exact-size heap copy lets ASan catch overreads. */
			uint8_t *b = malloc(n ? n : 1);
			struct sl_pkt p;
			enum sl_pkt_class c;

			memcpy(b, frames[f], n);
			c = sl_pkt_parse(b, (uint32_t)n, &p);
			assert_true(c == SL_PKT_MALFORMED || c == SL_PKT_OTHER);
			free(b);
		}
	}
}

static void
inconsistent_lengths(void **state)
{
	uint8_t b[sizeof(FRAME_V4)];
	struct sl_pkt p;

	(void)state;
	/* IHL below 5 */
	memcpy(b, FRAME_V4, sizeof(b));
	b[14] = 0x44;
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_MALFORMED);
	assert_int_equal(p.reason, SL_BAD_IP_HDRLEN);
	/* total length beyond the frame */
	memcpy(b, FRAME_V4, sizeof(b));
	b[16] = 0x10;
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_MALFORMED);
	assert_int_equal(p.reason, SL_BAD_IP_TOTLEN);
	/* header checksum wrong */
	memcpy(b, FRAME_V4, sizeof(b));
	b[24] ^= 1;
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_MALFORMED);
	assert_int_equal(p.reason, SL_BAD_IP_CKSUM);
	/* TCP data offset below 5 */
	memcpy(b, FRAME_V4, sizeof(b));
	b[14 + 24 + 12] = 0x40;
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_MALFORMED);
	assert_int_equal(p.reason, SL_BAD_TCP_DOFF);
	/* IP version 5 */
	memcpy(b, FRAME_V4, sizeof(b));
	b[14] = 0x56;
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_MALFORMED);
	assert_int_equal(p.reason, SL_BAD_IP_VERSION);
}

static void
padding_is_not_payload(void **state)
{
	uint8_t b[sizeof(FRAME_V4) + 10];
	struct sl_pkt p;

	(void)state;
	memcpy(b, FRAME_V4, sizeof(FRAME_V4));
	memset(b + sizeof(FRAME_V4), 0xee, 10);
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_TCP);
	assert_int_equal(p.payload_len, 27);
}

static void
checksums(void **state)
{
	uint8_t b[sizeof(FRAME_V4)];
	struct sl_pkt p;

	(void)state;
	memcpy(b, FRAME_V4, sizeof(b));
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_TCP);
	b[p.payload_off] = 'P';
	assert_false(sl_tcp_cksum_ok(b, &p));
	sl_tcp_cksum_set(b, &p);
	assert_true(sl_tcp_cksum_ok(b, &p));
	b[p.payload_off] = 'G';
	sl_tcp_cksum_set(b, &p);
	assert_memory_equal(b, FRAME_V4, sizeof(b));
	b[14 + 8] = 1; /* TTL */
	sl_ipv4_cksum_set(b, &p);
	assert_int_equal(sl_pkt_parse(b, sizeof(b), &p), SL_PKT_TCP);
}

/* RFC 1071 byte by byte: big-endian words, folded one carry at a time. */
static uint32_t
ref_sum(const uint8_t *b, size_t len)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < len; i++)
		s += i % 2 ? b[i] : (uint32_t)b[i] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

/* n bytes all ones (the sum's 0xffff edge), or random ones. */
static void
fill(uint8_t *buf, size_t n, int random, uint32_t *x)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 17;
		*x ^= *x << 5;
		buf[i] = random ? (uint8_t)*x : 0xff;
	}
}

/* Every length up to past two vector rounds, at every alignment, on
 * bytes all ones and random ones. */
static void
cksum_lengths(void **state)
{
	static uint8_t buf[16 + 320];
	uint32_t x = 2463534242u;
	size_t off, len;
	int pass;

	(void)state;
	for (pass = 0; pass < 2; pass++) {
		fill(buf, sizeof(buf), pass, &x);
		for (off = 0; off < 16; off++)
			for (len = 0; len + off <= sizeof(buf); len++)
				assert_int_equal(
					sl_cksum_partial(buf + off, len, 7),
					ref_sum(buf + off, len) + 7);
	}
}

/* Frame-sized and larger buffers, about the vector sum's chunk (64 KiB,
 * each at least 16 bytes) and past it, where a lane that could overflow
 * would show. */
static void
cksum_long(void **state)
{
	static const size_t lens[] = {
		1500,       9000,        65535,  65536 + 15, 65536 + 16,
		65536 + 17, 131072 + 31, 262143, 256u << 10, (256u << 10) + 3};
	static uint8_t buf[(256u << 10) + 3];
	uint32_t x = 88675123u;
	size_t k;
	int pass;

	(void)state;
	for (pass = 0; pass < 2; pass++) {
		fill(buf, sizeof(buf), pass, &x);
		for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			assert_int_equal(sl_cksum_partial(buf, lens[k], 0),
					 ref_sum(buf, lens[k]));
	}
}

/* The pseudo-header of RFC 793 and RFC 8200 8.1, written out. */
static size_t
pseudo_of(const uint8_t *f, const struct sl_pkt *p, uint32_t l4len,
	  uint8_t *out)
{
	size_t a = p->af == SL_AF_INET ? 8 : 32;

	memcpy(out, f + p->l3_off + (p->af == SL_AF_INET ? 12 : 8), a);
	if (p->af == SL_AF_INET) {
		out[a] = 0;
		out[a + 1] = 6;
		out[a + 2] = (uint8_t)(l4len >> 8);
		out[a + 3] = (uint8_t)l4len;
		return a + 4;
	}
	memset(out + a, 0, 8);
	out[a + 2] = (uint8_t)(l4len >> 8);
	out[a + 3] = (uint8_t)l4len;
	out[a + 7] = 6;
	return a + 8;
}

/* f's segment given n payload bytes, lengths and checksums set by the
 * byte-by-byte reference. */
static void
frame_of(uint8_t *f, const uint8_t *base, int v6, size_t hdr, size_t n,
	 struct sl_pkt *p)
{
	uint8_t ps[40];
	size_t l3 = v6 ? 18 : 14, l4 = hdr - (v6 ? 20 : 32), pl;
	uint32_t s;

	memcpy(f, base, hdr);
	if (v6) {
		pl = hdr - l3 - 40 + n;
		f[l3 + 4] = (uint8_t)(pl >> 8);
		f[l3 + 5] = (uint8_t)pl;
	} else {
		pl = hdr - l3 + n;
		f[l3 + 2] = (uint8_t)(pl >> 8);
		f[l3 + 3] = (uint8_t)pl;
		f[l3 + 10] = f[l3 + 11] = 0;
		s = ~ref_sum(f + l3, l4 - l3) & 0xffff;
		f[l3 + 10] = (uint8_t)(s >> 8);
		f[l3 + 11] = (uint8_t)s;
	}
	assert_int_equal(sl_pkt_parse(f, hdr + n, p), SL_PKT_TCP);
	f[l4 + 16] = f[l4 + 17] = 0;
	s = ref_sum(ps, pseudo_of(f, p, (uint32_t)(hdr - l4 + n), ps)) +
	    ref_sum(f + l4, hdr - l4 + n);
	s = ~((s & 0xffff) + (s >> 16)) & 0xffff;
	f[l4 + 16] = (uint8_t)(s >> 8);
	f[l4 + 17] = (uint8_t)s;
}

/* Every payload length a head has, over IPv4 and IPv6: a segment summed
 * right passes, and any one byte changed fails. */
static void
tcp_cksum_every_length(void **state)
{
	static uint8_t f[128 + 700];
	uint32_t x = 521288629u;
	size_t n, at;
	int v6;

	(void)state;
	for (v6 = 0; v6 < 2; v6++) {
		const uint8_t *base = v6 ? FRAME_V6 : FRAME_V4;
		size_t hdr = v6 ? 18 + 40 + 16 + 20 : 14 + 24 + 32;
		size_t l4 = hdr - (v6 ? 20 : 32);

		for (n = 0; n <= 700; n++) {
			struct sl_pkt p;
			uint8_t d;

			fill(f + hdr, n, 1, &x);
			frame_of(f, base, v6, hdr, n, &p);
			assert_true(sl_tcp_cksum_ok(f, &p));
			at = l4 + x % (hdr - l4 + n);
			d = (uint8_t)(1 + x % 255);
			f[at] ^= d;
			assert_false(sl_tcp_cksum_ok(f, &p));
			f[at] ^= d;
		}
	}
}

static const char WANT429[] = "HTTP/1.1 429 Too Many Requests\r\n"
			      "Content-Type: application/json\r\n"
			      "Cache-Control: no-store\r\n"
			      "Retry-After: 3\r\n"
			      "RateLimit-Policy: \"key-free\";q=100;w=60\r\n"
			      "RateLimit: \"key-free\";r=0;t=42\r\n"
			      "RateLimit-Limit: 100\r\n"
			      "RateLimit-Remaining: 0\r\n"
			      "RateLimit-Reset: 42\r\n"
			      "X-RateLimit-Rule: key-free\r\n"
			      "Connection: close\r\n"
			      "Content-Length: 59\r\n"
			      "\r\n"
			      "{\"error\":\"rate_limited\",\"rule\":\"key-"
			      "free\",\"retry_after\":3}\n";

static void
reply_text(void **state)
{
	struct sl_reply_info ri = {.status = 429,
				   .headers = SL_RH_DRAFT | SL_RH_LEGACY,
				   .expose_rule = 1,
				   .rule = "key-free",
				   .rule_len = 8,
				   .retry_after_s = 3,
				   .limit = 100,
				   .window_s = 60,
				   .remaining = 0,
				   .reset_s = 42};
	char buf[1024];
	uint32_t n;

	(void)state;
	n = sl_reply_http(buf, sizeof(buf), &ri);
	assert_int_equal(n, strlen(WANT429));
	assert_memory_equal(buf, WANT429, n);
	/* too small a buffer: nothing half-written is reported */
	assert_int_equal(sl_reply_http(buf, 100, &ri), 0);
	ri.expose_rule = 0;
	ri.headers = SL_RH_DRAFT;
	n = sl_reply_http(buf, sizeof(buf), &ri);
	buf[n] = '\0';
	assert_null(strstr(buf, "X-RateLimit-Rule"));
	assert_null(strstr(buf, "RateLimit-Limit"));
	assert_non_null(strstr(
		buf, "{\"error\":\"rate_limited\",\"retry_after\":3}\n"));
	/* problem details: its media type, the policy as RateLimit names
	 * it (the opaque id here), the same wait */
	ri.problem = 1;
	ri.rule = "p7";
	ri.rule_len = 2;
	n = sl_reply_http(buf, sizeof(buf), &ri);
	buf[n] = '\0';
	assert_non_null(
		strstr(buf, "Content-Type: application/problem+json\r\n"));
	assert_non_null(strstr(
		buf, "\r\n\r\n{\"type\":\"https://iana.org/assignments/"
		     "http-problem-types#quota-exceeded\",\"title\":\"Too "
		     "Many Requests\",\"status\":429,\"detail\":\"the quota "
		     "of policy p7 is spent\",\"violated-policies\":"
		     "[\"p7\"],\"retry_after\":3}\n"));
	ri.problem_type = "https://api.example/problems/limited";
	n = sl_reply_http(buf, sizeof(buf), &ri);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "{\"type\":\"https://api.example/problems/"
				    "limited\",\"title\""));
}

/* The template, filled, is the same text, and its sum is right. */
static void
reply_template(void **state)
{
	static const uint64_t nums[][5] = {
		{1, 5, 1, 0, 1},
		{3, 100, 60, 0, 42},
		{27, 7, 3600, 2, 3599},
		{123456, 1000000, 86400, 999, 12},
		{9, 10, 11, 12, 13},
		/* every length's parity, at the edges of a pair */
		{UINT64_MAX, 99, 100, 10, 9999999999999999999ULL},
		{10000000000000000000ULL, 101, 1000, 999999, 0},
	};
	const size_t n_nums = sizeof(nums) / sizeof(nums[0]);
	struct sl_reply_info ri = {.status = 429,
				   .headers = SL_RH_DRAFT | SL_RH_LEGACY,
				   .expose_rule = 1,
				   .rule = "r-odd",
				   .rule_len = 5};
	const uint8_t *req[2] = {FRAME_V6, FRAME_V4};
	const uint32_t req_len[2] = {sizeof(FRAME_V6), sizeof(FRAME_V4)};
	struct sl_reply_tpl t;
	size_t i, f;

	(void)state;
	/* the JSON body, then problem details: one template each */
	for (i = 0; i < 2 * n_nums; i++) {
		const uint64_t *x = nums[i % n_nums];
		struct sl_reply_nums v = {x[0], x[1], x[2], x[3], x[4]};
		char want[1024];
		uint8_t got[1024], frame[2048];
		uint32_t wn, gn, sum, fl;
		struct sl_pkt p, q;

		if (i % n_nums == 0) {
			ri.problem = i != 0;
			assert_int_equal(sl_reply_tpl_build(&t, &ri), 0);
		}
		ri.retry_after_s = v.retry_after_s;
		ri.limit = v.limit;
		ri.window_s = v.window_s;
		ri.remaining = v.remaining;
		ri.reset_s = v.reset_s;
		wn = sl_reply_http(want, sizeof(want), &ri);
		gn = sl_reply_tpl_fill(&t, &v, got, sizeof(got), &sum);
		assert_int_equal(gn, wn);
		assert_memory_equal(got, want, wn);
		/* a segment carrying it, checksummed from the template's sums,
		 * over IPv6 and IPv4 (the parser checks the IP header's sum) */
		for (f = 0; f < 2; f++) {
			assert_int_equal(sl_pkt_parse(req[f], req_len[f], &p),
					 SL_PKT_TCP);
			fl = sl_reply_segment_sum(frame, sizeof(frame), req[f],
						  &p, 1, 77, 88, 0x19, got, gn,
						  sum);
			assert_int_equal(sl_pkt_parse(frame, fl, &q),
					 SL_PKT_TCP);
			assert_true(sl_tcp_cksum_ok(frame, &q));
			assert_int_equal(q.payload_len, gn);
		}
	}
}

static void
utoa(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = {
		{0, "0"},
		{7, "7"},
		{10, "10"},
		{99, "99"},
		{100, "100"},
		{3600, "3600"},
		{12345, "12345"},
		{1000000, "1000000"},
		{9999999999ULL, "9999999999"},
		{10000000000000000000ULL, "10000000000000000000"},
		{UINT64_MAX, "18446744073709551615"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char b[24];
		uint32_t n = sl_utoa(cases[i].v, b);

		assert_int_equal(n, strlen(cases[i].s));
		assert_memory_equal(b, cases[i].s, n);
	}
	/* either side of every power of ten, where the length changes */
	for (i = 0; i < 20; i++) {
		uint64_t p = 1, v;
		int d;
		size_t j;

		for (j = 0; j < i; j++)
			p *= 10;
		for (d = -1; d <= 1; d++) {
			char b[24], want[24];
			uint32_t n;

			v = p + (uint64_t)(int64_t)d;
			n = sl_utoa(v, b);
			snprintf(want, sizeof(want), "%llu",
				 (unsigned long long)v);
			assert_int_equal(n, strlen(want));
			assert_memory_equal(b, want, n);
		}
	}
}

static void
reply_segment(void **state)
{
	uint8_t out[256];
	struct sl_pkt p, q;
	uint32_t n;

	(void)state;
	/* IPv6 in a VLAN, towards the client: tag kept, everything swapped */
	sl_pkt_parse(FRAME_V6, sizeof(FRAME_V6), &p);
	n = sl_reply_segment(out, sizeof(out), FRAME_V6, &p, 1, 1000, 2000,
			     0x19, "hi", 2);
	assert_int_equal(sl_pkt_parse(out, n, &q), SL_PKT_TCP);
	assert_memory_equal(out, FRAME_V6 + 6, 6);
	assert_memory_equal(out + 6, FRAME_V6, 6);
	assert_int_equal(q.n_vlan, 1);
	assert_int_equal(q.vlan_tci, p.vlan_tci);
	assert_memory_equal(q.src, p.dst, 16);
	assert_memory_equal(q.dst, p.src, 16);
	assert_int_equal(q.sport, p.dport);
	assert_int_equal(q.dport, p.sport);
	assert_int_equal(q.seq, 1000);
	assert_int_equal(q.ack, 2000);
	assert_int_equal(q.tcp_flags, 0x19);
	assert_int_equal(q.payload_len, 2);
	assert_true(sl_tcp_cksum_ok(out, &q));
	/* IPv4 with options, towards the server (an RST): no options left */
	sl_pkt_parse(FRAME_V4, sizeof(FRAME_V4), &p);
	n = sl_reply_segment(out, sizeof(out), FRAME_V4, &p, 0, 5, 6, 0x14,
			     NULL, 0);
	assert_int_equal(n, 14 + 20 + 20);
	assert_int_equal(sl_pkt_parse(out, n, &q), SL_PKT_TCP);
	assert_memory_equal(out, FRAME_V4, 12);
	assert_memory_equal(q.src, p.src, 4);
	assert_int_equal(q.sport, p.sport);
	assert_int_equal(q.tcp_flags, 0x14);
	assert_true(sl_tcp_cksum_ok(out, &q));
	/* in place, over the request itself */
	memcpy(out, FRAME_V4, sizeof(FRAME_V4));
	n = sl_reply_segment(out, sizeof(out), out, &p, 1, 9, 10, 0x19, "x", 1);
	assert_int_equal(sl_pkt_parse(out, n, &q), SL_PKT_TCP);
	assert_memory_equal(q.dst, p.src, 4);
	assert_true(sl_tcp_cksum_ok(out, &q));
	/* no room */
	assert_int_equal(
		sl_reply_segment(out, 40, FRAME_V4, &p, 1, 0, 0, 0, NULL, 0),
		0);
}

/* Sequence numbers and SACK blocks rewritten in place: the checksum
 * adjusted stays right, whatever the values and the option's place. */
static void
rewrite_seq_sack(void **state)
{
	uint8_t f[sizeof(FRAME_V4)];
	struct sl_pkt p;
	uint32_t i;
	uint8_t *opt;

	(void)state;
	memcpy(f, FRAME_V4, sizeof(f));
	assert_int_equal(sl_pkt_parse(f, sizeof(f), &p), SL_PKT_TCP);
	for (i = 0; i < 64; i++) {
		uint32_t seq = p.seq + i * 0x9e3779b9u, ack = p.ack - i * 7919u;

		sl_tcp_set_seq_ack(f, &p, seq, ack);
		assert_int_equal(p.seq, seq);
		assert_int_equal(p.ack, ack);
		assert_true(sl_tcp_cksum_ok(f, &p));
	}
	assert_int_equal(sl_pkt_parse(f, sizeof(f), &p), SL_PKT_TCP);
	assert_true(sl_tcp_cksum_ok(f, &p));
	/* its 12 option bytes made NOP, SACK (one block), at an even and
	 * then at an odd offset */
	opt = f + p.l4_off + 20;
	for (i = 0; i < 2; i++) {
		memset(opt, 1, 12);
		opt[i] = 5;
		opt[i + 1] = 10;
		memcpy(opt + i + 2, "\x00\x00\x10\x00\x00\x00\x20\x00", 8);
		sl_tcp_cksum_set(f, &p);
		assert_int_equal(sl_tcp_map_sack(f, &p, NULL, NULL), 1);
		assert_true(sl_tcp_cksum_ok(f, &p));
		assert_memory_equal(
			opt, "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01",
			12);
		assert_int_equal(sl_tcp_map_sack(f, &p, NULL, NULL), 0);
	}
}

static uint32_t
shift_or_swallow(const void *ctx, uint32_t seq)
{
	(void)ctx;
	/* [0x3000, 0x4000) is the peer's never-sent run: mapped to its
	 * start; what follows moves back over it */
	if (seq < 0x3000)
		return seq + 0x100;
	if (seq <= 0x4000)
		return 0x3100;
	return seq - 0x1000 + 0x100;
}

/* SACK blocks put in the peer's numbers: edges mapped, a block naming
 * only the never-sent run dropped (the option made NOP with none left),
 * the checksum right at an even and an odd offset. */
static void
map_sack(void **state)
{
	static const uint8_t two[16] = {0, 0, 0x10, 0,    0, 0, 0x20, 0,
					0, 0, 0x30, 0x10, 0, 0, 0x3f, 0};
	uint8_t f[sizeof(FRAME_V4) + 12];
	struct sl_pkt p;
	uint8_t *opt;
	uint32_t i, th;

	(void)state;
	/* FRAME_V4 with 24 option bytes, not 12: room for two blocks */
	assert_int_equal(sl_pkt_parse(FRAME_V4, sizeof(FRAME_V4), &p),
			 SL_PKT_TCP);
	th = p.l4_off;
	memcpy(f, FRAME_V4, th + 32);
	memset(f + th + 32, 1, 12);
	memcpy(f + th + 44, FRAME_V4 + th + 32, sizeof(FRAME_V4) - th - 32);
	f[th + 12] = 11 << 4;
	f[p.l3_off + 3] += 12;
	sl_ipv4_cksum_set(f, &p);
	assert_int_equal(sl_pkt_parse(f, sizeof(f), &p), SL_PKT_TCP);
	assert_int_equal(p.tcp_hlen, 44);
	opt = f + p.l4_off + 20;
	for (i = 0; i < 2; i++) {
		memset(opt, 1, p.tcp_hlen - 20);
		opt[i] = 5;
		opt[i + 1] = 18;
		memcpy(opt + i + 2, two, 16);
		sl_tcp_cksum_set(f, &p);
		/* the first block moves, the second is dropped */
		assert_int_equal(sl_tcp_map_sack(f, &p, shift_or_swallow, NULL),
				 1);
		assert_true(sl_tcp_cksum_ok(f, &p));
		assert_int_equal(opt[i], 5);
		assert_int_equal(opt[i + 1], 10);
		assert_memory_equal(opt + i + 2,
				    "\x00\x00\x11\x00\x00\x00\x21\x00", 8);
		assert_int_equal(opt[i + 10], 1);
		/* now the only block names the run: none left */
		memcpy(opt + i + 2, two + 8, 8);
		sl_tcp_cksum_set(f, &p);
		assert_int_equal(sl_tcp_map_sack(f, &p, shift_or_swallow, NULL),
				 1);
		assert_true(sl_tcp_cksum_ok(f, &p));
		assert_int_equal(opt[i], 1);
		assert_int_equal(opt[i + 1], 1);
	}
}

/* Bytes put into a segment's payload at every offset, n odd and even,
 * over IPv4 and IPv6: the adjusted checksum is right, and a segment
 * that came with a wrong one still has a wrong one. */
static void
insert_one(const uint8_t *frame, size_t len, uint32_t off, uint32_t n,
	   int corrupt)
{
	uint8_t f[256];
	struct sl_pkt p, q;
	uint8_t *at;
	uint32_t i;

	memcpy(f, frame, len);
	assert_int_equal(sl_pkt_parse(f, len, &p), SL_PKT_TCP);
	if (corrupt)
		f[p.payload_off + (off + n) % p.payload_len] ^= 0x5a;
	at = f + p.payload_off + off;
	memmove(at + n, at, p.payload_len - off);
	for (i = 0; i < n; i++)
		at[i] = (uint8_t)(0x21 + i * 37 + off);
	sl_tcp_cksum_insert(f, &p, off, n);
	q = p;
	sl_ip_set_payload_len(f, &q, p.payload_len + n);
	assert_int_equal(sl_pkt_parse(f, len + n, &q), SL_PKT_TCP);
	assert_int_equal(q.payload_len, p.payload_len + n);
	assert_int_equal(sl_tcp_cksum_ok(f, &q), !corrupt);
}

static void
insert_every(const uint8_t *frame, size_t len)
{
	struct sl_pkt p;
	uint32_t off, n, c;

	assert_int_equal(sl_pkt_parse(frame, len, &p), SL_PKT_TCP);
	for (c = 0; c < 2; c++)
		for (off = 0; off <= p.payload_len; off++)
			for (n = 0; n <= 70; n += 1 + (n > 9) * 29)
				insert_one(frame, len, off, n, (int)c);
}

static void
cksum_insert(void **state)
{
	(void)state;
	insert_every(FRAME_V4, sizeof(FRAME_V4));
	insert_every(FRAME_V6, sizeof(FRAME_V6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_with_options),
		cmocka_unit_test(ipv6_vlan_ext_headers),
		cmocka_unit_test(fragments_and_other),
		cmocka_unit_test(every_truncation),
		cmocka_unit_test(inconsistent_lengths),
		cmocka_unit_test(padding_is_not_payload),
		cmocka_unit_test(checksums),
		cmocka_unit_test(reply_text),
		cmocka_unit_test(reply_template),
		cmocka_unit_test(utoa),
		cmocka_unit_test(reply_segment),
		cmocka_unit_test(rewrite_seq_sack),
		cmocka_unit_test(map_sack),
		cmocka_unit_test(cksum_insert),
		cmocka_unit_test(cksum_lengths),
		cmocka_unit_test(cksum_long),
		cmocka_unit_test(tcp_cksum_every_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

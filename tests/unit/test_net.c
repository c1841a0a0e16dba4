/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
	assert_int_equal(sl_pkt_parse(FRAME_QINQ_UDP, sizeof(FRAME_QINQ_UDP),
				      &p),
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

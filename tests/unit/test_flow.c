/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sl_flow.h"

#define SYN 0x02
#define ACK 0x10
#define FIN 0x01
#define RST 0x04

static const struct sl_http_cfg HCFG = {.api_key_header = {"X-API-Key", 9}};

/* What the callback saw. */
struct seen {
	int n;
	int kinds[64];
	char targets[64][32];
	char keys[64][32];
	int stop_at; /* return STOP on this event number (1-based), 0 never */
};

static enum sl_req_action
on_ev(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	struct seen *s = arg;

	(void)f;
	if (s->n < 64) {
		s->kinds[s->n] = ev->kind;
		if (ev->kind == SL_EV_REQUEST) {
			snprintf(s->targets[s->n], 32, "%.*s",
				 (int)ev->req->target.len, ev->req->target.p);
			snprintf(s->keys[s->n], 32, "%.*s",
				 (int)ev->req->api_key.len, ev->req->api_key.p);
		}
	}
	s->n++;
	return s->n == s->stop_at ? SL_REQ_STOP : SL_REQ_CONTINUE;
}

static struct sl_flow_params
params(uint32_t cap, uint32_t slots, uint32_t maxhead)
{
	return (struct sl_flow_params){.capacity = cap,
				       .head_slots = slots,
				       .max_head_bytes = maxhead,
				       .idle_timeout = 1000,
				       .closed_timeout = 10,
				       .http = &HCFG};
}

static struct sl_flow_table *
table(uint32_t cap, uint32_t slots, uint32_t maxhead)
{
	struct sl_flow_params p = params(cap, slots, maxhead);
	struct sl_flow_table *t = sl_flow_table_create(&p);

	assert_non_null(t);
	return t;
}

static struct sl_flow_key
key(uint32_t client)
{
	struct sl_flow_key k;

	memset(&k, 0, sizeof(k));
	k.af = 4;
	memcpy(k.caddr, &client, 4);
	k.saddr[0] = 198;
	k.saddr[1] = 19;
	k.cport = 40000;
	k.sport = 80;
	return k;
}

static enum sl_seg_verdict
seg(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
    uint8_t fl, const char *data, size_t len, struct seen *s)
{
	return sl_flow_client_segment(t, k, seq, fl, (const uint8_t *)data,
				      (uint32_t)len, 1, on_ev, s);
}

static const char R1[] =
	"GET /one HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n";
static const char R2[] =
	"POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
static const char R3[] =
	"POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	"3\r\nabc\r\n0\r\n\r\n";
static const char R4[] = "GET /four HTTP/1.1\r\nHost: a\r\n\r\n";

static void
open_flow(struct sl_flow_table *t, const struct sl_flow_key *k, struct seen *s)
{
	assert_int_equal(seg(t, k, 999, SYN, NULL, 0, s), SL_SEG_FORWARD);
}

/* A keep-alive stream of four requests with bodies, split at every offset. */
static void
split_everywhere(void **state)
{
	char stream[512];
	size_t len = 0, cut;

	(void)state;
	memcpy(stream + len, R1, strlen(R1)), len += strlen(R1);
	memcpy(stream + len, R2, strlen(R2)), len += strlen(R2);
	memcpy(stream + len, R3, strlen(R3)), len += strlen(R3);
	memcpy(stream + len, R4, strlen(R4)), len += strlen(R4);
	for (cut = 1; cut < len; cut++) {
		struct sl_flow_table *t = table(16, 4, 1024);
		struct sl_flow_key k = key(1);
		struct seen s = {0};

		open_flow(t, &k, &s);
		assert_int_equal(seg(t, &k, 1000, ACK, stream, cut, &s),
				 SL_SEG_FORWARD);
		assert_int_equal(seg(t, &k, 1000 + (uint32_t)cut, ACK,
				     stream + cut, len - cut, &s),
				 SL_SEG_FORWARD);
		assert_int_equal(s.n, 4);
		assert_string_equal(s.targets[0], "/one");
		assert_string_equal(s.keys[0], "k1");
		assert_string_equal(s.targets[1], "/two");
		assert_string_equal(s.targets[2], "/three");
		assert_string_equal(s.targets[3], "/four");
		assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_HEAD);
		sl_flow_table_free(t);
	}
}

static void
one_byte_at_a_time(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	char stream[512];
	size_t len = 0, i;

	(void)state;
	memcpy(stream, R2, strlen(R2)), len += strlen(R2);
	memcpy(stream + len, R3, strlen(R3)), len += strlen(R3);
	memcpy(stream + len, R1, strlen(R1)), len += strlen(R1);
	open_flow(t, &k, &s);
	for (i = 0; i < len; i++)
		assert_int_equal(
			seg(t, &k, 1000 + (uint32_t)i, ACK, stream + i, 1, &s),
			SL_SEG_FORWARD);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.targets[2], "/one");
	assert_int_equal(sl_flow_stats(t)->reassembled, 3);
	sl_flow_table_free(t);
}

static void
retransmissions_not_parsed_twice(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	char two[256];
	size_t l1 = strlen(R1), l4 = strlen(R4);

	(void)state;
	memcpy(two, R1, l1);
	memcpy(two + l1, R4, l4);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, R1, l1, &s), SL_SEG_FORWARD);
	/* the same segment again: forwarded, not counted */
	assert_int_equal(seg(t, &k, 1000, ACK, R1, l1, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	/* overlapping old and new bytes: only the new ones are parsed */
	assert_int_equal(seg(t, &k, 1000, ACK, two, l1 + l4, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.targets[1], "/four");
	assert_int_equal(sl_flow_stats(t)->retransmits, 2);
	sl_flow_table_free(t);
}

static void
gap_is_dropped(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	size_t l1 = strlen(R1);

	(void)state;
	open_flow(t, &k, &s);
	/* second half first: dropped, the client will retransmit it */
	assert_int_equal(seg(t, &k, 1010, ACK, R1 + 10, l1 - 10, &s),
			 SL_SEG_DROP);
	assert_int_equal(seg(t, &k, 1000, ACK, R1, 10, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 0);
	assert_int_equal(seg(t, &k, 1010, ACK, R1 + 10, l1 - 10, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	assert_int_equal(sl_flow_stats(t)->ooo_dropped, 1);
	sl_flow_table_free(t);
}

static void
errors_and_limits(void **state)
{
	struct sl_flow_table *t = table(16, 1, 256);
	struct sl_flow_key k1 = key(1), k2 = key(2), k3 = key(3);
	struct seen s = {0};
	char big[400];

	(void)state;
	/* a smuggling shape: flagged, then the flow is no longer read */
	open_flow(t, &k1, &s);
	assert_int_equal(
		seg(t, &k1, 1000, ACK,
		    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
		    75, &s),
		SL_SEG_FORWARD);
	assert_int_equal(s.kinds[0], SL_EV_PARSE_ERROR);
	assert_int_equal(sl_flow_lookup(t, &k1)->state, SL_FLOW_PASS);
	/* a head larger than max_head_bytes */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	open_flow(t, &k2, &s);
	assert_int_equal(seg(t, &k2, 1000, ACK, big, 200, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	assert_int_equal(seg(t, &k2, 1200, ACK, big + 200, 200, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.kinds[1], SL_EV_HEAD_TOO_LARGE);
	/* slots: k2 gave its slot back; k1 takes none; k3 and k2' compete */
	open_flow(t, &k3, &s);
	assert_int_equal(seg(t, &k3, 1000, ACK, "GET / HT", 8, &s),
			 SL_SEG_FORWARD);
	open_flow(t, &k2, &s);
	assert_int_equal(seg(t, &k2, 1000, ACK, "GET / HT", 8, &s),
			 SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->head_slot_exhausted, 1);
	/* a broken chunked body */
	sl_flow_table_free(t);
	t = table(16, 1, 256);
	s.n = 0;
	open_flow(t, &k1, &s);
	assert_int_equal(seg(t, &k1, 1000, ACK,
			     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
			     "chunked\r\n\r\nzz\r\n",
			     58, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.kinds[1], SL_EV_CHUNK_ERROR);
	sl_flow_table_free(t);
}

static void
stop_absorbs_the_rest(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {.stop_at = 1};
	char two[256];
	size_t l1 = strlen(R1), l4 = strlen(R4);

	(void)state;
	memcpy(two, R1, l1);
	memcpy(two + l1, R4, l4);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, two, l1 + l4, &s),
			 SL_SEG_STOPPED);
	assert_int_equal(s.n, 1);
	/* what follows is acknowledged and swallowed, never parsed */
	assert_int_equal(
		seg(t, &k, 1000 + (uint32_t)(l1 + l4), ACK, R1, l1, &s),
		SL_SEG_ABSORBED);
	assert_int_equal(s.n, 1);
	assert_int_equal(sl_flow_lookup(t, &k)->c_next, 1000 + 2 * l1 + l4);
	assert_int_equal(
		seg(t, &k, 1000 + (uint32_t)(2 * l1 + l4), ACK, NULL, 0, &s),
		SL_SEG_DROP);
	assert_int_equal(seg(t, &k, 1000 + (uint32_t)(2 * l1 + l4), FIN | ACK,
			     NULL, 0, &s),
			 SL_SEG_ABSORBED);
	assert_int_equal(sl_flow_lookup(t, &k)->c_next, 1001 + 2 * l1 + l4);
	sl_flow_table_free(t);
}

static void
midstream_pickup(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1), k2 = key(2);
	struct seen s = {0};

	(void)state;
	/* a request line: taken as a boundary */
	assert_int_equal(seg(t, &k, 5000, ACK, R4, strlen(R4), &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	/* body bytes: forwarded until a segment starts a request */
	assert_int_equal(seg(t, &k2, 7000, ACK, "lo world", 8, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(sl_flow_lookup(t, &k2)->state, SL_FLOW_RESYNC);
	assert_int_equal(seg(t, &k2, 7008, ACK, R1, strlen(R1), &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	assert_int_equal(sl_flow_stats(t)->midstream, 2);
	sl_flow_table_free(t);
}

static void
close_and_server_side(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	struct sl_flow *f;

	(void)state;
	open_flow(t, &k, &s);
	sl_flow_server_segment(t, &k, 5000, 1000, SYN | ACK, 0, 1);
	f = sl_flow_lookup(t, &k);
	assert_int_equal(f->s_next, 5001);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, strlen(R4), &s),
			 SL_SEG_FORWARD);
	sl_flow_server_segment(t, &k, 5001, 1000 + (uint32_t)strlen(R4), ACK,
			       100, 1);
	assert_int_equal(f->s_next, 5101);
	assert_int_equal(
		seg(t, &k, 1000 + (uint32_t)strlen(R4), FIN | ACK, NULL, 0, &s),
		SL_SEG_FORWARD);
	assert_true(f->c_fin);
	sl_flow_server_segment(t, &k, 5101, 0, FIN | ACK, 0, 1);
	assert_true(f->s_fin);
	/* both sides closed: gone after the short timeout */
	assert_int_equal(sl_flow_expire(t, 100, 16), 1);
	assert_null(sl_flow_lookup(t, &k));
	/* RST from the server removes at once */
	open_flow(t, &k, &s);
	sl_flow_server_segment(t, &k, 1, 0, RST, 0, 1);
	assert_null(sl_flow_lookup(t, &k));
	assert_int_equal(sl_flow_stats(t)->active, 0);
	sl_flow_table_free(t);
}

/* A flood of new flows never grows the table and evicts the idlest. */
static void
flood_evicts_oldest(void **state)
{
	struct sl_flow_table *t = table(256, 4, 1024);
	struct sl_flow_key hot = key(0xffff);
	struct seen s = {0};
	uint32_t i;

	(void)state;
	sl_flow_client_segment(t, &hot, 1, SYN, NULL, 0, 1, on_ev, &s);
	for (i = 0; i < 100000; i++) {
		struct sl_flow_key k = key(i);

		sl_flow_client_segment(t, &k, 1, SYN, NULL, 0, 10 + i, on_ev,
				       &s);
		/* the hot flow keeps talking */
		if (i % 16 == 0)
			sl_flow_client_segment(t, &hot, 2, ACK, NULL, 0, 10 + i,
					       on_ev, &s);
		assert_true(sl_flow_stats(t)->active <= 256);
	}
	assert_non_null(sl_flow_lookup(t, &hot));
	assert_true(sl_flow_stats(t)->evicted >= 100000 - 256);
	sl_flow_table_free(t);
}

/* Keyed: another seed moves a flow elsewhere; ports alone spread flows. */
static void
flow_hash_keyed_and_spread(void **state)
{
	struct sl_flow_params p = params(16, 1, 256);
	struct sl_flow_table *a, *b, *c;
	struct sl_flow_key k = key(0x01001262);
	static uint8_t lo[1024], hi[1024];
	uint32_t i, used_lo = 0, used_hi = 0, moved = 0;

	(void)state;
	p.hash_seed = 7;
	a = sl_flow_table_create(&p);
	c = sl_flow_table_create(&p);
	p.hash_seed = 8;
	b = sl_flow_table_create(&p);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	for (i = 0; i < 4096; i++) {
		uint64_t h;

		k.cport = (uint16_t)(1024 + i);
		h = sl_flow_hash(a, &k);
		assert_int_equal(h, sl_flow_hash(c, &k));
		moved += h != sl_flow_hash(b, &k);
		used_lo += lo[h & 1023] == 0;
		lo[h & 1023] = 1;
		/* the signature's bits too */
		used_hi += hi[(h >> 40) & 1023] == 0;
		hi[(h >> 40) & 1023] = 1;
	}
	assert_int_equal(moved, 4096);
	/* 4096 random draws into 1024 cells fill 1005 +- 4 */
	assert_true(used_lo >= 980);
	assert_true(used_hi >= 980);
	sl_flow_table_free(a);
	sl_flow_table_free(b);
	sl_flow_table_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_everywhere),
		cmocka_unit_test(one_byte_at_a_time),
		cmocka_unit_test(retransmissions_not_parsed_twice),
		cmocka_unit_test(gap_is_dropped),
		cmocka_unit_test(errors_and_limits),
		cmocka_unit_test(stop_absorbs_the_rest),
		cmocka_unit_test(midstream_pickup),
		cmocka_unit_test(close_and_server_side),
		cmocka_unit_test(flood_evicts_oldest),
		cmocka_unit_test(flow_hash_keyed_and_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "flow_util.h"

/*
 * A connection's life around its requests: the server's side, closes,
 * upgrades, the table under floods, and being told when a flow ends.
 */

static void
close_and_server_side(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	struct sl_flow *f;

	(void)state;
	open_flow(t, &k, &s);
	f = sl_flow_lookup(t, &k);
	assert_int_equal(f->s_next, 5001);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, strlen(R4), &s),
			 SL_SEG_FORWARD);
	srv(t, &k, 5001, 1000 + (uint32_t)strlen(R4), ACK, NULL, 100);
	assert_int_equal(f->s_next, 5101);
	assert_int_equal(seg_at(t, &k, 1000 + (uint32_t)strlen(R4), 5101,
				FIN | ACK, NULL, 0, 1, &s),
			 SL_SEG_FORWARD);
	assert_true(f->c_fin);
	srv(t, &k, 5101, 0, FIN | ACK, NULL, 0);
	assert_true(f->s_fin);
	/* both sides closed: gone after the short timeout */
	assert_int_equal(sl_flow_expire(t, 100, 16), 1);
	assert_null(sl_flow_lookup(t, &k));
	/* RST from the server removes at once */
	open_flow(t, &k, &s);
	srv(t, &k, 1, 0, RST, NULL, 0);
	assert_null(sl_flow_lookup(t, &k));
	assert_int_equal(sl_flow_stats(t)->active, 0);
	sl_flow_table_free(t);
}

/*
 * A request sent after the server's FIN (the keep-alive race): never
 * decided, both sides reset; one the FIN did not precede is read. The
 * FIN marks the stream closed only where every byte before it was seen.
 */
static void
request_after_server_fin(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1), k2 = key(2);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4), ol = (uint32_t)strlen(OK0);
	struct sl_resp_mark mk = {0};
	struct sl_seg sg;
	struct sl_flow *f;

	(void)state;
	open_flow(t, &k, &s);
	f = sl_flow_lookup(t, &k);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	sg = (struct sl_seg){.seq = 5001,
			     .ack = 1000 + l4,
			     .flags = FIN | ACK,
			     .payload = (const uint8_t *)OK0,
			     .len = ol};
	sl_flow_server_segment_mark(t, &k, &sg, 1, &mk);
	assert_true(mk.closed);
	assert_true(f->s_fin);
	/* the first again (a retransmission) is not a new request */
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	/* a pure ACK of the FIN goes on */
	assert_int_equal(seg(t, &k, 1000 + l4, ACK, NULL, 0, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, 1000 + l4, ACK, R4, l4, &s), SL_SEG_RESET);
	assert_int_equal(s.n, 1);
	assert_int_equal(sl_flow_stats(t)->after_close, 1);
	/* what follows is absorbed: the flow answered */
	assert_int_equal(seg(t, &k, 1000 + 2 * l4, ACK, R4, l4, &s),
			 SL_SEG_ABSORBED);
	assert_int_equal(s.n, 1);
	/* a FIN past server bytes not seen: what they held cannot be
	 * framed any more, so it closes nothing */
	open_flow(t, &k2, &s);
	assert_int_equal(seg(t, &k2, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	sg = (struct sl_seg){
		.seq = 5001 + ol, .ack = 1000 + l4, .flags = FIN | ACK};
	sl_flow_server_segment_mark(t, &k2, &sg, 1, &mk);
	assert_false(mk.closed);
	assert_true(sl_resp_due(&sl_flow_lookup(t, &k2)->resp) < 0);
	assert_int_equal(sl_flow_stats(t)->resp_unframed, 1);
	sl_flow_table_free(t);
}

/*
 * A connection whose sequence numbers the caller translates breaks if its
 * entry goes: under a flood too young to judge (every spoofed entry in
 * its grace), the idlest goes, but a kept one only where every other
 * candidate is kept too.
 */
static void
kept_evicted_last(void **state)
{
	struct sl_flow_params p = params(64, 4, 1024);
	struct sl_flow_table *t;
	struct sl_flow_key kept = key(0xffff), plain = key(0xfffe);
	struct seen s = {0};
	uint32_t i;

	(void)state;
	p.young_grace = 1000000000; /* none judged: the idlest goes */
	t = sl_flow_table_create(&p);
	assert_non_null(t);
	open_flow(t, &kept, &s);
	open_flow(t, &plain, &s);
	sl_flow_set_kept(t, sl_flow_lookup(t, &kept));
	for (i = 0; i < 5000; i++) {
		struct sl_flow_key k = key(i);

		seg_at(t, &k, 1, 0, SYN, NULL, 0, 10 + i, &s);
		assert_true(sl_flow_stats(t)->active <= 64);
	}
	assert_null(sl_flow_lookup(t, &plain));
	assert_non_null(sl_flow_lookup(t, &kept));
	sl_flow_table_free(t);
}

/*
 * A flood of new flows never grows the table, evicts the idlest, and
 * never an established connection while others are left.
 */
static void
flood_evicts_oldest(void **state)
{
	struct sl_flow_table *t = table(256, 4, 1024);
	struct sl_flow_key hot = key(0xffff), quiet = key(0xfffe);
	struct seen s = {0};
	uint32_t i;

	(void)state;
	open_flow(t, &hot, &s);
	/* established, then silent through the whole flood */
	open_flow(t, &quiet, &s);
	assert_int_equal(seg(t, &quiet, 1000, ACK, R4, strlen(R4), &s),
			 SL_SEG_FORWARD);
	for (i = 0; i < 100000; i++) {
		struct sl_flow_key k = key(i);

		seg_at(t, &k, 1, 0, SYN, NULL, 0, 10 + i, &s);
		if (i % 3 == 0) /* and handshake-less data */
			seg_at(t, &k, 7, 9, ACK, "GET ", 4, 10 + i, &s);
		/* the hot flow keeps talking */
		if (i % 16 == 0)
			seg_at(t, &hot, 1000, SACK, ACK, NULL, 0, 10 + i, &s);
		assert_true(sl_flow_stats(t)->active <= 256);
	}
	assert_non_null(sl_flow_lookup(t, &hot));
	assert_non_null(sl_flow_lookup(t, &quiet));
	assert_true(sl_flow_stats(t)->evicted >= 100000 - 256);
	/* its next head is parsed where it left off */
	s.n = 0;
	assert_int_equal(seg(t, &quiet, 1000 + (uint32_t)strlen(R4), ACK, R1,
			     strlen(R1), &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	sl_flow_table_free(t);
}

/*
 * A table filled to its capacity with live connections keeps them all:
 * where both of a flow's buckets are full, an entry moves to its other
 * bucket instead of a live one being evicted (first-fit alone evicted
 * some from 80 % on, each then picked up mid-stream and reset).
 */
static void
fill_keeps_all(void **state)
{
	struct sl_flow_table *t = table(16384, 4, 1024);
	struct seen s = {0};
	uint32_t i;

	(void)state;
	for (i = 0; i < 16384; i++) {
		struct sl_flow_key k = key(i);

		open_flow(t, &k, &s);
	}
	assert_int_equal(sl_flow_stats(t)->active, 16384);
	assert_int_equal(sl_flow_stats(t)->evicted, 0);
	assert_true(sl_flow_stats(t)->shifted > 0);
	for (i = 0; i < 16384; i++) {
		struct sl_flow_key k = key(i);

		assert_non_null(sl_flow_lookup(t, &k));
	}
	sl_flow_table_free(t);
}

/*
 * New connections in their handshake are not evicted for each other: a
 * full table of established ones gives up its least recently seen.
 */
static void
handshakes_not_evicted_for_each_other(void **state)
{
	struct sl_flow_params p = params(64, 4, 1024);
	struct sl_flow_table *t;
	struct seen s = {0};
	uint32_t i;

	(void)state;
	p.young_grace = 100;
	t = sl_flow_table_create(&p);
	for (i = 0; i < 64; i++) {
		struct sl_flow_key k = key(i);

		open_flow(t, &k, &s);
		seg_at(t, &k, 1000, SACK, ACK, R4, strlen(R4), 1 + i, &s);
	}
	s.n = 0;
	for (i = 100; i < 132; i++) {
		struct sl_flow_key k = key(i);

		struct sl_seg sa = {
			.seq = 5000, .ack = 1000, .flags = SYN | ACK};

		seg_at(t, &k, 999, 0, SYN, NULL, 0, 200, &s);
		sl_flow_server_segment(t, &k, &sa, 200);
	}
	for (i = 100; i < 132; i++) {
		struct sl_flow_key k = key(i);

		assert_int_equal(
			seg_at(t, &k, 1000, SACK, ACK, R4, strlen(R4), 201, &s),
			SL_SEG_FORWARD);
	}
	assert_int_equal(s.n, 32);
	assert_int_equal(sl_flow_stats(t)->midstream, 0);
	sl_flow_table_free(t);
}

/*
 * RFC 5961: an RST not at the next sequence, and a SYN on an open
 * connection, change nothing; the exact RST closes.
 */
static void
rst_and_syn_on_open(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4);

	(void)state;
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, 77, RST, NULL, 0, &s), SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, 1000 + l4 + 1, RST, NULL, 0, &s),
			 SL_SEG_FORWARD);
	assert_non_null(sl_flow_lookup(t, &k));
	assert_int_equal(
		seg(t, &k, 123456, SYN, "GET /x HTTP/1.1\r\n\r\n", 19, &s),
		SL_SEG_PREFIX);
	assert_int_equal(sl_flow_cut(t), 0);
	assert_int_equal(sl_flow_lookup(t, &k)->c_next, 1000 + l4);
	assert_int_equal(sl_flow_stats(t)->rst_ignored, 2);
	assert_int_equal(sl_flow_stats(t)->syn_ignored, 1);
	/* the split head after it is still read */
	assert_int_equal(seg(t, &k, 1000 + l4, ACK, "G", 1, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, 1001 + l4, ACK, R4 + 1, l4 - 1, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	/* the exact one closes */
	assert_int_equal(seg(t, &k, 1000 + 2 * l4, RST, NULL, 0, &s),
			 SL_SEG_FORWARD);
	assert_null(sl_flow_lookup(t, &k));
	sl_flow_table_free(t);
}

/*
 * A SYN-ACK from the backend on a connection we hold: it no longer holds
 * that one (here an RST at its own next sequence, behind ours on a head
 * it dropped, ended it). The flow starts anew where the backend stands,
 * so the new connection's first head is read, not taken as bytes resent;
 * its first SYN-ACK again (the handshake's ACK lost) changes nothing.
 */
static void
reopened_by_the_backend(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4), isn = 1000u - 200000u;
	struct sl_flow *f;

	(void)state;
	open_flow(t, &k, &s);
	f = sl_flow_lookup(t, &k);
	srv(t, &k, 5000, 1000, SYN | ACK, NULL, 0);
	assert_int_equal(sl_flow_stats(t)->reopened, 0);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	assert_int_equal(seg(t, &k, 1000, RST, NULL, 0, &s), SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, isn, SYN, NULL, 0, &s), SL_SEG_FORWARD);
	assert_int_equal(sl_flow_stats(t)->rst_ignored, 1);
	assert_int_equal(sl_flow_stats(t)->syn_ignored, 1);
	assert_int_equal(f->c_next, 1000 + l4);
	srv(t, &k, 9000, isn + 1, SYN | ACK, NULL, 0);
	assert_int_equal(sl_flow_stats(t)->reopened, 1);
	assert_ptr_equal(sl_flow_lookup(t, &k), f);
	assert_int_equal(f->c_next, isn + 1);
	assert_int_equal(seg_at(t, &k, isn + 1, 9001, ACK, NULL, 0, 1, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(seg_at(t, &k, isn + 1, 9001, ACK, R4, l4, 1, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	/* and its SYN-ACK again is the same connection's */
	srv(t, &k, 9000, isn + 1, SYN | ACK, NULL, 0);
	assert_int_equal(sl_flow_stats(t)->reopened, 1);
	sl_flow_table_free(t);
}

/* An upgrade ends inspection only when the server answers 101. */
static void
upgrade_waits_for_server(void **state)
{
	static const char UP[] = "GET /ws HTTP/1.1\r\nHost: a\r\n"
				 "Connection: Upgrade\r\nUpgrade: websocket\r\n"
				 "\r\n";
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t lu = (uint32_t)strlen(UP), l4 = (uint32_t)strlen(R4);
	char two[256];

	(void)state;
	memcpy(two, UP, lu);
	memcpy(two + lu, R4, l4);
	open_flow(t, &k, &s);
	/* a request pipelined behind it waits: only the upgrade goes */
	assert_int_equal(seg(t, &k, 1000, ACK, two, lu + l4, &s),
			 SL_SEG_PREFIX);
	assert_int_equal(sl_flow_cut(t), lu);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_UPGRADE);
	/* the server refuses (200): inspection goes on */
	srv(t, &k, SACK, 1000 + lu, ACK, OK0, OK0_LEN);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_HEAD);
	assert_int_equal(seg(t, &k, 1000 + lu, ACK, R4, l4, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	/* again, once R4 is answered, and this time the server switches */
	srv(t, &k, SACK + OK0_LEN, 1000 + lu + l4, ACK, OK0, OK0_LEN);
	assert_int_equal(seg(t, &k, 1000 + lu + l4, ACK, UP, lu, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_UPGRADE);
	srv(t, &k, SACK + 2 * OK0_LEN, 1000 + 2 * lu + l4, ACK,
	    "HTTP/1.1 101 Switching Protocols\r\n", 34);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_PASS);
	assert_int_equal(sl_flow_stats(t)->upgrades, 1);
	assert_int_equal(sl_flow_stats(t)->upgrades_refused, 1);
	sl_flow_table_free(t);
}

/*
 * A refusal never takes the place of an earlier response: behind a
 * request let through in the same segment, only that one is forwarded;
 * before the server acknowledged the earlier requests, it waits.
 */
/* 49 bytes: a head of 39, a body of 10 */
static const char RESP10[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
			     "0123456789";

static void
refusal_keeps_answer_order(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {.stop_at = 2};
	uint32_t l1 = (uint32_t)strlen(R1), l4 = (uint32_t)strlen(R4);
	char two[256];

	(void)state;
	memcpy(two, R1, l1);
	memcpy(two + l1, R4, l4);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, two, l1 + l4, &s),
			 SL_SEG_PREFIX);
	assert_int_equal(sl_flow_cut(t), l1);
	assert_int_equal(sl_flow_lookup(t, &k)->c_next, 1000 + l1);
	/* resent alone before the server acknowledged R1: it waits */
	s.stop_at = 3;
	assert_int_equal(seg(t, &k, 1000 + l1, ACK, R4, l4, &s), SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_ORDER], 1);
	/* acknowledged, and its response begun: it still waits, or the
	 * refusal would land inside that response (it was answered at the
	 * ACK alone once) */
	srv(t, &k, SACK, 1000 + l1, ACK, RESP10, 43);
	s.stop_at = 4;
	assert_int_equal(seg(t, &k, 1000 + l1, ACK, R4, l4, &s), SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_ORDER], 2);
	/* the response's last bytes: answered now */
	srv(t, &k, SACK + 43, 1000 + l1, ACK, RESP10 + 43, 6);
	assert_int_equal(sl_flow_stats(t)->responses, 1);
	s.stop_at = 5;
	assert_int_equal(seg(t, &k, 1000 + l1, ACK, R4, l4, &s),
			 SL_SEG_STOPPED);
	sl_flow_table_free(t);
	/* which heads start their segment's new bytes: what a caller
	 * needs to know before it lets one wait */
	t = table(16, 4, 1024);
	s = (struct seen){0};
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, two, l1 + l4, &s),
			 SL_SEG_FORWARD);
	assert_true(s.first[0] && !s.first[1]);
	sl_flow_table_free(t);
}

/*
 * Head buffers: an incomplete head times out (408 on its next segment),
 * one source holds at most its share, and a full pool gives up its
 * oldest incomplete head rather than refuse a new one.
 */
static void
head_buffer_budget(void **state)
{
	struct sl_flow_params p = params(64, 4, 1024);
	struct sl_flow_table *t;
	struct sl_flow_key k[6];
	struct seen s = {0};
	int i;

	(void)state;
	p.head_timeout = 50;
	p.heads_per_source = 2;
	t = sl_flow_table_create(&p);
	assert_non_null(t);
	for (i = 0; i < 6; i++) {
		k[i] = key((uint32_t)(i / 2 + 1)); /* two flows per source */
		k[i].cport = (uint16_t)(40000 + i);
		open_flow(t, &k[i], &s);
	}
	/* k[0], k[1] from source 1; a third flow of it would be refused */
	for (i = 0; i < 4; i++)
		assert_int_equal(seg_at(t, &k[i], 1000, SACK, ACK, "GET / H", 7,
					(uint64_t)(10 + i), &s),
				 SL_SEG_FORWARD);
	/* the pool (4) is full: k[4]'s head takes the oldest's (k[0]) */
	assert_int_equal(
		seg_at(t, &k[4], 1000, SACK, ACK, "GET / H", 7, 20, &s),
		SL_SEG_FORWARD);
	assert_int_equal(sl_flow_stats(t)->head_evictions, 1);
	assert_int_equal(seg_at(t, &k[0], 1007, SACK, ACK, "TTP/1.1\r\n\r\n",
				11, 21, &s),
			 SL_SEG_STOPPED);
	assert_int_equal(s.kinds[s.n - 1], SL_EV_HEAD_TIMEOUT);
	/* time passes: the rest time out */
	sl_flow_expire(t, 200, 64);
	assert_true(sl_flow_stats(t)->head_timeouts >= 3);
	assert_int_equal(seg_at(t, &k[1], 1007, SACK, ACK, "TTP/1.1\r\n\r\n",
				11, 201, &s),
			 SL_SEG_STOPPED);
	sl_flow_table_free(t);
	/* per source */
	t = sl_flow_table_create(&p);
	for (i = 0; i < 3; i++) {
		k[i] = key(9);
		k[i].cport = (uint16_t)(41000 + i);
		open_flow(t, &k[i], &s);
		seg_at(t, &k[i], 1000, SACK, ACK, "GET / H", 7, 10, &s);
	}
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_SOURCE], 1);
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

static void
count_gone(void *arg, struct sl_flow *f)
{
	assert_int_not_equal(f->xflags, 0);
	(*(int *)arg)++;
}

/* Marks the flow of k (the caller's xflags), as the cost record does. */
static void
mark(struct sl_flow_table *t, const struct sl_flow_key *k)
{
	struct sl_flow *f = sl_flow_lookup(t, k);

	assert_non_null(f);
	f->xflags = 1;
}

/*
 * The caller is told once when a connection it marked ends, however it
 * ends: reset by either side, closed and expired, idle, evicted, its
 * 4-tuple taken by a new connection; never for one it did not mark.
 */
static void
gone_told_once_per_marked_end(void **state)
{
	struct sl_flow_params p = params(4, 4, 1024);
	struct sl_flow_table *t;
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4), i;
	int gone = 0;

	(void)state;
	p.gone = count_gone;
	p.gone_arg = &gone;
	t = sl_flow_table_create(&p);
	/* the server's RST; the client's exact one */
	open_flow(t, &k, &s);
	mark(t, &k);
	srv(t, &k, 5001, 0, RST, NULL, 0);
	assert_int_equal(gone, 1);
	open_flow(t, &k, &s);
	mark(t, &k);
	assert_int_equal(seg(t, &k, 1000, RST, NULL, 0, &s), SL_SEG_FORWARD);
	assert_int_equal(gone, 2);
	/* unmarked: not told */
	open_flow(t, &k, &s);
	srv(t, &k, 5001, 0, RST, NULL, 0);
	assert_int_equal(gone, 2);
	/* idle past its timeout */
	open_flow(t, &k, &s);
	mark(t, &k);
	assert_int_equal(sl_flow_expire(t, 5000, 16), 1);
	assert_int_equal(gone, 3);
	/* closed both ways, then a new SYN on the same 4-tuple */
	open_flow(t, &k, &s);
	mark(t, &k);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(
		seg_at(t, &k, 1000 + l4, SACK, FIN | ACK, NULL, 0, 1, &s),
		SL_SEG_FORWARD);
	srv(t, &k, 5001, 1001 + l4, FIN | ACK, NULL, 0);
	assert_int_equal(seg_at(t, &k, 777777, 0, SYN, NULL, 0, 2, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(gone, 4);
	assert_int_equal(sl_flow_lookup(t, &k)->xflags, 0);
	/* evicted by newer connections when the table is full */
	mark(t, &k);
	for (i = 10; i < 15; i++) {
		struct sl_flow_key o = key(i);

		seg_at(t, &o, 999, 0, SYN, NULL, 0, 100 + i, &s);
	}
	assert_null(sl_flow_lookup(t, &k));
	assert_int_equal(gone, 5);
	sl_flow_table_free(t);
}

/*
 * An upgrade sent before the response to the request ahead of it came
 * waits for it: a 101 could come inside that response's body (an echo,
 * a file the client uploaded; a HEAD's, sent where there should be
 * none), and whether it switched the connection would rest on framing
 * sluice and the backend might not share. The upgrade is refused there
 * (upgrade_pipelined) in the order of answers, so it is dropped, and
 * goes on when the client sends it again after that response: then
 * only its own answer switches.
 */
static void
upgrade_only_by_its_own_answer(void **state)
{
	static const char UP[] = "GET /ws HTTP/1.1\r\nHost: a\r\n"
				 "Connection: Upgrade\r\nUpgrade: websocket\r\n"
				 "\r\n";
	static const char BODY1[] = "HTTP/1.1 200 OK\r\nContent-Length: 70\r\n"
				    "\r\n";
	static const char FAKE[] = "HTTP/1.1 101 Switching Protocols\r\n\r\n"
				   "0123456789012345678901234567890123";
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	/* the error answered, as the worker answers it */
	struct seen s = {.stop_at = 2};
	uint32_t l4 = (uint32_t)strlen(R4), lu = (uint32_t)strlen(UP);
	uint32_t b1 = (uint32_t)strlen(BODY1), fk = (uint32_t)strlen(FAKE);
	uint32_t c = 1000;

	(void)state;
	assert_int_equal(fk, 70);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, c, ACK, R4, l4, &s), SL_SEG_FORWARD);
	c += l4;
	assert_int_equal(seg(t, &k, c, ACK, UP, lu, &s), SL_SEG_DROP);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.kinds[1], SL_EV_PARSE_ERROR);
	assert_string_equal(s.targets[1], "upgrade_pipelined");
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_HEAD);
	/* R4's answer, a 101 at the start of its body's segment: nothing
	 * switches */
	srv(t, &k, SACK, c, ACK, BODY1, b1);
	srv(t, &k, SACK + b1, c, ACK, FAKE, fk);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_HEAD);
	/* the upgrade sent again: it waits for its own answer */
	assert_int_equal(seg(t, &k, c, ACK, UP, lu, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.kinds[2], SL_EV_REQUEST);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_UPGRADE);
	srv(t, &k, SACK + b1 + fk, c + lu, ACK,
	    "HTTP/1.1 101 Switching Protocols\r\n\r\n", 36);
	assert_int_equal(sl_flow_lookup(t, &k)->state, SL_FLOW_PASS);
	assert_int_equal(sl_flow_stats(t)->upgrades, 1);
	sl_flow_table_free(t);
}

/*
 * A HEAD's response declared a body it is framed without, and the body
 * had not come when the client, having read the head, asked to upgrade
 * (a backend serving HEAD as GET, its body held back by a window the
 * client keeps shut). That body, a 101 at its start, would come where
 * the upgrade's answer goes: the upgrade is refused (upgrade_framing)
 * at once, and nothing after the HEAD switches the connection. Without
 * the declared length, the same upgrade waits for its own answer.
 */
static void
upgrade_refused_behind_declared_body(void **state)
{
	/* the third, "head": framed as HEAD, as a server that upper-cases
	 * methods reads it */
	static const char *const HEAD[] = {
		"HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n",
		"HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n",
		"head /a HTTP/1.1\r\nHost: a\r\n\r\n"};
	static const char UP[] = "GET /ws HTTP/1.1\r\nHost: a\r\n"
				 "Connection: Upgrade\r\nUpgrade: websocket\r\n"
				 "\r\n";
	static const char *const ANSWER[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: y\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n"};
	static const char S101[] = "HTTP/1.1 101 Switching Protocols\r\n\r\n";
	uint32_t lu = (uint32_t)strlen(UP);
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct sl_flow_table *t = table(16, 4, 1024);
		struct sl_flow_key k = key(1);
		/* the refusal answered, as the worker answers it */
		struct seen s = {.stop_at = i != 1 ? 2 : 0};
		uint32_t la = (uint32_t)strlen(ANSWER[i]), c = 1000;
		uint32_t lh = (uint32_t)strlen(HEAD[i]);
		enum sl_seg_verdict want =
			i != 1 ? SL_SEG_STOPPED : SL_SEG_FORWARD;

		open_flow(t, &k, &s);
		assert_int_equal(seg(t, &k, c, ACK, HEAD[i], lh, &s),
				 SL_SEG_FORWARD);
		c += lh;
		srv(t, &k, SACK, c, ACK, ANSWER[i], la);
		assert_int_equal(seg(t, &k, c, ACK, UP, lu, &s), want);
		assert_int_equal(s.n, 2);
		if (i == 1) {
			assert_int_equal(s.kinds[1], SL_EV_REQUEST);
			srv(t, &k, SACK + la, c + lu, ACK, S101, 36);
			assert_int_equal(sl_flow_lookup(t, &k)->state,
					 SL_FLOW_PASS);
			sl_flow_table_free(t);
			continue;
		}
		assert_int_equal(s.kinds[1], SL_EV_PARSE_ERROR);
		assert_string_equal(s.targets[1], "upgrade_framing");
		/* the HEAD's body comes now: nothing switches */
		srv(t, &k, SACK + la, c, ACK, S101, 36);
		assert_int_not_equal(sl_flow_lookup(t, &k)->state,
				     SL_FLOW_PASS);
		assert_int_equal(sl_flow_stats(t)->upgrades, 0);
		sl_flow_table_free(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(close_and_server_side),
		cmocka_unit_test(request_after_server_fin),
		cmocka_unit_test(flood_evicts_oldest),
		cmocka_unit_test(kept_evicted_last),
		cmocka_unit_test(fill_keeps_all),
		cmocka_unit_test(handshakes_not_evicted_for_each_other),
		cmocka_unit_test(rst_and_syn_on_open),
		cmocka_unit_test(upgrade_waits_for_server),
		cmocka_unit_test(upgrade_refused_behind_declared_body),
		cmocka_unit_test(reopened_by_the_backend),
		cmocka_unit_test(upgrade_only_by_its_own_answer),
		cmocka_unit_test(refusal_keeps_answer_order),
		cmocka_unit_test(head_buffer_budget),
		cmocka_unit_test(flow_hash_keyed_and_spread),
		cmocka_unit_test(gone_told_once_per_marked_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

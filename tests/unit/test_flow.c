/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flow_util.h"

/*
 * The client's stream: what the flow tracker reads as requests, however
 * the segments come (split, repeated, out of order, altered).
 */

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
	for (i = 0; i < len; i++) {
		assert_int_equal(
			seg(t, &k, 1000 + (uint32_t)i, ACK, stream + i, 1, &s),
			SL_SEG_FORWARD);
		/* the server acknowledges: the decided byte is committed */
		srv(t, &k, SACK, 1001 + (uint32_t)i, ACK, NULL, 0);
	}
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
	/* slots: k2 gave its slot back; k1 takes none; k3 and k4 compete */
	open_flow(t, &k3, &s);
	assert_int_equal(seg(t, &k3, 1000, ACK, "GET / HT", 8, &s),
			 SL_SEG_FORWARD);
	/* the pool is full: the older incomplete head gives way */
	k2 = key(4);
	open_flow(t, &k2, &s);
	assert_int_equal(seg(t, &k2, 1000, ACK, "GET / HT", 8, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(sl_flow_stats(t)->head_evictions, 1);
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

/* One body after its head, cut in two at every offset: refused (400
 * body_request) where a server ignoring Content-Length could act on it
 * as a request, and then at the segment holding the byte that says so. */
static void
body_as_request_one(const char *body, int refused)
{
	size_t bl = strlen(body), cut;
	char head[128];
	int hl = snprintf(head, sizeof(head),
			  "POST /u HTTP/1.1\r\nHost: a\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  bl);

	/* what a caller asks before it lets the flow read them unanswered */
	assert_int_equal(
		sl_flow_body_request((const uint8_t *)body, (uint32_t)bl, bl),
		refused);
	for (cut = 0; cut < bl; cut++) {
		struct sl_flow_table *t = table(16, 4, 1024);
		struct sl_flow_key k = key(1);
		struct seen s = {.stop_at = 2};
		enum sl_seg_verdict v1, v2 = SL_SEG_FORWARD;

		open_flow(t, &k, &s);
		assert_int_equal(seg(t, &k, 1000, ACK, head, (size_t)hl, &s),
				 SL_SEG_FORWARD);
		v1 = seg(t, &k, 1000 + (uint32_t)hl, ACK, body, cut ? cut : bl,
			 &s);
		if (cut && v1 == SL_SEG_FORWARD)
			v2 = seg(t, &k, 1000 + (uint32_t)(hl + cut), ACK,
				 body + cut, bl - cut, &s);
		if (!refused) {
			assert_int_equal(v1, SL_SEG_FORWARD);
			assert_int_equal(v2, SL_SEG_FORWARD);
			assert_int_equal(s.n, 1);
			assert_int_equal(sl_flow_lookup(t, &k)->state,
					 SL_FLOW_HEAD);
		} else {
			assert_int_equal(s.n, 2);
			assert_int_equal(s.kinds[1], SL_EV_PARSE_ERROR);
			assert_string_equal(s.targets[1], "body_request");
			assert_true(v1 == SL_SEG_STOPPED ||
				    v2 == SL_SEG_STOPPED);
		}
		sl_flow_table_free(t);
	}
}

static void
body_read_as_request(void **state)
{
	static const char *const refused[] = {
		"GET /admin HTTP/1.1\r\nHost: a\r\n\r\n",
		"\r\n  get /x http/1.0\r\n\r\n",
		"GET /p\n",
		"GET /p\r\n",
		"GET /p \r\nrest",
		"X\t/a b HTTP/1.1\r\n",
		"hello world HTTP/1.1",
		"GET /adm", /* the next bytes would go on with the line */
		"GET /a ",
		"OPTIONS *\n",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ01234 /p\n", /* 31 bytes */
		"say hello", /* absolute form, perhaps ("hello://") */
		"see http://x/ HTTPS",
	};
	static const char *const passed[] = {
		"{\"a\": \"GET /x HTTP/1.1\"}",
		"a=b&c=d",
		"hello world\n",
		"hello world",
		"hello",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ012345 /p\n", /* a 32-byte method */
		"GET ",
		"x\r\n/p HTTP/1.1\r\n",
		"GET\n/p HTTP/1.1\r\n",
		"see x HTTPS\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		body_as_request_one(refused[i], 1);
	for (i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
		body_as_request_one(passed[i], 0);
}

/* A body, then a head whose method is m, sent in two segments cut at
 * every offset: the head refused (400 body_request) where a server
 * ignoring the body's length reads body and method as one method. */
static void
glued_one(const char *body, const char *m, int refused)
{
	char msg[256];
	int hl, n;
	size_t cut;

	hl = snprintf(msg, sizeof(msg),
		      "POST /u HTTP/1.1\r\nHost: a\r\n"
		      "Content-Length: %zu\r\n\r\n",
		      strlen(body));
	n = hl + snprintf(msg + hl, sizeof(msg) - (size_t)hl,
			  "%s%s /v1/orders HTTP/1.1\r\nHost: a\r\n\r\n", body,
			  m);
	for (cut = 1; cut < (size_t)n; cut++) {
		struct sl_flow_table *t = table(16, 4, 1024);
		struct sl_flow_key k = key(1);
		struct seen s = {0};

		open_flow(t, &k, &s);
		seg(t, &k, 1000, ACK, msg, cut, &s);
		if (s.n < 2)
			seg(t, &k, 1000 + (uint32_t)cut, ACK, msg + cut,
			    (size_t)n - cut, &s);
		assert_int_equal(s.n, 2);
		if (refused) {
			assert_int_equal(s.kinds[1], SL_EV_PARSE_ERROR);
			assert_string_equal(s.targets[1], "body_request");
		} else {
			assert_int_equal(s.kinds[1], SL_EV_REQUEST);
			assert_string_equal(s.targets[1], "/v1/orders");
		}
		sl_flow_table_free(t);
	}
}

static void
body_glued_to_method(void **state)
{
	static const struct {
		const char *body, *method;
		int refused;
	} cases[] = {
		{"PO", "ST", 1},
		{"G", "ET", 1},
		{"\r\n  he", "AD", 1}, /* blank lines and blanks passed over */
		{"DELE", "TE", 1},
		{"optio", "NS", 1},
		{"P", "UT", 1},
		{"PA", "TCH", 1},
		{"TRA", "CE", 1},
		/* no method comes of it, or the body is more than a method's
		 * first letters */
		{"PO", "GET", 0},
		{"POST", "X", 0},
		{"xPO", "ST", 0},
		{"a=PO", "ST", 0},
		{"{}", "ST", 0},
		{"P O", "ST", 0},
		{"GE", "TT", 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		glued_one(cases[i].body, cases[i].method, cases[i].refused);
}

static enum sl_req_action
park_first(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	uint32_t *rest = arg;

	(void)f;
	*rest = ev->seg_end;
	return SL_REQ_PARK;
}

/* A parked head resumed with no one to answer, its body a request: the
 * flow absorbs from there, it never passes the stream unread. */
static void
resumed_refusal_absorbs(void **state)
{
	static const char msg[] = "POST /u HTTP/1.1\r\nHost: a\r\n"
				  "Content-Length: 8\r\n\r\nGET /x\r\n";
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t rest = 0, n = (uint32_t)strlen(msg);
	struct sl_seg sg = {.seq = 1000,
			    .ack = SACK,
			    .flags = ACK,
			    .payload = (const uint8_t *)msg,
			    .len = n};
	struct sl_flow *f;

	(void)state;
	open_flow(t, &k, &s);
	assert_int_equal(sl_flow_client_segment(t, &k, sl_flow_hash(t, &k), &sg,
						1, park_first, &rest),
			 SL_SEG_PARKED);
	f = sl_flow_lookup(t, &k);
	assert_int_equal(
		sl_flow_resume(t, f, (const uint8_t *)msg, rest, n, NULL, NULL),
		SL_SEG_STOPPED);
	assert_int_equal(f->state, SL_FLOW_ABSORB);
	assert_int_equal(seg(t, &k, 1000 + n, ACK, R1, strlen(R1), &s),
			 SL_SEG_ABSORBED);
	assert_int_equal(s.n, 0);
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

/*
 * Picked up mid-stream, nothing is forwarded: what looks like a head at
 * the server's place may be inside a body it is still reading. Once the
 * server's ACK says where it is, both sides are reset, the backend's at
 * that place, and what follows is absorbed.
 */
static void
midstream_pickup(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	struct sl_flow *f;

	(void)state;
	/* a request line, but nothing says the server is there: probe */
	assert_int_equal(seg(t, &k, 5000, ACK, R4, strlen(R4), &s),
			 SL_SEG_PROBE);
	assert_int_equal(seg(t, &k, 5000, ACK, R4, strlen(R4), &s),
			 SL_SEG_PROBE);
	/* the server's answer to the probe says it expects 5000: a head
	 * there is still not read */
	srv(t, &k, 7000, 5000, ACK, NULL, 0);
	assert_int_equal(seg(t, &k, 5000, ACK, R4, strlen(R4), &s),
			 SL_SEG_RESET);
	assert_int_equal(s.n, 0);
	f = sl_flow_lookup(t, &k);
	assert_int_equal(f->c_next, 5000); /* the backend's RST goes there */
	assert_int_equal(f->state, SL_FLOW_ABSORB);
	assert_int_equal(seg(t, &k, 5000 + (uint32_t)strlen(R4), ACK, R4,
			     strlen(R4), &s),
			 SL_SEG_ABSORBED);
	assert_int_equal(s.n, 0);
	assert_int_equal(sl_flow_stats(t)->midstream, 1);
	assert_int_equal(sl_flow_stats(t)->probes, 2);
	assert_int_equal(sl_flow_stats(t)->midstream_reset, 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_MIDSTREAM], 2);
	sl_flow_table_free(t);
}

/* A SYN's payload is not stream data: the SYN goes on without it (a
 * backend with Fast Open would act on it), the stream starts at ISN + 1. */
static void
syn_data_ignored(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};

	(void)state;
	assert_int_equal(seg(t, &k, 999, SYN, R1, strlen(R1), &s),
			 SL_SEG_PREFIX);
	assert_int_equal(sl_flow_cut(t), 0);
	assert_int_equal(s.n, 0);
	srv(t, &k, 5000, 1000, SYN | ACK, NULL, 0);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, strlen(R4), &s),
			 SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.targets[0], "/four");
	assert_int_equal(sl_flow_stats(t)->syn_data, 1);
	sl_flow_table_free(t);
}

/* The caller's holds, counted: a copy of the bytes, as an mbuf keeps them. */
static int holds_out;

static uint64_t
keep_copy(void *arg, const uint8_t *p, uint32_t n)
{
	char *c = malloc(n);

	(void)arg;
	memcpy(c, p, n);
	holds_out++;
	return (uint64_t)(uintptr_t)c;
}

static const uint8_t *
held_at(void *arg, uint64_t h)
{
	(void)arg;
	return (const uint8_t *)(uintptr_t)h;
}

static void
let_go_copy(void *arg, uint64_t h)
{
	(void)arg;
	holds_out--;
	free((void *)(uintptr_t)h);
}

/*
 * Held instead of digested: a segment forwarded whole is kept by the
 * caller, compared byte for byte when a copy comes again, and given back
 * once, at the server's ACK or when the connection goes.
 */
static void
resent_bytes_held(void **state)
{
	struct sl_flow_params p = params(16, 4, 1024);
	struct sl_flow_table *t;
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4);
	char other[64];

	(void)state;
	p.hold = (struct sl_flow_hold){keep_copy, held_at, let_go_copy, NULL};
	t = sl_flow_table_create(&p);
	memcpy(other, R4, l4);
	memcpy(other + 5, "XXXX", 4);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(holds_out, 1);
	assert_int_equal(seg(t, &k, 1000, ACK, other, l4, &s), SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_REPLAY_DIFF], 1);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	srv(t, &k, 5001, 1000 + l4, ACK, NULL, 0); /* committed */
	assert_int_equal(holds_out, 0);
	assert_int_equal(seg(t, &k, 1000 + l4, ACK, R4, l4, &s),
			 SL_SEG_FORWARD);
	assert_int_equal(holds_out, 1);
	sl_flow_table_free(t); /* the connection goes: given back */
	assert_int_equal(holds_out, 0);
}

/*
 * Bytes parsed once stay what was decided until the server acknowledges
 * them: a copy that differs, or covers part of them, is dropped; a true
 * retransmission goes on.
 */
static void
resent_bytes_must_match(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	uint32_t l4 = (uint32_t)strlen(R4);
	char other[64];

	(void)state;
	memcpy(other, R4, l4);
	memcpy(other + 5, "XXXX", 4); /* "GET /XXXX HTTP/1.1" */
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(seg(t, &k, 1000, ACK, other, l4, &s), SL_SEG_DROP);
	assert_int_equal(seg(t, &k, 1000, ACK, R4, 10, &s), SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_REPLAY_DIFF], 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_REPLAY_PART], 1);
	/* the same bytes, and more after them: fine */
	{
		char two[256];

		memcpy(two, R4, l4);
		memcpy(two + l4, R1, strlen(R1));
		assert_int_equal(
			seg(t, &k, 1000, ACK, two, l4 + strlen(R1), &s),
			SL_SEG_FORWARD);
	}
	assert_int_equal(s.n, 2);
	/* acknowledged: committed, a different copy no longer matters */
	srv(t, &k, SACK, 1000 + l4 + (uint32_t)strlen(R1), ACK, NULL, 0);
	assert_int_equal(sl_flow_lookup(t, &k)->rec_n, 0);
	assert_int_equal(seg(t, &k, 1000, ACK, other, l4, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 2);
	sl_flow_table_free(t);
}

/* A client data segment with a timestamp (has_ts 0: none). */
static enum sl_seg_verdict
tseg(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t ack,
     uint8_t fl, uint8_t has_ts, uint32_t tsval, struct seen *s)
{
	struct sl_seg sg = {.seq = 1000,
			    .ack = ack,
			    .flags = fl,
			    .has_ts = has_ts,
			    .tsval = tsval,
			    .payload = (const uint8_t *)R4,
			    .len = (uint32_t)strlen(R4)};

	return sl_flow_client_segment(t, k, sl_flow_hash(t, k), &sg, 1, on_ev,
				      s);
}

/* Any one byte changed, anywhere in a decided segment, is caught. */
static void
resent_any_byte_changed(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	char head[300], other[300];
	uint32_t i, n;

	(void)state;
	n = (uint32_t)snprintf(
		head, sizeof(head),
		"GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: %0230d\r\n\r\n", 7);
	open_flow(t, &k, &s);
	assert_int_equal(seg(t, &k, 1000, ACK, head, n, &s), SL_SEG_FORWARD);
	for (i = 0; i < n; i++) {
		memcpy(other, head, n);
		other[i] ^= 0x20;
		assert_int_equal(seg(t, &k, 1000, ACK, other, n, &s),
				 SL_SEG_DROP);
	}
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_REPLAY_DIFF], n);
	assert_int_equal(seg(t, &k, 1000, ACK, head, n, &s), SL_SEG_FORWARD);
	sl_flow_table_free(t);
}

/* What a Linux backend discards is not parsed. */
static void
segments_linux_drops(void **state)
{
	struct sl_flow_table *t = table(16, 4, 1024);
	struct sl_flow_key k = key(1);
	struct seen s = {0};
	struct sl_seg sg = {
		.seq = 999, .flags = SYN, .has_ts = 1, .tsval = 100};

	(void)state;
	/* without ACK, even a pickup is not worth asking about */
	assert_int_equal(tseg(t, &k, SACK, 0, 0, 0, &s), SL_SEG_DROP);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_NO_ACK], 1);
	sl_flow_table_free(t);
	t = table(16, 4, 1024);
	sl_flow_client_segment(t, &k, sl_flow_hash(t, &k), &sg, 1, on_ev, &s);
	sg = (struct sl_seg){
		.seq = 5000, .ack = 1000, .flags = SYN | ACK, .has_ts = 1};
	sl_flow_server_segment(t, &k, &sg, 1);
	/* no ACK flag; ACK of bytes never sent; URG */
	assert_int_equal(tseg(t, &k, SACK, 0, 1, 100, &s), SL_SEG_DROP);
	assert_int_equal(tseg(t, &k, SACK + 1, ACK, 1, 100, &s), SL_SEG_DROP);
	assert_int_equal(tseg(t, &k, SACK, ACK | URG, 1, 100, &s), SL_SEG_DROP);
	/* timestamps agreed: none, or an old one (PAWS) */
	assert_int_equal(tseg(t, &k, SACK, ACK, 0, 0, &s), SL_SEG_DROP);
	assert_int_equal(tseg(t, &k, SACK, ACK, 1, 99, &s), SL_SEG_DROP);
	assert_int_equal(s.n, 0);
	assert_int_equal(tseg(t, &k, SACK, ACK, 1, 101, &s), SL_SEG_FORWARD);
	assert_int_equal(s.n, 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_NO_ACK], 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_ACK_UNSENT], 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_URGENT], 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_NO_TS], 1);
	assert_int_equal(sl_flow_stats(t)->norm[SL_NR_PAWS], 1);
	sl_flow_table_free(t);
}

/*
 * A lenient server serves an HTTP/0.9 line at its LF: the line is
 * decided there (refused), however the client cuts it, never forwarded
 * whole while sluice waits for a blank line.
 */
static void
http09_decided_at_its_line_end(void **state)
{
	static const char *const heads[] = {
		"GET /v1/search\r\n",
		"GET /v1/search\n",
		"\r\nGET /x\r\n",
		"GET /v1/search HTTP/1.1\r\nHost: a\r\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\n X: y\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n"};
	size_t h;

	(void)state;
	for (h = 0; h < sizeof(heads) / sizeof(heads[0]); h++) {
		const char *p = heads[h];
		uint32_t n = (uint32_t)strlen(p), cut, i;

		for (cut = 1; cut < n; cut++) {
			struct sl_flow_table *t = table(16, 4, 1024);
			struct sl_flow_key k = key(1);
			struct seen s = {.stop_at = 1};
			enum sl_seg_verdict v;

			open_flow(t, &k, &s);
			v = seg(t, &k, 1000, ACK, p, cut, &s);
			if (s.n == 0) {
				/* nothing a server acts on yet */
				assert_int_equal(v, SL_SEG_FORWARD);
				v = seg(t, &k, 1000 + cut, ACK, p + cut,
					n - cut, &s);
			}
			assert_int_equal(s.n, 1);
			assert_int_equal(s.kinds[0], SL_EV_PARSE_ERROR);
			assert_int_equal(v, SL_SEG_STOPPED);
			sl_flow_table_free(t);
		}
		/* a byte at a time */
		{
			struct sl_flow_table *t = table(16, 4, 1024);
			struct sl_flow_key k = key(1);
			struct seen s = {.stop_at = 1};
			enum sl_seg_verdict v = SL_SEG_FORWARD;

			open_flow(t, &k, &s);
			for (i = 0; i < n && s.n == 0; i++) {
				v = seg(t, &k, 1000 + i, ACK, p + i, 1, &s);
				/* the server acknowledges each */
				srv(t, &k, SACK, 1001 + i, ACK, NULL, 0);
			}
			assert_int_equal(s.n, 1);
			assert_int_equal(v, SL_SEG_STOPPED);
			sl_flow_table_free(t);
		}
	}
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
		cmocka_unit_test(body_read_as_request),
		cmocka_unit_test(body_glued_to_method),
		cmocka_unit_test(resumed_refusal_absorbs),
		cmocka_unit_test(stop_absorbs_the_rest),
		cmocka_unit_test(midstream_pickup),
		cmocka_unit_test(syn_data_ignored),
		cmocka_unit_test(resent_bytes_must_match),
		cmocka_unit_test(resent_bytes_held),
		cmocka_unit_test(resent_any_byte_changed),
		cmocka_unit_test(segments_linux_drops),
		cmocka_unit_test(http09_decided_at_its_line_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

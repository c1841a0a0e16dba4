/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "flow_util.h"

static const struct sl_http_cfg HCFG = {.api_key_header = {"X-API-Key", 9}};

enum sl_req_action
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
		} else if (ev->req != NULL) {
			snprintf(s->targets[s->n], 32, "%s",
				 sl_http_err_name(ev->req->error));
		}
	}
	if (s->n < 64)
		s->first[s->n] = ev->first;
	s->n++;
	return s->n == s->stop_at ? SL_REQ_STOP : SL_REQ_CONTINUE;
}

struct sl_flow_params
params(uint32_t cap, uint32_t slots, uint32_t maxhead)
{
	return (struct sl_flow_params){.capacity = cap,
				       .head_slots = slots,
				       .max_head_bytes = maxhead,
				       .idle_timeout = 1000,
				       .closed_timeout = 10,
				       .http = &HCFG};
}

struct sl_flow_table *
table(uint32_t cap, uint32_t slots, uint32_t maxhead)
{
	struct sl_flow_params p = params(cap, slots, maxhead);
	struct sl_flow_table *t = sl_flow_table_create(&p);

	assert_non_null(t);
	return t;
}

struct sl_flow_key
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

enum sl_seg_verdict
seg_at(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
       uint32_t ack, uint8_t fl, const char *data, size_t len, uint64_t now,
       struct seen *s)
{
	struct sl_seg sg = {.seq = seq,
			    .ack = ack,
			    .flags = fl,
			    .payload = (const uint8_t *)data,
			    .len = (uint32_t)len};

	return sl_flow_client_segment(t, k, sl_flow_hash(t, k), &sg, now, on_ev,
				      s);
}

enum sl_seg_verdict
seg(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
    uint8_t fl, const char *data, size_t len, struct seen *s)
{
	return seg_at(t, k, seq, SACK, fl, data, len, 1, s);
}

/* A server segment: seq, ack, flags and payload (NULL: len bytes that
 * are no response the tracker can frame). */
void
srv(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
    uint32_t ack, uint8_t fl, const char *data, uint32_t len)
{
	static char filler[2048];
	struct sl_seg sg = {.seq = seq, .ack = ack, .flags = fl, .len = len};

	assert_true(data != NULL || len <= sizeof(filler));
	if (data == NULL)
		memset(filler, 'x', sizeof(filler));
	sg.payload = (const uint8_t *)(data != NULL ? data : filler);

	sl_flow_server_segment(t, k, &sg, 1);
}

const char R1[] = "GET /one HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n";

const char R2[] =
	"POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";

const char R3[] =
	"POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	"3\r\nabc\r\n0\r\n\r\n";

const char R4[] = "GET /four HTTP/1.1\r\nHost: a\r\n\r\n";

/* The three-way handshake: client ISN 999, server ISN 5000. */
void
open_flow(struct sl_flow_table *t, const struct sl_flow_key *k, struct seen *s)
{
	assert_int_equal(seg(t, k, 999, SYN, NULL, 0, s), SL_SEG_FORWARD);
	srv(t, k, 5000, 1000, SYN | ACK, NULL, 0);
	assert_int_equal(seg(t, k, 1000, ACK, NULL, 0, s), SL_SEG_FORWARD);
}

const char OK0[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

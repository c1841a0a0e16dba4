/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: a byte stream cut into segments (lengths, sequence offsets
 * and flags taken from the input) through the flow table, the
 * normaliser and reassembly, with server ACKs and status lines between.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sl_flow.h"

static const struct sl_http_cfg cfg = {.api_key_header = {"X-API-Key", 9}};

/* Every third request waits (parked), then goes on from where it stopped. */
static uint32_t seen, park_end;

static enum sl_req_action
on_ev(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	(void)arg;
	(void)f;
	if (ev->kind == SL_EV_REQUEST && ev->req->target.len == 0)
		abort();
	if (ev->kind == SL_EV_REQUEST && ++seen % 3 == 0) {
		park_end = ev->seg_end;
		return SL_REQ_PARK;
	}
	return SL_REQ_CONTINUE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
server(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
       uint32_t ack, uint8_t flags, const char *txt, uint32_t len)
{
	struct sl_seg s = {.seq = seq,
			   .ack = ack,
			   .flags = flags,
			   .payload = (const uint8_t *)txt,
			   .len = len};

	sl_flow_server_segment(t, k, &s, 0);
}

static enum sl_seg_verdict
client(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
       uint8_t flags, const uint8_t *p, uint32_t len)
{
	struct sl_seg s = {.seq = seq,
			   .ack = 5001,
			   .flags = flags,
			   .payload = p,
			   .len = len};

	return sl_flow_client_segment(t, k, sl_flow_hash(t, k), &s, 0, on_ev,
				      NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_flow_table *t;
	static const char ok101[] = "HTTP/1.1 101 Switching Protocols\r\n";
	struct sl_flow_key k = {.af = 4, .cport = 1, .sport = 80};
	uint32_t seq = 1000;
	size_t off = 0;

	if (t == NULL) {
		struct sl_flow_params p = {.capacity = 64,
					   .head_slots = 4,
					   .max_head_bytes = 512,
					   .idle_timeout = 10,
					   .closed_timeout = 1,
					   .head_timeout = 5,
					   .heads_per_source = 2,
					   .http = &cfg};
		t = sl_flow_table_create(&p);
	}
	client(t, &k, seq - 1, 0x02, NULL, 0);
	server(t, &k, 5000, seq, 0x12, NULL, 0);
	while (off + 3 <= size) {
		uint32_t len = data[off] % 64;
		int32_t back = (int8_t)data[off + 1] % 16;
		uint8_t ctl = data[off + 2];
		uint8_t fl = (ctl & 0x80) ? 0x30 : (ctl & 0x40) ? 0x01 : 0x10;
		enum sl_seg_verdict v;

		off += 3;
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (ctl & 0x01) /* the server acknowledges what came so far */
			server(t, &k, 5001, seq, 0x10, NULL, 0);
		if (ctl & 0x02)
			server(t, &k, 5001, seq, 0x10, ok101,
			       sizeof(ok101) - 1);
		if (ctl & 0x04)
			sl_flow_expire(t, ctl, 8);
		v = client(t, &k, seq - (uint32_t)back, fl, data + off, len);
		if (v == SL_SEG_PARKED) {
			struct sl_flow *f = sl_flow_last(t);

			/* what followed the head, from the segment's new bytes
			 */
			if (f == NULL || park_end > len)
				abort();
			sl_flow_resume(t, f, data + off, park_end, len, on_ev,
				       NULL);
		}
		if (v == SL_SEG_PREFIX && sl_flow_cut(t) > len)
			abort();
		seq += len;
		off += len;
	}
	client(t, &k, seq, 0x04, NULL, 0);
	return 0;
}

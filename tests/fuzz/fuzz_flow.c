/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: a byte stream cut into segments (lengths and sequence
 * offsets taken from the input) through the flow table and reassembly.
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_flow_table *t;
	struct sl_flow_key k = {.af = 4, .cport = 1, .sport = 80};
	uint32_t seq = 1000;
	size_t off = 0;

	if (t == NULL) {
		struct sl_flow_params p = {.capacity = 64,
					   .head_slots = 4,
					   .max_head_bytes = 512,
					   .idle_timeout = 10,
					   .closed_timeout = 1,
					   .http = &cfg};
		t = sl_flow_table_create(&p);
	}
	sl_flow_client_segment(t, &k, seq - 1, 0x02, NULL, 0, 0, on_ev, NULL);
	while (off + 2 <= size) {
		uint32_t len = data[off] % 64;
		int32_t back = (int8_t)data[off + 1] % 16;

		off += 2;
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (sl_flow_client_segment(t, &k, seq - (uint32_t)back, 0x10,
					   data + off, len, 0, on_ev,
					   NULL) == SL_SEG_PARKED) {
			struct sl_flow *f = sl_flow_last(t);

			/* what followed the head, from the segment's new bytes
			 */
			if (f == NULL || park_end > len)
				abort();
			sl_flow_resume(t, f, data + off + park_end,
				       len - park_end, on_ev, NULL);
		}
		seq += len;
		off += len;
	}
	sl_flow_client_segment(t, &k, seq, 0x04, NULL, 0, 0, on_ev, NULL);
	return 0;
}

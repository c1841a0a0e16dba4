/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench --stream: what the stream normaliser adds to
 * the flow table's work on clean traffic: keep-alive connections, each
 * request head in one segment, the server's ACK after it (which commits
 * the head's decided range). The same segments through a table with the
 * normaliser and one without (no_normalise, a benchmark-only switch);
 * both parse every head. Cycles per request, medians over rounds, from
 * one run: the ratio is the figure. A third pass prices a resent copy
 * of each head (the digest compare a retransmission costs), a fourth a
 * response in each server segment (its framing: lib/http/sl_resp.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "sl_flow.h"

#include "stream.h"

#define FLOWS 4096
#define REQS  8 /* requests per connection per round */

static const struct sl_http_cfg hcfg = {.api_key_header = {"X-API-Key", 9}};

static enum sl_req_action
on_ev(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	(void)f;
	*(uint64_t *)arg += ev->head_len;
	return SL_REQ_CONTINUE;
}

static struct sl_flow_key
key_of(uint32_t i)
{
	struct sl_flow_key k;

	memset(&k, 0, sizeof(k));
	k.af = 4;
	memcpy(k.caddr, &i, 4);
	k.saddr[0] = 198;
	k.saddr[1] = 19;
	k.cport = (uint16_t)(1024 + i);
	k.sport = 80;
	return k;
}

static void
open_all(struct sl_flow_table *t, uint64_t *sink)
{
	uint32_t i;

	for (i = 0; i < FLOWS; i++) {
		struct sl_flow_key k = key_of(i);
		uint64_t h = sl_flow_hash(t, &k);
		struct sl_seg syn = {.seq = 999, .flags = 0x02};
		struct sl_seg sa = {.seq = 4999, .ack = 1000, .flags = 0x12};
		struct sl_seg ack = {.seq = 1000, .ack = 5000, .flags = 0x10};

		sl_flow_client_segment(t, &k, h, &syn, 1, on_ev, sink);
		sl_flow_server_segment(t, &k, &sa, 1);
		sl_flow_client_segment(t, &k, h, &ack, 1, on_ev, sink);
	}
}

static const char resp[] =
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	"Content-Length: 26\r\n"
	"Date: Tue, 01 Dec 2026 10:00:00 GMT\r\n\r\n"
	"{\"id\":12345,\"items\":[1,2]}";

/* One round: REQS heads on every connection, each acknowledged (mode 1:
 * each sent twice first; mode 2: each answered with a response). */
static uint64_t
round_of(struct sl_flow_table *t, const char *head, uint32_t hl, uint32_t r,
	 int mode, uint64_t *sink)
{
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t rl = mode == 2 ? (uint32_t)sizeof(resp) - 1 : 0;
	uint32_t q, i;

	for (q = 0; q < REQS; q++)
		for (i = 0; i < FLOWS; i++) {
			struct sl_flow_key k = key_of(i);
			uint64_t h = sl_flow_hash(t, &k);
			uint32_t n = r * REQS + q;
			uint32_t seq = 1000 + n * hl;
			struct sl_seg c = {.seq = seq,
					   .ack = 5000 + n * rl,
					   .flags = 0x18,
					   .payload = (const uint8_t *)head,
					   .len = hl};
			struct sl_seg a = {.seq = 5000 + n * rl,
					   .ack = seq + hl,
					   .flags = 0x10,
					   .payload = (const uint8_t *)resp,
					   .len = rl};

			sl_flow_client_segment(t, &k, h, &c, 1, on_ev, sink);
			if (mode == 1) /* the same copy again, before the ACK */
				sl_flow_client_segment(t, &k, h, &c, 1, on_ev,
						       sink);
			sl_flow_server_segment(t, &k, &a, 1);
		}
	return rte_rdtsc_precise() - t0;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const char head[] =
	"GET /v1/orders/12345?expand=items HTTP/1.1\r\n"
	"Host: api.example.com\r\nUser-Agent: wrk/4.2\r\n"
	"Accept: application/json\r\nX-API-Key: k-000123\r\n\r\n";

static struct sl_flow_table *
table(int normalise, uint64_t *sink)
{
	struct sl_flow_params p = {.capacity = FLOWS * 2,
				   .head_slots = 64,
				   .max_head_bytes = 8192,
				   .idle_timeout = UINT64_MAX / 2,
				   .closed_timeout = 1,
				   .http = &hcfg,
				   .hash_seed = 7,
				   .no_normalise = (uint8_t)!normalise};
	struct sl_flow_table *t = sl_flow_table_create(&p);

	if (t == NULL) {
		fprintf(stderr, "stream: out of memory\n");
		exit(1);
	}
	sl_flow_table_prefault(t);
	open_all(t, sink);
	return t;
}

/*
 * Medians of cycles per request, without (m[0]) and with (m[1]) the
 * normaliser: the two tables take turns round by round, so a noisy
 * spell of the machine weighs on both alike.
 */
static void
run(int mode, uint32_t rounds, uint64_t *sink, double m[2])
{
	struct sl_flow_table *t[2] = {table(0, sink), table(1, sink)};
	uint64_t *c[2] = {calloc(rounds, sizeof(uint64_t)),
			  calloc(rounds, sizeof(uint64_t))};
	uint32_t r, k;

	for (k = 0; k < 2; k++) /* warm */
		round_of(t[k], head, sizeof(head) - 1, 0, mode, sink);
	for (r = 0; r < rounds; r++)
		for (k = 0; k < 2; k++)
			c[k][r] = round_of(t[k], head, sizeof(head) - 1, r + 1,
					   mode, sink);
	if (sl_flow_stats(t[1])->norm[SL_NR_REPLAY_DIFF] +
		    sl_flow_stats(t[1])->norm[SL_NR_REPLAY_FULL] !=
	    0) {
		fprintf(stderr, "stream: a clean stream was refused\n");
		exit(1);
	}
	if (mode == 2 && sl_flow_stats(t[1])->responses !=
				 (uint64_t)(rounds + 1) * FLOWS * REQS) {
		fprintf(stderr, "stream: responses not all framed\n");
		exit(1);
	}
	for (k = 0; k < 2; k++) {
		qsort(c[k], rounds, sizeof(uint64_t), cmp);
		m[k] = (double)c[k][rounds / 2] / ((double)FLOWS * REQS);
		sl_flow_table_free(t[k]);
		free(c[k]);
	}
}

int
sl_bench_stream(uint32_t rounds, int json)
{
	uint64_t sink = 0;
	double a[2], b[2], d[2], off, on, roff, ron;

	run(0, rounds, &sink, a);
	run(1, rounds, &sink, b);
	run(2, rounds, &sink, d);
	off = a[0];
	on = a[1];
	roff = b[0];
	ron = b[1];

	if (json)
		printf("{\"plain_cycles\": %.1f, \"normalised_cycles\": %.1f, "
		       "\"normalised_over_plain\": %.3f, "
		       "\"resent_plain_cycles\": %.1f, "
		       "\"resent_normalised_cycles\": %.1f, "
		       "\"resent_normalised_over_plain\": %.3f, "
		       "\"responses_normalised_cycles\": %.1f, "
		       "\"responses_over_ack_only\": %.3f}\n",
		       off, on, on / off, roff, ron, ron / roff, d[1],
		       d[1] / on);
	else
		printf("stream normaliser, cycles per request (head, server "
		       "ACK; %u connections x %u requests; median of %u "
		       "rounds):\n"
		       "  without %.1f, with %.1f (with / without %.3f)\n"
		       "  each head sent twice: without %.1f, with %.1f "
		       "(%.3f)\n"
		       "  each answered by a %zu-byte response, framed: with "
		       "%.1f (%.3f x the ACK alone)\n  (checksum %llu)\n",
		       FLOWS, REQS, rounds, off, on, on / off, roff, ron,
		       ron / roff, sizeof(resp) - 1, d[1], d[1] / on,
		       (unsigned long long)(sink & 0xff));
	return 0;
}

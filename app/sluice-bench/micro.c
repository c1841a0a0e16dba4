/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench --micro: the functions BENCHMARKS.md prices on their own,
 * each timed in a loop with its data in L1 (best of several rounds, so a
 * noisy machine's slow spells drop out): the head parser over
 * corpus-shaped heads, the 429 template's fill, a refusal's 429 and RST
 * frames, the checksum over a frame's payload, the flow hash, and what a
 * decision does after the parse (identity, the target's normal form, the
 * rule match, the limit). No EAL: lib/ only. A figure here is the function's
 * floor; the passes of the main benchmark are what a request costs with the
 * memory it really waits for.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "sl_flow.h"
#include "sl_http.h"
#include "sl_ident.h"
#include "sl_limit.h"
#include "sl_net.h"
#include "sl_rules.h"

#include "bench.h"
#include "micro.h"
#include "rnd.h"

#define HEADS 64

static const struct sl_http_cfg hcfg = {
	.api_key_header = {"X-API-Key", 9},
	.user_header = {"X-User-Id", 9},
};

/* ~560 bytes, the corpus's shape: a target, a browser's headers, a key. */
static int
corpus_head(char *h, size_t size, uint64_t *s)
{
	return snprintf(
		h, size,
		"GET /v1/orders/%lu?expand=items&page=%lu HTTP/1.1\r\n"
		"Host: api.example.com\r\n"
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) "
		"AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 "
		"Safari/537.36\r\n"
		"Accept: application/json, text/plain, */*\r\n"
		"Accept-Language: en-US,en;q=0.9\r\n"
		"Accept-Encoding: gzip, deflate, br\r\n"
		"X-API-Key: k-%06lu\r\n"
		"X-Request-Id: %016lx\r\n"
		"Cookie: session=%016lx%016lx; theme=dark; consent=1\r\n"
		"Connection: keep-alive\r\n\r\n",
		bench_xorshift(s) % 100000, bench_xorshift(s) % 50,
		bench_xorshift(s) % 1000000, bench_xorshift(s),
		bench_xorshift(s), bench_xorshift(s));
}

/* Best of rounds: each round times loops calls of fn over the inputs. */
#define BEST(rounds, loops, per, body)                                         \
	({                                                                     \
		uint64_t best_ = UINT64_MAX;                                   \
		for (uint32_t r_ = 0; r_ < (rounds); r_++) {                   \
			uint64_t t0_ = rte_rdtsc_precise();                    \
			for (uint32_t l_ = 0; l_ < (loops); l_++) {            \
				body;                                          \
			}                                                      \
			uint64_t d_ = rte_rdtsc_precise() - t0_;               \
			if (d_ < best_)                                        \
				best_ = d_;                                    \
		}                                                              \
		(double)best_ / ((double)(loops) * (per));                     \
	})

static double
micro_parse(double *bytes)
{
	static char heads[HEADS][768];
	static int len[HEADS];
	struct sl_http_req req;
	uint64_t s = 0x9e3779b97f4a7c15ULL, sum = 0;
	volatile int sink = 0;
	int i;

	for (i = 0; i < HEADS; i++) {
		len[i] = corpus_head(heads[i], sizeof(heads[i]), &s);
		sum += (uint64_t)len[i];
		if (sl_http_parse_request(heads[i], (size_t)len[i], &hcfg,
					  &req) != len[i]) {
			fprintf(stderr, "micro: head %d does not parse\n", i);
			exit(1);
		}
	}
	*bytes = (double)sum / HEADS;
	return BEST(100, 16, HEADS, {
		for (int h_ = 0; h_ < HEADS; h_++)
			sink += sl_http_parse_request(
				heads[h_], (size_t)len[h_], &hcfg, &req);
	});
}

static void
tpl_429(struct sl_reply_tpl *t)
{
	struct sl_reply_info ri = {.status = 429,
				   .headers = SL_RH_DRAFT | SL_RH_LEGACY,
				   .expose_rule = 1,
				   .rule = "key-free",
				   .rule_len = 8,
				   .bake = 1,
				   .limit = 100,
				   .window_s = 60};

	if (sl_reply_tpl_build(t, &ri) != 0) {
		fprintf(stderr, "micro: no 429 template\n");
		exit(1);
	}
}

static const struct sl_reply_nums nums429 = {.retry_after_s = 17,
					     .limit = 100,
					     .window_s = 60,
					     .remaining = 0,
					     .reset_s = 17};

static double
micro_fill(uint32_t *bytes)
{
	struct sl_reply_nums v = nums429;
	static struct sl_reply_tpl t;
	static uint8_t out[2048];
	uint32_t sum;
	volatile uint32_t sink = 0;

	tpl_429(&t);
	*bytes = sl_reply_tpl_fill(&t, &v, out, sizeof(out), &sum);
	return BEST(50, 100000, 1, {
		v.retry_after_s = 17 + (l_ & 7);
		sink += sl_reply_tpl_fill(&t, &v, out, sizeof(out), &sum);
	});
}

/*
 * A refusal's frames as the worker builds them, in L1: the 429 written
 * over the request in its own buffer (the template's fill, then the
 * segment around it, its checksum from the fill's sum), and the RST
 * to the backend in another. What no refusal can do without.
 */
static void
micro_reply(double *reply, double *rst)
{
	static char head[600];
	static uint8_t f[2048], r[128];
	static struct sl_reply_tpl t;
	struct sl_reply_nums v = nums429;
	uint64_t s = 7;
	int hl = corpus_head(head, sizeof(head), &s);
	uint32_t poff;
	struct sl_pkt p;
	volatile uint32_t sink = 0;

	tpl_429(&t);
	sl_bench_frame_bytes(f, 1, head, hl);
	if (sl_bench_sum_frame(f, (uint32_t)(54 + hl), &p) != SL_PKT_TCP) {
		fprintf(stderr, "micro: the request frame does not parse\n");
		exit(1);
	}
	poff = sl_reply_payload_off(&p);
	*rst = BEST(50, 100000, 1, {
		sink += sl_reply_segment(r, sizeof(r), f, &p, 0, l_, 1, 0x14,
					 NULL, 0);
	});
	*reply = BEST(50, 100000, 1, {
		uint32_t sum;
		uint32_t n;

		v.retry_after_s = 17 + (l_ & 7);
		n = sl_reply_tpl_fill(&t, &v, f + poff, sizeof(f) - poff, &sum);
		sink += sl_reply_segment_sum(f, sizeof(f), f, &p, 1, l_, 1,
					     0x19, f + poff, n, sum);
	});
}

static double
micro_cksum(void)
{
	static uint8_t buf[550];
	volatile uint32_t sink = 0;
	unsigned int i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	/* the barrier says buf may have changed: inlined whole-program,
	 * the sum of a buffer nothing writes was otherwise hoisted out of
	 * the loop (2.6 cycles "a sum") */
	return BEST(10, 100000, 1, {
		__asm__ volatile("" : : : "memory");
		sink += sl_cksum_partial(buf, sizeof(buf), l_);
	});
}

/* What a decision does after the parse, each stage alone, in L1. */
struct stages {
	double ident, norm, match, limit;
};

/* The bench's rule: a token bucket per API key, as the passes run it. */
static struct sl_ruleset *
bench_rules(void)
{
	static struct sl_config c;
	static struct sl_rule r;
	struct sl_ruleset *rs;

	sl_config_defaults(&c);
	sl_bench_rule(&r, 1000000000, 1000);
	c.rules = &r;
	c.n_rules = 1;
	rs = sl_ruleset_build(&c);
	if (rs == NULL) {
		fprintf(stderr, "micro: no rule set\n");
		exit(1);
	}
	return rs;
}

/*
 * Over the corpus-shaped heads, parsed once: the identity (the key, the
 * client's address), the target's normal form, the rule match on it,
 * the limit checked and charged on a token bucket per head.
 */
static void
micro_stages(struct stages *out)
{
	static char heads[HEADS][768];
	static struct sl_http_req req[HEADS];
	static struct sl_http_norm nt[HEADS];
	static char nbuf[HEADS][1024];
	static struct sl_limit_state st[HEADS];
	static const uint8_t peer[16] = {198, 18, 0, 1};
	const struct sl_ident_cfg icfg = {.client_ip = SL_CIP_PEER};
	const struct sl_norm_cfg ncfg = {.merge_slashes = 1};
	struct sl_ruleset *rs = bench_rules();
	struct sl_limit_params lp;
	struct sl_identity id;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	volatile uint64_t sink = 0;
	int h;

	for (h = 0; h < HEADS; h++) {
		int n = corpus_head(heads[h], sizeof(heads[h]), &s);

		if (sl_http_parse_request(heads[h], (size_t)n, &hcfg,
					  &req[h]) != n ||
		    sl_http_normalize(&ncfg, &req[h], nbuf[h], sizeof(nbuf[h]),
				      &nt[h]) != 0) {
			fprintf(stderr, "micro: head %d does not parse\n", h);
			exit(1);
		}
	}
	sl_limit_params_init(&lp, SL_LIM_TOKEN_BUCKET, 1000000000ULL,
			     1000000000ULL, 1000000000ULL);
	out->ident = BEST(50, 64, HEADS, {
		for (int h_ = 0; h_ < HEADS; h_++) {
			sl_ident_extract(&icfg, &req[h_], SL_AF_INET, peer,
					 &id);
			sink += id.len;
		}
	});
	out->norm = BEST(50, 64, HEADS, {
		for (int h_ = 0; h_ < HEADS; h_++)
			sink += (uint64_t)sl_http_normalize(
				&ncfg, &req[h_], nbuf[h_], sizeof(nbuf[h_]),
				&nt[h_]);
	});
	out->match = BEST(50, 64, HEADS, {
		for (int h_ = 0; h_ < HEADS; h_++) {
			struct sl_match_req m;
			uint16_t idx[SL_MAX_MATCH];

			sl_match_req_init(&m, rs, &req[h_], &nt[h_]);
			sink += sl_ruleset_match(rs, &m, idx, SL_MAX_MATCH);
		}
	});
	out->limit = BEST(50, 64, HEADS, {
		for (int h_ = 0; h_ < HEADS; h_++) {
			struct sl_limit_result r;
			uint64_t now = (uint64_t)l_ * 1000 + (uint64_t)h_;

			sl_limit_check(&lp, &st[h_], 1, now, &r);
			sl_limit_commit(&lp, &st[h_], 1, now);
			sink += r.remaining;
		}
	});
	sl_ruleset_free(rs);
}

/* Throughput over 1024 keys: independent hashes, as a burst's stage. */
static double
micro_flow_hash(void)
{
	static struct sl_flow_key k[1024];
	struct sl_flow_params fp = {.capacity = 1024,
				    .head_slots = 16,
				    .max_head_bytes = 4096,
				    .idle_timeout = 1,
				    .closed_timeout = 1,
				    .http = &hcfg,
				    .hash_seed = 0x1234567890abcdefULL};
	struct sl_flow_table *t = sl_flow_table_create(&fp);
	uint64_t s = 42;
	volatile uint64_t sink = 0;
	double c;
	int i;

	if (t == NULL) {
		fprintf(stderr, "micro: no flow table\n");
		exit(1);
	}
	for (i = 0; i < 1024; i++) {
		uint32_t a = (uint32_t)bench_xorshift(&s);

		memset(&k[i], 0, sizeof(k[i]));
		memcpy(k[i].caddr, &a, 4);
		memcpy(k[i].saddr, "\xc6\x12\x00\x02", 4);
		k[i].cport = (uint16_t)bench_xorshift(&s);
		k[i].sport = 80;
		k[i].af = SL_AF_INET;
	}
	c = BEST(20, 100, 1024, {
		for (int h_ = 0; h_ < 1024; h_++)
			sink += sl_flow_hash(t, &k[h_]);
	});
	sl_flow_table_free(t);
	return c;
}

int
sl_bench_micro(int json)
{
	double head_bytes, parse = micro_parse(&head_bytes);
	uint32_t reply_bytes;
	double fill = micro_fill(&reply_bytes);
	double ck = micro_cksum();
	double fh = micro_flow_hash();
	double reply, rst;
	struct stages sg;

	micro_reply(&reply, &rst);
	micro_stages(&sg);

	if (!json) {
		printf("head parser, %.0f-byte heads in L1: %.0f cycles a head "
		       "(%.2f a byte)\n",
		       head_bytes, parse, parse / head_bytes);
		printf("429 template fill, %u bytes: %.0f cycles\n",
		       reply_bytes, fill);
		printf("429 frame, filled and framed in place: %.0f cycles; "
		       "RST frame: %.0f cycles\n",
		       reply, rst);
		printf("checksum over 550 bytes: %.0f cycles\n", ck);
		printf("flow hash, 1024 keys: %.1f cycles a key\n", fh);
		printf("after the parse, a head's: identity %.0f, target's "
		       "normal form %.0f, rule match %.0f, limit checked and "
		       "charged %.0f cycles\n",
		       sg.ident, sg.norm, sg.match, sg.limit);
	}
	printf("{\"micro_parse_cycles\": %.1f, \"micro_head_bytes\": %.0f, "
	       "\"micro_fill_cycles\": %.1f, \"micro_reply_bytes\": %u, "
	       "\"micro_reply429_cycles\": %.1f, "
	       "\"micro_rst_cycles\": %.1f, "
	       "\"micro_cksum550_cycles\": %.1f, "
	       "\"micro_flow_hash_cycles\": %.2f, "
	       "\"micro_ident_cycles\": %.1f, \"micro_norm_cycles\": %.1f, "
	       "\"micro_match_cycles\": %.1f, \"micro_limit_cycles\": %.1f}\n",
	       parse, head_bytes, fill, reply_bytes, reply, rst, ck, fh,
	       sg.ident, sg.norm, sg.match, sg.limit);
	return 0;
}

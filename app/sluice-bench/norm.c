/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench --norm: what the target normaliser adds to a head's parse,
 * on clean targets (the no-copy check only) and on dirty ones (escapes,
 * dot segments, doubled slashes, absolute form, a host to fold). Cycles
 * per head, medians over rounds, all from one run: the ratios are the
 * figures, not the cycles.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "sl_http.h"

#include "norm.h"

#define HEADS 64
#define LOOPS 2000

static const char *const clean[] = {
	"/v1/orders/12345?expand=items",
	"/v1/users/me",
	"/v1/search?q=sluice&limit=20",
	"/api/items/7/reviews",
};
static const char *const dirty[] = {
	"/v1/./orders//%31%32%33%34%35?expand=items",
	"http://API.example.com:80/v1/users/me",
	"/zz/%2e%2e/v1/%73earch?q=sluice&limit=20",
	"//api/items/x/../7/reviews/",
};

static const struct sl_http_cfg hcfg = {.api_key_header = {"X-API-Key", 9}};
static const struct sl_norm_cfg ncfg = {.merge_slashes = 1};

static char *
make_head(const char *target)
{
	char *h = malloc(512);

	snprintf(h, 512,
		 "GET %s HTTP/1.1\r\nHost: api.example.com\r\n"
		 "User-Agent: wrk/4.2\r\nAccept: application/json\r\n"
		 "X-API-Key: k-000123\r\n\r\n",
		 target);
	return h;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median cycles per head over rounds; with_norm: parse + normalise. */
static double
time_heads(char **heads, int with_norm, uint32_t rounds, uint64_t *sink)
{
	uint64_t *t = calloc(rounds, sizeof(*t));
	char scratch[1024];
	uint32_t r, l, i;
	double med;

	for (r = 0; r < rounds; r++) {
		uint64_t t0 = rte_rdtsc_precise();

		for (l = 0; l < LOOPS; l++)
			for (i = 0; i < HEADS; i++) {
				struct sl_http_req q;
				struct sl_http_norm n;
				int len = sl_http_parse_request(
					heads[i], strlen(heads[i]), &hcfg, &q);

				*sink += (uint64_t)len;
				if (with_norm &&
				    sl_http_normalize(&ncfg, &q, scratch,
						      sizeof(scratch), &n) == 0)
					*sink += n.path.len;
			}
		t[r] = rte_rdtsc_precise() - t0;
	}
	qsort(t, rounds, sizeof(*t), cmp);
	med = (double)t[rounds / 2] / ((double)LOOPS * HEADS);
	free(t);
	return med;
}

int
sl_bench_norm(uint32_t rounds, int json)
{
	char *c[HEADS], *d[HEADS];
	uint64_t sink = 0;
	double cp, cn, dp, dn;
	uint32_t i;

	for (i = 0; i < HEADS; i++) {
		c[i] = make_head(clean[i % 4]);
		d[i] = make_head(dirty[i % 4]);
	}
	cp = time_heads(c, 0, rounds, &sink);
	cn = time_heads(c, 1, rounds, &sink);
	dp = time_heads(d, 0, rounds, &sink);
	dn = time_heads(d, 1, rounds, &sink);
	if (json)
		printf("{\"clean_parse_cycles\": %.1f, \"clean_norm_cycles\": "
		       "%.1f, \"dirty_parse_cycles\": %.1f, "
		       "\"dirty_norm_cycles\": %.1f, "
		       "\"clean_norm_over_parse\": "
		       "%.3f, \"dirty_norm_over_parse\": %.3f}\n",
		       cp, cn - cp, dp, dn - dp, cn / cp, dn / dp);
	else
		printf("normaliser, cycles per head (median of %u rounds):\n"
		       "  clean targets: parse %.1f, + normalise %.1f "
		       "(parse+normalise / parse %.3f)\n"
		       "  dirty targets: parse %.1f, + normalise %.1f "
		       "(parse+normalise / parse %.3f)\n"
		       "  (checksum %llu)\n",
		       rounds, cp, cn - cp, cn / cp, dp, dn - dp, dn / dp,
		       (unsigned long long)(sink & 0xff));
	for (i = 0; i < HEADS; i++) {
		free(c[i]);
		free(d[i]);
	}
	return 0;
}

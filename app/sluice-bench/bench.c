/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench: runs the worker's per-burst code in-process over a corpus
 * of request frames held in mbufs, and prints cycles per request for each
 * stage measured in the same run, so the ratios hold on a noisy machine:
 *
 *   forward  - the same mbufs handed to tx_burst (net_null) untouched
 *   flow     - classify + checksum + flow table, no HTTP
 *   parse    - classify + checksum + flow + head parse + identity
 *   scan     - a plain scan of the same heads for the blank line (floor)
 *
 * usage: sluice-bench [EAL args] -- [--packets N] [--flows N] [--keys N]
 *                      [--rounds N] [--json]
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "sluice.h"

struct bopts {
	uint32_t packets;
	uint32_t flows;
	uint32_t keys;
	uint32_t rounds;
	double zipf;
	int json;
};

struct corpus {
	struct rte_mbuf **m;
	uint32_t n;
	uint32_t *flow_of;     /* flow index of each packet */
	uint32_t *seq0;	       /* sequence number in round 0 */
	uint32_t *flow_bytes;  /* payload bytes per flow per round */
	uint64_t head_bytes;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Zipf(s) over n ranks by inverse CDF: popular keys dominate, as in life. */
static double *
zipf_cdf(uint32_t n, double s)
{
	double *cdf = malloc(sizeof(double) * n), sum = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		sum += 1.0 / pow(i + 1, s);
	for (i = 0; i < n; i++)
		cdf[i] = (i ? cdf[i - 1] : 0) + 1.0 / pow(i + 1, s) / sum;
	return cdf;
}

static uint32_t
zipf_pick(const double *cdf, uint32_t n)
{
	double u = (double)(rnd() >> 11) / (double)(1ULL << 53);
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A realistic API request head of 300 to 700 bytes. */
static int
make_head(char *b, size_t size, uint32_t key)
{
	static const char *const paths[] = {"/v1/orders", "/v1/users/me",
					    "/v1/search", "/v2/items",
					    "/v1/payments/intent"};
	uint32_t target = 300 + (uint32_t)(rnd() % 401);
	int n = snprintf(b, size,
			 "GET %s/%u?limit=50&cursor=%016llx HTTP/1.1\r\n"
			 "Host: api.example.com\r\n"
			 "User-Agent: Mozilla/5.0 (X11; Linux x86_64) sdk/4.2.1\r\n"
			 "Accept: application/json\r\n"
			 "Accept-Encoding: gzip, deflate, br\r\n"
			 "X-API-Key: key-%08u\r\n"
			 "X-Request-Id: %016llx\r\n",
			 paths[rnd() % 5], (unsigned)(rnd() % 100000),
			 (unsigned long long)rnd(), key,
			 (unsigned long long)rnd());
	int pad = (int)target - n - 2 - 10;

	if (pad > 0)
		n += snprintf(b + n, size - (size_t)n, "Cookie: s=%.*s\r\n",
			      pad, "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef"
				   "0123456789abcdef0123456789abcdef0123456789abcdef");
	n += snprintf(b + n, size - (size_t)n, "\r\n");
	return n;
}

static void
write_frame(struct rte_mbuf *m, uint32_t flow, const char *head, int hlen)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t iplen = (uint16_t)(20 + 20 + hlen);

	memset(f, 0, 54);
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
	f[14] = 0x45;
	f[16] = (uint8_t)(iplen >> 8);
	f[17] = (uint8_t)iplen;
	f[22] = 64;
	f[23] = 6;
	f[26] = 198;
	f[27] = 18;
	f[28] = (uint8_t)(flow >> 8);
	f[29] = (uint8_t)flow;
	f[30] = 198;
	f[31] = 19;
	f[33] = 1;
	f[34] = (uint8_t)((1024 + flow % 60000) >> 8);
	f[35] = (uint8_t)(1024 + flow % 60000);
	f[37] = 80;
	f[46] = 0x50;
	f[47] = 0x18;
	f[48] = 0xff;
	memcpy(f + 54, head, (size_t)hlen);
	m->data_len = m->pkt_len = (uint32_t)(54 + hlen);
}

/* Writes the round's sequence number and the checksums (not timed). */
static void
set_round(struct corpus *c, uint32_t round)
{
	uint32_t i;

	for (i = 0; i < c->n; i++) {
		uint8_t *f = rte_pktmbuf_mtod(c->m[i], uint8_t *);
		uint32_t seq = c->seq0[i] + round * c->flow_bytes[c->flow_of[i]];
		struct sl_pkt p;

		f[38] = (uint8_t)(seq >> 24);
		f[39] = (uint8_t)(seq >> 16);
		f[40] = (uint8_t)(seq >> 8);
		f[41] = (uint8_t)seq;
		sl_pkt_parse(f, c->m[i]->data_len, &p);
		sl_ipv4_cksum_set(f, &p);
		sl_pkt_parse(f, c->m[i]->data_len, &p);
		sl_tcp_cksum_set(f, &p);
		/* each pass frees every mbuf once: keep them for the next */
		rte_mbuf_refcnt_set(c->m[i], 2);
	}
}

static int
build_corpus(struct corpus *c, const struct bopts *o, struct rte_mempool *mp)
{
	double *cdf = zipf_cdf(o->keys, o->zipf);
	uint32_t *next = calloc(o->flows, sizeof(uint32_t));
	char head[1024];
	uint32_t i;

	c->n = o->packets;
	c->m = calloc(c->n, sizeof(*c->m));
	c->flow_of = calloc(c->n, sizeof(uint32_t));
	c->seq0 = calloc(c->n, sizeof(uint32_t));
	c->flow_bytes = calloc(o->flows, sizeof(uint32_t));
	if (rte_pktmbuf_alloc_bulk(mp, c->m, c->n) != 0)
		return -1;
	for (i = 0; i < c->n; i++) {
		uint32_t f = (uint32_t)(rnd() % o->flows);
		int hl = make_head(head, sizeof(head), zipf_pick(cdf, o->keys));

		write_frame(c->m[i], f, head, hl);
		c->flow_of[i] = f;
		c->seq0[i] = 1000 + next[f];
		next[f] += (uint32_t)hl;
		c->head_bytes += (uint64_t)hl;
	}
	memcpy(c->flow_bytes, next, o->flows * sizeof(uint32_t));
	free(next);
	free(cdf);
	return 0;
}

static uint64_t
pass_forward(const struct sl_app *app, struct corpus *c)
{
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i;

	for (i = 0; i < c->n; i += SL_BURST) {
		uint16_t n = (uint16_t)RTE_MIN((uint32_t)SL_BURST, c->n - i);
		uint16_t s = rte_eth_tx_burst(app->port[1], 0, &c->m[i], n);

		if (s < n)
			rte_pktmbuf_free_bulk(&c->m[i + s], n - s);
	}
	return rte_rdtsc_precise() - t0;
}

static uint64_t
pass_worker(struct sl_worker *w, struct corpus *c)
{
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i;

	for (i = 0; i < c->n; i += SL_BURST) {
		w->now = rte_rdtsc();
		sl_worker_burst(w, &c->m[i],
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, c->n - i), 0);
	}
	sl_worker_flush(w);
	return rte_rdtsc_precise() - t0;
}

/* The memory floor: touch every head byte looking for the blank line. */
static uint64_t
pass_scan(struct corpus *c, uint64_t *found)
{
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i;

	for (i = 0; i < c->n; i++) {
		const char *h = rte_pktmbuf_mtod_offset(c->m[i], const char *, 54);
		const char *end = h + c->m[i]->data_len - 54;
		const char *p = h;

		/* glibc's vectorised memchr: the fastest way to every LF */
		while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			if (p - h >= 2 && p[-1] == '\r' && p[-2] == '\n') {
				(*found)++;
				break;
			}
			p++;
		}
	}
	return rte_rdtsc_precise() - t0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
median_per(uint64_t *v, uint32_t n, uint32_t per)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / per;
}

static int
parse_bopts(int argc, char **argv, struct bopts *o)
{
	static const struct option lo[] = {
		{"packets", required_argument, NULL, 'p'},
		{"flows", required_argument, NULL, 'f'},
		{"keys", required_argument, NULL, 'k'},
		{"rounds", required_argument, NULL, 'r'},
		{"zipf", required_argument, NULL, 'z'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o->packets = (uint32_t)atoi(optarg); break;
		case 'f': o->flows = (uint32_t)atoi(optarg); break;
		case 'k': o->keys = (uint32_t)atoi(optarg); break;
		case 'r': o->rounds = (uint32_t)atoi(optarg); break;
		case 'z': o->zipf = atof(optarg); break;
		case 'j': o->json = 1; break;
		default: return -1;
		}
	}
	if (o->packets < SL_BURST || o->flows == 0 || o->keys == 0 ||
	    o->rounds < 2)
		return -1;
	return 0;
}

static void
setup_ports(struct sl_app *app)
{
	if (rte_eth_dev_count_avail() < 2) {
		/* No ports given: two null ports, whose TX frees the mbuf. */
		if (rte_vdev_init("net_null0", "copy=0") != 0 ||
		    rte_vdev_init("net_null1", "copy=0") != 0)
			rte_exit(EXIT_FAILURE, "cannot create net_null ports\n");
	}
	if (sl_ports_init(app, 1) != 0)
		rte_exit(EXIT_FAILURE, "port setup failed\n");
}

int
main(int argc, char **argv)
{
	struct bopts o = {.packets = 32768, .flows = 8192, .keys = 100000,
			  .rounds = 15, .zipf = 0.99};
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = calloc(1, sizeof(*app));
	struct sl_worker *wf, *wp;
	struct corpus c = {0};
	uint64_t *tf, *tl, *tp, *ts, found = 0;
	double fwd, flow, parse, scan;
	uint32_t r;
	int ret = rte_eal_init(argc, argv);

	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	argv[ret] = argv[0];
	if (parse_bopts(argc - ret, argv + ret, &o) != 0)
		rte_exit(EXIT_FAILURE,
			 "usage: sluice-bench [EAL] -- [--packets N] [--flows N] "
			 "[--keys N] [--rounds N>=2] [--zipf S] [--json]\n");
	sl_logtype = rte_log_register_type_and_pick_level("sl.app", RTE_LOG_WARNING);
	sl_config_defaults(cfg);
	cfg->dataplane.flows_per_worker = o.flows * 2;
	cfg->dataplane.head_buffers_per_worker = 1024;
	cfg->dataplane.flow_idle_ms = 3600000;
	sl_app_setup(app, cfg);
	app->pool = rte_pktmbuf_pool_create("bench", o.packets + 4096, 256, 0,
					    RTE_MBUF_DEFAULT_BUF_SIZE,
					    rte_socket_id());
	if (app->pool == NULL)
		rte_exit(EXIT_FAILURE, "mbuf pool: %s (try -m 1024)\n",
			 rte_strerror(rte_errno));
	setup_ports(app);
	wf = rte_zmalloc(NULL, sizeof(*wf), RTE_CACHE_LINE_SIZE);
	wp = rte_zmalloc(NULL, sizeof(*wp), RTE_CACHE_LINE_SIZE);
	if (wf == NULL || wp == NULL || sl_worker_init(wf, app, 0, 0, 1) != 0 ||
	    sl_worker_init(wp, app, 0, 0, 0) != 0 ||
	    build_corpus(&c, &o, app->pool) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	tf = calloc(o.rounds, 8);
	tl = calloc(o.rounds, 8);
	tp = calloc(o.rounds, 8);
	ts = calloc(o.rounds, 8);
	/* Round 0 creates the flows; the rest are keep-alive requests. */
	for (r = 0; r <= o.rounds; r++) {
		uint64_t a, b, d, e;

		set_round(&c, r);
		a = pass_forward(app, &c);
		set_round(&c, r);
		b = pass_worker(wf, &c);
		set_round(&c, r);
		d = pass_worker(wp, &c);
		e = pass_scan(&c, &found);
		for (uint32_t i = 0; i < c.n; i++)
			rte_pktmbuf_free(c.m[i]); /* back to one reference */
		if (r == 0)
			continue;
		tf[r - 1] = a;
		tl[r - 1] = b;
		tp[r - 1] = d;
		ts[r - 1] = e;
	}
	if (wp->ctr.allowed != (uint64_t)c.n * (o.rounds + 1) ||
	    found != (uint64_t)c.n * (o.rounds + 1))
		rte_exit(EXIT_FAILURE,
			 "corpus not fully parsed: %lu of %lu requests\n",
			 wp->ctr.allowed, (uint64_t)c.n * (o.rounds + 1));
	fwd = median_per(tf, o.rounds, c.n);
	flow = median_per(tl, o.rounds, c.n);
	parse = median_per(tp, o.rounds, c.n);
	scan = median_per(ts, o.rounds, c.n);
	if (!o.json) {
		printf("sluice-bench: %u requests/round, %u flows, %u keys (zipf %.2f), "
		       "head %.0f bytes avg, %u rounds, TSC %.2f GHz\n",
		       c.n, o.flows, o.keys, o.zipf,
		       (double)c.head_bytes / c.n, o.rounds,
		       (double)app->tsc_hz / 1e9);
		printf("%-38s %12s %12s %10s\n", "stage", "cycles/req",
		       "Mreq/s", "x forward");
		printf("%-38s %12.1f %12.2f %10.2f\n", "forward (tx_burst, untouched)",
		       fwd, app->tsc_hz / fwd / 1e6, 1.0);
		printf("%-38s %12.1f %12.2f %10.2f\n", "classify + checksum + flow",
		       flow, app->tsc_hz / flow / 1e6, flow / fwd);
		printf("%-38s %12.1f %12.2f %10.2f\n",
		       "classify + flow + parse + identity", parse,
		       app->tsc_hz / parse / 1e6, parse / fwd);
		printf("%-38s %12.1f %12.2f %10.2f\n", "scan floor (blank line)",
		       scan, app->tsc_hz / scan / 1e6, scan / fwd);
	}
	printf("{\"packets\": %u, \"flows\": %u, \"keys\": %u, \"zipf\": %.2f, "
	       "\"head_bytes_avg\": %.1f, \"rounds\": %u, \"tsc_hz\": %lu, "
	       "\"cycles_per_request_forward\": %.1f, "
	       "\"cycles_per_request_flow\": %.1f, "
	       "\"cycles_per_request_parse\": %.1f, "
	       "\"scan_floor_cycles\": %.1f, "
	       "\"decisions_per_sec_per_core\": %.0f}\n",
	       c.n, o.flows, o.keys, o.zipf, (double)c.head_bytes / c.n,
	       o.rounds, app->tsc_hz, fwd, flow, parse, scan,
	       app->tsc_hz / parse);
	rte_eal_cleanup();
	return 0;
}

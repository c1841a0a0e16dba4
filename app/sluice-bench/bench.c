/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench: runs the worker's per-burst code in-process over a corpus
 * of request frames held in mbufs, and prints cycles per request for each
 * stage measured in the same run, so the ratios hold on a noisy machine:
 *
 *   forward  - the same mbufs handed to tx_burst (net_null) untouched
 *   flow     - classify + checksum + flow table, no HTTP
 *   parse    - the whole decision on keep-alive flows, every request allowed
 *   allow    - the whole decision on new (mid-stream) flows, all allowed
 *   reject   - the same, every request answered 429 (+ RST to the server)
 *   scan     - a plain scan of the same heads for the blank line (floor)
 *
 * usage: sluice-bench [EAL args] -- [--packets N] [--flows N] [--keys N]
 *                      [--rounds N] [--json] [--only PASS] ...
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "blocklist.h"
#include "rnd.h"
#include "norm.h"
#include "stream.h"
#include "coord.h"
#include "store.h"
#include "sluice.h"

struct bopts {
	int coord;
	uint16_t redis_port; /* --coord against a live redis-server */
	uint32_t rate;       /* --coord: requests/s offered; 0: flat out */
	uint32_t workers;
	uint32_t flood;
	uint32_t packets;
	uint32_t flows;
	uint32_t keys;
	uint32_t rounds;
	double zipf;
	int json;
	int only; /* --only: the one pass to run (for profiles); -1: all */
};

struct corpus {
	struct rte_mbuf **m;
	uint8_t **pristine; /* each frame as built: rejects overwrite them */
	uint32_t n;
	uint32_t *flow_of;    /* flow index of each packet */
	uint32_t *seq0;       /* sequence number in round 0 */
	uint32_t *flow_bytes; /* payload bytes per flow per round */
	uint64_t head_bytes;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	return bench_xorshift(&rng);
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
	int n = snprintf(
		b, size,
		"GET %s/%u?limit=50&cursor=%016llx HTTP/1.1\r\n"
		"Host: api.example.com\r\n"
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) sdk/4.2.1\r\n"
		"Accept: application/json\r\n"
		"Accept-Encoding: gzip, deflate, br\r\n"
		"X-API-Key: key-%08u\r\n"
		"X-Request-Id: %016llx\r\n",
		paths[rnd() % 5], (unsigned)(rnd() % 100000),
		(unsigned long long)rnd(), key, (unsigned long long)rnd());
	int pad = (int)target - n - 2 - 10;

	if (pad > 0)
		n += snprintf(
			b + n, size - (size_t)n, "Cookie: s=%.*s\r\n", pad,
			"0123456789abcdef0123456789abcdef0123456789abcdef"
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
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00",
	       14);
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
		uint8_t *f;
		uint32_t seq =
			c->seq0[i] + round * c->flow_bytes[c->flow_of[i]];
		struct sl_pkt p;

		rte_pktmbuf_reset(c->m[i]);
		f = rte_pktmbuf_mtod(c->m[i], uint8_t *);
		memcpy(f, c->pristine[i] + 2,
		       (size_t)(c->pristine[i][0] << 8 | c->pristine[i][1]));
		c->m[i]->data_len = c->m[i]->pkt_len =
			(uint32_t)(c->pristine[i][0] << 8 | c->pristine[i][1]);
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
	c->pristine = calloc(c->n, sizeof(*c->pristine));
	c->flow_of = calloc(c->n, sizeof(uint32_t));
	c->seq0 = calloc(c->n, sizeof(uint32_t));
	c->flow_bytes = calloc(o->flows, sizeof(uint32_t));
	if (rte_pktmbuf_alloc_bulk(mp, c->m, c->n) != 0)
		return -1;
	for (i = 0; i < c->n; i++) {
		uint32_t f = i % o->flows; /* with flows == packets: one each */
		int hl = make_head(head, sizeof(head), zipf_pick(cdf, o->keys));

		write_frame(c->m[i], f, head, hl);
		c->pristine[i] = malloc(2 + c->m[i]->data_len);
		c->pristine[i][0] = (uint8_t)(c->m[i]->data_len >> 8);
		c->pristine[i][1] = (uint8_t)c->m[i]->data_len;
		memcpy(c->pristine[i] + 2, rte_pktmbuf_mtod(c->m[i], uint8_t *),
		       c->m[i]->data_len);
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

static void
wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static void
swap_bytes(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t t[6];

	memcpy(t, a, n);
	memcpy(a, b, n);
	memcpy(b, t, n);
}

/*
 * A corpus frame's connection, as the handshake or the server would
 * speak for it: the client's SYN, or the server's SYN-ACK or ACK.
 */
static void
ctl_frame(struct rte_mbuf *out, const uint8_t *data, uint8_t flags,
	  int from_server, uint32_t seq, uint32_t ack)
{
	uint8_t *f = rte_pktmbuf_mtod(out, uint8_t *);
	struct sl_pkt p;

	memcpy(f, data, 54);
	f[16] = 0;
	f[17] = 40;
	if (from_server) {
		swap_bytes(f, f + 6, 6);
		swap_bytes(f + 26, f + 30, 4);
		swap_bytes(f + 34, f + 36, 2);
	}
	wr32(f + 38, seq);
	wr32(f + 42, ack);
	f[47] = flags;
	out->data_len = out->pkt_len = 54;
	sl_pkt_parse(f, 54, &p);
	sl_ipv4_cksum_set(f, &p);
	sl_pkt_parse(f, 54, &p);
	sl_tcp_cksum_set(f, &p);
}

static void
ctl_burst(struct sl_worker *w, struct rte_mbuf **data, uint32_t b, int open,
	  int step)
{
	struct rte_mbuf *m[SL_BURST];
	uint32_t k;

	if (rte_pktmbuf_alloc_bulk(w->app->pool, m, b) != 0)
		rte_exit(EXIT_FAILURE, "bench: out of mbufs for handshakes\n");
	for (k = 0; k < b; k++) {
		const uint8_t *f = rte_pktmbuf_mtod(data[k], const uint8_t *);
		uint32_t seq = (uint32_t)f[38] << 24 | (uint32_t)f[39] << 16 |
			       (uint32_t)f[40] << 8 | f[41];

		if (open && step == 0)
			ctl_frame(m[k], f, 0x02, 0, seq - 1, 0);
		else if (open)
			ctl_frame(m[k], f, 0x12, 1, UINT32_MAX, seq);
		else
			ctl_frame(m[k], f, 0x10, 1, 0, seq);
	}
	w->now = rte_rdtsc();
	sl_worker_burst(w, m, (uint16_t)b, open && step == 0 ? 0 : 1);
	sl_worker_flush(w);
}

/*
 * Untimed, before a pass: what real connections carry besides requests.
 * open: each frame's connection is new, so its handshake is seen first
 * (SYN, then the server's SYN-ACK: the normaliser reads no stream before
 * one); otherwise the server acknowledges all before the frame, which
 * commits what the last round decided.
 */
static void
prime(struct sl_worker *w, struct rte_mbuf **data, uint32_t n, int open)
{
	uint32_t i;

	for (i = 0; i < n; i += SL_BURST) {
		uint32_t b = RTE_MIN((uint32_t)SL_BURST, n - i);

		ctl_burst(w, data + i, b, open, 0);
		if (open)
			ctl_burst(w, data + i, b, open, 1);
	}
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
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, c->n - i),
				0);
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
		const char *h =
			rte_pktmbuf_mtod_offset(c->m[i], const char *, 54);
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

enum {
	M_FWD,
	M_PASS,
	M_FLOW,
	M_PARSE,
	M_ALLOW,
	M_REJECT,
	M_SAMPLE,
	M_LEASED,
	M_SCAN,
	M__N
};

/* --only's names for the passes, in the order above. */
static const char *const pass_name[M__N] = {
	"forward", "passthrough", "flow",   "keepalive", "allow",
	"reject",  "sampled",     "leased", "scan",
};

static int
pass_of(const char *name)
{
	int m;

	for (m = 0; m < M__N; m++)
		if (strcmp(name, pass_name[m]) == 0)
			return m;
	return -2;
}

static int
runs(const struct bopts *o, int m)
{
	return o->only < 0 || o->only == m;
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
		{"flood", required_argument, NULL, 'F'},
		{"workers", required_argument, NULL, 'W'},
		{"coord", no_argument, NULL, 'C'},
		{"redis", required_argument, NULL, 'R'},
		{"rate", required_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"only", required_argument, NULL, 'O'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			o->packets = (uint32_t)atoi(optarg);
			break;
		case 'f':
			o->flows = (uint32_t)atoi(optarg);
			break;
		case 'k':
			o->keys = (uint32_t)atoi(optarg);
			break;
		case 'r':
			o->rounds = (uint32_t)atoi(optarg);
			break;
		case 'z':
			o->zipf = atof(optarg);
			break;
		case 'F':
			o->flood = (uint32_t)atoi(optarg);
			break;
		case 'W':
			o->workers = (uint32_t)atoi(optarg);
			break;
		case 'C':
			o->coord = 1;
			break;
		case 'T':
			o->rate = (uint32_t)atoi(optarg);
			break;
		case 'R':
			o->redis_port = (uint16_t)atoi(optarg);
			o->coord = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'O':
			o->only = pass_of(optarg);
			break;
		default:
			return -1;
		}
	}
	if (o->packets < SL_BURST || o->flows == 0 || o->keys == 0 ||
	    o->rounds < 2 || o->only < -1)
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
			rte_exit(EXIT_FAILURE,
				 "cannot create net_null ports\n");
	}
	if (sl_ports_init(app, (uint16_t)rte_lcore_count()) != 0)
		rte_exit(EXIT_FAILURE, "port setup failed\n");
}

/* One key rule: generous enough to allow all, or tight enough to refuse. */
static struct sl_policy *
bench_policy(struct sl_config *cfg, uint64_t count, uint64_t period_ms)
{
	struct sl_rule *r = calloc(1, sizeof(*r));
	struct sl_policy *p;

	strcpy(r->name, "bench-key");
	r->scope = SL_SCOPE_KEY;
	r->algo = SL_ALGO_TOKEN_BUCKET;
	r->tier = -1;
	r->limit.count = count;
	r->limit.period_ms = period_ms;
	r->burst = count;
	r->cost = 1;
	r->accuracy_ppm = 20000; /* the default 2 % */
	cfg->rules = r;
	cfg->n_rules = 1;
	p = sl_policy_build(cfg);
	cfg->rules = NULL;
	cfg->n_rules = 0;
	free(r);
	if (p == NULL)
		rte_exit(EXIT_FAILURE, "cannot build the bench policy\n");
	return p;
}

static struct sl_worker *
bench_worker(const struct sl_app *app, int track_only)
{
	struct sl_worker *w =
		rte_zmalloc(NULL, sizeof(*w), RTE_CACHE_LINE_SIZE);

	if (w == NULL || sl_worker_init(w, app, 0, 0, track_only) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	/* as a worker does before its loop: no page faults in the passes */
	sl_worker_prefault(w);
	return w;
}

/* A round's worth of records: the ring never fills, so the pass measures
 * sampling and queueing, not the drop path. */
static uint32_t
c_n_ring(const struct bopts *o)
{
	return rte_align32pow2(o->packets + 1);
}

/* A worker's own copy of the app, to change what the pass needs. */
static struct sl_app *
app_copy(const struct sl_app *app)
{
	struct sl_app *a = calloc(1, sizeof(*a));

	if (a == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	*a = *app;
	return a;
}

/* The node's own authority, as main() starts it, for one lease holder. */
static void
with_coordinator(struct sl_app *a, uint32_t capacity)
{
	a->coord = sl_coord_create(1, capacity);
	a->holders = 1;
	a->expected = 1;
	a->store_timeout_ns = 50000000ULL;
	if (a->coord == NULL)
		rte_exit(EXIT_FAILURE, "cannot create the coordinator\n");
}

/* The main lcore's turn (the coordinator answers), then the worker's. */
static void
answer_once(const struct sl_app *app, struct sl_worker *w)
{
	sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(app, w->now);
	sl_park_poll(w);
}

/* Whatever still waits for a first grant is answered, and sent. */
static void
answer_all(const struct sl_app *app, struct sl_worker *w)
{
	while (w->n_park_free != SL_PARK_MAX)
		answer_once(app, w);
	sl_worker_flush(w);
}

/* The keep-alive worker with every decision going to the stream's ring. */
static struct sl_worker *
sampling_worker(const struct sl_app *app, struct sl_config *cfg, uint32_t ring)
{
	struct sl_app *a = app_copy(app);
	struct sl_worker *w;

	a->policy = bench_policy(cfg, 1000000000, 1000);
	a->policy->dec_ppm[0] = a->policy->dec_ppm[1] = 1000000;
	w = bench_worker(a, 0);
	w->dec_ring = rte_ring_create_elem(
		"bench_dec", sizeof(struct sl_dec_rec), ring, SOCKET_ID_ANY,
		RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->dec_ring == NULL)
		rte_exit(EXIT_FAILURE, "no memory for the decision ring\n");
	return w;
}

/* The same frames to a port nobody inspects: classified and forwarded. */
static struct sl_worker *
passthrough_worker(const struct sl_app *app)
{
	struct sl_app *a = app_copy(app);

	memset(a->service, 0, sizeof(a->service));
	return bench_worker(a, 0);
}

/*
 * The keep-alive worker as the appliance runs it: every limit leased from
 * the node's own authority (the coordinator, which main() always starts),
 * answered between bursts as the main lcore would.
 */
static struct sl_worker *
leased_worker(const struct sl_app *app, struct sl_config *cfg)
{
	struct sl_app *a = app_copy(app);

	a->policy = bench_policy(cfg, 1000000000, 1000);
	with_coordinator(a, cfg->dataplane.buckets_per_worker * 2);
	return bench_worker(a, 0);
}

/*
 * Timed: the bursts and the worker's own lease bookkeeping (sl_park_poll
 * runs in every worker loop). Not timed: the coordinator's answers (the
 * main lcore's work), and the end of the round, when whatever still
 * waits for a first grant is answered.
 */
static uint64_t
pass_leased(struct sl_worker *w, struct corpus *c)
{
	const struct sl_app *app = w->app;
	uint64_t spent = 0, t0;
	uint32_t i;

	for (i = 0; i < c->n; i += SL_BURST) {
		t0 = rte_rdtsc_precise();
		w->now = rte_rdtsc();
		sl_worker_burst(w, &c->m[i],
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, c->n - i),
				0);
		w->now_ns = sl_tsc_ns(app, w->now);
		sl_park_poll(w);
		spent += rte_rdtsc_precise() - t0;
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	}
	t0 = rte_rdtsc_precise();
	sl_worker_flush(w);
	spent += rte_rdtsc_precise() - t0;
	answer_all(app, w);
	return spent;
}

/* What the writer thread would take, outside the timed pass. */
static void
drain_samples(struct sl_worker *w)
{
	static struct sl_dec_rec recs[256];

	while (rte_ring_sc_dequeue_burst_elem(w->dec_ring, recs,
					      sizeof(recs[0]), 256, NULL) > 0)
		;
}

/*
 * Scaling: every lcore runs the keep-alive decision pass over its own
 * copy of the corpus at the same time, on its own queue; each times only
 * its passes, so the sum of their rates is the appliance's with that many
 * workers sharing caches and memory bandwidth.
 */
struct scale_job {
	struct sl_worker *w;
	struct corpus c;
	uint32_t rounds;
	uint64_t cycles;
	volatile uint32_t *start;
};

static int
scale_run(void *arg)
{
	struct scale_job *j = arg;
	uint32_t r;

	while (!*j->start)
		rte_pause();
	for (r = 0; r <= j->rounds; r++) {
		uint64_t d;

		set_round(&j->c, r);
		prime(j->w, j->c.m, j->c.n, r == 0);
		d = pass_worker(j->w, &j->c);
		if (r > 0)
			j->cycles += d;
	}
	return 0;
}

static struct scale_job *
scale_setup(const struct bopts *o, struct sl_app *app)
{
	static struct scale_job jobs[RTE_MAX_LCORE];
	unsigned int lc, n = 0;

	RTE_LCORE_FOREACH(lc)
	{
		struct scale_job *j = &jobs[n];

		if (n == o->workers)
			break;
		j->w = bench_worker(app, 0);
		j->w->queue = (uint16_t)n;
		j->w->lcore = lc;
		j->rounds = o->rounds;
		rng = 0x9e3779b97f4a7c15ULL; /* the same corpus for everyone */
		if (build_corpus(&j->c, o, app->pool) != 0)
			rte_exit(EXIT_FAILURE,
				 "scale: out of mbufs (try -m 2048)\n");
		n++;
	}
	if (n < o->workers)
		rte_exit(EXIT_FAILURE, "--workers %u needs %u lcores (-l)\n",
			 o->workers, o->workers);
	return jobs;
}

/* Runs n workers at once; returns their summed rate (requests/s). */
static double
scale_run_n(struct scale_job *jobs, uint32_t n, const struct sl_app *app,
	    double *per_worker)
{
	volatile uint32_t start = 0;
	double total = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		jobs[i].start = &start;
		jobs[i].cycles = 0;
		sl_worker_reset_flows(jobs[i].w);
	}
	for (i = 1; i < n; i++)
		rte_eal_remote_launch(scale_run, &jobs[i], jobs[i].w->lcore);
	start = 1;
	scale_run(&jobs[0]);
	rte_eal_mp_wait_lcore();
	for (i = 0; i < n; i++) {
		per_worker[i] = (double)app->tsc_hz * jobs[i].c.n *
				jobs[i].rounds / (double)jobs[i].cycles;
		total += per_worker[i];
	}
	return total;
}

/* A live redis-server behind the coordinator, scripts loaded. */
static void
attach_redis(struct sl_app *app, uint16_t port)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz() * 3;

	app->coord->store = sl_store_create("127.0.0.1", port, 0, 50, 1000);
	if (app->coord->store == NULL)
		rte_exit(EXIT_FAILURE, "coord: cannot create the store\n");
	while (rte_rdtsc() < end &&
	       !sl_store_stats(app->coord->store)->connected) {
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
		rte_delay_us_sleep(1000);
	}
	/* SCRIPT LOAD answers come right after the connection */
	end = rte_rdtsc() + rte_get_tsc_hz() / 5;
	while (rte_rdtsc() < end)
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	if (!sl_store_stats(app->coord->store)->connected)
		rte_exit(EXIT_FAILURE, "coord: no redis-server on port %u\n",
			 port);
}

/*
 * The lease protocol in one thread: a worker decides bursts of the corpus
 * against a per-key limit of 10 000/s, and between bursts the coordinator
 * answers and the parked requests are resolved. Counts the coordinator's
 * messages per 1000 admitted requests: the traffic a store behind it
 * would see, against one store call per request.
 */
static void
coord_run(const struct bopts *o, struct sl_app *base, uint32_t keys,
	  const char *label)
{
	struct bopts ko = *o;
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = app_copy(base);
	struct corpus c = {0};
	struct sl_worker *w;
	uint32_t r, i;

	ko.keys = keys;
	sl_config_defaults(cfg);
	app->policy = bench_policy(cfg, 10000, 1000);
	with_coordinator(app, 1u << 20);
	if (o->redis_port)
		attach_redis(app, o->redis_port);
	w = bench_worker(app, 0);
	rng = 0x2545f4914f6cdd1dULL;
	if (build_corpus(&c, &ko, app->pool) != 0)
		rte_exit(EXIT_FAILURE, "coord: out of mbufs\n");
	for (r = 0; r < o->rounds; r++) {
		/* --rate: a burst no sooner than its time; the wait answers */
		uint64_t gap = o->rate ? app->tsc_hz * SL_BURST / o->rate : 0;
		uint64_t due = rte_rdtsc();

		set_round(&c, r);
		prime(w, c.m, c.n, r == 0);
		for (i = 0; i < c.n; i += SL_BURST, due += gap) {
			while (rte_rdtsc() < due)
				answer_once(app, w);
			w->now = rte_rdtsc();
			sl_worker_burst(
				w, &c.m[i],
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, c.n - i),
				0);
			answer_once(app, w);
		}
		/* whatever still waits is answered before the next round */
		answer_all(app, w);
	}
	for (i = 0; i < c.n; i++)
		rte_pktmbuf_free(c.m[i]);
	if (app->coord->store != NULL) {
		const struct sl_store_stats *ss =
			sl_store_stats(app->coord->store);

		printf("{\"coord\": \"%s\", \"store\": \"redis\", "
		       "\"store_calls\": %lu, \"store_replies\": %lu, "
		       "\"store_timeouts\": %lu, \"degraded\": %lu, "
		       "\"store_calls_per_1000_admitted\": %.1f, "
		       "\"rtt_ns_avg\": %lu}\n",
		       label, ss->calls, ss->replies, ss->timeouts,
		       w->ctr.degraded,
		       1000.0 * (double)ss->calls /
			       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
		       ss->replies ? ss->rtt_ns_sum / ss->replies : 0);
	}
	printf("{\"coord\": \"%s\", \"offered_per_sec\": %u, "
	       "\"keys\": %u, \"requests\": %lu, "
	       "\"admitted\": %lu, \"refused\": %lu, "
	       "\"coord_messages_per_1000_admitted\": %.1f, "
	       "\"store_calls_per_1000_admitted_per_request_design\": %.1f, "
	       "\"parked\": %lu, \"parked_ns_p50\": %lu, "
	       "\"parked_ns_p99\": %lu, \"latency_ns_p50\": %lu, "
	       "\"latency_ns_p99\": %lu, \"latency_ns_p999\": %lu}\n",
	       label, o->rate, keys, w->ctr.requests, w->ctr.allowed,
	       w->ctr.rejected,
	       1000.0 * (double)(w->ctr.coord_asks) /
		       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
	       1000.0 * (double)w->ctr.requests /
		       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
	       w->ctr.parked, sl_hist_quantile(&w->park_latency, 0.5),
	       sl_hist_quantile(&w->park_latency, 0.99),
	       sl_hist_quantile(&w->latency, 0.5),
	       sl_hist_quantile(&w->latency, 0.99),
	       sl_hist_quantile(&w->latency, 0.999));
}

/* What the flood measured. */
struct flood_result {
	uint64_t rss_kb_before, rss_kb_after;
	uint64_t flows_evicted, buckets_evicted;
	double bytes_per_flow, bytes_per_bucket;
};

static uint64_t
rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;

	if (f != NULL) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

/* Requests from n distinct client addresses through one worker. */
static void
flood_pass(struct sl_worker *w, struct rte_mbuf **m, uint32_t from, uint32_t n)
{
	uint32_t i, k;

	for (i = 0; i < n; i += SL_BURST) {
		uint32_t b = RTE_MIN((uint32_t)SL_BURST, n - i);

		for (k = 0; k < b; k++) {
			uint8_t *f = rte_pktmbuf_mtod(m[k], uint8_t *);
			uint32_t a = from + i + k;
			struct sl_pkt p;

			/* synthetic, never sent: any address will do */
			f[26] = (uint8_t)(a >> 24);
			f[27] = (uint8_t)(a >> 16);
			f[28] = (uint8_t)(a >> 8);
			f[29] = (uint8_t)a;
			sl_pkt_parse(f, m[k]->data_len, &p);
			sl_ipv4_cksum_set(f, &p);
			sl_pkt_parse(f, m[k]->data_len, &p);
			sl_tcp_cksum_set(f, &p);
			rte_mbuf_refcnt_set(m[k], 2);
		}
		prime(w, m, b, 1);
		w->now = rte_rdtsc();
		sl_worker_burst(w, m, (uint16_t)b, 0);
		sl_worker_flush(w);
	}
}

/*
 * Memory under a flood of distinct client addresses, with the default
 * table sizes and one rule per client address: resident size once the
 * tables are full, and again after the flood. It must not grow.
 */
static void
flood(const struct bopts *o, struct sl_app *base, struct flood_result *fr)
{
	static const char req[] = "GET /v1/flood HTTP/1.1\r\nHost: api\r\n\r\n";
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = calloc(1, sizeof(*app));
	struct sl_rule *r = calloc(1, sizeof(*r));
	struct rte_mbuf *m[SL_BURST];
	struct sl_worker *w;
	uint32_t cap, k;

	sl_config_defaults(cfg);
	sl_app_setup(app, cfg);
	app->pool = base->pool;
	app->port[0] = base->port[0];
	app->port[1] = base->port[1];
	strcpy(r->name, "per-ip");
	r->scope = SL_SCOPE_IP;
	r->tier = -1;
	r->limit = (struct sl_rate){100, 60000};
	r->burst = 100;
	r->cost = 1;
	cfg->rules = r;
	cfg->n_rules = 1;
	app->policy = sl_policy_build(cfg);
	cfg->rules = NULL;
	cfg->n_rules = 0;
	w = bench_worker(app, 0);
	if (app->policy == NULL ||
	    rte_pktmbuf_alloc_bulk(app->pool, m, SL_BURST))
		rte_exit(EXIT_FAILURE, "flood: out of memory\n");
	for (k = 0; k < SL_BURST; k++)
		write_frame(m[k], 0, req, (int)sizeof(req) - 1);
	cap = RTE_MAX(cfg->dataplane.flows_per_worker,
		      cfg->dataplane.buckets_per_worker);
	flood_pass(w, m, 0x0a000000u, cap + cap / 2); /* fill both tables */
	fr->rss_kb_before = rss_kb();
	flood_pass(w, m, 0x0b000000u, o->flood);
	fr->rss_kb_after = rss_kb();
	if (w->ctr.allowed < (uint64_t)o->flood)
		rte_exit(EXIT_FAILURE,
			 "flood: only %lu of %u requests decided\n",
			 w->ctr.allowed, o->flood);
	fr->flows_evicted = sl_flow_stats(w->flows)->evicted;
	fr->buckets_evicted = sl_bucket_stats(w->buckets)->evicted;
	fr->bytes_per_flow = (double)sl_flow_table_bytes(w->flows) /
			     cfg->dataplane.flows_per_worker;
	fr->bytes_per_bucket = (double)sl_bucket_table_bytes(w->buckets) /
			       cfg->dataplane.buckets_per_worker;
	rte_pktmbuf_free_bulk(m, SL_BURST);
}

static void
report(const struct bopts *o, const struct corpus *c, const struct sl_app *app,
       double *v, const struct sl_hist *lat, const struct flood_result *fr,
       const struct sl_worker *leased)
{
	/* how often the leased pass went to its authority */
	double asks = 1000.0 * (double)leased->ctr.coord_asks /
		      (double)(leased->ctr.requests ? leased->ctr.requests : 1);

	uint64_t p50 = sl_hist_quantile(lat, 0.5),
		 p99 = sl_hist_quantile(lat, 0.99),
		 p999 = sl_hist_quantile(lat, 0.999);
	static const char *const label[M__N] = {
		"forward (tx_burst, untouched)",
		"pass-through (not a service port)",
		"classify + checksum + flow",
		"decide, keep-alive flow, allowed",
		"decide, new flow, allowed",
		"decide, new flow, rejected (429+RST)",
		"decide, keep-alive, every one sampled",
		"decide, keep-alive, leased (appliance)",
		"scan floor (blank line)",
	};
	int i;

	if (!o->json) {
		printf("sluice-bench: %u requests/round, %u flows, %u keys "
		       "(zipf %.2f), "
		       "head %.0f bytes avg, %u rounds, TSC %.2f GHz\n",
		       c->n, o->flows, o->keys, o->zipf,
		       (double)c->head_bytes / c->n, o->rounds,
		       (double)app->tsc_hz / 1e9);
		printf("%-38s %12s %12s %10s\n", "stage", "cycles/req",
		       "Mreq/s", "x forward");
		for (i = 0; i < M__N; i++)
			printf("%-38s %12.1f %12.2f %10.2f\n", label[i], v[i],
			       app->tsc_hz / v[i] / 1e6, v[i] / v[M_FWD]);
		printf("decision / scan floor: %.2f leased, %.2f local "
		       "(keep-alive)\n",
		       v[M_LEASED] / v[M_SCAN], v[M_PARSE] / v[M_SCAN]);
		printf("reject / allow: %.2f\n", v[M_REJECT] / v[M_ALLOW]);
		printf("leased pass: %.1f asks to the coordinator per 1000 "
		       "requests\n",
		       asks);
		printf("pass-through rate / forwarding rate: %.2f\n",
		       v[M_FWD] / v[M_PASS]);
		printf("latency, RX to TX, 1 frame in 16 (bucket upper "
		       "bounds): "
		       "p50 %lu ns, p99 %lu ns, p99.9 %lu ns\n",
		       p50, p99, p999);
		printf("memory: %.0f bytes per flow, %.0f per bucket; flood of "
		       "%u "
		       "addresses: RSS %lu kB before, %lu kB after "
		       "(%lu flows, %lu buckets evicted)\n",
		       fr->bytes_per_flow, fr->bytes_per_bucket, o->flood,
		       fr->rss_kb_before, fr->rss_kb_after, fr->flows_evicted,
		       fr->buckets_evicted);
	}
	printf("{\"packets\": %u, \"flows\": %u, \"keys\": %u, \"zipf\": %.2f, "
	       "\"head_bytes_avg\": %.1f, \"rounds\": %u, \"tsc_hz\": %lu, "
	       "\"cycles_per_request_forward\": %.1f, "
	       "\"cycles_per_request_passthrough\": %.1f, "
	       "\"cycles_per_request_flow\": %.1f, "
	       "\"cycles_per_request_parse\": %.1f, "
	       "\"cycles_per_request_allow\": %.1f, "
	       "\"cycles_per_request_reject\": %.1f, "
	       "\"cycles_per_request_sampled\": %.1f, "
	       "\"cycles_per_request_leased\": %.1f, "
	       "\"leased_asks_per_1000_requests\": %.1f, "
	       "\"scan_floor_cycles\": %.1f, "
	       "\"decision_over_scan_floor\": %.2f, "
	       "\"decisions_per_sec_per_core\": %.0f, "
	       "\"decisions_per_sec_per_core_local\": %.0f, "
	       "\"latency_ns_p50\": %lu, \"latency_ns_p99\": %lu, "
	       "\"latency_ns_p999\": %lu, \"bytes_per_flow\": %.0f, "
	       "\"bytes_per_bucket\": %.0f, \"flood_addresses\": %u, "
	       "\"rss_kb_before_flood\": %lu, \"rss_kb_after_flood\": %lu}\n",
	       c->n, o->flows, o->keys, o->zipf, (double)c->head_bytes / c->n,
	       o->rounds, app->tsc_hz, v[M_FWD], v[M_PASS], v[M_FLOW],
	       v[M_PARSE], v[M_ALLOW], v[M_REJECT], v[M_SAMPLE], v[M_LEASED],
	       asks, v[M_SCAN], v[M_LEASED] / v[M_SCAN],
	       app->tsc_hz / v[M_LEASED], app->tsc_hz / v[M_PARSE], p50, p99,
	       p999, fr->bytes_per_flow, fr->bytes_per_bucket, o->flood,
	       fr->rss_kb_before, fr->rss_kb_after);
}

int
main(int argc, char **argv)
{
	struct bopts o = {.workers = 1,
			  .flood = 1000000,
			  .packets = 32768,
			  .flows = 32768,
			  .keys = 100000,
			  .rounds = 15,
			  .zipf = 0.99,
			  .only = -1};
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = calloc(1, sizeof(*app));
	struct sl_app *tight = calloc(1, sizeof(*tight));
	struct sl_worker *w[M__N];
	struct corpus c = {0};
	struct flood_result fr;
	uint64_t *t[M__N], found = 0;
	double v[M__N];
	uint32_t r;
	int m, ret;

	/* --norm and --stream time one module alone: no EAL, no ports */
	for (m = 1; m < argc; m++)
		if (strcmp(argv[m], "--norm") == 0)
			return sl_bench_norm(
				15, m + 1 < argc &&
					    strcmp(argv[m + 1], "--json") == 0);
	for (m = 1; m < argc; m++)
		if (strcmp(argv[m], "--stream") == 0)
			return sl_bench_stream(
				9, m + 1 < argc &&
					   strcmp(argv[m + 1], "--json") == 0);
	ret = rte_eal_init(argc, argv);

	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	for (m = ret; m < argc; m++)
		if (strcmp(argv[m], "--blocklist") == 0)
			return sl_bench_blocklist(
				m + 1 < argc &&
				strcmp(argv[m + 1], "--json") == 0);
	argv[ret] = argv[0];
	if (parse_bopts(argc - ret, argv + ret, &o) != 0 || o.flows < o.packets)
		rte_exit(EXIT_FAILURE,
			 "usage: sluice-bench [EAL] -- [--packets N] [--flows "
			 "N>=packets] "
			 "[--keys N] [--rounds N>=2] [--zipf S] [--flood N] "
			 "[--workers N] [--coord] [--redis PORT] [--rate N] "
			 "[--json] [--only PASS]\n"
			 "       sluice-bench -- --norm [--json]\n"
			 "       sluice-bench -- --stream [--json]\n"
			 "       sluice-bench [EAL] -- --blocklist [--json]\n"
			 "(one request per connection per round, so that every "
			 "request of the reject pass is decided)\n");
	sl_logtype =
		rte_log_register_type_and_pick_level("sl.app", RTE_LOG_WARNING);
	sl_config_defaults(cfg);
	cfg->dataplane.flows_per_worker = o.flows * 2;
	cfg->dataplane.buckets_per_worker = o.keys * 2;
	cfg->dataplane.head_buffers_per_worker = 1024;
	cfg->dataplane.flow_idle_ms = 3600000;
	sl_app_setup(app, cfg);
	app->pool = rte_pktmbuf_pool_create(
		"bench", o.packets * (1 + o.workers) + 4096, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (app->pool == NULL)
		rte_exit(EXIT_FAILURE, "mbuf pool: %s (try -m 1024)\n",
			 rte_strerror(rte_errno));
	setup_ports(app);
	*tight = *app;
	app->policy = bench_policy(cfg, 1000000000, 1000);
	tight->policy = bench_policy(cfg, 1, 3600000);
	w[M_FLOW] = bench_worker(app, 1);
	w[M_PARSE] = bench_worker(app, 0);
	w[M_ALLOW] = bench_worker(app, 0);
	w[M_REJECT] = bench_worker(tight, 0);
	w[M_SAMPLE] = sampling_worker(app, cfg, c_n_ring(&o));
	w[M_LEASED] = leased_worker(app, cfg);
	w[M_PASS] = passthrough_worker(app);
	if (build_corpus(&c, &o, app->pool) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	for (m = 0; m < M__N; m++)
		t[m] = calloc(o.rounds, sizeof(uint64_t));
	/* Round 0 creates flows and drains the tight buckets: not counted. */
	for (r = 0; r <= o.rounds; r++) {
		uint64_t d[M__N];

		memset(d, 0, sizeof(d));
		set_round(&c, r);
		if (runs(&o, M_FWD))
			d[M_FWD] = pass_forward(app, &c);
		for (m = M_PASS; m <= M_LEASED; m++) {
			if (!runs(&o, m))
				continue;
			if ((m == M_ALLOW || m == M_REJECT) &&
			    sl_worker_reset_flows(w[m]) != 0)
				rte_exit(EXIT_FAILURE, "out of memory\n");
			set_round(&c, r);
			if (m != M_PASS)
				prime(w[m], c.m, c.n,
				      r == 0 || m == M_ALLOW || m == M_REJECT);
			d[m] = m == M_LEASED ? pass_leased(w[m], &c)
					     : pass_worker(w[m], &c);
		}
		drain_samples(w[M_SAMPLE]);
		if (runs(&o, M_SCAN))
			d[M_SCAN] = pass_scan(&c, &found);
		/* each pass dropped the extra reference set_round() took */
		for (m = 0; r > 0 && m < M__N; m++)
			t[m][r - 1] = d[m];
	}
	if (runs(&o, M_SAMPLE) && w[M_SAMPLE]->ctr.decisions_sampled !=
					  (uint64_t)c.n * (o.rounds + 1))
		rte_exit(EXIT_FAILURE, "sampled %lu decisions of %lu\n",
			 w[M_SAMPLE]->ctr.decisions_sampled,
			 (uint64_t)c.n * (o.rounds + 1));
	/* the leased pass decides the same requests, every one allowed */
	if (runs(&o, M_LEASED) &&
	    (w[M_LEASED]->ctr.allowed != (uint64_t)c.n * (o.rounds + 1) ||
	     w[M_LEASED]->ctr.degraded != 0))
		rte_exit(EXIT_FAILURE,
			 "leased pass: allowed %lu of %lu, %lu degraded\n",
			 w[M_LEASED]->ctr.allowed,
			 (uint64_t)c.n * (o.rounds + 1),
			 w[M_LEASED]->ctr.degraded);
	if ((runs(&o, M_PARSE) &&
	     w[M_PARSE]->ctr.allowed != (uint64_t)c.n * (o.rounds + 1)) ||
	    (runs(&o, M_REJECT) &&
	     w[M_REJECT]->ctr.rejected < (uint64_t)c.n * o.rounds))
		rte_exit(EXIT_FAILURE,
			 "corpus not decided as planned: allowed %lu, rejected "
			 "%lu "
			 "(of %lu requests: %lu allowed, %lu invalid, %lu bad "
			 "checksums, "
			 "%lu ooo, rx %lu inspected %lu passthrough %lu "
			 "malformed %lu)\n",
			 w[M_PARSE]->ctr.allowed, w[M_REJECT]->ctr.rejected,
			 w[M_REJECT]->ctr.requests, w[M_REJECT]->ctr.allowed,
			 w[M_REJECT]->ctr.invalid,
			 w[M_REJECT]->ctr.bad_checksum,
			 sl_flow_stats(w[M_REJECT]->flows)->ooo_dropped,
			 w[M_REJECT]->ctr.rx, w[M_REJECT]->ctr.inspected,
			 w[M_REJECT]->ctr.passthrough,
			 w[M_REJECT]->ctr.malformed);
	for (m = 0; m < M__N; m++)
		v[m] = median_per(t[m], o.rounds, c.n);
	if (o.only >= 0) {
		/* for profiles: one figure, to weigh the samples with */
		printf("{\"only\": \"%s\", \"cycles_per_request\": %.1f, "
		       "\"packets\": %u, \"rounds\": %u}\n",
		       pass_name[o.only], v[o.only], c.n, o.rounds);
		rte_eal_cleanup();
		return 0;
	}
	flood(&o, app, &fr);
	report(&o, &c, app, v, &w[M_PARSE]->latency, &fr, w[M_LEASED]);
	if (o.coord) {
		coord_run(&o, app, 1, "hot key, 10000/s");
		coord_run(&o, app, 100000, "100000 keys, 10000/s each");
	}
	if (o.workers > 1) {
		struct scale_job *jobs = scale_setup(&o, app);
		double per[RTE_MAX_LCORE], one, total;
		uint32_t i;

		one = scale_run_n(jobs, 1, app, per);
		total = scale_run_n(jobs, o.workers, app, per);
		if (!o.json) {
			printf("scale: 1 worker %.2f Mreq/s; %u workers %.2f "
			       "Mreq/s (",
			       one / 1e6, o.workers, total / 1e6);
			for (i = 0; i < o.workers; i++)
				printf("%s%.2f", i ? " " : "", per[i] / 1e6);
			printf("), speedup %.2f\n", total / one);
		}
		printf("{\"workers\": %u, \"scale_mreq_per_sec_1\": %.3f, "
		       "\"scale_mreq_per_sec\": %.3f, \"scale_speedup\": "
		       "%.2f}\n",
		       o.workers, one / 1e6, total / 1e6, total / one);
	}
	rte_eal_cleanup();
	return 0;
}

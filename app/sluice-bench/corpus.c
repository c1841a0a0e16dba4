/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The corpus: request heads over a Zipf of keys, one IPv4/TCP frame per
 * request in an mbuf, renumbered per round; and the handshakes and ACKs a
 * real connection carries besides, played before a pass (untimed).
 */
#include "bench.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

void
sl_bench_seed(uint64_t seed)
{
	rng = seed;
}

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

void
sl_bench_write_frame(struct rte_mbuf *m, uint32_t flow, const char *head,
		     int hlen)
{
	sl_bench_frame_bytes(rte_pktmbuf_mtod(m, uint8_t *), flow, head, hlen);
	m->data_len = m->pkt_len = (uint32_t)(54 + hlen);
}

void
sl_bench_frame_bytes(uint8_t *f, uint32_t flow, const char *head, int hlen)
{
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
}

enum sl_pkt_class
sl_bench_sum_frame(uint8_t *f, uint32_t len, struct sl_pkt *p)
{
	enum sl_pkt_class cls;

	/* the IPv4 sum first: a frame whose header sum is wrong does not
	 * parse as TCP, and the TCP sum needs it parsed */
	sl_pkt_parse(f, len, p);
	sl_ipv4_cksum_set(f, p);
	cls = sl_pkt_parse(f, len, p);
	sl_tcp_cksum_set(f, p);
	return cls;
}

/*
 * Before a round: the last pass freed each mbuf once. Those it freed for
 * good are taken back out of the corpus's pool, a count of one, the
 * bench's; one still held elsewhere (a flow not acknowledged, a corpus
 * sharing a pool) is kept by a reference of the bench's on top, which
 * the pass frees. A held count above one makes DPDK update it
 * atomically, as an appliance's received mbuf (a count of one) does not:
 * with every mbuf referenced so, the bench charged a kept head two
 * locked updates more than the appliance pays for it.
 */
static void
take_back(struct corpus *c)
{
	struct rte_mbuf *m;
	uint32_t i, n = 0;

	if (c->pool == NULL || !c->lent) {
		for (i = 0; c->pool == NULL && i < c->n; i++)
			rte_mbuf_refcnt_update(c->m[i], 1);
		return;
	}
	/* the round's reset left every port invalid, and nothing on the
	 * way sets it: one taken back is marked by a valid one */
	while (n < c->n && rte_mempool_get(c->pool, (void **)&m) == 0) {
		m->port = 0;
		n++;
	}
	for (i = 0; i < c->n; i++)
		if (c->m[i]->port != 0)
			rte_mbuf_refcnt_update(c->m[i], 1);
}

/* Writes the round's sequence number and the checksums (not timed). */
void
sl_bench_set_round(struct corpus *c, uint32_t round)
{
	uint32_t i;

	take_back(c);
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
		sl_bench_sum_frame(f, c->m[i]->data_len, &p);
	}
	c->lent = 1;
}

void
sl_bench_kept(struct corpus *c)
{
	c->lent = 0;
}

/* A pool of the corpus's own, its mbufs taken out of it. */
static struct rte_mempool *
own_pool(struct corpus *c)
{
	static unsigned int made;
	char name[RTE_MEMPOOL_NAMESIZE];

	/* the appliance's pool keeps a cache of 256 per lcore; a small
	 * corpus's may hold at most two thirds of it (DPDK's flush mark) */
	snprintf(name, sizeof(name), "corpus%u", made++);
	c->pool = rte_pktmbuf_pool_create(
		name, c->n, RTE_MIN(256u, c->n * 2 / 3), 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (c->pool == NULL || rte_pktmbuf_alloc_bulk(c->pool, c->m, c->n) != 0)
		return NULL;
	return c->pool;
}

int
sl_bench_build_corpus(struct corpus *c, const struct bopts *o,
		      struct rte_mempool *mp)
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
	if (mp == NULL ? own_pool(c) == NULL
		       : rte_pktmbuf_alloc_bulk(mp, c->m, c->n) != 0)
		return -1;
	for (i = 0; i < c->n; i++) {
		uint32_t f = i % o->flows; /* with flows == packets: one each */
		int hl = make_head(head, sizeof(head), zipf_pick(cdf, o->keys));

		sl_bench_write_frame(c->m[i], f, head, hl);
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
	sl_bench_sum_frame(f, 54, &p);
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

void
sl_bench_response_frame(struct rte_mbuf *out, const struct rte_mbuf *data,
			const char *payload, uint32_t len)
{
	const uint8_t *d = rte_pktmbuf_mtod(data, const uint8_t *);
	uint32_t seq = (uint32_t)d[38] << 24 | (uint32_t)d[39] << 16 |
		       (uint32_t)d[40] << 8 | d[41];
	uint8_t *f;
	struct sl_pkt p;

	/* the server's data starts at 0: its ISN was UINT32_MAX */
	ctl_frame(out, d, 0x18, 1, 0, seq + data->data_len - 54u);
	f = rte_pktmbuf_mtod(out, uint8_t *);
	memcpy(f + 54, payload, len);
	f[16] = (uint8_t)((40 + len) >> 8);
	f[17] = (uint8_t)(40 + len);
	out->data_len = out->pkt_len = 54 + len;
	sl_bench_sum_frame(f, out->data_len, &p);
}

/* The ACKs' bursts, each timed: never inlined, the function
 * scripts/bench-count.sh counts the acknowledged passes' ACKs in. */
static __attribute__((noinline)) uint64_t
ack_bursts(struct sl_worker *w, struct rte_mbuf **m, uint32_t n)
{
	uint64_t spent = 0, t0;
	uint32_t i;

	for (i = 0; i < n; i += SL_BURST) {
		t0 = rte_rdtsc_precise();
		w->now = rte_rdtsc();
		sl_worker_burst(w, m + i,
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, n - i),
				1);
		sl_worker_flush(w);
		spent += rte_rdtsc_precise() - t0;
	}
	return spent;
}

/*
 * Only the worker's handling of the ACKs is timed: built a burst at a
 * time inside the timing, the frames' writing and checksums, and the
 * reads of the request frames they answer, were a third (cache-resident)
 * to a half (DRAM-sized) of what the pass said an ACK cost, and those
 * reads brought the held mbufs' headers in for the worker's release.
 */
uint64_t
sl_bench_acks(struct sl_worker *w, const struct corpus *c, uint32_t r)
{
	struct rte_mbuf **m = calloc(c->n, sizeof(*m));
	uint64_t spent;
	uint32_t k;

	if (m == NULL || rte_pktmbuf_alloc_bulk(w->app->pool, m, c->n) != 0)
		rte_exit(EXIT_FAILURE, "bench: out of mbufs for ACKs\n");
	for (k = 0; k < c->n; k++) {
		const uint8_t *f = c->pristine[k] + 2;
		uint32_t len =
			(uint32_t)(c->pristine[k][0] << 8 | c->pristine[k][1]) -
			54u;
		uint32_t seq = c->seq0[k] + r * c->flow_bytes[c->flow_of[k]];

		ctl_frame(m[k], f, 0x10, 1, 0, seq + len);
	}
	spent = ack_bursts(w, m, c->n);
	sl_worker_let_go(w, 1); /* the round's last holds, untimed */
	free(m);
	return spent;
}

/*
 * Untimed, before a pass: what real connections carry besides requests.
 * open: each frame's connection is new, so its handshake is seen first
 * (SYN, then the server's SYN-ACK: the normaliser reads no stream before
 * one); otherwise the server acknowledges all before the frame, which
 * commits what the last round decided.
 */
void
sl_bench_prime(struct sl_worker *w, struct rte_mbuf **data, uint32_t n,
	       int open)
{
	uint32_t i;

	for (i = 0; i < n; i += SL_BURST) {
		uint32_t b = RTE_MIN((uint32_t)SL_BURST, n - i);

		ctl_burst(w, data + i, b, open, 0);
		if (open)
			ctl_burst(w, data + i, b, open, 1);
	}
}

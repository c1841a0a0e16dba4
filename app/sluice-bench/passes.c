/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timed passes, and the table main() runs them from: one row per
 * pass (its --only name, its report label, how a round runs, what it
 * must have decided).
 */
#include "bench.h"
#include "dp.h"

/* A small API response's fields after its status line, and its body */
#define RESPONSE_REST                                                          \
	"Content-Length: 180\r\nCache-Control: no-store\r\n\r\n"               \
	"{\"id\":12345,\"items\":[{\"name\":\"alpha\",\"qty\":1},"             \
	"{\"name\":\"beta\",\"qty\":2},{\"name\":\"gamma\",\"qty\":3}],"       \
	"\"next\":null,\"cursor\":"                                            \
	"\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","                      \
	"\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n"

/* What the budget is put into. */
static const char RESPONSE[] =
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" RESPONSE_REST;

/* The same, saying it cost 3 (the rule declares 1) */
static const char RESPONSE_COST[] =
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	"X-RateLimit-Cost: 3\r\n" RESPONSE_REST;

uint64_t
sl_bench_pass_forward(const struct sl_app *app, struct corpus *c)
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

/* never inlined, nor pass_parse_flow() and parse_heads(): each is
 * exactly what a pass times, the function scripts/bench-count.sh has
 * callgrind count instructions in */
__attribute__((noinline)) uint64_t
sl_bench_pass_worker(struct sl_worker *w, struct corpus *c)
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
uint64_t
sl_bench_pass_scan(struct corpus *c, uint64_t *found)
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

/*
 * Timed: the bursts and the worker's own lease bookkeeping (sl_park_poll
 * runs in every worker loop). Not timed: the coordinator's answers (the
 * main lcore's work), and the end of the round, when whatever still
 * waits for a first grant is answered.
 */
uint64_t
sl_bench_pass_leased(struct sl_worker *w, struct corpus *c)
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
		sl_worker_leases(w);
		spent += rte_rdtsc_precise() - t0;
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	}
	t0 = rte_rdtsc_precise();
	sl_worker_flush(w);
	spent += rte_rdtsc_precise() - t0;
	sl_bench_answer_all(app, w);
	return spent;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double
sl_bench_median_per(uint64_t *v, uint32_t n, uint32_t per)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / per;
}

/* ---- one round of each pass ---- */

static uint64_t
round_forward(struct bench_env *e, int m, uint32_t r)
{
	(void)m;
	sl_bench_set_round(&e->c, r);
	return sl_bench_pass_forward(e->app, &e->c);
}

/* Frames to a port nobody inspects: nothing to prime. */
static uint64_t
round_plain(struct bench_env *e, int m, uint32_t r)
{
	sl_bench_set_round(&e->c, r);
	return sl_bench_pass_worker(e->w[m], &e->c);
}

#define KA_ACKED   0x1
#define KA_OFFLOAD 0x2
#define KA_PARSE   0x4

/* Whether the frame's head is a complete request to the parser. */
static inline int
head_complete(const struct sl_http_cfg *cfg, const struct rte_mbuf *b)
{
	struct sl_http_req req;

	return sl_http_parse_request(
		       rte_pktmbuf_mtod_offset(b, const char *, 54),
		       b->data_len - 54, cfg, &req) > 0;
}

/*
 * What every decision does before it decides, and nothing else: the
 * frame classified, verified and its flow found (the flow pass's worker,
 * which reads no HTTP), then each head of the burst parsed. The flow
 * stage's staging asks for the frames' bytes ahead as the decision's
 * does, so the parse finds them cached, as it does there. The frames
 * are parsed after the worker has sent them: nothing takes an mbuf from
 * the corpus's pool until the next round, so their bytes are as sent.
 */
static __attribute__((noinline)) uint64_t
pass_parse_flow(struct bench_env *e, int m)
{
	struct sl_worker *w = e->w[m];
	const struct sl_http_cfg *cfg = &e->app->http;
	struct corpus *c = &e->c;
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i, j, k;

	for (i = 0; i < c->n; i += SL_BURST) {
		k = RTE_MIN((uint32_t)SL_BURST, c->n - i);
		w->now = rte_rdtsc();
		sl_worker_burst(w, &c->m[i], (uint16_t)k, 0);
		for (j = i; j < i + k; j++)
			e->parsed_flow[m - M_PARSE_FLOW] +=
				(uint64_t)head_complete(cfg, c->m[j]);
	}
	sl_worker_flush(w);
	return rte_rdtsc_precise() - t0;
}

/*
 * Keep-alive: the connections opened in round 0 carry every round, and
 * the server acknowledges each round's bytes after its pass. KA_ACKED:
 * that ACK timed too (only the worker's part): where a decided head's
 * bytes are held, letting them go is the ACK's work. Acknowledged before
 * the next pass, no hold of this worker's is left on the mbufs that pass
 * meets. KA_OFFLOAD: every segment's TCP checksum verified by the port
 * (RTE_ETH_RX_OFFLOAD_TCP_CKSUM, which DPDK's NIC drivers offer and this
 * VM's ports do not), so the worker trusts the mbuf's flag and sums
 * nothing: the decision on such a NIC. KA_PARSE: the pass is
 * pass_parse_flow's, not the worker's decision.
 */
static uint64_t
keepalive(struct bench_env *e, int m, uint32_t r, int how)
{
	uint64_t d, acks;
	uint32_t i;

	sl_bench_set_round(&e->c, r);
	for (i = 0; (how & KA_OFFLOAD) && i < e->c.n; i++)
		e->c.m[i]->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	if (r == 0)
		sl_bench_prime(e->w[m], e->c.m, e->c.n, 1);
	d = (how & KA_PARSE) ? pass_parse_flow(e, m)
			     : sl_bench_pass_worker(e->w[m], &e->c);
	acks = sl_bench_acks(e->w[m], &e->c, r);
	return d + ((how & KA_ACKED) ? acks : 0);
}

static uint64_t
round_parse_flow(struct bench_env *e, int m, uint32_t r)
{
	return keepalive(e, m, r,
			 KA_PARSE |
				 (m == M_PARSE_FLOW_OFFLOAD ? KA_OFFLOAD : 0));
}

static uint64_t
round_keepalive(struct bench_env *e, int m, uint32_t r)
{
	return keepalive(e, m, r, 0);
}

static uint64_t
round_keepalive_acked(struct bench_env *e, int m, uint32_t r)
{
	return keepalive(e, m, r, KA_ACKED);
}

static uint64_t
round_keepalive_offload(struct bench_env *e, int m, uint32_t r)
{
	return keepalive(e, m, r, KA_OFFLOAD);
}

/* Every request on a new connection: the flows forgotten after each
 * round, with what they held (untimed). */
static uint64_t
round_fresh(struct bench_env *e, int m, uint32_t r)
{
	uint64_t d;

	sl_bench_set_round(&e->c, r);
	sl_bench_prime(e->w[m], e->c.m, e->c.n, 1);
	d = sl_bench_pass_worker(e->w[m], &e->c);
	if (sl_worker_reset_flows(e->w[m]) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	return d;
}

/* Keep-alive, every decision sampled; the ring drained untimed. */
static uint64_t
round_sampled(struct bench_env *e, int m, uint32_t r)
{
	uint64_t d = round_keepalive(e, m, r);

	sl_bench_drain_samples(e->w[m]);
	return d;
}

/*
 * The leased worker's clock (its app's, which its coordinator reads too)
 * stands still between its rounds: the other passes' rounds are no time
 * to its leases. Run on the wall clock, each key came once every round
 * of all the passes, most of a second, as to an appliance at a fortieth
 * of its rate: its lease, sized by the rate its holder sees, held a unit
 * and expired between rounds, and 316 of every 1 000 timed requests
 * parked for the authority, where at the worker's own pace 36 do
 * (DRAM-sized corpus).
 */
static void
leased_clock_on(struct bench_env *e, struct sl_worker *w)
{
	/* the bench's own copy of the app (sl_bench_leased_worker) */
	struct sl_app *a = (struct sl_app *)(uintptr_t)w->app;
	uint64_t now = rte_rdtsc();

	if (e->leased_end != 0)
		sl_app_set_epoch(
			a,
			a->epoch_ns - (int64_t)(sl_tsc_ns(a, now) -
						sl_tsc_ns(a, e->leased_end)));
}

static uint64_t
round_leased(struct bench_env *e, int m, uint32_t r)
{
	uint64_t d;

	sl_bench_set_round(&e->c, r);
	leased_clock_on(e, e->w[m]);
	if (r == 0)
		sl_bench_prime(e->w[m], e->c.m, e->c.n, 1);
	d = sl_bench_pass_leased(e->w[m], &e->c);
	sl_bench_acks(e->w[m], &e->c, r);
	e->leased_end = rte_rdtsc();
	if (r == 0) {
		e->asks0 = e->w[m]->ctr.coord_asks;
		e->requests0 = e->w[m]->ctr.requests;
	}
	return d;
}

/* The connections and the frames kept for them let go (untimed). */
static void
forget(struct sl_worker *w)
{
	sl_xlate_free(w);
	if (sl_worker_reset_flows(w) != 0 || sl_xlate_init(w) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
}

/*
 * The server's responses: each request of the round on a new connection
 * (untimed, as round_fresh's), then timed, the response to each on its
 * way to the client; the connections let go after the round.
 */
static uint64_t
round_respond(struct bench_env *e, int m, uint32_t r)
{
	struct sl_worker *w = e->w[m];
	const char *resp = m == M_RESPOND_COST ? RESPONSE_COST : RESPONSE;
	uint32_t i, n = e->c.n;
	uint64_t t0, d;

	if (r == 0)
		forget(w);
	/* no client acknowledges here: a round keeps a frame per response,
	 * let go after it (the pool has room for them) */
	w->xl_held_max = n;
	sl_bench_set_round(&e->c, r);
	if (rte_pktmbuf_alloc_bulk(w->app->pool, e->resp, n) != 0)
		rte_exit(EXIT_FAILURE, "bench: out of mbufs for responses\n");
	for (i = 0; i < n; i++)
		sl_bench_response_frame(e->resp[i], e->c.m[i], resp,
					(uint32_t)strlen(resp));
	sl_bench_prime(w, e->c.m, n, 1);
	sl_bench_pass_worker(w, &e->c);
	t0 = rte_rdtsc_precise();
	for (i = 0; i < n; i += SL_BURST) {
		w->now = rte_rdtsc();
		sl_worker_burst(w, &e->resp[i],
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, n - i),
				1);
	}
	sl_worker_flush(w);
	d = rte_rdtsc_precise() - t0;
	forget(w);
	return d;
}

static uint64_t
round_scan(struct bench_env *e, int m, uint32_t r)
{
	(void)m;
	(void)r;
	return sl_bench_pass_scan(&e->c, &e->found);
}

/* ---- the workers ---- */

static struct sl_worker *
setup_pass(struct bench_env *e)
{
	return sl_bench_passthrough_worker(e->app);
}

static struct sl_worker *
setup_flow(struct bench_env *e)
{
	return sl_bench_worker(e->app, 1);
}

static struct sl_worker *
setup_local(struct bench_env *e)
{
	return sl_bench_worker(e->app, 0);
}

/* The flow table without the stream normaliser: what it costs, priced
 * inside the appliance (the bytes held, not digested). */
static struct sl_worker *
setup_plain(struct bench_env *e)
{
	struct sl_worker *w = sl_bench_worker(e->app, 0);

	w->no_normalise = 1;
	if (sl_worker_reset_flows(w) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	return w;
}

static struct sl_worker *
setup_tight(struct bench_env *e)
{
	return sl_bench_worker(e->tight, 0);
}

/* keep_alive: the 429 without FIN and without the RST to the backend.
 * No 429 is kept for retransmission: its mbuf is the corpus's, which
 * every round writes again. */
static struct sl_worker *
setup_tight_keep(struct bench_env *e)
{
	struct sl_worker *w = sl_bench_worker(e->tight_keep, 0);

	w->xl_held_max = 0;
	return w;
}

static struct sl_worker *
setup_keep(struct bench_env *e)
{
	return sl_bench_worker(e->keep, 0);
}

static struct sl_worker *
setup_budget(struct bench_env *e)
{
	return sl_bench_worker(e->budget, 0);
}

static struct sl_worker *
setup_cost(struct bench_env *e)
{
	return sl_bench_worker(e->cost, 0);
}

static struct sl_worker *
setup_sampled(struct bench_env *e)
{
	return sl_bench_sampling_worker(e->app, e->cfg,
					sl_bench_c_n_ring(e->o));
}

static struct sl_worker *
setup_leased(struct bench_env *e)
{
	return sl_bench_leased_worker(e->app, e->cfg);
}

/* ---- what each must have decided, over rounds 0..rounds ---- */

static uint64_t
all_requests(const struct bench_env *e)
{
	return (uint64_t)e->c.n * (e->o->rounds + 1);
}

static const char *
check_all_allowed(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];

	if (w->ctr.allowed == all_requests(e))
		return NULL;
	snprintf(buf, len,
		 "corpus not decided as planned: %s allowed %lu of %lu "
		 "(%lu invalid, %lu bad checksums, %lu ooo, rx %lu "
		 "inspected %lu passthrough %lu malformed %lu)",
		 sl_bench_passes[m].name, w->ctr.allowed, all_requests(e),
		 w->ctr.invalid, w->ctr.bad_checksum,
		 sl_flow_stats(w->flows)->ooo_dropped, w->ctr.rx,
		 w->ctr.inspected, w->ctr.passthrough, w->ctr.malformed);
	return buf;
}

/* Round 0 drains the tight bucket: every later request is refused. */
static const char *
check_rejected(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];

	if (w->ctr.rejected >= (uint64_t)e->c.n * e->o->rounds)
		return NULL;
	snprintf(buf, len,
		 "corpus not decided as planned: rejected %lu of %lu "
		 "requests (%lu allowed, %lu invalid, %lu bad checksums, "
		 "%lu ooo, rx %lu inspected %lu passthrough %lu malformed "
		 "%lu)",
		 w->ctr.rejected, w->ctr.requests, w->ctr.allowed,
		 w->ctr.invalid, w->ctr.bad_checksum,
		 sl_flow_stats(w->flows)->ooo_dropped, w->ctr.rx,
		 w->ctr.inspected, w->ctr.passthrough, w->ctr.malformed);
	return buf;
}

/* The same, every refusal answered with the connection kept. */
static const char *
check_kept(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];

	if (check_rejected(e, m, buf, len) != NULL)
		return buf;
	if (w->ctr.keepalive_replies >= (uint64_t)e->c.n * e->o->rounds &&
	    w->ctr.keepalive_fallback == 0)
		return NULL;
	snprintf(buf, len, "reject-keep: %lu kept, %lu closed instead",
		 w->ctr.keepalive_replies, w->ctr.keepalive_fallback);
	return buf;
}

static const char *
check_sampled(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];

	if (w->ctr.decisions_sampled == all_requests(e))
		return NULL;
	snprintf(buf, len, "sampled %lu decisions of %lu",
		 w->ctr.decisions_sampled, all_requests(e));
	return buf;
}

/* The leased pass decides the same requests, every one allowed. */
static const char *
check_leased(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];
	const struct sl_flow_stats *fs = sl_flow_stats(w->flows);

	if (w->ctr.allowed == all_requests(e) && w->ctr.degraded == 0)
		return NULL;
	/* the rest says where the others went, should it fail again */
	snprintf(buf, len,
		 "leased pass: allowed %lu of %lu, %lu degraded (rejected %lu, "
		 "invalid %lu, decided alone %lu, parked %lu, park dropped "
		 "%lu, rx %lu, inspected %lu, ooo %lu, midstream %lu, "
		 "evicted %lu)",
		 w->ctr.allowed, all_requests(e), w->ctr.degraded,
		 w->ctr.rejected, w->ctr.invalid, w->ctr.decided_alone,
		 w->ctr.parked, w->ctr.park_dropped, w->ctr.rx,
		 w->ctr.inspected, fs->ooo_dropped, fs->midstream, fs->evicted);
	return buf;
}

/* Every response given its budget (or, without it, forwarded). */
static const char *
check_budget(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];
	uint64_t want = m == M_RESPOND_BUDGET ? all_requests(e) : 0;

	if (check_all_allowed(e, m, buf, len) != NULL)
		return buf;
	if (w->ctr.budget_headers == want)
		return NULL;
	snprintf(buf, len, "%s: budgets %lu (%lu skipped) of %lu",
		 sl_bench_passes[m].name, w->ctr.budget_headers,
		 w->ctr.budget_skipped, want);
	return buf;
}

/* Every response's cost read and the 2 units more charged. */
static const char *
check_cost(const struct bench_env *e, int m, char *buf, size_t len)
{
	const struct sl_worker *w = e->w[m];

	if (check_all_allowed(e, m, buf, len) != NULL)
		return buf;
	if (w->ctr.cost_settled == all_requests(e) &&
	    w->ctr.cost_charged == 2 * all_requests(e))
		return NULL;
	snprintf(buf, len, "respond-cost: %lu settled, %lu charged, of %lu",
		 w->ctr.cost_settled, w->ctr.cost_charged, all_requests(e));
	return buf;
}

/*
 * The head parser alone over the same heads, each from its frame's
 * payload: no frame, flow or bucket. What a decision is weighed against
 * (the issue of its cost is everything around the parse).
 */
static __attribute__((noinline)) uint64_t
parse_heads(struct bench_env *e)
{
	const struct sl_http_cfg *cfg = &e->app->http;
	uint64_t t0 = rte_rdtsc_precise();
	uint32_t i;

	for (i = 0; i < e->c.n; i++)
		e->parsed += (uint64_t)head_complete(cfg, e->c.m[i]);
	return rte_rdtsc_precise() - t0;
}

static uint64_t
round_parse(struct bench_env *e, int m, uint32_t r)
{
	(void)m;
	sl_bench_set_round(&e->c, r);
	sl_bench_kept(&e->c);
	return parse_heads(e);
}

/* Pass m's heads, every round's, complete (got of them). */
static const char *
heads_check(const struct bench_env *e, int m, uint64_t got, char *buf,
	    size_t len)
{
	uint64_t want = (uint64_t)e->c.n * (e->o->rounds + 1);

	if (got == want)
		return NULL;
	snprintf(buf, len, "%s: %lu heads complete of %lu",
		 sl_bench_passes[m].name, got, want);
	return buf;
}

static const char *
check_parsed(const struct bench_env *e, int m, char *buf, size_t len)
{
	return heads_check(e, m, e->parsed, buf, len);
}

static const char *
check_parsed_flow(const struct bench_env *e, int m, char *buf, size_t len)
{
	return heads_check(e, m, e->parsed_flow[m - M_PARSE_FLOW], buf, len);
}

const struct bench_pass sl_bench_passes[M__N] = {
	[M_FWD] = {"forward", "forward (tx_burst, untouched)", NULL,
		   round_forward, NULL},
	[M_PASS] = {"passthrough", "pass-through (not a service port)",
		    setup_pass, round_plain, NULL},
	[M_FLOW] = {"flow", "classify + checksum + flow", setup_flow,
		    round_keepalive, NULL},
	[M_PARSE_FLOW] = {"parse-flow", "classify + checksum + flow + parse",
			  setup_flow, round_parse_flow, check_parsed_flow},
	[M_PARSE_FLOW_OFFLOAD] = {"parse-flow-offload",
				  "the same, checksum verified by the port",
				  setup_flow, round_parse_flow,
				  check_parsed_flow},
	[M_KEEPALIVE] = {"keepalive", "decide, keep-alive flow, allowed",
			 setup_local, round_keepalive, check_all_allowed},
	[M_KEEPALIVE_ACKED] = {"keepalive-acked",
			       "decide, keep-alive, and the server's ACK",
			       setup_local, round_keepalive_acked,
			       check_all_allowed},
	[M_KEEPALIVE_PLAIN] = {"keepalive-plain",
			       "the same without the stream normaliser",
			       setup_plain, round_keepalive_acked,
			       check_all_allowed},
	[M_KEEPALIVE_OFFLOAD] = {"keepalive-offload",
				 "keep-alive, checksum verified by the port",
				 setup_local, round_keepalive_offload,
				 check_all_allowed},
	[M_ALLOW] = {"allow", "decide, new flow, allowed", setup_local,
		     round_fresh, NULL},
	[M_REJECT] = {"reject", "decide, new flow, rejected (429+RST)",
		      setup_tight, round_fresh, check_rejected},
	[M_REJECT_KEEP] = {"reject-keep",
			   "decide, new flow, rejected (429 kept)",
			   setup_tight_keep, round_fresh, check_kept},
	[M_SAMPLE] = {"sampled", "decide, keep-alive, every one sampled",
		      setup_sampled, round_sampled, check_sampled},
	[M_LEASED] = {"leased", "decide, keep-alive, leased (appliance)",
		      setup_leased, round_leased, check_leased},
	[M_RESPOND] = {"respond", "server response, new flow (keep_alive)",
		       setup_keep, round_respond, check_budget},
	[M_RESPOND_BUDGET] = {"respond-budget",
			      "server response given its budget", setup_budget,
			      round_respond, check_budget},
	[M_RESPOND_COST] = {"respond-cost", "server response settling its cost",
			    setup_cost, round_respond, check_cost},
	[M_PARSE_ALONE] = {"parse", "head parser alone (no flow, no bucket)",
			   NULL, round_parse, check_parsed},
	[M_SCAN] = {"scan", "scan floor (blank line)", NULL, round_scan, NULL},
};

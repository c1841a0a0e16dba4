/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path in process: a real worker (worker/), the real policy and
 * authority (authority/), two net_ring ports whose TX loops back to their own
 * RX, so that what the worker sent each way is read back and checked
 * byte by byte. No namespaces, no Python, no socket: the app's logic
 * (decide, park, the lease client, degrade, replies) under cmocka, with
 * EAL on --no-huge. Time is the worker's own clock, moved by the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "coord.h"
#include "dp.h"
#include "policy.h"
#include "sluice.h"
#include "dpframes.h"

#define DOWN 0
#define UP   1

/*
 * The worker's clock is the TSC: a test's steps (a request, then the
 * coordinator's turn) must fall within the coordinator timeout unless it
 * means them not to. At 5 ms, a busy machine (the suite's fuzzers and
 * ThreadSanitizer build beside it) stretched two segments' bursts past
 * it: their second found the first's ask stale and asked again
 * (pipelined_second_wait, 2 runs in 40 beside four busy loops).
 */
static const char CONFIG[] =
	"version: 1\n"
	"dataplane:\n"
	"  service_ports: [80]\n"
	"  flows_per_worker: 1024\n"
	"  head_buffers_per_worker: 64\n"
	"  mbufs: 4095\n"
	"  coordinator_timeout_ms: 50\n"
	"identity:\n"
	"  api_key_header: X-API-Key\n"
	"tiers: [free, pro]\n"
	"rules:\n"
	"  - {name: two, scope: key, match: {path_prefix: /two}, limit: "
	"2/min}\n"
	"  - {name: duo, scope: key, match: {path_prefix: /duo}, "
	"limit: 2/min}\n"
	"  - {name: duo-ip, scope: ip, match: {path_prefix: /duo}, "
	"limit: 1000/s}\n"
	"  - {name: shut, scope: key, match: {path_prefix: /shut}, "
	"limit: 100/min, on_store_failure: fail_closed}\n"
	"  - {name: open, scope: key, match: {path_prefix: /open}, "
	"limit: 1/min, on_store_failure: fail_open}\n"
	"  - {name: bulk, scope: key, match: {path_prefix: /bulk}, limit: "
	"20/min, burst: 20, cost_from_response: X-RateLimit-Cost}\n"
	"  - {name: fast, scope: key, match: {path_prefix: /fast}, limit: "
	"10/s, burst: 8}\n"
	"  - {name: held, scope: key, match: {path_prefix: /held}, limit: "
	"60/min, burst: 10, accuracy: 0.2}\n"
	"  - {name: slog, scope: key, match: {path_prefix: /slog}, limit: "
	"3/min, algorithm: sliding_log}\n"
	"  - {name: tfree, scope: key, tier: free, match: {path_prefix: "
	"/tier}, limit: 1/min, burst: 1}\n"
	"  - {name: tpro, scope: key, tier: pro, match: {path_prefix: /tier}, "
	"limit: 100/min, burst: 100}\n"
	"response: {retry_jitter: 0, keep_alive: false}\n";

static struct sl_app app;
static struct sl_config *cfg;
static struct rte_mempool *pool;
static uint16_t next_cport = 40000;

/* ---- frames ---- */

static struct rte_mbuf *
frame(int from_client, const struct conn *c, uint8_t flags, const char *data)
{
	struct rte_mbuf *m = dp_frame(pool, from_client, c, flags, data);

	assert_non_null(m);
	return m;
}

/* What the worker sent towards port index dir since the last call. */
static unsigned int
sent(int dir, struct rte_mbuf **out, unsigned int max)
{
	return rte_eth_rx_burst(app.port[dir], 0, out, (uint16_t)max);
}

static uint8_t
flags_of(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const uint8_t *)[14 + 20 + 13];
}

static const char *
payload(const struct rte_mbuf *m, uint32_t *len)
{
	*len = m->data_len - 54;
	return rte_pktmbuf_mtod_offset(m, const char *, 54);
}

/* The three-way handshake, through the worker both ways. */
static struct conn
open_conn(struct sl_worker *w)
{
	struct conn c = {.cport = next_cport++, .cseq = 1000, .sseq = 5000};

	dp_handshake(w, pool, &c);
	dp_drain(&app);
	return c;
}

static void
request(struct sl_worker *w, struct conn *c, const char *path, const char *key)
{
	char head[256];

	snprintf(head, sizeof(head),
		 "GET %s HTTP/1.1\r\nHost: api\r\nX-API-Key: %s\r\n\r\n", path,
		 key);
	dp_burst(w, frame(1, c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, head),
		 DOWN);
	c->cseq += (uint32_t)strlen(head);
}

/* Two requests pipelined in one segment, with key. */
static void
two_heads(struct sl_worker *w, struct conn *c, const char *p1, const char *p2,
	  const char *key)
{
	char heads[512];
	int n = snprintf(
		heads, sizeof(heads),
		"GET %s HTTP/1.1\r\nHost: api\r\nX-API-Key: %s\r\n\r\n"
		"GET %s HTTP/1.1\r\nHost: api\r\nX-API-Key: %s\r\n\r\n",
		p1, key, p2, key);

	dp_burst(w, frame(1, c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads),
		 DOWN);
	c->cseq += (uint32_t)n;
}

/* A server segment through the worker; its ack is the client's next. */
static void
server(struct sl_worker *w, struct conn *c, uint8_t flags, const char *data)
{
	dp_burst(w, frame(0, c, flags, data), UP);
	c->sseq += (uint32_t)(data != NULL ? strlen(data) : 0) +
		   ((flags & RTE_TCP_FIN_FLAG) ? 1 : 0);
}

/* The request went on to the backend, its bytes unchanged. */
static void
assert_forwarded(const char *path)
{
	struct rte_mbuf *m[4];
	unsigned int n = sent(UP, m, 4);
	uint32_t len;
	const char *p;

	assert_int_equal(n, 1);
	p = payload(m[0], &len);
	assert_true(len > strlen(path) + 4);
	assert_memory_equal(p + 4, path, strlen(path));
	assert_int_equal(sent(DOWN, m + 1, 3), 0);
	rte_pktmbuf_free(m[0]);
}

/* n frames went on to the backend, nothing to the client. */
static void
assert_forwarded_n(unsigned int n)
{
	struct rte_mbuf *m[8];
	unsigned int k = sent(UP, m, 8);

	assert_int_equal(k, n);
	rte_pktmbuf_free_bulk(m, k);
	assert_int_equal(sent(DOWN, m, 8), 0);
}

/*
 * Answered status, with the rule named; the backend got an RST for it,
 * and besides it only the forwarded requests of others (their number).
 */
static void
assert_answered_and(const char *status, const char *rule,
		    unsigned int forwarded)
{
	struct rte_mbuf *m[4];
	unsigned int n = sent(DOWN, m, 4), u, rst = 0;
	char text[1024];
	uint32_t len;
	const char *p;

	assert_int_equal(n, 1);
	p = payload(m[0], &len);
	assert_true(len < sizeof(text));
	memcpy(text, p, len);
	text[len] = '\0';
	assert_memory_equal(text, "HTTP/1.1 ", 9);
	assert_memory_equal(text + 9, status, strlen(status));
	if (rule != NULL)
		assert_non_null(strstr(text, rule));
	assert_true(flags_of(m[0]) & RTE_TCP_FIN_FLAG);
	rte_pktmbuf_free(m[0]);
	n = sent(UP, m, 4);
	for (u = 0; u < n; u++) {
		rst += (flags_of(m[u]) & RTE_TCP_RST_FLAG) != 0;
		rte_pktmbuf_free(m[u]);
	}
	assert_int_equal(rst, 1);
	assert_int_equal(n, 1 + forwarded);
}

static void
assert_answered(const char *status, const char *rule)
{
	assert_answered_and(status, rule, 0);
}

/* ---- the worker under test ---- */

static struct sl_worker *
worker(int leased)
{
	struct sl_worker *w = rte_zmalloc(NULL, sizeof(*w), 64);

	assert_non_null(w);
	sl_app_set_coord(&app, leased ? sl_coord_create(1, 1024) : NULL);
	if (leased)
		assert_non_null(app.coord);
	assert_int_equal(sl_worker_init(w, &app, rte_lcore_id(), 0, 0), 0);
	return w;
}

static void
done(struct sl_worker *w)
{
	dp_drain(&app);
	sl_worker_free(w);
	rte_free(w);
	sl_coord_free(app.coord);
	sl_app_set_coord(&app, NULL);
}

/* Local buckets: two allowed, the third answered 429 with its numbers. */
static void
local_limit(void **state)
{
	struct sl_worker *w = worker(0);
	struct conn c;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		c = open_conn(w);
		request(w, &c, "/two", "k-local");
		assert_forwarded("/two");
	}
	c = open_conn(w);
	request(w, &c, "/two", "k-local");
	assert_answered("429", "two");
	/* another key has its own budget */
	c = open_conn(w);
	request(w, &c, "/two", "k-other");
	assert_forwarded("/two");
	assert_int_equal(w->ctr.allowed, 3);
	assert_int_equal(w->ctr.rejected, 1);
	assert_int_equal(w->ctr.replies, 1);
	done(w);
}

/* A head the parser refuses is answered 400 and never reaches the
 * backend; traffic to a port that is not a service port passes as is. */
static void
refused_and_passthrough(void **state)
{
	struct sl_worker *w = worker(0);
	struct conn c = open_conn(w);
	struct rte_mbuf *m[4];
	const char *bad = "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";

	(void)state;
	dp_burst(w, frame(1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, bad),
		 DOWN);
	assert_answered("400", NULL);
	assert_int_equal(w->ctr.invalid, 1);
	c = (struct conn){.cport = 443, .cseq = 1, .sseq = 1};
	/* port 443 on the server side: not inspected */
	{
		struct rte_mbuf *f = frame(1, &c, RTE_TCP_ACK_FLAG, "hello");
		uint8_t *tcp = rte_pktmbuf_mtod_offset(f, uint8_t *, 34);

		tcp[2] = 0x01; /* destination port 443 */
		tcp[3] = 0xbb;
		dp_burst(w, f, DOWN);
	}
	assert_int_equal(sent(UP, m, 4), 1);
	assert_int_equal(w->ctr.passthrough, 1);
	rte_pktmbuf_free(m[0]);
	done(w);
}

/* The coordinator's turn on the main lcore, then the worker's. */
static void
coord_turn(struct sl_worker *w)
{
	sl_coord_poll(app.coord, sl_tsc_ns(&app, rte_rdtsc()));
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(&app, w->now);
	sl_worker_leases(w);
	sl_worker_flush(w);
}

/* Leases: a request waits (parked) for the coordinator's grant and goes
 * on when it comes; the third of a 2/min limit is refused by it. */
static void
leased_limit(void **state)
{
	struct sl_worker *w = worker(1);
	struct rte_mbuf *m[4];
	struct conn c;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		c = open_conn(w);
		request(w, &c, "/two", "k-leased");
		/* nothing leaves before the coordinator answers */
		assert_int_equal(sent(UP, m, 4), 0);
		assert_false(sl_parkq_empty(&w->parkq));
		coord_turn(w);
		assert_true(sl_parkq_empty(&w->parkq));
		assert_forwarded("/two");
	}
	c = open_conn(w);
	request(w, &c, "/two", "k-leased");
	coord_turn(w);
	assert_answered("429", "two");
	/* the refusal is remembered: the next is answered without asking */
	c = open_conn(w);
	request(w, &c, "/two", "k-leased");
	assert_answered("429", "two");
	assert_int_equal(w->ctr.parked, 3);
	assert_int_equal(app.coord->st.refusals, 1);
	done(w);
}

/*
 * A key refused above its limit, then sent below it, is served: the
 * node's own authority reserves nothing, so a key seen at its limit asks
 * for what its request needs, not for a whole lease, which would refuse
 * it until all of that lease had refilled (a client at 0.67 of a 10/s
 * limit was refused for 2 s so).
 */
static void
below_after_refusals(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c;
	int i;

	(void)state;
	/* the burst of 8, then refusals: the key is at its limit */
	for (i = 0; i < 12; i++) {
		c = open_conn(w);
		request(w, &c, "/fast", "k-fast");
		coord_turn(w);
		dp_drain(&app);
	}
	assert_true(w->ctr.rejected >= 2);
	/* 150 ms: a unit and a half back at 10/s, far from a lease's worth */
	rte_delay_us_sleep(150000);
	c = open_conn(w);
	request(w, &c, "/fast", "k-fast");
	coord_turn(w);
	assert_forwarded("/fast");
	done(w);
}

/*
 * Units a worker holds were granted: its ask ahead refused (the
 * authority spent by then) leaves them spendable. Refused outright
 * until the authority's retry time, the key's client met a 429 with
 * the limit's last unit in hand (9 of a burst of 10 admitted, then
 * refusals for a second, the held unit given back unspent).
 */
static void
held_after_refusal_by(uint32_t holders)
{
	struct sl_worker *w;
	uint64_t first = 0, asks_refused = UINT64_MAX;
	uint32_t was = app.holders;
	struct conn c;
	int i;

	app.holders = holders;
	w = worker(1);
	for (i = 0; i < 16 && w->ctr.rejected == 0; i++) {
		c = open_conn(w);
		request(w, &c, "/held", "k-held");
		coord_turn(w);
		coord_turn(w);
		dp_drain(&app);
		if (w->ctr.rejected == 0)
			first = w->ctr.allowed;
		if (app.coord->st.refusals > 0 && asks_refused == UINT64_MAX)
			asks_refused = w->ctr.coord_asks;
		/* paced, so that the lease is sized by the rate seen, and
		 * asked for ahead of need */
		rte_delay_us_sleep(40000);
	}
	/* every unit of the burst before the first refusal */
	assert_int_equal(w->ctr.rejected, 1);
	assert_true(first >= 10);
	assert_true(w->ctr.coord_asks < first);
	/* and no ask once the authority refused, the held units spent
	 * and the 429 answered under its refusal (each would be refused
	 * again: a store call a request for nothing) */
	assert_true(asks_refused != UINT64_MAX);
	assert_int_equal(w->ctr.coord_asks, asks_refused);
	done(w);
	app.holders = was;
}

static void
held_after_refusal(void **state)
{
	(void)state;
	held_after_refusal_by(1);
	/* the limit shared with another holder: half the slice, leases
	 * sized for two, the same units held and spent */
	held_after_refusal_by(2);
}

/*
 * No answer from the coordinator in time: the worker decides alone, from
 * its slice of each limit, whatever the rule's on_store_failure (that is
 * for the coordinator, which knows whether the store is out); and what
 * it admitted so is charged to the authority when the coordinator runs.
 */
static void
degraded(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c;
	int k;

	(void)state;
	c = open_conn(w);
	request(w, &c, "/shut", "k-degraded");
	c = open_conn(w);
	request(w, &c, "/open", "k-degraded");
	/* the coordinator does not run; the worker's clock passes the
	 * timeout, twice: the first turn notices, the next decides */
	rte_delay_us_block((unsigned int)(app.store_timeout_ns / 1000) + 1000);
	for (k = 0; k < 2; k++) {
		w->now = rte_rdtsc();
		w->now_ns = sl_tsc_ns(&app, w->now);
		sl_worker_leases(w);
	}
	sl_worker_flush(w);
	assert_true(sl_parkq_empty(&w->parkq));
	assert_int_equal(w->ctr.degraded, 2);
	assert_int_equal(w->ctr.allowed, 2);
	assert_forwarded_n(2);
	/* the coordinator's answers come late: their units cover the two
	 * admitted meanwhile (nothing reported taken, nothing spent
	 * twice), and the open rule's limit (1/min) is spent */
	coord_turn(w);
	assert_int_equal(app.coord->st.taken_units, 0);
	c = open_conn(w);
	request(w, &c, "/open", "k-degraded");
	coord_turn(w);
	assert_answered("429", "open");
	done(w);
}

/*
 * Requests pipelined in one segment wait for the coordinator together:
 * the first parks with the segment, its ask sized for the head behind
 * it, and on the grant the second is read on and decided from what the
 * grant left. Neither is decided from the worker's empty slice, and the
 * two do not add to what the same key gets afterwards — a 2/min key
 * gets two in all, not four.
 */
static void
pipelined(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);
	struct rte_mbuf *m[4];
	int i;

	(void)state;
	two_heads(w, &c, "/two", "/two", "k-pipe");
	/* nothing leaves before the grant: the first head waits for it */
	assert_false(sl_parkq_empty(&w->parkq));
	assert_int_equal(sent(UP, m, RTE_DIM(m)), 0);
	coord_turn(w);
	assert_int_equal(w->ctr.allowed, 2);
	assert_int_equal(w->ctr.decided_alone, 0);
	assert_int_equal(w->ctr.degraded, 0);
	assert_int_equal(w->ctr.parked, 1);
	assert_int_equal(app.coord->st.taken_units, 0);
	assert_forwarded_n(1); /* both in the one segment */
	for (i = 0; i < 2; i++) {
		c = open_conn(w);
		request(w, &c, "/two", "k-pipe");
		coord_turn(w);
		coord_turn(w);
		assert_answered("429", "two");
	}
	assert_int_equal(w->ctr.allowed, 2);
	done(w);
}

/*
 * A key whose lease is spent, its next two heads pipelined: the first
 * waits again, and its ask is sized for both, so the second is decided
 * from the grant too (a lease asked for one unit left it to the worker's
 * empty slice: decided alone).
 */
static void
pipelined_granted(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);

	(void)state;
	request(w, &c, "/fast", "k-pipe-fast");
	coord_turn(w);
	assert_forwarded("/fast");
	c = open_conn(w);
	two_heads(w, &c, "/fast", "/fast", "k-pipe-fast");
	coord_turn(w);
	assert_int_equal(w->ctr.parked, 2);
	assert_int_equal(w->ctr.allowed, 3);
	assert_int_equal(w->ctr.decided_alone, 0);
	assert_forwarded_n(1); /* both in the one segment */
	done(w);
}

/* n heads of key to path in one segment. */
static void
n_heads(struct sl_worker *w, struct conn *c, const char *path, const char *key,
	int n)
{
	char heads[1024];
	int len = 0, i;

	for (i = 0; i < n; i++)
		len += snprintf(heads + len, sizeof(heads) - (size_t)len,
				"GET %s HTTP/1.1\r\nHost: api\r\n"
				"X-API-Key: %s\r\n\r\n",
				path, key);
	dp_burst(w, frame(1, c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads),
		 DOWN);
	c->cseq += (uint32_t)len;
}

/*
 * Two pipelined segments of one key wait while a single ask is out (the
 * second asks nothing, its lease pending): the grant, sized for the
 * first's heads, falls short of the second's, which asks again for its
 * own rather than having its heads behind decided by the worker alone.
 */
static void
pipelined_second_wait(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c1 = open_conn(w), c2 = open_conn(w);

	(void)state;
	n_heads(w, &c1, "/fast", "k-pipe-two", 3);
	n_heads(w, &c2, "/fast", "k-pipe-two", 3);
	assert_int_equal(w->ctr.parked, 2);
	assert_int_equal(w->ctr.coord_asks, 1);
	coord_turn(w);
	coord_turn(w);
	assert_int_equal(w->ctr.allowed, 6);
	assert_int_equal(w->ctr.decided_alone, 0);
	assert_int_equal(w->ctr.degraded, 0);
	assert_int_equal(w->ctr.coord_asks, 2);
	assert_forwarded_n(2);
	done(w);
}

/*
 * The same at the limit's edge: the second segment's grant is the last
 * the authority had (3 of a burst of 8 after the first took 5), so no
 * second ask, whose refusal would refuse what the lease holds: the
 * waiting head and two behind it go on with its 3 units.
 */
static void
pipelined_edge_no_topup(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c1 = open_conn(w), c2 = open_conn(w);

	(void)state;
	n_heads(w, &c1, "/fast", "k-pipe-edge", 5);
	coord_turn(w);
	assert_int_equal(w->ctr.allowed, 5);
	n_heads(w, &c2, "/fast", "k-pipe-edge", 5);
	coord_turn(w);
	coord_turn(w);
	assert_true(sl_parkq_empty(&w->parkq));
	assert_int_equal(w->ctr.coord_asks, 2);
	assert_true(w->ctr.allowed >= 8);
	done(w);
}

/*
 * Under a sliding log a grant is logged at once, so it is asked for the
 * waiting head and those behind it, all spent on it: three pipelined
 * requests of a 3/min log all go on from one grant (asked for the first
 * alone, the two behind it were decided alone, from the worker's slice
 * of the limit, which every holder in the fleet shares), and the
 * segment asks nothing more.
 */
static void
pipelined_log(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);

	(void)state;
	n_heads(w, &c, "/slog", "k-pipe-log", 3);
	assert_int_equal(w->ctr.parked, 1);
	coord_turn(w);
	assert_true(sl_parkq_empty(&w->parkq));
	assert_int_equal(w->ctr.coord_asks, 1);
	assert_int_equal(w->ctr.allowed, 3);
	assert_int_equal(w->ctr.rejected, 0);
	assert_int_equal(w->ctr.decided_alone, 0);
	assert_forwarded_n(1);
	/* and the log holds: a fourth is refused */
	c = open_conn(w);
	request(w, &c, "/slog", "k-pipe-log");
	coord_turn(w);
	coord_turn(w);
	assert_answered("429", "slog");
	done(w);
}

/*
 * A request refused after waiting, behind one of its segment that was
 * allowed: the allowed one goes on alone (its bytes cut off the rest),
 * and the refused one is answered when the client sends it again.
 */
static void
refused_behind_allowed(void **state)
{
	struct sl_worker *w = worker(1);
	struct rte_mbuf *m[4];
	struct conn c;
	char heads[512];
	uint32_t len;
	int i;

	(void)state;
	/* one connection, keep-alive: each request answered by the server
	 * before the next */
	c = open_conn(w);
	for (i = 0; i < 2; i++) {
		request(w, &c, "/duo", "k-order");
		coord_turn(w);
		assert_forwarded("/duo");
		dp_burst(w,
			 frame(0, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG,
			       "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
			 UP);
		c.sseq += 38;
		dp_drain(&app);
	}
	snprintf(
		heads, sizeof(heads),
		"GET /free HTTP/1.1\r\nHost: api\r\n\r\n"
		"GET /duo HTTP/1.1\r\nHost: api\r\nX-API-Key: k-order\r\n\r\n");
	dp_burst(w, frame(1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads),
		 DOWN);
	coord_turn(w);
	assert_int_equal(sent(DOWN, m, 4), 0);
	assert_int_equal(sent(UP, m, 4), 1);
	payload(m[0], &len);
	assert_int_equal(len, 33); /* "GET /free ..." alone */
	rte_pktmbuf_free(m[0]);
	done(w);
}

/* A POST of key to /two with its body, in one segment. */
static void
post_with_body(struct sl_worker *w, struct conn *c, const char *key,
	       const char *body)
{
	char seg[256];

	snprintf(seg, sizeof(seg),
		 "POST /two HTTP/1.1\r\nHost: api\r\nX-API-Key: %s\r\n"
		 "Content-Length: %zu\r\n\r\n%s",
		 key, strlen(body), body);
	dp_burst(w, frame(1, c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, seg),
		 DOWN);
}

/* The client got 400 body_request; the backend the RST alone, no byte of
 * the segment. */
static void
assert_body_request_refused(void)
{
	struct rte_mbuf *m[8];
	uint32_t len;
	const char *p;

	assert_int_equal(sent(DOWN, m, RTE_DIM(m)), 1);
	p = payload(m[0], &len);
	assert_true(len > 12 && memcmp(p, "HTTP/1.1 400", 12) == 0);
	assert_non_null(memmem(p, len, "body_request", 12));
	rte_pktmbuf_free(m[0]);
	assert_int_equal(sent(UP, m, RTE_DIM(m)), 1);
	payload(m[0], &len);
	assert_int_equal(len, 0);
	rte_pktmbuf_free(m[0]);
}

/*
 * A head that would wait for the coordinator, its body in the same
 * segment, and that body a request to a backend ignoring Content-Length:
 * refused at once (400 body_request), not parked. Parked, the body was
 * read after the grant with no one to answer it, and the connection
 * went on unread: the body's request and all that followed undecided.
 */
static void
body_request_not_parked(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);

	(void)state;
	post_with_body(w, &c, "k-cl0",
		       "GET /admin HTTP/1.1\r\nHost: api\r\n\r\n");
	assert_true(sl_parkq_empty(&w->parkq));
	coord_turn(w);
	assert_body_request_refused();
	done(w);
}

/*
 * The worker's second wall behind parkable(): whatever the bytes after a
 * parked head read as once it is granted, a refusal found there is
 * answered, and no byte of the segment goes on. The test parks a head
 * with a JSON body, then rewrites the parked body in place to a request
 * line, which parkable() would not have let wait.
 */
static void
resume_refusal_answered(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);
	static const char body[] = "{\"a\": \"GET /admin HTTP/1.1\"}";
	static const char req[] = "GET /admin HTTP/1.1\r\n";
	const struct sl_parked *e;
	uint8_t *b;

	(void)state;
	post_with_body(w, &c, "k-resume", body);
	assert_false(sl_parkq_empty(&w->parkq));
	e = sl_parkq_entry(&w->parkq, w->parkq.head);
	assert_int_equal(e->rest_len, strlen(body));
	b = rte_pktmbuf_mtod(e->m, uint8_t *) + e->p.payload_off + e->rest_off;
	memcpy(b, req, strlen(req));
	coord_turn(w);
	assert_body_request_refused();
	done(w);
}

/*
 * A parked request's connection keeps sending (its body): the segments
 * wait with it, up to SL_PARK_HELD; those beyond are dropped and counted
 * (the client sends them again), and when the grant comes the head and
 * every held segment go on in order. No mbuf is lost either way. (A
 * JSON body: its first byte tells lib/flow it is no request line, and
 * what follows is not kept as decided bytes.)
 */
static void
overload_park_held(void **state)
{
	struct sl_worker *w = worker(1);
	struct rte_mbuf *m[SL_PARK_HELD + 8];
	unsigned int avail, n, i;
	struct conn c = open_conn(w);
	char head[256], seq[16];
	uint32_t len;

	(void)state;
	avail = rte_mempool_avail_count(pool);
	snprintf(head, sizeof(head),
		 "POST /two HTTP/1.1\r\nHost: api\r\nX-API-Key: k-held\r\n"
		 "Content-Length: %d\r\n\r\n",
		 (SL_PARK_HELD + 2) * 8);
	dp_burst(w, frame(1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, head),
		 DOWN);
	c.cseq += (uint32_t)strlen(head);
	assert_false(sl_parkq_empty(&w->parkq));
	for (i = 0; i < SL_PARK_HELD + 2; i++) {
		snprintf(seq, sizeof(seq), "{%06u}", i);
		dp_burst(w, frame(1, &c, RTE_TCP_ACK_FLAG, seq), DOWN);
		c.cseq += 8;
	}
	assert_int_equal(w->ctr.park_dropped, 2);
	assert_int_equal(sent(UP, m, RTE_DIM(m)), 0);
	coord_turn(w);
	n = sent(UP, m, RTE_DIM(m));
	assert_int_equal(n, 1 + SL_PARK_HELD);
	payload(m[0], &len);
	assert_int_equal(len, strlen(head));
	for (i = 1; i < n; i++) {
		const char *p = payload(m[i], &len);

		snprintf(seq, sizeof(seq), "{%06u}", i - 1);
		assert_int_equal(len, 8);
		assert_memory_equal(p, seq, 8);
	}
	rte_pktmbuf_free_bulk(m, n);
	/* the server acknowledges them: what was kept of them given back,
	 * freed a burst later or once the worker finds nothing to read */
	dp_burst(w, frame(0, &c, RTE_TCP_ACK_FLAG, ""), UP);
	dp_drain(&app);
	assert_int_not_equal(rte_mempool_avail_count(pool), avail);
	dp_burst(w, frame(0, &c, RTE_TCP_ACK_FLAG, ""), UP);
	dp_drain(&app);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
	done(w);
}

/*
 * The port's TX queue full (nothing reads the ring behind it): what the
 * worker could not send is counted in tx_dropped and freed, never kept
 * and never sent twice; the rest went out once.
 */
static void
overload_tx_full(void **state)
{
	struct sl_worker *w = worker(0);
	struct rte_mbuf *m[64];
	unsigned int avail, total = 0, n, i;
	struct conn c = {.cport = 443, .cseq = 1, .sseq = 1};
	const unsigned int frames =
		1500; /* more than the ring behind the port */

	(void)state;
	dp_drain(&app);
	avail = rte_mempool_avail_count(pool);
	for (i = 0; i < frames; i++) {
		/* not a service port: forwarded as it is */
		struct rte_mbuf *f = frame(1, &c, RTE_TCP_ACK_FLAG, "x");
		uint8_t *tcp = rte_pktmbuf_mtod_offset(f, uint8_t *, 34);

		tcp[2] = 0x01;
		tcp[3] = 0xbb;
		dp_burst(w, f, DOWN);
	}
	assert_true(w->ctr.tx_dropped > 0);
	assert_int_equal(w->ctr.tx + w->ctr.tx_dropped, frames);
	while ((n = sent(UP, m, RTE_DIM(m))) > 0) {
		total += n;
		rte_pktmbuf_free_bulk(m, n);
	}
	assert_int_equal(total, w->ctr.tx);
	assert_int_equal(rte_mempool_avail_count(pool), avail);
	done(w);
}

/* The frames sent each way since the last call: those with flag set. */
static void
count_sent(unsigned int *up, unsigned int *down, uint8_t flag,
	   unsigned int *up_flag, unsigned int *down_flag)
{
	struct rte_mbuf *m[8];
	unsigned int n, i;

	n = sent(UP, m, 8);
	*up = n;
	for (*up_flag = 0, i = 0; i < n; i++)
		*up_flag += (flags_of(m[i]) & flag) != 0;
	rte_pktmbuf_free_bulk(m, n);
	n = sent(DOWN, m, 8);
	*down = n;
	for (*down_flag = 0, i = 0; i < n; i++)
		*down_flag += (flags_of(m[i]) & flag) != 0;
	rte_pktmbuf_free_bulk(m, n);
}

static const char COST5[] = "HTTP/1.1 200 OK\r\nX-RateLimit-Cost: 5\r\n"
			    "Content-Length: 0\r\n\r\n";

/* A connection whose first request (key's) was answered: it cost 5. */
static struct conn
answered_conn(struct sl_worker *w, const char *key)
{
	struct conn c = open_conn(w);

	request(w, &c, "/bulk/1", key);
	coord_turn(w);
	server(w, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, COST5);
	dp_drain(&app);
	return c;
}

/* The server's RST after its FIN: nothing left to presume. */
static void
server_resets(struct sl_worker *w, struct conn *c)
{
	uint64_t presumed = w->ctr.cost_presumed;

	server(w, c, RTE_TCP_RST_FLAG, NULL);
	assert_int_equal(w->ctr.cost_presumed, presumed);
	dp_drain(&app);
}

/*
 * The server closes a connection as its client sends the next request
 * (the keep-alive race): the request its FIN shows unanswered, or one
 * still parked when the FIN came, keeps its declared cost, and is not
 * charged the most it could cost when the connection ends (the client
 * did nothing to keep its response from being read; its retry would be
 * refused). A client that resets before its response still is.
 */
static void
server_closes(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c;
	uint32_t len;

	(void)state;
	/* forwarded, then the server's FIN and RST */
	c = answered_conn(w, "k-fin");
	assert_int_equal(w->ctr.cost_settled, 1);
	request(w, &c, "/bulk/2", "k-fin");
	coord_turn(w);
	server(w, &c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, NULL);
	assert_int_equal(w->ctr.cost_unanswered, 1);
	server_resets(w, &c);
	/* parked (a key not asked for yet) when the FIN comes */
	c = answered_conn(w, "k-park");
	len = c.cseq;
	request(w, &c, "/bulk/2", "k-park2");
	assert_false(sl_parkq_empty(&w->parkq));
	len = c.cseq - len;
	c.cseq -= len; /* the server has not had it */
	server(w, &c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, NULL);
	c.cseq += len;
	coord_turn(w);
	assert_true(sl_parkq_empty(&w->parkq));
	assert_int_equal(w->ctr.cost_unanswered, 2);
	server_resets(w, &c);
	/* the client resets before its response: the most it could cost */
	c = open_conn(w);
	request(w, &c, "/bulk/1", "k-rst");
	coord_turn(w);
	dp_burst(w, frame(1, &c, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG, NULL),
		 DOWN);
	assert_int_equal(w->ctr.cost_presumed, 1);
	assert_int_equal(w->ctr.cost_unanswered, 2);
	done(w);
}

static const char R503[] = "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n";
static const char R200_404[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			       "HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n";

/* Rule slot s's health: status classes 0 (unanswered), 2, 4, 5, timed. */
static void
assert_health(const struct sl_worker *w, uint16_t s, uint64_t none, uint64_t c2,
	      uint64_t c4, uint64_t c5, uint64_t timed)
{
	assert_int_equal(w->hl[s].cls[0], none);
	assert_int_equal(w->hl[s].cls[2], c2);
	assert_int_equal(w->hl[s].cls[4], c4);
	assert_int_equal(w->hl[s].cls[5], c5);
	assert_int_equal(w->hl[s].timed, timed);
}

/*
 * Retry-After's jitter: the time until the units are there, rounded up,
 * plus a draw in [0, spread], spread that share of it; every value of
 * the range is drawn, none outside it.
 */
static void
retry_jitter(void **state)
{
	struct sl_worker *w = worker(0);
	uint32_t seen = 0, i;

	(void)state;
	for (i = 0; i < 4000; i++) {
		/* 9.2 s: 10 s, and half of it spread (5) */
		uint64_t s = sl_retry_seconds(w, 9200000000ULL, 500000, 0);

		assert_in_range(s, 10, 15);
		seen |= 1u << (s - 10);
	}
	assert_int_equal(seen, 0x3f);
	assert_int_equal(sl_retry_seconds(w, 9200000000ULL, 0, 0), 10);
	done(w);
}

/*
 * What the backend answered, counted for every rule that let the request
 * go: a 503 and its time, two pipelined answers in one segment (the
 * second not timed: it waited behind the first), and a request whose
 * connection reset before its answer. Another rule's requests count for
 * that rule alone. An answer the framer cannot read is counted apart.
 */
static void
backend_health(void **state)
{
	struct sl_worker *w = worker(0);
	uint16_t duo = app.policy->slot[1], ip = app.policy->slot[2],
		 fast = app.policy->slot[6];
	struct conn c = open_conn(w);

	(void)state;
	request(w, &c, "/duo/1", "k-h1");
	dp_drain(&app);
	server(w, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, R503);
	assert_health(w, duo, 0, 0, 0, 1, 1);
	assert_health(w, ip, 0, 0, 0, 1, 1);
	assert_int_equal(w->hl[duo].bytes, strlen(R503));
	two_heads(w, &c, "/duo/2", "/duo/3", "k-h2");
	dp_drain(&app);
	server(w, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, R200_404);
	assert_health(w, duo, 0, 1, 1, 1, 2);
	assert_int_equal(w->hl[ip].bytes, strlen(R503) + strlen(R200_404));
	request(w, &c, "/duo/4", "k-h3");
	dp_drain(&app);
	dp_burst(w, frame(1, &c, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG, NULL),
		 DOWN);
	dp_drain(&app);
	assert_health(w, ip, 1, 1, 1, 1, 2);
	c = open_conn(w);
	request(w, &c, "/fast/1", "k-h4");
	dp_drain(&app);
	server(w, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, R503);
	assert_health(w, fast, 0, 0, 0, 1, 1);
	assert_health(w, duo, 1, 1, 1, 1, 2);
	/* bytes missing before the answer: the framer lost count, which
	 * says nothing of the backend (not unanswered) */
	c = open_conn(w);
	request(w, &c, "/duo/5", "k-h5");
	dp_drain(&app);
	c.sseq += 100;
	server(w, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, R503);
	assert_health(w, duo, 1, 1, 1, 1, 2);
	assert_int_equal(w->hl[duo].unframed, 1);
	assert_int_equal(w->ctr.health_unattributed, 0);
	done(w);
}

/* A request sent after the server's FIN came: it can neither be answered
 * nor acted on. Never decided, nothing forwarded: both sides reset. */
static void
request_after_fin(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = answered_conn(w, "k-late");
	uint64_t requests;
	unsigned int up, down, up_f, down_f;

	(void)state;
	server(w, &c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, NULL);
	dp_drain(&app);
	requests = w->ctr.requests;
	request(w, &c, "/bulk/2", "k-late");
	count_sent(&up, &down, RTE_TCP_RST_FLAG, &up_f, &down_f);
	assert_int_equal(up, 1);
	assert_int_equal(up_f, 1);
	assert_int_equal(down, 1);
	assert_int_equal(down_f, 1);
	assert_int_equal(w->ctr.requests, requests);
	assert_int_equal(sl_flow_stats(w->flows)->after_close, 1);
	done(w);
}

/* The tier asks the worker sent the authority since the last call. */
static unsigned int
tier_asks(struct sl_worker *w)
{
	struct sl_coord_msg m[16];
	unsigned int n, i, asks = 0;

	while ((n = rte_ring_dequeue_burst_elem(app.lanes->ask[w->queue], m,
						sizeof(m[0]), 16, NULL)) > 0)
		for (i = 0; i < n; i++)
			asks += m[i].type == SL_CO_TIER;
	return asks;
}

/* The authority's answer to a tier ask for key, as the store gives it. */
static struct sl_coord_msg
tier_answer(const char *key, uint8_t found, const char *tier)
{
	struct sl_coord_msg a;

	memset(&a, 0, sizeof(a));
	a.type = SL_CO_TIER_ANSWER;
	a.k1 = sl_hash64(key, (uint32_t)strlen(key), 0x7431);
	a.k2 = sl_hash64(key, (uint32_t)strlen(key), 0x7432);
	a.tier.found = found;
	a.tier.len = (uint8_t)strlen(tier);
	memcpy(a.tier.text, tier, a.tier.len);
	return a;
}

static void
tier_says(struct sl_worker *w, const char *key, uint8_t found, const char *tier)
{
	struct sl_coord_msg a = tier_answer(key, found, tier);

	sl_tier_answer(w, &a);
}

static int
tier(struct sl_worker *w, const char *key)
{
	struct sl_bucket_key asked;

	return sl_tier_of(w, key, (uint32_t)strlen(key), &asked);
}

/*
 * A key's tier from the keys hash: not known until the first answer;
 * once known, it stands while it is asked again at its TTL and while
 * the store cannot say (then asked again within a second), instead of
 * dropping the key to the default tier meanwhile.
 */
static void
tier_cache(void **state)
{
	struct sl_worker *w = worker(1);
	const uint64_t s = 1000000000ULL;
	int pro;
	/* as if a store stood behind the authority: what the worker asks
	 * it is read off the ring here, and answered by hand */
	struct sl_lanes *lanes = (struct sl_lanes *)(uintptr_t)app.lanes;
	uint8_t had = lanes->store;

	(void)state;
	lanes->store = 1;
	w->pol = app.policy;
	pro = sl_ruleset_tier_of_hash(w->pol->rs, sl_tier_hash("pro", 3));
	assert_true(pro > 0);
	w->now_ns = 10 * s;
	assert_int_equal(tier(w, "k-t"), SL_TIER_ANY); /* being asked */
	assert_int_equal(tier_asks(w), 1);
	assert_int_equal(tier(w, "k-t"), SL_TIER_ANY);
	assert_int_equal(tier_asks(w), 0); /* asked already */
	tier_says(w, "k-t", SL_TIER_NAMED, "pro");
	assert_int_equal(tier(w, "k-t"), pro);
	/* its TTL past: asked again, pro meanwhile */
	w->now_ns += 61 * s;
	assert_int_equal(tier(w, "k-t"), pro);
	assert_int_equal(tier_asks(w), 1);
	/* the store cannot say: still pro, asked again within a second */
	tier_says(w, "k-t", SL_TIER_UNSAID, "");
	assert_int_equal(tier(w, "k-t"), pro);
	assert_int_equal(tier_asks(w), 0);
	w->now_ns += s + 1;
	assert_int_equal(tier(w, "k-t"), pro);
	assert_int_equal(tier_asks(w), 1);
	/* back after half an hour: pro while it is asked again */
	tier_says(w, "k-t", SL_TIER_NAMED, "pro");
	w->now_ns += 1800 * s;
	sl_bucket_begin(w->tiers); /* what the table would sweep by now */
	sl_bucket_expire(w->tiers, w->now_ns, 1u << 22);
	assert_int_equal(tier(w, "k-t"), pro);
	assert_int_equal(tier_asks(w), 1);
	/* the hash no longer names it: the default tier */
	tier_says(w, "k-t", SL_TIER_UNNAMED, "");
	assert_int_equal(tier(w, "k-t"), 0);
	assert_int_equal(tier_asks(w), 0);
	/* never known, and the store out: the default, asked again soon */
	assert_int_equal(tier(w, "k-u"), SL_TIER_ANY);
	assert_int_equal(tier_asks(w), 1);
	tier_says(w, "k-u", SL_TIER_UNSAID, "");
	assert_int_equal(tier(w, "k-u"), 0);
	assert_int_equal(tier_asks(w), 0);
	w->now_ns += s + 1;
	assert_int_equal(tier(w, "k-u"), 0);
	assert_int_equal(tier_asks(w), 1);
	lanes->store = had;
	done(w);
}

/* The key of the tier ask the worker sent last, its messages put
 * together as the authority does; its length, 0 if none was sent. */
static size_t
tier_ask_key(struct sl_worker *w, char *key, unsigned int *msgs)
{
	struct sl_coord_msg m[16];
	unsigned int n, i;
	size_t len = 0;

	*msgs = 0;
	n = rte_ring_dequeue_burst_elem(app.lanes->ask[w->queue], m,
					sizeof(m[0]), 16, NULL);
	for (i = 0; i < n; i++) {
		uint32_t part = m[i].type == SL_CO_TIER
					? RTE_MIN(m[i].tier.len, SL_TIER_TEXT)
					: m[i].tier.len;

		if (m[i].type == SL_CO_TIER)
			len = 0;
		else
			assert_int_equal(m[i].type, SL_CO_TIER_MORE);
		memcpy(key + len, m[i].tier.text, part);
		len += part;
		(*msgs)++;
	}
	return len;
}

/*
 * A key longer than one message is asked in several, put together by
 * the authority; one longer than SL_TIER_KEY_MAX is not asked (the
 * default tier); nor is a long key while the ring is half full, so
 * that a flood of long made-up keys leaves room for lease asks.
 */
static void
tier_long_key(void **state)
{
	struct sl_worker *w = worker(1);
	struct sl_lanes *lanes = (struct sl_lanes *)(uintptr_t)app.lanes;
	struct rte_ring *r = app.lanes->ask[w->queue];
	uint8_t had = lanes->store;
	char key[SL_TIER_KEY_MAX + 2], got[SL_TIER_KEY_MAX + 1];
	struct sl_coord_msg fill;
	unsigned int msgs, i;

	(void)state;
	lanes->store = 1;
	w->pol = app.policy;
	w->now_ns = 5000000000ULL;
	memset(key, 0, sizeof(key));
	memset(key, 'a', SL_TIER_KEY_MAX + 1);
	key[0] = 'x';
	key[SL_TIER_TEXT] = 'y'; /* the first byte of the second message */
	key[SL_TIER_KEY_MAX - 1] = 'z';
	/* 256 bytes: not asked, the default tier */
	assert_int_equal(tier(w, key), 0);
	assert_int_equal(tier_ask_key(w, got, &msgs), 0);
	/* 255: three messages, the key whole */
	key[SL_TIER_KEY_MAX] = '\0';
	assert_int_equal(tier(w, key), SL_TIER_ANY);
	assert_int_equal(tier_ask_key(w, got, &msgs), SL_TIER_KEY_MAX);
	assert_int_equal(msgs, 3);
	assert_memory_equal(got, key, SL_TIER_KEY_MAX);
	/* 103: two */
	key[SL_TIER_TEXT + 1] = '\0';
	assert_int_equal(tier(w, key), SL_TIER_ANY);
	assert_int_equal(tier_ask_key(w, got, &msgs), SL_TIER_TEXT + 1);
	assert_int_equal(msgs, 2);
	assert_memory_equal(got, key, SL_TIER_TEXT + 1);
	/* asked again (its answer due) and answered by the authority with
	 * no store behind it: the messages read as one ask, one answer */
	w->now_ns += app.store_timeout_ns + 1;
	key[SL_TIER_TEXT + 1] = 'b';
	key[SL_TIER_TEXT + 2] = '\0';
	assert_int_equal(tier(w, key), SL_TIER_ANY);
	assert_int_equal(tier(w, "k-short"), SL_TIER_ANY);
	coord_turn(w);
	assert_int_equal(tier(w, key), 0);
	assert_int_equal(tier(w, "k-short"), 0);
	assert_int_equal(rte_ring_count(r), 0);
	/* the ring half full: a short key is asked, a long one not */
	memset(&fill, 0, sizeof(fill));
	fill.type = SL_CO_DEMAND;
	for (i = 0; i < rte_ring_get_capacity(r) / 2 + 2; i++)
		assert_int_equal(rte_ring_enqueue_elem(r, &fill, sizeof(fill)),
				 0);
	key[0] = 'w';
	assert_int_equal(tier(w, key), 0);
	assert_int_equal(tier(w, "k-short2"), SL_TIER_ANY);
	assert_int_equal(rte_ring_count(r), rte_ring_get_capacity(r) / 2 + 3);
	rte_ring_reset(r);
	lanes->store = had;
	done(w);
}

/*
 * A key the keys hash names pro, seen for the first time: its request
 * waits for the tier with both tiers' limits and is decided under pro's,
 * not under the default (free, 1/min: a burst of one); the next ones
 * under pro at once.
 */
static void
tier_first_sight(void **state)
{
	struct sl_worker *w = worker(1);
	struct sl_lanes *lanes = (struct sl_lanes *)(uintptr_t)app.lanes;
	uint8_t had = lanes->store;
	struct sl_coord_msg a;
	struct rte_mbuf *m[4];
	struct conn c;
	int i, pro;

	(void)state;
	lanes->store = 1;
	pro = sl_ruleset_tier_of_hash(app.policy->rs, sl_tier_hash("pro", 3));
	c = open_conn(w);
	request(w, &c, "/tier/1", "k-first");
	assert_int_equal(sent(UP, m, 4), 0);
	assert_int_equal(w->ctr.tier_waits, 1);
	assert_int_equal(tier_asks(w), 1); /* the tier; no lease asked yet */
	a = tier_answer("k-first", SL_TIER_NAMED, "pro");
	assert_int_equal(
		rte_ring_enqueue_elem(app.lanes->ans[w->queue], &a, sizeof(a)),
		0);
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(&app, w->now);
	sl_worker_leases(w); /* the tier known: pro's lease asked */
	assert_int_equal(sent(UP, m, 4), 0);
	coord_turn(w);
	assert_forwarded("/tier/1");
	for (i = 2; i <= 3; i++) {
		char path[16];

		snprintf(path, sizeof(path), "/tier/%d", i);
		c = open_conn(w);
		request(w, &c, path, "k-first");
		coord_turn(w);
		assert_forwarded(path);
	}
	assert_int_equal(w->ctr.tier_waits, 1);
	assert_int_equal(w->ctr.rejected, 0);
	assert_int_equal(w->tiers_ctr[pro + 1].allowed, 3);
	lanes->store = had;
	done(w);
}

/* The tier answer for key given to the worker, and the leases it asks
 * then granted. */
static void
tier_told(struct sl_worker *w, const char *key, uint8_t found, const char *tier)
{
	struct sl_coord_msg a = tier_answer(key, found, tier);

	assert_int_equal(
		rte_ring_enqueue_elem(app.lanes->ans[w->queue], &a, sizeof(a)),
		0);
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(&app, w->now);
	sl_worker_leases(w);
	coord_turn(w);
}

/* Three requests of key to /tier/1..3, pipelined in one segment sent
 * now (in heads, n bytes; the first head's are first, h1 bytes). */
static int
three_tier_heads(struct sl_worker *w, struct conn *c, const char *key,
		 char *heads, size_t size, uint32_t *h1)
{
	int n = 0, i;

	for (i = 1; i <= 3; i++) {
		n += snprintf(heads + n, size - (size_t)n,
			      "GET /tier/%d HTTP/1.1\r\nHost: api\r\n"
			      "X-API-Key: %s\r\n\r\n",
			      i, key);
		if (i == 1)
			*h1 = (uint32_t)n;
	}
	dp_burst(w, frame(1, c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads),
		 DOWN);
	return n;
}

/*
 * A pro key seen for the first time, three requests pipelined in one
 * segment: the first waits for the tier, holding the segment, and the
 * two behind it are decided once it is known, under pro's limit. Decided
 * at once under the default tier (free: a burst of one), the first was
 * counted in free's ledger and the second refused there (the client's
 * stack sent it again an RTO later).
 */
static void
tier_first_sight_pipelined(void **state)
{
	struct sl_worker *w = worker(1);
	struct sl_lanes *lanes = (struct sl_lanes *)(uintptr_t)app.lanes;
	uint8_t had = lanes->store;
	struct rte_mbuf *m[4];
	struct conn c = open_conn(w);
	char heads[512];
	uint32_t len, h1;
	int n, pro;

	(void)state;
	lanes->store = 1;
	pro = sl_ruleset_tier_of_hash(app.policy->rs, sl_tier_hash("pro", 3));
	n = three_tier_heads(w, &c, "k-pp", heads, sizeof(heads), &h1);
	assert_int_equal(sent(UP, m, 4), 0);
	assert_int_equal(w->ctr.tier_waits, 1);
	assert_int_equal(tier_asks(w), 1);
	tier_told(w, "k-pp", SL_TIER_NAMED, "pro");
	assert_true(sl_parkq_empty(&w->parkq));
	assert_int_equal(sent(UP, m, 4), 1);
	payload(m[0], &len);
	assert_int_equal(len, (uint32_t)n); /* the segment whole */
	rte_pktmbuf_free(m[0]);
	assert_int_equal(sent(DOWN, m, 4), 0);
	assert_int_equal(w->ctr.rejected, 0);
	assert_int_equal(w->tiers_ctr[pro + 1].allowed, 3);
	lanes->store = had;
	done(w);
}

/*
 * The same for a key in no tier (free, a burst of one): the first goes
 * on, the second, refused behind it, is cut off the segment with all
 * after it, and answered 429 when the client sends it again.
 */
static void
tier_pipelined_refused_behind(void **state)
{
	struct sl_worker *w = worker(1);
	struct sl_lanes *lanes = (struct sl_lanes *)(uintptr_t)app.lanes;
	uint8_t had = lanes->store;
	struct rte_mbuf *m[4];
	struct conn c = open_conn(w);
	char heads[512];
	uint32_t len, h1 = 0;

	(void)state;
	lanes->store = 1;
	three_tier_heads(w, &c, "k-pf", heads, sizeof(heads), &h1);
	assert_int_equal(tier_asks(w), 1);
	tier_told(w, "k-pf", SL_TIER_UNNAMED, "");
	assert_int_equal(sent(UP, m, 4), 1);
	payload(m[0], &len);
	assert_int_equal(len, h1); /* the first alone */
	rte_pktmbuf_free(m[0]);
	assert_int_equal(sent(DOWN, m, 4), 0);
	/* the server answers it; the client sends the rest again */
	c.cseq += h1;
	dp_burst(w,
		 frame(0, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG,
		       "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		 UP);
	c.sseq += 38;
	dp_drain(&app);
	dp_burst(w,
		 frame(1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads + h1),
		 DOWN);
	coord_turn(w);
	assert_answered("429", "tfree");
	assert_int_equal(w->ctr.allowed, 1);
	lanes->store = had;
	done(w);
}

/*
 * Units a worker admits without a grant are charged to the node's
 * authority (SL_CO_TAKEN). Three keys pipelined on one connection under
 * a cost rule: the middle one is decided alone, and its response's
 * cost presumed (the record holds the first's): 1 + 19 units taken,
 * its burst of 20. Its next request is refused. The authority's bucket
 * made by that charge was taken for full and swept at the next poll,
 * and the next request served from a fresh one.
 */
static void
taken_units_kept(void **state)
{
	struct sl_worker *w = worker(1);
	struct conn c = open_conn(w);
	static const char *const keys[] = {"k-ta", "k-tb", "k-tc"};
	char heads[512];
	int n = 0, i;

	(void)state;
	for (i = 0; i < 3; i++)
		n += snprintf(heads + n, sizeof(heads) - (size_t)n,
			      "GET /bulk/%d HTTP/1.1\r\nHost: api\r\n"
			      "X-API-Key: %s\r\n\r\n",
			      i, keys[i]);
	dp_burst(w, frame(1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, heads),
		 DOWN);
	coord_turn(w);
	coord_turn(w);
	assert_int_equal(w->ctr.allowed, 3);
	assert_int_equal(w->ctr.decided_alone, 2);
	assert_int_equal(w->ctr.cost_presumed, 2);
	assert_int_equal(app.coord->st.taken_units, 40);
	assert_forwarded_n(1);
	c = open_conn(w);
	request(w, &c, "/bulk/next", "k-tb");
	coord_turn(w);
	coord_turn(w);
	assert_answered("429", "bulk");
	assert_int_equal(w->ctr.allowed, 3);
	done(w);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(local_limit),
		cmocka_unit_test(refused_and_passthrough),
		cmocka_unit_test(leased_limit),
		cmocka_unit_test(below_after_refusals),
		cmocka_unit_test(degraded),
		cmocka_unit_test(pipelined),
		cmocka_unit_test(pipelined_granted),
		cmocka_unit_test(pipelined_second_wait),
		cmocka_unit_test(pipelined_edge_no_topup),
		cmocka_unit_test(pipelined_log),
		cmocka_unit_test(held_after_refusal),
		cmocka_unit_test(refused_behind_allowed),
		cmocka_unit_test(body_request_not_parked),
		cmocka_unit_test(resume_refusal_answered),
		cmocka_unit_test(overload_park_held),
		cmocka_unit_test(overload_tx_full),
		cmocka_unit_test(server_closes),
		cmocka_unit_test(request_after_fin),
		cmocka_unit_test(backend_health),
		cmocka_unit_test(retry_jitter),
		cmocka_unit_test(tier_cache),
		cmocka_unit_test(tier_first_sight),
		cmocka_unit_test(tier_first_sight_pipelined),
		cmocka_unit_test(tier_pipelined_refused_behind),
		cmocka_unit_test(tier_long_key),
		cmocka_unit_test(taken_units_kept),
	};
	int rc;

	(void)argc;
	if (dp_eal(argv[0], "test_dp") != 0)
		return 1;
	cfg = dp_app(&app, &pool, "test_dp", CONFIG, sizeof(CONFIG) - 1);
	if (cfg == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	dp_app_close(&app);
	return rc;
}

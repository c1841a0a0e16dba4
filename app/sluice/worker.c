/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>

#include <emmintrin.h>

#include <rte_malloc.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "sluice.h"

#define DOWN 0
#define UP   1

/* The flow table's parameters, for a worker's first table and any reset. */
static struct sl_flow_params
flow_params(const struct sl_worker *w, int track_only)
{
	const struct sl_config *c = w->app->cfg;

	return (struct sl_flow_params){
		.capacity = c->dataplane.flows_per_worker,
		.head_slots = c->dataplane.head_buffers_per_worker,
		.max_head_bytes = c->dataplane.max_head_bytes,
		.idle_timeout = w->app->idle_tsc,
		.closed_timeout = w->app->tsc_hz, /* TIME_WAIT is the hosts' */
		.young_grace = w->app->tsc_hz,    /* a handshake's second */
		.head_timeout =
			c->dataplane.head_timeout_ms * w->app->tsc_hz / 1000,
		.heads_per_source = c->dataplane.head_buffers_per_source,
		.http = &w->app->http,
		.track_only = (uint8_t)track_only,
		.hash_seed = w->flow_seed,
	};
}

int
sl_worker_init(struct sl_worker *w, const struct sl_app *app,
	       unsigned int lcore, uint16_t queue, int track_only)
{
	const struct sl_config *c = app->cfg;
	uint32_t nlog = c->dataplane.buckets_per_worker / 16;
	struct sl_flow_params fp;

	memset(w, 0, sizeof(*w));
	w->app = app;
	w->lcore = lcore;
	w->queue = queue;
	w->rng = 0x2545f4914f6cdd1dULL ^ ((uint64_t)lcore << 32) ^ rte_rdtsc();
	w->flow_seed = rte_rand() | 1;
	fp = flow_params(w, track_only);
	w->flows = sl_flow_table_create(&fp);
	w->buckets = sl_bucket_table_create(c->dataplane.buckets_per_worker, 0);
	w->logs = sl_bucket_table_create(nlog < 1024 ? 1024 : nlog, 1);
	w->norm_buf = rte_malloc_socket("sl_norm", c->dataplane.max_head_bytes,
					0, rte_lcore_to_socket_id(lcore));
	if (w->flows == NULL || w->buckets == NULL || w->logs == NULL ||
	    w->norm_buf == NULL || sl_park_init(w) != 0)
		return -ENOMEM;
	return 0;
}

/* Forgets every connection (benchmarks: each round starts afresh). */
int
sl_worker_reset_flows(struct sl_worker *w)
{
	struct sl_flow_params fp = flow_params(w, 0);

	sl_flow_table_free(w->flows);
	w->flows = sl_flow_table_create(&fp);
	if (w->flows == NULL)
		return -ENOMEM;
	sl_flow_table_prefault(w->flows);
	return 0;
}

void
sl_worker_free(struct sl_worker *w)
{
	if (w->n_rst > 0)
		rte_pktmbuf_free_bulk(w->rst, w->n_rst);
	w->n_rst = 0;
	sl_flow_table_free(w->flows);
	sl_bucket_table_free(w->buckets);
	sl_bucket_table_free(w->logs);
	rte_free(w->norm_buf);
	w->norm_buf = NULL;
	sl_park_free(w);
}

/* TSC to nanoseconds, exact, once per burst. */
uint64_t
sl_tsc_ns(const struct sl_app *app, uint64_t tsc)
{
	return tsc / app->tsc_hz * 1000000000ULL +
	       tsc % app->tsc_hz * 1000000000ULL / app->tsc_hz;
}

/* Latency inside the appliance: from arrival to the TX burst. */
static void
time_tx(struct sl_worker *w, const struct sl_txbuf *b)
{
	uint64_t now;
	uint16_t i;

	if (w->app->rx_tsc_off < 0)
		return;
	now = rte_rdtsc();
	for (i = 0; i < b->n; i++) {
		uint64_t t0;

		if ((++w->lat_tick & 15) != 0)
			continue;
		t0 = *sl_rx_stamp(w->app, b->m[i]);
		if (t0 != 0 && now > t0)
			sl_hist_add(&w->latency,
				    ((now - t0) * w->app->ns_mult) >> 20);
	}
}

static void
flush(struct sl_worker *w, int dir)
{
	struct sl_txbuf *b = &w->tx[dir];
	uint16_t sent;

	if (b->n == 0)
		return;
	time_tx(w, b);
	sent = rte_eth_tx_burst(w->app->port[dir], w->queue, b->m, b->n);
	w->ctr.tx += sent;
	if (unlikely(sent < b->n)) {
		w->ctr.tx_dropped += b->n - sent;
		rte_pktmbuf_free_bulk(&b->m[sent], b->n - sent);
	}
	b->n = 0;
}

void
sl_worker_send(struct sl_worker *w, int dir, struct rte_mbuf *m)
{
	struct sl_txbuf *b = &w->tx[dir];

	b->m[b->n++] = m;
	if (b->n == SL_BURST)
		flush(w, dir);
}

/*
 * Every request head found on a connection: decided against the rules;
 * heads the strict parser refuses, or that exceed max_head_bytes, are
 * answered 400 / 431. Answering stops the flow: the rest is absorbed.
 */
/* Whether a chunked body takes all that follows its head in the segment. */
static int
chunked_takes_all(const struct sl_worker *w, uint32_t off, uint32_t rest)
{
	const char *b = rte_pktmbuf_mtod(w->cur_m, const char *) +
			w->cur->payload_off + off;
	struct sl_chunked ck;
	int done;

	sl_chunked_init(&ck);
	return sl_chunked_consume(&ck, b, rest, &done) == (long)rest;
}

static enum sl_req_action
on_event(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	struct sl_worker *w = arg;

	w->cur_flow = f;
	w->ctr.requests++;
	if (ev->kind != SL_EV_REQUEST) {
		sl_decide_invalid(w, ev);
		return SL_REQ_STOP;
	}
	/* a request may wait for the coordinator only if what follows its
	 * head in this segment is its own body */
	w->rest_off = ev->seg_end;
	w->first = ev->first;
	w->head_off = ev->seg_end - ev->head_len;
	{
		uint32_t rest = w->cur->payload_len > ev->seg_end
					? w->cur->payload_len - ev->seg_end
					: 0;

		w->parkable =
			rest == 0 || (ev->req->has_cl && !ev->req->chunked &&
				      rest <= ev->req->content_length);
		if (!w->parkable && ev->req->chunked)
			w->parkable = chunked_takes_all(w, ev->seg_end, rest);
	}
	return sl_decide(w, ev->req, w->cur);
}

/*
 * Stored the way it is read right after: the flow hash loads the key in
 * 16-byte halves and the table's compare in words, and a load wider than,
 * or straddling, the stores that wrote its bytes waits for them to retire
 * (no store forwarding) — built field by field, or through a word array
 * the compiler copies in halves, the key cost that wait on every frame.
 * So: the two addresses as one 16-byte store each, ports and family as
 * one 8-byte store. The layout is sl_flow_key's, little-endian.
 */
static inline void
flow_key(struct sl_flow_key *k, const struct sl_pkt *p, int from_client)
{
	const uint8_t *c = from_client ? p->src : p->dst;
	const uint8_t *s = from_client ? p->dst : p->src;
	uint64_t tail = (uint64_t)(from_client ? p->sport : p->dport) |
			(uint64_t)(from_client ? p->dport : p->sport) << 16 |
			(uint64_t)p->af << 32;
	__m128i ca, sa;

	_Static_assert(sizeof(*k) == 40 &&
			       offsetof(struct sl_flow_key, saddr) == 16 &&
			       offsetof(struct sl_flow_key, cport) == 32 &&
			       offsetof(struct sl_flow_key, sport) == 34 &&
			       offsetof(struct sl_flow_key, af) == 36,
		       "the flow key is laid out as built here");
	if (p->af == SL_AF_INET6) {
		ca = _mm_loadu_si128((const __m128i *)c);
		sa = _mm_loadu_si128((const __m128i *)s);
	} else {
		uint32_t a, b;

		memcpy(&a, c, 4);
		memcpy(&b, s, 4);
		ca = _mm_cvtsi32_si128((int)a);
		sa = _mm_cvtsi32_si128((int)b);
	}
	_mm_storeu_si128((__m128i *)k->caddr, ca);
	_mm_storeu_si128((__m128i *)k->saddr, sa);
	memcpy(&k->cport, &tail, 8);
}

/* Software check unless the port already verified the checksum. */
static inline int
cksum_ok(const struct rte_mbuf *m, const uint8_t *frame, const struct sl_pkt *p)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	/* NONE (verified data, field not filled in: virtio) is summed like
	 * unknown: forwarded as it is, such a frame would be dropped by the
	 * backend, so it is counted as a bad checksum here, where it shows */
	if (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return 1;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return 0;
	return sl_tcp_cksum_ok(frame, p);
}

/*
 * What a Linux backend discards before TCP reads it, checked on the
 * frame: kept out of the stream here, counted by reason.
 */
static int
frame_norm(struct sl_worker *w, const uint8_t *frame, const struct sl_pkt *p,
	   struct sl_tcp_opts *o)
{
	enum sl_norm_reason r = SL_NR_NONE;

	sl_tcp_opts_parse(frame, p, o);
	if (frame[0] & 1) /* a group address: Linux drops TCP to it */
		r = SL_NR_L2_GROUP;
	else if (sl_ip4_has_options(p))
		r = SL_NR_IP_OPTIONS;
	else if (o->has_sig)
		r = SL_NR_TCP_SIG;
	if (r == SL_NR_NONE)
		return 0;
	sl_flow_norm_drop(w->flows, r);
	return -1;
}

/* Our view of the stream is behind: ask the server where it stands. */
static void
probe(struct sl_worker *w, struct rte_mbuf *m, const struct sl_pkt *p)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len =
		sl_reply_segment(frame, m->buf_len - m->data_off, frame, p, 0,
				 p->seq - 1, p->ack, SL_TCP_ACK, NULL, 0);

	if (len == 0 || m->nb_segs > 1) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = len;
	m->ol_flags = 0;
	sl_worker_send(w, UP, m);
}

static void
inspect(struct sl_worker *w, struct rte_mbuf *m, const uint8_t *frame,
	const struct sl_pkt *p, const uint64_t *hash)
{
	struct sl_flow_key k;
	struct sl_tcp_opts o;
	struct sl_seg s;
	uint64_t h;
	enum sl_seg_verdict v;

	flow_key(&k, p, 1);
	h = hash != NULL ? *hash : sl_flow_hash(w->flows, &k);

	if (unlikely(!cksum_ok(m, frame, p))) {
		/* The backend would discard it: so must our view of the stream.
		 */
		w->ctr.bad_checksum++;
		rte_pktmbuf_free(m);
		return;
	}
	if (unlikely(frame_norm(w, frame, p, &o) != 0)) {
		rte_pktmbuf_free(m);
		return;
	}
	w->ctr.inspected++;
	w->cur = p;
	w->cur_m = m;
	s = (struct sl_seg){.seq = p->seq,
			    .ack = p->ack,
			    .tsval = o.tsval,
			    .flags = p->tcp_flags,
			    .has_ts = o.has_ts,
			    .payload = frame + p->payload_off,
			    .len = p->payload_len};
	v = sl_flow_client_segment(w->flows, &k, h, &s, w->now, on_event, w);
	switch (v) {
	case SL_SEG_FORWARD:
		sl_worker_send(w, UP, m);
		break;
	case SL_SEG_STOPPED:
		sl_reply_send(w, m, w->cur_flow, p);
		break;
	case SL_SEG_ABSORBED:
		sl_reply_ack(w, m, sl_flow_lookup(w->flows, &k), p);
		break;
	case SL_SEG_PARKED:
		sl_park_attach(w, m, p, &k, w->cur_flow, w->rest_off);
		break;
	case SL_SEG_HOLD:
		sl_park_hold(w, sl_flow_last(w->flows), m);
		break;
	case SL_SEG_PREFIX: {
		struct sl_pkt q = *p;

		w->pending.tpl = NULL;
		sl_reply_prefix(w, m, &q, sl_flow_cut(w->flows));
		break;
	}
	case SL_SEG_PROBE:
		probe(w, m, p);
		break;
	default:
		w->pending.tpl = NULL;
		rte_pktmbuf_free(m);
	}
}

/* The server's side: its ACKs commit decided bytes, its SYN-ACK says
 * whether timestamps were agreed, its first bytes answer an upgrade. */
static void
server_side(struct sl_worker *w, const uint8_t *frame, const struct sl_pkt *p)
{
	struct sl_flow_key k;
	struct sl_tcp_opts o = {0};
	struct sl_seg s;

	flow_key(&k, p, 0);
	if (p->tcp_flags & SL_TCP_SYN)
		sl_tcp_opts_parse(frame, p, &o);
	s = (struct sl_seg){.seq = p->seq,
			    .ack = p->ack,
			    .flags = p->tcp_flags,
			    .has_ts = o.has_ts,
			    .payload = frame + p->payload_off,
			    .len = p->payload_len};
	sl_flow_server_segment(w->flows, &k, &s, w->now);
}

static void
handle_parsed(struct sl_worker *w, struct rte_mbuf *m, int from,
	      const struct sl_pkt *p, enum sl_pkt_class cls, const uint64_t *h)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	int to = from == DOWN ? UP : DOWN;

	if (likely(cls == SL_PKT_TCP)) {
		if (from == DOWN && sl_is_service_port(w->app, p->dport)) {
			inspect(w, m, frame, p, h);
			return;
		}
		if (from == UP && sl_is_service_port(w->app, p->sport)) {
			server_side(w, frame, p);
			sl_worker_send(w, to, m);
			return;
		}
	} else if (cls == SL_PKT_MALFORMED) {
		w->ctr.malformed++;
		w->ctr.malformed_reason[p->reason]++;
		/* From clients it could hide bytes from us; servers are ours.
		 */
		if (from == DOWN) {
			w->ctr.malformed_dropped++;
			rte_pktmbuf_free(m);
			return;
		}
	} else if (cls == SL_PKT_FRAG && from == DOWN &&
		   sl_frag_may_carry_tcp(p)) {
		/* TCP fragments would carry request bytes past the parser. */
		w->ctr.frag_dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	w->ctr.passthrough++;
	sl_worker_send(w, to, m);
}

void
sl_worker_handle(struct sl_worker *w, struct rte_mbuf *m, int from)
{
	struct sl_pkt p;

	/* Only the first segment is read; a longer frame fails its length
	 * checks. */
	handle_parsed(w, m, from, &p,
		      sl_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *),
				   m->data_len, &p),
		      NULL);
}

/* A frame of a burst, parsed ahead, with the hash of its flow. */
struct staged {
	struct sl_pkt p;
	uint64_t h;
	uint8_t cls;
	uint8_t flow; /* h is set: a segment of an inspected connection */
};

static inline void
prefetch_rest(const struct rte_mbuf *m)
{
	const char *d = rte_pktmbuf_mtod(m, const char *);
	uint32_t len = RTE_MIN((uint32_t)m->data_len, 1536u), o;

	for (o = 64; o < len; o += 64)
		rte_prefetch0(d + o);
}

/*
 * Memory-level parallelism for the burst: every mbuf header, then every
 * frame's first line, are asked for before any is waited on; each frame
 * is parsed, the rest of a request's bytes and its flow's buckets
 * prefetched, all before the first packet is handled.
 */
static void
stage(struct sl_worker *w, struct rte_mbuf **pkts, uint16_t n, int from,
      struct staged *st)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		rte_prefetch0(pkts[i]);
		rte_prefetch0((char *)pkts[i] + RTE_CACHE_LINE_SIZE);
	}
	for (i = 0; i < n; i++) {
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
		if (w->app->rx_tsc_off >= 0)
			*sl_rx_stamp(w->app, pkts[i]) = w->now;
	}
	for (i = 0; i < n; i++) {
		struct sl_pkt *p = &st[i].p;
		uint16_t port;
		struct sl_flow_key k;

		st[i].cls = (uint8_t)sl_pkt_parse(
			rte_pktmbuf_mtod(pkts[i], const uint8_t *),
			pkts[i]->data_len, p);
		st[i].flow = 0;
		if (st[i].cls != SL_PKT_TCP)
			continue;
		port = from == DOWN ? p->dport : p->sport;
		if (!sl_is_service_port(w->app, port))
			continue;
		flow_key(&k, p, from == DOWN);
		st[i].h = sl_flow_hash(w->flows, &k);
		st[i].flow = 1;
		sl_flow_prefetch_buckets(w->flows, st[i].h);
		if (from == DOWN && p->payload_len > 0)
			prefetch_rest(pkts[i]);
	}
}

void
sl_worker_burst(struct sl_worker *w, struct rte_mbuf **pkts, uint16_t n,
		int from)
{
	struct staged st[SL_BURST];
	uint16_t i, base;

	w->now_ns = sl_tsc_ns(w->app, w->now);
	w->pol = __atomic_load_n(&w->app->policy, __ATOMIC_ACQUIRE);
	w->ctr.rx += n;
	for (base = 0; base < n; base += SL_BURST) {
		uint16_t k = (uint16_t)RTE_MIN(n - base, SL_BURST);

		stage(w, pkts + base, k, from, st);
		for (i = 0; i < k; i++) {
			/* two ahead: its bucket lines have arrived by now */
			if (i + 2 < k && st[i + 2].flow)
				sl_flow_prefetch_entry(w->flows, st[i + 2].h);
			/* one ahead: its entry has, and names its limit */
			if (from == DOWN && i + 1 < k && st[i + 1].flow)
				sl_bucket_prefetch_hint(
					sl_hint_table(w),
					sl_flow_peek_hint(w->flows,
							  st[i + 1].h));
			handle_parsed(w, pkts[base + i], from, &st[i].p,
				      (enum sl_pkt_class)st[i].cls,
				      st[i].flow ? &st[i].h : NULL);
		}
	}
}

static uint16_t
poll_port(struct sl_worker *w, int from)
{
	struct rte_mbuf *pkts[SL_BURST];
	uint16_t n;

	n = rte_eth_rx_burst(w->app->port[from], w->queue, pkts, SL_BURST);
	if (n != 0)
		sl_worker_burst(w, pkts, n, from);
	return n;
}

void
sl_worker_flush(struct sl_worker *w)
{
	flush(w, UP);
	flush(w, DOWN);
}

void
sl_worker_prefault(struct sl_worker *w)
{
	sl_flow_table_prefault(w->flows);
	sl_bucket_table_prefault(w->buckets);
	sl_bucket_table_prefault(w->logs);
	sl_bucket_table_prefault(w->leases);
	sl_bucket_table_prefault(w->tiers);
}

/*
 * Opt-in (dataplane.idle_sleep_us): a worker that found nothing to do for
 * SL_IDLE_POLLS loops in a row sleeps, so that on a box shared with other
 * work (or with fewer CPUs than polling threads) the kernel and the other
 * threads get the CPU. The price is latency: the first packet after a
 * quiet spell waits up to the sleep plus the timer's slack. Nothing is
 * left waiting meanwhile: buffered frames go out first, and a worker with
 * parked requests never sleeps (their answers are due within the store
 * timeout).
 */
static void
idle_backoff(struct sl_worker *w, unsigned int busy)
{
	if (busy != 0 || w->n_park_free != SL_PARK_MAX) {
		w->idle_polls = 0;
		return;
	}
	if (++w->idle_polls < SL_IDLE_POLLS)
		return;
	w->idle_polls = 0;
	sl_worker_flush(w);
	w->ctr.idle_sleeps++;
	rte_delay_us_sleep(w->app->idle_sleep_us);
}

int
sl_worker_main(void *arg)
{
	struct sl_worker *w = arg;
	const struct sl_app *app = w->app;

	SL_LOG(INFO, "worker on lcore %u polls queue %u", w->lcore, w->queue);
	/* this lcore's tables, faulted in here (its node) before traffic */
	sl_worker_prefault(w);
	if (app->qs != NULL) {
		rte_rcu_qsbr_thread_register(app->qs, w->lcore);
		rte_rcu_qsbr_thread_online(app->qs, w->lcore);
	}
	w->next_drain = rte_rdtsc() + app->drain_tsc;
	while (!sl_quit) {
		unsigned int busy;

		w->now = rte_rdtsc();
		w->now_ns = sl_tsc_ns(app, w->now);
		busy = poll_port(w, DOWN);
		busy += poll_port(w, UP);
		if (w->now >= w->next_drain) {
			sl_worker_flush(w);
			w->next_drain = w->now + app->drain_tsc;
		}
		sl_flow_expire(w->flows, w->now, SL_EXPIRE_BUDGET);
		sl_bucket_expire(w->buckets, w->now_ns, SL_EXPIRE_BUDGET);
		sl_bucket_expire(w->logs, w->now_ns, SL_EXPIRE_BUDGET);
		if (app->coord != NULL) {
			w->pol =
				__atomic_load_n(&app->policy, __ATOMIC_ACQUIRE);
			busy += sl_park_poll(w);
		}
		/* nothing read from the rules is held past this point */
		if (app->qs != NULL)
			rte_rcu_qsbr_quiescent(app->qs, w->lcore);
		if (app->idle_sleep_us != 0)
			idle_backoff(w, busy);
	}
	if (app->qs != NULL) {
		rte_rcu_qsbr_thread_offline(app->qs, w->lcore);
		rte_rcu_qsbr_thread_unregister(app->qs, w->lcore);
	}
	sl_worker_flush(w);
	return 0;
}

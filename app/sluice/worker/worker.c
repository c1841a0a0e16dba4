/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>

#include <emmintrin.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_prefetch.h>

#include "dp.h"

#define DOWN SL_DOWN
#define UP   SL_UP

/* The segment being inspected, for the flow's event callback. */
struct inspecting {
	struct sl_worker *w;
	struct rte_mbuf *m;
	const struct sl_pkt *p;
	struct sl_flow *flow;       /* once an event named it */
	struct sl_verdict v;        /* the last event's */
	struct sl_park_place place; /* of a request that parks */
	struct sl_flow *xl_flow;    /* translated (keep_alive): its flow */
	uint32_t xl_ack; /* and the segment's ack, server's numbers */
	/* the heads behind a granted one, read from its parked segment:
	 * decided now, none of them waits (complete() holds no second
	 * entry for the segment) */
	uint8_t resuming;
};

/* The bytes after the event's head in the segment being inspected. */
static const uint8_t *
rest_of(const struct inspecting *in, const struct sl_flow_event *ev,
	uint32_t *len)
{
	uint32_t n = in->p->payload_len;

	*len = n > ev->seg_end ? n - ev->seg_end : 0;
	return rte_pktmbuf_mtod(in->m, const uint8_t *) + in->p->payload_off +
	       ev->seg_end;
}

/*
 * A request may wait for a lease, with its body and the heads pipelined
 * behind it in its segment held with it: on the grant they are read on
 * from where it ended (resume()), each decided as it would have been had
 * it come alone, from what the grant left. Decided at once instead, they
 * took the worker's slice where its leases were not held yet: refused,
 * or degraded, below their limit. The heads read on a resume wait for
 * nothing (complete() holds no second entry for the segment).
 */
static int
parkable(const struct inspecting *in, const struct sl_flow_event *ev,
	 const struct sl_req *r)
{
	if (in->resuming)
		return 0;
	/* a body that is a request to a backend ignoring its length: refused
	 * now (400 body_request) rather than after a wait */
	return !(ev->req->has_cl && !ev->req->chunked && r->rest_len > 0 &&
		 sl_flow_body_request(r->rest, r->rest_len,
				      ev->req->content_length));
}

/*
 * Whether a refused head can be answered with the connection kept: the
 * head alone at the end of its segment (no body, nothing pipelined
 * behind it, not reassembled from earlier segments the backend may
 * have), on a connection whose handshake was seen, with no response
 * still due before it and the last answer put in acknowledged.
 */
static int
keepable(const struct inspecting *in, const struct sl_flow *f,
	 const struct sl_flow_event *ev)
{
	const struct sl_http_req *q = ev->req;

	/* the running policy's keep_alive: on only where the worker's
	 * translation table exists (policy/reload.c) */
	return in->w->pol->keep_alive && !in->resuming && !ev->buffered &&
	       ev->seg_end == in->p->payload_len && ev->head_len < 65536 &&
	       !(in->p->tcp_flags & SL_TCP_FIN) && !q->chunked &&
	       !(q->has_cl && q->content_length > 0) &&
	       (f->nflags & (SL_NF_SYN | SL_NF_PLACED)) ==
		       (SL_NF_SYN | SL_NF_PLACED) &&
	       sl_resp_due(&f->resp) == 0 && sl_xlate_answer_acked(in->w, f);
}

/*
 * Every request head found on a connection: decided against the rules;
 * heads the strict parser refuses, or that exceed max_head_bytes, are
 * answered 400 / 431. Answering stops the flow: the rest is absorbed.
 */
static enum sl_req_action
on_event(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	struct inspecting *in = arg;
	struct sl_worker *w = in->w;
	struct sl_req r;

	in->flow = f;
	w->ctr.requests++;
	if (ev->kind != SL_EV_REQUEST) {
		in->v = sl_decide_invalid(w, ev);
		return SL_REQ_STOP;
	}
	in->place = (struct sl_park_place){
		.rest_off = ev->seg_end,
		.head_off = ev->seg_end - ev->head_len,
		.first = ev->first,
	};
	r = (struct sl_req){.http = ev->req,
			    .p = in->p,
			    .flow = f,
			    .tier_parkable = (uint8_t)!in->resuming};
	r.rest = rest_of(in, ev, &r.rest_len);
	r.parkable = (uint8_t)parkable(in, ev, &r);
	sl_decide(w, &r, &in->v);
	if (in->v.action == SL_REQ_CONTINUE && in->v.budget >= 0)
		sl_budget_note(w, f, in->p, &in->v, 0);
	if (in->v.action == SL_REQ_CONTINUE && w->cost_next_set)
		sl_cost_note(w, f, 0);
	if (in->v.action == SL_REQ_CONTINUE)
		sl_health_note(w, f, 0);
	if (in->v.action == SL_REQ_PARK && w->pol->tpl429_keep != NULL)
		in->place.keep = (uint8_t)keepable(in, f, ev);
	if (in->v.action == SL_REQ_STOP) {
		const struct sl_reply_tpl *k =
			sl_policy_keep_tpl(w->pol, in->v.tpl);

		if (k != NULL && keepable(in, f, ev)) {
			in->v.tpl = k;
			/* its shifts are written once the reply is built */
			rte_prefetch0(&w->xl[sl_flow_index(w->flows, f)]);
			return SL_REQ_KEEP;
		}
		if (k != NULL)
			w->ctr.keepalive_fallback++;
	}
	return in->v.action;
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

/* A later segment of a parked connection waits with it, or is dropped
 * when its entry is full: the client sends it again, TCP loses nothing. */
static void
hold(struct sl_worker *w, const struct sl_flow *f, struct rte_mbuf *m)
{
	if (sl_parkq_hold(&w->parkq, f->park_idx, m) == 0)
		return;
	w->ctr.park_dropped++;
	rte_pktmbuf_free(m);
}

/* What the flow said of a client segment, and the verdict on its last
 * request, carried out. */
static void
carry_out(struct sl_worker *w, struct inspecting *in, enum sl_seg_verdict v,
	  const struct sl_flow_key *k)
{
	struct rte_mbuf *m = in->m;

	switch (v) {
	case SL_SEG_FORWARD:
		if (in->xl_flow != NULL) {
			struct sl_pkt q = *in->p;

			sl_xlate_client_out(w, in->xl_flow,
					    rte_pktmbuf_mtod(m, uint8_t *), &q,
					    in->xl_ack);
		}
		sl_tx_send(w, UP, m);
		break;
	case SL_SEG_STOPPED:
		sl_reply_send(w, m, in->flow, in->p, &in->v);
		break;
	case SL_SEG_KEPT:
		sl_reply_keep(w, m, in->flow, in->p, &in->v,
			      in->place.head_off);
		break;
	case SL_SEG_ABSORBED:
		sl_reply_ack(w, m, sl_flow_lookup(w->flows, k), in->p);
		break;
	case SL_SEG_PARKED:
		sl_parkq_attach(&w->parkq, in->v.park, m, in->p, k, &in->place);
		in->flow->park_idx = in->v.park;
		break;
	case SL_SEG_HOLD:
		hold(w, sl_flow_last(w->flows), m);
		break;
	case SL_SEG_PREFIX: {
		struct sl_pkt q = *in->p;

		if (in->xl_flow != NULL)
			sl_xlate_client_out(w, in->xl_flow,
					    rte_pktmbuf_mtod(m, uint8_t *), &q,
					    in->xl_ack);
		sl_reply_prefix(w, m, &q, sl_flow_cut(w->flows));
		break;
	}
	case SL_SEG_PROBE:
		sl_reply_probe(w, m, in->p);
		break;
	case SL_SEG_RESET:
		sl_reply_reset(w, m, sl_flow_last(w->flows), in->p);
		break;
	default:
		rte_pktmbuf_free(m);
	}
}

/*
 * A client segment of a kept connection: its ack put in the server's
 * numbers for the flow to read (returns 0), or an answered head sent
 * again, dealt with here (returns 1).
 */
static int
translated(struct sl_worker *w, struct inspecting *in, struct sl_flow *f,
	   struct sl_seg *s)
{
	struct sl_pkt q = *in->p;
	int r;

	r = sl_xlate_client_in(w, f, &q, &in->xl_ack);
	if (r == SL_XL_GO) {
		in->xl_flow = f;
		s->ack = in->xl_ack;
		return 0;
	}
	if (r == SL_XL_RESET)
		sl_reply_reset(w, in->m, f, in->p);
	else
		rte_pktmbuf_free(in->m);
	return 1;
}

static void
inspect(struct sl_worker *w, struct rte_mbuf *m, const uint8_t *frame,
	const struct sl_pkt *p, const uint64_t *hash)
{
	struct sl_flow_key k;
	struct sl_tcp_opts o;
	struct sl_seg s;
	struct inspecting in;
	struct sl_flow *f;
	uint64_t h;
	enum sl_seg_verdict v;

	flow_key(&k, p, 1);
	h = hash != NULL ? *hash : sl_flow_hash(w->flows, &k);

	if (unlikely(!sl_dp_cksum_ok(m, frame, p))) {
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
	s = (struct sl_seg){.seq = p->seq,
			    .ack = p->ack,
			    .tsval = o.tsval,
			    .flags = p->tcp_flags,
			    .has_ts = o.has_ts,
			    .mss = o.mss,
			    .payload = frame + p->payload_off,
			    .len = p->payload_len};
	/* the verdict is written by the event that decides, if one does */
	in.w = w;
	in.m = m;
	in.p = p;
	in.flow = NULL;
	in.v.tpl = NULL;
	in.xl_flow = NULL;
	in.resuming = 0;
	f = sl_flow_get(w->flows, &k, h);
	if (unlikely(f != NULL && (f->nflags & SL_NF_XLATE)) &&
	    translated(w, &in, f, &s) != 0)
		return;
	w->hold_m = m;
	v = sl_flow_client_segment_of(w->flows, f, &k, h, &s, w->now, on_event,
				      &in);
	w->hold_m = NULL;
	carry_out(w, &in, v, &k);
}

/* The server's side: its ACKs commit decided bytes, its SYN-ACK says
 * whether timestamps were agreed, its first bytes answer an upgrade; a
 * response is given its budget. The frame goes on to the client. */
static void
server_side(struct sl_worker *w, struct rte_mbuf *m, uint8_t *frame,
	    const struct sl_pkt *p)
{
	struct sl_flow_key k;
	struct sl_tcp_opts o = {0};
	struct sl_seg s;
	struct sl_flow *f = NULL, *any = NULL; /* f: translated */
	struct sl_resp_mark mk;
	uint32_t seq = 0;

	flow_key(&k, p, 0);
	if (p->tcp_flags & SL_TCP_SYN)
		sl_tcp_opts_parse(frame, p, &o);
	s = (struct sl_seg){.seq = p->seq,
			    .ack = p->ack,
			    .tsecr = o.tsecr,
			    .flags = p->tcp_flags,
			    .has_ts = o.has_ts,
			    .payload = frame + p->payload_off,
			    .len = p->payload_len};
	/* a kept connection: the flow reads the ack in the client's
	 * numbers; the frame goes on in them (worked out before the flow,
	 * which an RST removes) */
	mk.ord = 0;
	mk.all = 0;
	any = sl_flow_lookup(w->flows, &k);
	if (any != NULL) {
		if (unlikely(any->nflags & SL_NF_XLATE) &&
		    !(unlikely(p->tcp_flags & SL_TCP_SYN) &&
		      sl_flow_server_reopens(any, &s))) {
			f = any;
			s.ack = sl_xlate_server_in(w, f, p);
			seq = sl_xlate_server_seq(w, f, p->seq);
			mk.ord = sl_budget_due(w, f);
		}
		/* the framer marks the response a budget is for, and lists
		 * every one where costs or rules' answers are due */
		mk.all = (uint8_t)(sl_health_due(any) || sl_cost_due(w, any));
	}
	sl_flow_server_segment_of(w->flows, any, &s, w->now, &mk);
	/* (an RST removed the flow: its entry is no longer the same, but
	 * the RST still goes on in the client's numbers) */
	if (any != NULL && !(p->tcp_flags & SL_TCP_RST)) {
		if (sl_health_due(any))
			sl_health_response(w, any, p->payload_len, &mk);
		sl_cost_response(w, any, frame + p->payload_off, p->payload_len,
				 &mk);
		if (f != NULL && w->pol->budget &&
		    sl_budget_server(w, f, m, p, &mk, seq, s.ack))
			return;
	}
	if (f != NULL) {
		struct sl_pkt q = *p;

		sl_xlate_server_out(w, f, frame, &q, seq, s.ack);
	}
	sl_tx_send(w, SL_DOWN, m);
}

static void
handle_parsed(struct sl_worker *w, struct rte_mbuf *m, int from,
	      const struct sl_pkt *p, enum sl_pkt_class cls, const uint64_t *h)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	int to = from == DOWN ? UP : DOWN;

	if (likely(cls == SL_PKT_TCP)) {
		if (from == DOWN && sl_is_service_port(w->app, p->dport)) {
			inspect(w, m, frame, p, h);
			return;
		}
		if (from == UP && sl_is_service_port(w->app, p->sport)) {
			server_side(w, m, frame, p);
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
	sl_tx_send(w, to, m);
}

/* One frame from port index from, as if just received. */
static void
handle(struct sl_worker *w, struct rte_mbuf *m, int from)
{
	struct sl_pkt p;

	/* Only the first segment is read; a longer frame fails its length
	 * checks. */
	handle_parsed(w, m, from, &p,
		      sl_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *),
				   m->data_len, &p),
		      NULL);
}

/* A parked segment of a kept connection, on its way to the server. */
static void
forward_translated(struct sl_worker *w, struct sl_flow *f, struct sl_parked *e)
{
	uint32_t ack;
	struct sl_pkt q = e->p;

	if (sl_xlate_client_in(w, f, &q, &ack) == SL_XL_GO)
		sl_xlate_client_out(w, f, rte_pktmbuf_mtod(e->m, uint8_t *),
				    &e->p, ack);
}

/*
 * The bytes after a granted head in its parked segment, read now: its
 * body, and the heads pipelined behind it, each decided as it would
 * have been had it come alone (none waits). Returns 0 where the segment
 * goes on whole; 1 where it was dealt with here: up to a refused head
 * behind it (the client sends that head again, and it is answered
 * then), or refused whole (an error in the body: no byte of it has gone
 * on yet, so none goes undecided).
 */
static int
resume(struct sl_worker *w, struct sl_flow *f, struct sl_parked *e)
{
	struct inspecting in = {
		.w = w, .m = e->m, .p = &e->p, .flow = f, .resuming = 1};
	const uint8_t *pl =
		rte_pktmbuf_mtod(e->m, const uint8_t *) + e->p.payload_off;

	switch (sl_flow_resume(w->flows, f, pl, e->rest_off, e->p.payload_len,
			       on_event, &in)) {
	case SL_SEG_FORWARD:
		return 0;
	case SL_SEG_PREFIX:
		sl_flow_cut_back(w->flows, f, e->p.seq, pl,
				 sl_flow_cut(w->flows), 0);
		if (f->nflags & SL_NF_XLATE)
			forward_translated(w, f, e);
		sl_reply_prefix(w, e->m, &e->p, sl_flow_cut(w->flows));
		return 1;
	default:
		/* answered and the backend's side reset, whatever the flow
		 * made of the refusal's order: the connection is over */
		f->parked = 0;
		f->state = SL_FLOW_ABSORB;
		if (in.v.action != SL_REQ_STOP) {
			/* nothing answered (never: a body error or a head is
			 * answered): refused whole all the same */
			struct sl_http_req err = {
				.error = SL_HTTP_E_BODY_REQUEST};
			struct sl_flow_event x = {.kind = SL_EV_PARSE_ERROR,
						  .req = &err};

			in.v = sl_decide_invalid(w, &x);
		}
		sl_reply_send(w, e->m, f, &e->p, &in.v);
		return 1;
	}
}

/* A parked request's verdict carried out: what the worker would have
 * done had it been decided when it came. */
static void
complete(struct sl_worker *w, uint16_t i, const struct sl_verdict *v,
	 uint64_t answered_ns)
{
	struct sl_parked *e = sl_parkq_entry(&w->parkq, i);
	struct sl_flow *f = sl_flow_lookup(w->flows, &e->fk);
	struct rte_mbuf *held[SL_PARK_HELD];
	uint8_t nh = e->n_held, k;

	memcpy(held, e->held, sizeof(held));
	/* how long it waited: the coordinator's added latency */
	sl_hist_add(&w->park_latency,
		    answered_ns - (e->deadline_ns - w->app->store_timeout_ns));
	if (f != NULL && f->park_idx != i)
		f = NULL; /* the flow was evicted and picked up again */
	if (v->action == SL_REQ_CONTINUE && f != NULL) {
		/* its notes before those of the heads behind it: its
		 * response comes first */
		if (v->budget >= 0)
			sl_budget_note(w, f, &e->p, v, 1);
		if (w->cost_next_set)
			sl_cost_note(w, f, 1);
		sl_health_note(w, f, 1);
		if (!resume(w, f, e)) {
			if (f->nflags & SL_NF_XLATE)
				forward_translated(w, f, e);
			sl_tx_send(w, UP, e->m);
		}
	} else if (v->action == SL_REQ_CONTINUE) {
		sl_tx_send(w, UP, e->m);
	} else if (f != NULL && (!e->first || sl_resp_due(&f->resp) > 1)) {
		/*
		 * Refused behind requests of its segment that went on, or
		 * behind responses still coming (its own is due too): its
		 * answer would take their place. They go on alone; it is
		 * decided again when the client sends it again.
		 */
		sl_flow_cut_back(w->flows, f, e->p.seq,
				 rte_pktmbuf_mtod(e->m, const uint8_t *) +
					 e->p.payload_off,
				 e->head_off, 1);
		if (f->nflags & SL_NF_XLATE)
			forward_translated(w, f, e);
		sl_reply_prefix(w, e->m, &e->p, e->head_off);
	} else if (f != NULL && e->keep &&
		   sl_policy_keep_tpl(w->pol, v->tpl) != NULL) {
		/* refused after waiting, the connection kept: it was
		 * expected to go on, and did not */
		struct sl_verdict kv = *v;

		kv.tpl = sl_policy_keep_tpl(w->pol, v->tpl);
		f->parked = 0;
		f->state = SL_FLOW_HEAD;
		sl_resp_unexpect(&f->resp);
		sl_reply_keep(w, e->m, f, &e->p, &kv, e->head_off);
	} else {
		if (f != NULL) {
			f->parked = 0;
			f->state = SL_FLOW_ABSORB;
		}
		if (sl_policy_keep_tpl(w->pol, v->tpl) != NULL)
			w->ctr.keepalive_fallback++;
		sl_reply_send(w, e->m, f, &e->p, v);
	}
	sl_parkq_remove(&w->parkq, i);
	/* what the client sent meanwhile, in order, as if it came now */
	for (k = 0; k < nh; k++)
		handle(w, held[k], DOWN);
}

unsigned int
sl_worker_leases(struct sl_worker *w)
{
	struct sl_parkq *q = &w->parkq;
	uint64_t answered_ns;
	unsigned int n;
	uint16_t i, next;

	/* an entry point, as sl_worker_burst is: the rules are read afresh,
	 * never held from before the caller's last quiescent point */
	w->pol = __atomic_load_n(&w->app->policy, __ATOMIC_ACQUIRE);
	n = sl_leased_answers(w);
	/* when the answers were read: each wait's end, one clock read for
	 * all of them (a read and its conversion each took 51 cycles a
	 * completion, timed in a loop on the 2.3 GHz host) */
	answered_ns = n > 0 ? sl_tsc_ns(w->app, rte_rdtsc()) : w->now_ns;

	/* oldest first: the first to wait is the first served */
	for (i = q->head; i != SL_PARK_NIL && (n > 0 || q->timeouts_due);
	     i = next) {
		struct sl_verdict v;

		next = sl_parkq_entry(q, i)->next;
		if (sl_leased_resolve(w, sl_parkq_entry(q, i), &v) == 0)
			complete(w, i, &v, answered_ns);
	}
	q->timeouts_due = q->head != SL_PARK_NIL &&
			  w->now_ns >= sl_parkq_entry(q, q->head)->deadline_ns;
	sl_leased_sweep(w);
	return n;
}

/* A frame of a burst, parsed ahead, with the hash of its flow. */
struct staged {
	struct sl_pkt p;
	uint64_t h;
	uint8_t cls;
	uint8_t flow; /* h is set: a segment of an inspected connection */
};

/*
 * How many frames ahead of the one handled a request's remaining lines
 * are asked for. All of a burst's at once (32 frames, up to 23 lines
 * each) overran the core's outstanding misses, and the first frames'
 * lines arrived behind the last ones': DRAM-sized keep-alive 1 009
 * cycles against 943 two ahead (BENCHMARKS.md).
 */
#define REST_AHEAD 2

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
 * is parsed and its flow's buckets prefetched before the first packet is
 * handled, and the rest of the first REST_AHEAD requests' bytes (the
 * others' follow as the burst is handled).
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
		if (i < REST_AHEAD && from == DOWN && p->payload_len > 0)
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
			/* the request REST_AHEAD on: its bytes by its turn */
			if (from == DOWN && i + REST_AHEAD < k &&
			    st[i + REST_AHEAD].flow &&
			    st[i + REST_AHEAD].p.payload_len > 0)
				prefetch_rest(pkts[base + i + REST_AHEAD]);
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
	sl_worker_let_go(w, 0);
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
	sl_tx_flush(w, UP);
	sl_tx_flush(w, DOWN);
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
	if (busy != 0 || !sl_parkq_empty(&w->parkq)) {
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

/* /sluice/why's look at one key: this worker's bucket and lease of it. */
static void
serve_probe(struct sl_worker *w)
{
	struct sl_probe *p = &w->probe;
	const struct sl_lease *l =
		w->leases != NULL ? (const struct sl_lease *)sl_bucket_find(
					    w->leases, &p->key)
				  : NULL;

	p->now_ns = w->now_ns;
	sl_probe_copy_state(
		p, sl_bucket_find(p->log ? w->logs : w->buckets, &p->key),
		p->log);
	p->has_lease = l != NULL;
	if (l != NULL)
		p->lease = *l;
	sl_probe_answered(p);
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
	while (app->quit == NULL || !*app->quit) {
		unsigned int busy;

		w->now = rte_rdtsc();
		w->now_ns = sl_tsc_ns(app, w->now);
		busy = poll_port(w, DOWN);
		busy += poll_port(w, UP);
		if (busy == 0) /* nothing read: nothing held back either */
			sl_worker_let_go(w, 1);
		if (w->now >= w->next_drain) {
			sl_worker_flush(w);
			w->next_drain = w->now + app->drain_tsc;
		}
		sl_flow_expire(w->flows, w->now, SL_EXPIRE_BUDGET);
		sl_bucket_expire(w->buckets, w->now_ns, SL_EXPIRE_BUDGET);
		sl_bucket_expire(w->logs, w->now_ns, SL_EXPIRE_BUDGET);
		if (app->lanes != NULL)
			busy += sl_worker_leases(w);
		if (unlikely(sl_probe_asked(&w->probe)))
			serve_probe(w);
		/* nothing read from the rules is held past this point */
		if (app->qs != NULL)
			rte_rcu_qsbr_quiescent(app->qs, w->lcore);
		if (app->idle_sleep_us != 0)
			idle_backoff(w, busy);
		__atomic_store_n(&w->beat, w->now, __ATOMIC_RELAXED);
#ifndef NDEBUG
		if (unlikely(__atomic_load_n(&w->stall_ms, __ATOMIC_RELAXED)))
			rte_delay_us_sleep(
				1000 * __atomic_exchange_n(&w->stall_ms, 0,
							   __ATOMIC_RELAXED));
#endif
	}
	if (app->qs != NULL) {
		rte_rcu_qsbr_thread_offline(app->qs, w->lcore);
		rte_rcu_qsbr_thread_unregister(app->qs, w->lcore);
	}
	sl_worker_flush(w);
	sl_worker_let_go(w, 1);
	return 0;
}

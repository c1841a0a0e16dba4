/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An allowed response carries its budget (response.headers_on_allow):
 * RateLimit field lines of its request's strictest limit, put into the
 * server's response head right after the status line, on its way to the
 * client. The response grows, so this is keep_alive's translation again
 * with the roles swapped: bytes the client gets that the server never
 * sent, at a point in the server's stream (xlate.c's s_at, s_len).
 *
 * The segment the status line ends in grows by the fields where the
 * client's MSS (its SYN's) allows — most responses — and otherwise goes
 * out as two: its bytes up to the point plus the fields (a fresh mbuf:
 * small, whatever the MSS), then the rest (the server's own mbuf, its
 * headers moved up). A segment the server sends again across the point
 * is given the same fields again, from the frame kept until the client
 * acknowledges them, so the client's stream is the same however the
 * server segments it. One budget is in flight at a time, as one 429 is;
 * a response that comes while the last is unacknowledged goes without
 * (counted).
 *
 * Which response: the budget is kept with the ordinal of the response
 * its request will get (responses completed, plus those due); a
 * response is given it only if the ordinals agree, so with pipelined
 * requests only the last one decided is given its budget, never another
 * request's. And never where the limit is keyed on an identity the
 * client claims (an API key, a user) and the backend refused it (401,
 * 403, 407): the budget of a key the client does not hold is not its to
 * read (the seed's enumeration warning).
 */
#include <rte_mbuf.h>

#include "dp.h"

static uint32_t
clamp32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void
sl_budget_set(struct sl_worker *w, struct sl_verdict *v, uint16_t rule,
	      uint64_t q, uint64_t w_s, uint64_t remaining, uint64_t reset_ns)
{
	if (!w->pol->budget_rule[rule])
		return;
	v->budget = (int16_t)rule;
	v->nums.limit = q;
	v->nums.window_s = w_s;
	v->nums.remaining = remaining;
	v->nums.reset_s = sl_secs_up(reset_ns);
}

void
sl_budget_note(struct sl_worker *w, struct sl_flow *f, const struct sl_pkt *p,
	       const struct sl_verdict *v, int parked)
{
	const struct sl_policy *pol = w->pol;
	/* not yet counted as due, unless it waited (counted then) */
	int ord = sl_resp_ord_last(&f->resp, parked);
	struct sl_xlate *x;

	if (v->budget < 0 || w->xl == NULL || !pol->budget || ord < 0)
		return;
	x = sl_xlate_track(w, f, p->seq, p->ack);
	x->b_ord = (uint16_t)ord;
	x->b_slot = pol->slot[v->budget];
	x->b_claimed = pol->claimed[v->budget];
	x->b_limit = clamp32(v->nums.limit);
	x->b_window_s = clamp32(v->nums.window_s);
	x->b_remaining = clamp32(v->nums.remaining);
	x->b_reset_s = clamp32(v->nums.reset_s);
}

uint16_t
sl_budget_due(struct sl_worker *w, const struct sl_flow *f)
{
	const struct sl_xlate *x = &w->xl[sl_flow_index(w->flows, f)];

	return x->b_slot == UINT16_MAX ? 0 : x->b_ord;
}

/* The budget's field lines; 0 when there are none to give. */
static uint32_t
fields(struct sl_worker *w, const struct sl_xlate *x, uint16_t slot, char *buf,
       uint32_t n)
{
	const struct sl_policy *pol = w->pol;
	int rule = slot < SL_MAX_RULES ? pol->rule_of_slot[slot] : -1;
	struct sl_reply_info ri;

	if (rule < 0) /* (removed by a reload meanwhile) */
		return 0;
	ri = (struct sl_reply_info){
		.headers = pol->headers,
		.rule = pol->field_name[rule],
		.rule_len = pol->name_len[rule],
		.limit = x->b_limit,
		.window_s = x->b_window_s,
		.remaining = x->b_remaining,
		.reset_s = x->b_reset_s,
	};
	return sl_reply_budget(buf, n, &ri);
}

/*
 * A frame's checksum as finish() leaves it: adjusted already (grown in
 * place), or summed anew (cut from another), and then left wrong where
 * the segment it was cut from came with a wrong one: summed anew, a
 * byte flipped on the way would reach the client as good data.
 */
enum ck { CK_ADJUSTED, CK_SUMMED, CK_SUMMED_WRONG };

/* The frame's seq, ack and SACK blocks for the client, its checksum. */
static void
finish(struct sl_worker *w, const struct sl_flow *f, struct rte_mbuf *m,
       struct sl_pkt *q, uint32_t seq, uint32_t ack, enum ck ck)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);

	if (ck != CK_ADJUSTED)
		sl_tcp_cksum_set(frame, q);
	/* its last bit flipped: the sum then misses by one, which no
	 * representation of zero is */
	if (ck == CK_SUMMED_WRONG)
		frame[q->l4_off + 17] ^= 1;
	sl_xlate_server_out(w, f, frame, q, seq, ack);
	m->ol_flags = 0;
}

/*
 * m's segment as two: *a, its payload up to off with txt after it (a
 * new frame), then *b, the rest (m itself; NULL, m freed, when off is
 * its end). seq, ack: the segment's numbers for the client. -1: no room
 * or no mbuf, m as it was.
 */
static int
split(struct sl_worker *w, const struct sl_flow *f, struct rte_mbuf *m,
      const struct sl_pkt *p, uint32_t off, const char *txt, uint32_t n,
      uint32_t seq, uint32_t ack, struct rte_mbuf **a, struct rte_mbuf **b)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t head = p->payload_off + off;
	struct sl_pkt qa = *p, qb = *p;
	enum ck ck;
	uint8_t *d;

	/* the first part is no longer than the segment was, or than a
	 * status line and fields need, far below any MSS */
	if (m->nb_segs > 1 || off + n > RTE_MAX(p->payload_len, 1000u) ||
	    (*a = rte_pktmbuf_alloc(w->app->pool)) == NULL)
		return -1;
	d = (uint8_t *)rte_pktmbuf_append(*a, (uint16_t)(head + n));
	if (d == NULL) {
		rte_pktmbuf_free(*a);
		return -1;
	}
	ck = sl_dp_cksum_ok(m, frame, p) ? CK_SUMMED : CK_SUMMED_WRONG;
	memcpy(d, frame, head);
	memcpy(d + head, txt, n);
	sl_ip_set_payload_len(d, &qa, off + n);
	if (off < p->payload_len) { /* a FIN is the rest's */
		qa.tcp_flags &= (uint8_t)~SL_TCP_FIN;
		d[qa.l4_off + 13] = qa.tcp_flags;
	}
	finish(w, f, *a, &qa, seq, ack, ck);
	*b = NULL;
	if (off == p->payload_len) {
		rte_pktmbuf_free(m);
		return 0;
	}
	/* the rest: the headers moved up over the bytes that went first */
	memmove(rte_pktmbuf_mtod_offset(m, uint8_t *, off), frame,
		p->payload_off);
	rte_pktmbuf_adj(m, (uint16_t)off);
	sl_ip_set_payload_len(rte_pktmbuf_mtod(m, uint8_t *), &qb,
			      p->payload_len - off);
	m->data_len = m->pkt_len = qb.payload_off + qb.payload_len;
	finish(w, f, m, &qb, seq + off + n, ack, ck);
	*b = m;
	return 0;
}

/* The most payload the client takes in one segment of this frame's
 * options (536, the least any host takes, where its SYN was not seen). */
static uint32_t
room_of(const struct sl_flow *f, const struct sl_pkt *p)
{
	uint32_t mss = f->mss_k ? (uint32_t)f->mss_k << 8 : 536;

	return mss - (p->tcp_hlen - 20u);
}

/*
 * The fields put into m's payload at off, m growing by n: one frame,
 * where the client's MSS and the mbuf have room (most responses: a
 * frame costs more on the way than the bytes moved). -1: no room.
 */
static int
grow(struct sl_worker *w, const struct sl_flow *f, struct rte_mbuf *m,
     const struct sl_pkt *p, uint32_t off, const char *txt, uint32_t n,
     uint32_t seq, uint32_t ack)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t end = p->payload_off + p->payload_len;
	uint8_t *at = frame + p->payload_off + off;
	struct sl_pkt q = *p;

	if (m->nb_segs > 1 || p->payload_len + n > room_of(f, p) ||
	    end + n > (uint32_t)(m->buf_len - m->data_off))
		return -1;
	memmove(at + n, at, p->payload_len - off);
	memcpy(at, txt, n);
	sl_tcp_cksum_insert(frame, p, off, n);
	sl_ip_set_payload_len(frame, &q, p->payload_len + n);
	m->data_len = m->pkt_len = end + n; /* (any padding gone) */
	finish(w, f, m, &q, seq, ack, CK_ADJUSTED);
	return 0;
}

static void
send_two(struct sl_worker *w, struct rte_mbuf *a, struct rte_mbuf *b)
{
	sl_tx_send(w, SL_DOWN, a);
	if (b != NULL)
		sl_tx_send(w, SL_DOWN, b);
}

/* Whether the response that mk names is given the budget kept. */
static int
due_budget(struct sl_worker *w, struct sl_xlate *x, struct sl_flow *f,
	   const struct sl_resp_mark *mk)
{
	if (mk->off == UINT32_MAX || x->b_slot == UINT16_MAX)
		return 0;
	if (x->b_ord != mk->ord) /* (not that response's status line) */
		return 0;
	x->b_slot = UINT16_MAX; /* given once */
	if (x->b_claimed &&
	    (mk->status == 401 || mk->status == 403 || mk->status == 407)) {
		w->ctr.budget_unauthenticated++;
		return 0;
	}
	if (!sl_xlate_answer_acked(w, f) || w->xl_held >= w->xl_held_max) {
		w->ctr.budget_skipped++;
		return 0;
	}
	return 1;
}

/* A budget put in before, and this segment sent again across its point:
 * given the same bytes again, or dropped (the server sends it again). */
static int
again(struct sl_worker *w, struct sl_flow *f, struct sl_xlate *x,
      struct rte_mbuf *m, const struct sl_pkt *p, uint32_t seq, uint32_t ack)
{
	uint32_t point = x->s_at - (x->s_ins - x->s_len); /* server's */
	const struct rte_mbuf *r = x->reply;
	struct rte_mbuf *a, *b;
	const char *txt;

	if (r == NULL || r->data_len < x->txt_off + x->s_len) {
		w->ctr.budget_dropped++;
		rte_pktmbuf_free(m);
		return 1;
	}
	txt = rte_pktmbuf_mtod_offset(r, const char *, x->txt_off);
	if (grow(w, f, m, p, point - p->seq, txt, x->s_len, seq, ack) == 0) {
		sl_tx_send(w, SL_DOWN, m);
	} else if (split(w, f, m, p, point - p->seq, txt, x->s_len, seq, ack,
			 &a, &b) == 0) {
		send_two(w, a, b);
	} else {
		w->ctr.budget_dropped++;
		rte_pktmbuf_free(m);
		return 1;
	}
	w->ctr.budget_resent++;
	return 1;
}

int
sl_budget_server(struct sl_worker *w, struct sl_flow *f, struct rte_mbuf *m,
		 const struct sl_pkt *p, const struct sl_resp_mark *mk,
		 uint32_t seq, uint32_t ack)
{
	struct sl_xlate *x = &w->xl[sl_flow_index(w->flows, f)];
	uint32_t end = p->seq + p->payload_len, point, n;
	uint16_t slot;
	struct rte_mbuf *a, *b;
	char txt[512];

	if (p->payload_len == 0)
		return 0;
	point = x->s_at - (x->s_ins - x->s_len);
	if (x->hdr && x->s_len > 0 && !sl_xlate_answer_acked(w, f) &&
	    (int32_t)(p->seq - point) < 0 && (int32_t)(end - point) >= 0)
		return again(w, f, x, m, p, seq, ack);
	slot = x->b_slot;
	if (!due_budget(w, x, f, mk))
		return 0;
	n = fields(w, x, slot, txt, sizeof(txt));
	b = NULL;
	if (n != 0 && grow(w, f, m, p, mk->off, txt, n, seq, ack) == 0) {
		a = m;
		x->txt_off = (uint16_t)(p->payload_off + mk->off);
	} else if (n != 0 &&
		   split(w, f, m, p, mk->off, txt, n, seq, ack, &a, &b) == 0) {
		x->txt_off = (uint16_t)(a->data_len - n);
	} else {
		w->ctr.budget_skipped++;
		return 0;
	}
	/* from here on the client's numbers are n further on; the frame
	 * kept (before it is sent: the port may free it at once) */
	x->s_at = p->seq + mk->off + x->s_ins;
	x->s_ins += n;
	x->s_len = (uint16_t)n;
	x->hdr = 1;
	sl_xlate_keep(w, x, a); /* (room checked by due_budget) */
	send_two(w, a, b);
	w->ctr.budget_headers++;
	return 1;
}

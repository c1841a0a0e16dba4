/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Answers built on the data path: the client's own segment becomes the
 * reply (no copy of the frame, no allocation for it), and one mbuf is
 * taken for the RST that frees the backend's side of the connection.
 */
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "dp.h"

#define FIN 0x01
#define RST 0x04
#define PSH 0x08
#define ACK 0x10

/*
 * A frame rewritten in place is rewritten in its first segment: a chained
 * mbuf is rare here (jumbo frames), and its tail is let go.
 */
static void
first_only(struct rte_mbuf *m)
{
	if (m->nb_segs > 1) {
		rte_pktmbuf_free(m->next);
		m->next = NULL;
		m->nb_segs = 1;
	}
}

/* Our sequence towards the client: after anything the server sent (in
 * the client's numbers where the connection was kept before). */
static uint32_t
server_seq(struct sl_worker *w, const struct sl_flow *f, const struct sl_pkt *p)
{
	if (f != NULL && (f->nflags & SL_NF_XLATE))
		return sl_xlate_server_seq(w, f, f->s_next);
	if (f != NULL && f->s_seen && (int32_t)(f->s_next - p->ack) > 0)
		return f->s_next;
	return p->ack;
}

/*
 * An mbuf for an RST: taken from a small stash refilled in bulk, with the
 * next one's header and first data line already on their way, so the
 * reject path does not wait on a cold mbuf.
 */
static struct rte_mbuf *
take_rst(struct sl_worker *w)
{
	struct rte_mbuf *r;

	if (w->n_rst == 0) {
		if (rte_pktmbuf_alloc_bulk(w->app->pool, w->rst,
					   SL_RST_STASH) != 0)
			return rte_pktmbuf_alloc(w->app->pool);
		w->n_rst = SL_RST_STASH;
	}
	r = w->rst[--w->n_rst];
	if (w->n_rst > 0) {
		struct rte_mbuf *next = w->rst[w->n_rst - 1];

		rte_prefetch0(next);
		rte_prefetch0((char *)next->buf_addr + RTE_PKTMBUF_HEADROOM);
	}
	return r;
}

/* The RST carries the sequence the server expects next from the client. */
static void
reset_server(struct sl_worker *w, const uint8_t *frame, const struct sl_pkt *p,
	     uint32_t seq)
{
	struct rte_mbuf *r = take_rst(w);
	uint32_t len;

	if (unlikely(r == NULL)) {
		w->ctr.reply_alloc_failed++;
		return;
	}
	len = sl_reply_segment(rte_pktmbuf_mtod(r, uint8_t *),
			       rte_pktmbuf_tailroom(r), frame, p, 0, seq,
			       p->ack, RST | ACK, NULL, 0);
	if (unlikely(len == 0)) {
		rte_pktmbuf_free(r);
		return;
	}
	r->data_len = r->pkt_len = len;
	if (w->app->rx_tsc_off >= 0) /* the request's arrival */
		*sl_rx_stamp(w->app, r) = w->now;
	sl_tx_send(w, SL_UP, r);
}

/*
 * The template's text written where the reply's payload belongs, in the
 * request's own mbuf, and the segment around it: returns the text's
 * length (0, m freed: no room or no answer).
 */
static uint32_t
build(struct rte_mbuf *m, const struct sl_pkt *p, const struct sl_verdict *v,
      uint32_t seq, uint32_t ack, uint8_t flags)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t tlen = 0, len = 0, sum;
	uint32_t poff = sl_reply_payload_off(p);
	uint32_t room = m->buf_len - m->data_off;

	first_only(m);
	if (likely(v->tpl != NULL && room > poff))
		tlen = sl_reply_tpl_fill(v->tpl, &v->nums, frame + poff,
					 room - poff, &sum);
	if (likely(tlen != 0))
		len = sl_reply_segment_sum(frame, room, frame, p, 1, seq, ack,
					   flags, frame + poff, tlen, sum);
	if (unlikely(len == 0)) {
		rte_pktmbuf_free(m);
		return 0;
	}
	m->data_len = m->pkt_len = len;
	m->ol_flags = 0;
	return tlen;
}

void
sl_reply_send(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
	      const struct sl_pkt *p, const struct sl_verdict *v)
{
	uint32_t tlen, seq = server_seq(w, f, p);
	uint32_t ack = p->seq + p->payload_len + (p->tcp_flags & FIN);
	uint32_t rst_seq =
		sl_xlate_client_seq(w, f, f != NULL ? f->seg_new : p->seq);

	if (unlikely(v->tpl == NULL)) {
		rte_pktmbuf_free(m);
		return;
	}
	/* the RST is built first: it still needs the request's headers */
	reset_server(w, rte_pktmbuf_mtod(m, uint8_t *), p, rst_seq);
	tlen = build(m, p, v, seq, ack, FIN | PSH | ACK);
	if (unlikely(tlen == 0))
		return;
	if (f != NULL)
		f->r_next = seq + tlen + 1;
	w->ctr.replies++;
	sl_tx_send(w, SL_DOWN, m);
}

void
sl_reply_ack(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
	     const struct sl_pkt *p)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len;

	first_only(m);
	len = sl_reply_segment(frame, m->buf_len - m->data_off, frame, p, 1,
			       f->r_next, f->c_next, ACK, NULL, 0);
	if (unlikely(len == 0)) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = len;
	m->ol_flags = 0;
	w->ctr.absorbed++;
	sl_tx_send(w, SL_DOWN, m);
}

void
sl_reply_prefix(struct sl_worker *w, struct rte_mbuf *m, struct sl_pkt *p,
		uint32_t cut)
{
	first_only(m);
	m->data_len = m->pkt_len =
		sl_tcp_trim(rte_pktmbuf_mtod(m, uint8_t *), p, cut);
	m->ol_flags = 0;
	sl_tx_send(w, SL_UP, m);
}

void
sl_reply_probe(struct sl_worker *w, struct rte_mbuf *m, const struct sl_pkt *p)
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
	sl_tx_send(w, SL_UP, m);
}

/*
 * A 429 in the request's place, the connection kept (response.keep_alive):
 * no FIN, no RST to the backend; the head at head_off, the segment's
 * last bytes, is taken out of the server's stream and the reply put into
 * the client's (xlate.c translates from here on).
 */
void
sl_reply_keep(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
	      const struct sl_pkt *p, const struct sl_verdict *v,
	      uint32_t head_off)
{
	uint32_t seq = server_seq(w, f, p);
	uint32_t tlen = build(m, p, v, seq, p->seq + p->payload_len, PSH | ACK);

	if (unlikely(tlen == 0))
		return;
	sl_xlate_answered(w, f, p->seq + head_off, p->payload_len - head_off,
			  seq, m, tlen);
	w->ctr.replies++;
	w->ctr.keepalive_replies++;
	sl_tx_send(w, SL_DOWN, m);
}

/*
 * Both sides reset, the flow absorbing what follows: an answered head
 * sent again before its answer was acknowledged, the answer lost and not
 * kept (the share of mbufs for kept answers was full): the client sees
 * its connection fail, as after a lost reply of any server that gave up;
 * and a request sent after the server's FIN (sl_flow.c after_close).
 */
void
sl_reply_reset(struct sl_worker *w, struct rte_mbuf *m, struct sl_flow *f,
	       const struct sl_pkt *p)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len;

	reset_server(w, frame, p, sl_xlate_client_seq(w, f, f->c_next));
	first_only(m);
	len = sl_reply_segment(frame, m->buf_len - m->data_off, frame, p, 1,
			       server_seq(w, f, p), p->seq + p->payload_len,
			       RST | ACK, NULL, 0);
	f->state = SL_FLOW_ABSORB;
	if (unlikely(len == 0)) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = len;
	m->ol_flags = 0;
	sl_tx_send(w, SL_DOWN, m);
}

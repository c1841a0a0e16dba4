/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Keeping a connection after a 429 (response.keep_alive): the refused
 * head is taken out of the server's stream and the reply put into the
 * client's, so from then on each side's sequence numbers are shifted by
 * what the other never saw. The flow table keeps the client's sequence
 * space for the client's bytes and the server's for the server's; acks
 * are translated before the flow reads them (so that they speak of the
 * stream it tracks), sequence numbers after, on the way out. SACK blocks
 * are translated as acks are; a block that names only a reply (bytes the
 * server never sent) is dropped.
 *
 * A new answer is put in only once the last one is acknowledged, so two
 * points of each shift are enough: what lies before the last one (the
 * shift before it) and what lies after (the whole shift). Until it is
 * acknowledged the answer is kept (a reference to its mbuf, at most an
 * eighth of the pool in all, so clients that never acknowledge cannot
 * drain it) and sent again when the client sends the head again.
 *
 * An allowed response's budget (budget.c) is put in the same way: bytes
 * the client gets that the server never sent, one in flight at a time,
 * the frame that carried them kept in the same place (hdr says which).
 * A flow is translated from its first budget on, with no shift until
 * then (sl_xlate_track).
 */
#include <rte_malloc.h>

#include "dp.h"

int
sl_xlate_init(struct sl_worker *w)
{
	uint32_t n = w->app->cfg->dataplane.flows_per_worker;

	if (!w->app->cfg->response.keep_alive)
		return 0; /* no table: every refusal closes */
	w->xl = rte_zmalloc_socket("sl_xlate", (size_t)n * sizeof(*w->xl), 64,
				   rte_lcore_to_socket_id(w->lcore));
	w->xl_held = 0;
	w->xl_held_max = w->app->cfg->dataplane.mbufs / 8;
	return w->xl == NULL ? -1 : 0;
}

static void
let_go(struct sl_worker *w, struct sl_xlate *x)
{
	if (x->reply == NULL)
		return;
	rte_pktmbuf_free(x->reply);
	x->reply = NULL;
	w->xl_held--;
}

void
sl_xlate_free(struct sl_worker *w)
{
	uint32_t i, n = w->app->cfg->dataplane.flows_per_worker;

	for (i = 0; w->xl != NULL && w->xl_held > 0 && i < n; i++)
		let_go(w, &w->xl[i]);
	rte_free(w->xl);
	w->xl = NULL;
}

static struct sl_xlate *
xl_of(struct sl_worker *w, const struct sl_flow *f)
{
	return &w->xl[sl_flow_index(w->flows, f)];
}

/* The client's sequence (its own space) as the server numbers it. */
static uint32_t
client_seq(const struct sl_xlate *x, uint32_t seq)
{
	if ((int32_t)(seq - (x->c_at + x->c_len)) >= 0)
		return seq - x->c_del;
	return seq - (x->c_del - x->c_len);
}

uint32_t
sl_xlate_client_seq(struct sl_worker *w, const struct sl_flow *f, uint32_t seq)
{
	if (f == NULL || !(f->nflags & SL_NF_XLATE))
		return seq;
	return client_seq(xl_of(w, f), seq);
}

/* The client's ack (of the stream it read) as the server numbers it: an
 * ack inside the reply is an ack of where the reply went in. */
static uint32_t
client_ack(const struct sl_xlate *x, uint32_t ack)
{
	uint32_t before = x->s_ins - x->s_len;

	if ((int32_t)(ack - x->s_at) <= 0)
		return ack - before;
	if ((int32_t)(ack - (x->s_at + x->s_len)) <= 0)
		return x->s_at - before;
	return ack - x->s_ins;
}

/* The server's ack (of the stream it got) in the client's numbers: at
 * the place a head was taken out, past it (the reply acknowledged it). */
static uint32_t
server_ack(const struct sl_xlate *x, uint32_t ack)
{
	uint32_t before = x->c_del - x->c_len;

	if ((int32_t)(ack - (x->c_at - before)) >= 0)
		return ack + x->c_del;
	return ack + before;
}

/* The server's sequence in the client's numbers. */
uint32_t
sl_xlate_server_seq(struct sl_worker *w, const struct sl_flow *f, uint32_t seq)
{
	const struct sl_xlate *x;
	uint32_t before;

	if (f == NULL || !(f->nflags & SL_NF_XLATE))
		return seq;
	x = xl_of(w, f);
	before = x->s_ins - x->s_len;
	if ((int32_t)(seq - (x->s_at - before)) >= 0)
		return seq + x->s_ins;
	return seq + before;
}

int
sl_xlate_client_in(struct sl_worker *w, struct sl_flow *f, struct sl_pkt *p,
		   uint32_t *ack)
{
	struct sl_xlate *x = xl_of(w, f);
	uint32_t end = p->seq + p->payload_len;

	if ((p->tcp_flags & SL_TCP_ACK) && (int32_t)(p->ack - x->c_ack) > 0)
		x->c_ack = p->ack;
	if (x->reply != NULL && sl_xlate_answer_acked(w, f))
		let_go(w, x);
	/* the answered head again: its answer was lost (or this copy is
	 * late); either way not the server's to see */
	if (p->payload_len > 0 && x->c_len > 0 &&
	    (int32_t)(end - x->c_at) > 0 &&
	    (int32_t)(p->seq - (x->c_at + x->c_len)) < 0) {
		/* (a budget put in since: its answer was acknowledged) */
		if (x->hdr || sl_xlate_answer_acked(w, f))
			return SL_XL_DROP;
		w->ctr.keepalive_resent++;
		if (x->reply == NULL)
			return SL_XL_RESET;
		rte_mbuf_refcnt_update(x->reply, 1);
		sl_tx_send(w, SL_DOWN, x->reply);
		return SL_XL_DROP;
	}
	*ack = client_ack(x, p->ack);
	return SL_XL_GO;
}

/* A SACK block's edges map as acks do: the client's, into the server's
 * stream (a block inside a reply is empty there, and dropped); the
 * server's, into the client's. */
static uint32_t
client_edge(const void *x, uint32_t seq)
{
	return client_ack(x, seq);
}

static uint32_t
server_edge(const void *x, uint32_t seq)
{
	return server_ack(x, seq);
}

void
sl_xlate_client_out(struct sl_worker *w, const struct sl_flow *f,
		    uint8_t *frame, struct sl_pkt *p, uint32_t ack)
{
	const struct sl_xlate *x = xl_of(w, f);

	sl_tcp_set_seq_ack(frame, p, client_seq(x, p->seq), ack);
	sl_tcp_map_sack(frame, p, client_edge, x);
	w->ctr.keepalive_translated++;
}

uint32_t
sl_xlate_server_in(struct sl_worker *w, const struct sl_flow *f,
		   const struct sl_pkt *p)
{
	return server_ack(xl_of(w, f), p->ack);
}

void
sl_xlate_server_out(struct sl_worker *w, const struct sl_flow *f,
		    uint8_t *frame, struct sl_pkt *p, uint32_t seq,
		    uint32_t ack)
{
	sl_tcp_set_seq_ack(frame, p, seq, ack);
	sl_tcp_map_sack(frame, p, server_edge, xl_of(w, f));
	w->ctr.keepalive_translated++;
}

int
sl_xlate_answer_acked(struct sl_worker *w, const struct sl_flow *f)
{
	const struct sl_xlate *x;

	if (!(f->nflags & SL_NF_XLATE))
		return 1;
	x = xl_of(w, f);
	return (int32_t)(x->c_ack - (x->s_at + x->s_len)) >= 0;
}

struct sl_xlate *
sl_xlate_track(struct sl_worker *w, struct sl_flow *f, uint32_t cseq,
	       uint32_t cack)
{
	struct sl_xlate *x = xl_of(w, f);

	if (f->nflags & SL_NF_XLATE)
		return x;
	let_go(w, x); /* an earlier connection's, in this entry */
	memset(x, 0, sizeof(*x));
	/* nothing taken out or put in yet: both points where the client is */
	x->c_at = cseq;
	x->s_at = x->c_ack = cack;
	x->b_slot = UINT16_MAX;
	f->nflags |= SL_NF_XLATE;
	sl_flow_set_kept(w->flows, f);
	return x;
}

int
sl_xlate_keep(struct sl_worker *w, struct sl_xlate *x, struct rte_mbuf *m)
{
	let_go(w, x); /* (acknowledged: the precondition of a new one) */
	if (w->xl_held >= w->xl_held_max)
		return -1;
	rte_mbuf_refcnt_update(m, 1);
	x->reply = m;
	w->xl_held++;
	return 0;
}

void
sl_xlate_answered(struct sl_worker *w, struct sl_flow *f, uint32_t head_seq,
		  uint32_t head_len, uint32_t reply_seq, struct rte_mbuf *reply,
		  uint32_t reply_len)
{
	struct sl_xlate *x = sl_xlate_track(w, f, head_seq, reply_seq);

	x->hdr = 0;
	x->c_del += head_len;
	x->c_at = head_seq;
	x->c_len = (uint16_t)head_len;
	x->s_ins += reply_len;
	x->s_at = reply_seq;
	x->s_len = (uint16_t)reply_len;
	/* the server will never acknowledge the head: the reply did */
	sl_flow_answered_to(w->flows, f, head_seq + head_len);
	if (sl_xlate_keep(w, x, reply) != 0)
		w->ctr.keepalive_unkept++;
}

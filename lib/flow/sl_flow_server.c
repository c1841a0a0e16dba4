/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server's side of a connection: its responses framed so that a
 * refusal is never put inside one (sl_resp), an upgrade's answer taken,
 * and what the client's acknowledgements say was answered.
 */
#include <stddef.h>
#include <string.h>

#include "sl_flow_priv.h"

/*
 * Whether the answer to a pending upgrade came: the response framer
 * attributes status lines to the requests they answer, so only the
 * upgrade's own 101 (2xx to CONNECT) takes the stream out of HTTP. Any
 * other answer to it, or an answer that cannot be attributed (framing
 * lost), and inspection goes on, as a server that did not switch reads
 * on.
 */
static void
upgrade_answer(struct sl_flow_table *t, struct sl_flow *f)
{
	int st = sl_resp_tunnel(&f->resp);

	if (st == 0)
		return;
	if (st > 0) {
		f->state = SL_FLOW_PASS;
		t->st.upgrades++;
	} else {
		f->state = SL_FLOW_HEAD;
		t->st.upgrades_refused++;
	}
}

int
sl_flow_server_reopens(const struct sl_flow *f, const struct sl_seg *s)
{
	if ((s->flags & (SL_FL_SYN | SL_FL_ACK)) != (SL_FL_SYN | SL_FL_ACK) ||
	    f == NULL || !f->s_seen)
		return 0;
	/* its first SYN-ACK again (our ACK to it lost on the way) */
	return !((f->nflags & SL_NF_SYNACK) && s->seq + 1 == f->s_isn &&
		 s->ack == f->s_ack);
}

static void
server_synack(struct sl_flow *f, const struct sl_seg *s)
{
	if (!(f->nflags & SL_NF_SYN) || (f->nflags & SL_NF_PLACED))
		return;
	f->nflags |= SL_NF_SYNACK;
	f->s_isn = s->seq + 1;
	if ((f->nflags & SL_NF_CTS) && s->has_ts)
		f->nflags |= SL_NF_TS;
}

static void
server_syn(struct sl_flow_table *t, struct sl_flow *f, const struct sl_seg *s)
{
	if (sl_flow_server_reopens(f, s)) {
		/*
		 * The backend answered a SYN we let by as changing nothing
		 * (on_syn) with a new connection's handshake: it no longer
		 * holds the one we do. An RST we could not take ended it (at
		 * its next sequence, behind ours on bytes it dropped), or it
		 * timed it out. What follows is read as a new connection's
		 * from where the backend stands, or bytes it takes as that
		 * connection's first would pass as the old one's: resent,
		 * or a tunnel's.
		 */
		sl_flow_begin(t, f, s->ack - 1, s->has_ts, s->tsecr, 0);
		t->st.reopened++;
	}
	if (s->flags & SL_FL_ACK)
		server_synack(f, s);
}

/*
 * The server's new bytes, in order, framed into responses. Bytes before
 * its stream start was seen, or after a gap (a FIN's too: it would move
 * where the bytes end past those missing), cannot be framed: the count
 * is unknown for the rest of the connection.
 */
static void
responses(struct sl_flow_table *t, struct sl_flow *f, const struct sl_seg *s,
	  struct sl_resp_mark *mk)
{
	int32_t skip;
	uint32_t i;

	if (sl_resp_due(&f->resp) < 0 ||
	    (s->len == 0 && !(s->flags & SL_FL_FIN)))
		return;
	skip = f->s_seen ? (int32_t)(f->s_next - s->seq) : -1;
	if (skip >= 0 && (uint32_t)skip >= s->len)
		return; /* sent again, or a FIN where the bytes end */
	if (skip < 0)
		sl_resp_lost(&f->resp);
	else
		t->st.responses +=
			sl_resp_consume_mark(&f->resp, s->payload + skip,
					     s->len - (uint32_t)skip, mk);
	if (mk != NULL && mk->off != UINT32_MAX)
		mk->off += (uint32_t)skip;
	if (mk != NULL && mk->from != UINT32_MAX)
		mk->from += (uint32_t)skip;
	for (i = 0; mk != NULL && i < mk->n_ends; i++)
		mk->end[i].off += (uint32_t)skip;
	if (sl_resp_due(&f->resp) < 0)
		t->st.resp_unframed++;
}

void
sl_flow_server_segment(struct sl_flow_table *t, const struct sl_flow_key *k,
		       const struct sl_seg *s, uint64_t now)
{
	sl_flow_server_segment_mark(t, k, s, now, NULL);
}

void
sl_flow_server_segment_mark(struct sl_flow_table *t,
			    const struct sl_flow_key *k, const struct sl_seg *s,
			    uint64_t now, struct sl_resp_mark *mk)
{
	sl_flow_server_segment_of(t, sl_flow_lookup(t, k), s, now, mk);
}

void
sl_flow_server_segment_of(struct sl_flow_table *t, struct sl_flow *f,
			  const struct sl_seg *s, uint64_t now,
			  struct sl_resp_mark *mk)
{
	uint32_t end;

	if (mk != NULL) {
		mk->off = UINT32_MAX;
		mk->n_ends = 0;
		mk->from = UINT32_MAX;
		mk->closed = 0;
	}
	if (f == NULL)
		return;
	if (s->flags & SL_FL_RST) {
		sl_flow_remove(t, f);
		t->st.closed++;
		return;
	}
	sl_flow_touch(t, f, now);
	if (s->flags & SL_FL_SYN)
		server_syn(t, f, s);
	responses(t, f, s, mk);
	end = s->seq + s->len + ((s->flags & (SL_FL_SYN | SL_FL_FIN)) ? 1 : 0);
	if (!f->s_seen || (int32_t)(end - f->s_next) > 0)
		f->s_next = end;
	if ((s->flags & SL_FL_ACK) &&
	    (!f->s_seen || (int32_t)(s->ack - f->s_ack) > 0)) {
		f->s_ack = s->ack;
		sl_flow_rec_release(t, f, s->ack);
	}
	f->s_seen = 1;
	if (f->nflags & SL_NF_PLACED)
		sl_flow_set_estab(t, f);
	if (f->state == SL_FLOW_UPGRADE)
		upgrade_answer(t, f);
	if (s->flags & SL_FL_FIN) {
		f->s_fin = 1;
		if (mk != NULL && sl_resp_due(&f->resp) >= 0)
			mk->closed = 1; /* framed to its end: none can follow */
	}
}

void
sl_flow_answered_to(struct sl_flow_table *t, struct sl_flow *f, uint32_t ack)
{
	if (f->s_seen && (int32_t)(ack - f->s_ack) <= 0)
		return;
	f->s_ack = ack;
	sl_flow_rec_release(t, f, ack);
}

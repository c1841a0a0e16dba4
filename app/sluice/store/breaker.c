/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * When a node is out: one circuit breaker per node, opened when no
 * reply at all came from it for a while (a few slow replies are a slow
 * node, squared when they come), probed half-open, closed by any reply;
 * and the asks nobody answered in time, decided in the store's place.
 */
#include "sl_app.h"
#include "store_priv.h"

/*
 * Units covered for an ask whose reply can no longer come (its slot
 * reused, its connection closed): the store may or may not have counted
 * the ask; the node's units are charged, the safe side of a double count.
 */
void
sl_store_owe_covered(struct sl_store *s, struct inflight *f)
{
	struct sl_coord_msg b;

	f->timed_out = 0;
	if (f->waiting || f->covered == 0)
		return;
	sl_msg_taken(&b, &f->q, f->covered);
	if (sl_owed_add(s->owed, &b, b.back.units, s->now) == 0)
		s->st.owed_units += b.back.units;
}

uint32_t
sl_node_index(const struct sl_store *s, const struct node *nd)
{
	return (uint32_t)(nd - s->nodes);
}

void
sl_breaker_open(struct sl_store *s, struct node *nd, uint64_t now)
{
	struct breaker *b = &nd->br;

	if (b->state != SL_BR_OPEN) {
		s->st.opened++;
		SL_LOG(WARNING,
		       "store: circuit open to %s:%u, its keys decide by "
		       "on_store_failure",
		       nd->host, nd->port);
	}
	/* probes unanswered over an up connection, time after time: it
	 * may be dead without a word (a partition); a fresh one, the
	 * replies of the old asks given up (their units charged when it
	 * answers) */
	if (b->state == SL_BR_HALF_OPEN && ++b->probes_failed % 5 == 0) {
		uint32_t i;

		for (i = 0; i < INFLIGHT; i++)
			if (s->fl[i].timed_out &&
			    s->fl[i].judged == sl_node_index(s, nd))
				sl_store_owe_covered(s, &s->fl[i]);
		sl_node_reconnect(nd, 1);
	}
	b->state = SL_BR_OPEN;
	b->fails = 0;
	b->next_probe_ns = now + s->probe_ns;
}

/* A reply came from nd, in time or late: it answers again. */
void
sl_breaker_close(struct node *nd)
{
	struct breaker *b = &nd->br;

	b->fails = 0;
	b->probes_failed = 0;
	if (b->state != SL_BR_CLOSED) {
		b->state = SL_BR_CLOSED;
		SL_LOG(NOTICE, "store: circuit closed to %s:%u", nd->host,
		       nd->port);
	}
}

/*
 * Whether a new ask may go to nd now: closed, or open long enough that
 * this ask is its half-open probe (one at a time). A connection that is
 * still up stays (a paused or slow server's replies are still coming,
 * and a reconnect would lose them); one that went down is opened again.
 */
int
sl_node_usable(struct sl_store *s, struct node *nd, uint64_t now)
{
	struct breaker *b = &nd->br;

	if (b->state == SL_BR_CLOSED)
		return nd->conn.ac != NULL;
	if (b->state == SL_BR_OPEN && now >= b->next_probe_ns) {
		sl_node_reconnect(nd, 0);
		b->state = SL_BR_HALF_OPEN;
		b->probe_out = 0;
		b->next_probe_ns = now + s->probe_ns;
	}
	return b->state == SL_BR_HALF_OPEN && !b->probe_out &&
	       nd->conn.ac != NULL;
}

/* The store's state for telemetry: its worst node's among those that
 * serve slots (a node the map moved away from no longer counts). */
void
sl_store_state(struct sl_store *s)
{
	uint8_t worst = SL_BR_CLOSED, serving = 0;
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++) {
		const struct node *nd = &s->nodes[i];

		if (s->cluster && nd->slots == 0)
			continue;
		serving = 1;
		if (nd->br.state == SL_BR_OPEN ||
		    (nd->br.state == SL_BR_HALF_OPEN && worst != SL_BR_OPEN))
			worst = nd->br.state;
	}
	s->st.state = serving ? worst : SL_BR_OPEN;
}

/*
 * An ask that timed out. While its node's breaker is closed it is one slow
 * reply: decided late (from the node's share, or left to its reply). Not
 * closed (the ask was the half-open probe) the node is suspect: decided by
 * policy now (fail_closed refuses), its units owed by the node; a reply
 * that still comes is then given back whole (covered 0), the node's units
 * being charged through what it owes — counted once either way.
 */
static void
timed_out(struct sl_store *s, struct inflight *f, uint64_t now)
{
	if (s->nodes[f->judged].br.state == SL_BR_CLOSED) {
		f->waiting = !s->sink.failed(s->sink.ctx, &f->q, SL_SF_LATE,
					     now, &f->covered);
		return;
	}
	s->sink.failed(s->sink.ctx, &f->q, SL_SF_OUT, now, &f->covered);
	f->covered = 0;
	f->waiting = 0;
}

/*
 * Timeouts alone are a slow node, whose late replies are squared: its
 * circuit opens when no reply at all came from it for a while (or its
 * connection is down), not on a few slow ones.
 */
static void
judge(struct sl_store *s, struct node *nd, uint64_t now)
{
	const struct breaker *b = &nd->br;

	if (((b->state == SL_BR_CLOSED && b->fails >= FAILS_OPEN) ||
	     (b->state == SL_BR_HALF_OPEN && b->fails > 0 &&
	      now >= b->next_probe_ns)) &&
	    now - b->last_reply_ns >= SILENT_TIMEOUTS * s->timeout_ns)
		sl_breaker_open(s, nd, now);
	else if (nd->conn.ac == NULL && b->state != SL_BR_OPEN)
		sl_breaker_open(s, nd, now);
}

/* Asks nobody answered in time: answered by policy, and counted. */
void
sl_store_expire(struct sl_store *s, uint64_t now)
{
	uint32_t k;

	while (s->head != s->tail) {
		struct inflight *f = &s->fl[s->fifo[s->head]];

		if (f->used && now - f->sent_ns < s->timeout_ns)
			break;
		if (f->used) {
			struct breaker *b = &s->nodes[f->judged].br;

			f->used = 0;
			s->st.timeouts++;
			if (++b->fails >= FAILS_OPEN)
				sl_nodes_refresh_soon(s);
			if (f->probe)
				b->probe_out = 0;
			/* decided in its place now; its reply, if it comes,
			 * is reconciled with what was granted here */
			f->timed_out = !f->charge;
			if (!f->charge)
				timed_out(s, f, now);
		}
		s->head = (s->head + 1) % INFLIGHT;
		s->n--;
	}
	for (k = 0; k < s->n_nodes; k++)
		judge(s, &s->nodes[k], now);
}

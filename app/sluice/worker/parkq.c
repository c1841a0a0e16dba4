/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_malloc.h>

#include "parkq.h"

static size_t
stride(void)
{
	return sizeof(struct sl_parked) + SL_MAX_MATCH * sizeof(struct sl_need);
}

struct sl_parked *
sl_parkq_entry(const struct sl_parkq *q, uint16_t i)
{
	return (struct sl_parked *)((uint8_t *)q->mem + (size_t)i * stride());
}

int
sl_parkq_init(struct sl_parkq *q, unsigned int socket)
{
	uint16_t i;

	memset(q, 0, sizeof(*q));
	q->mem = rte_zmalloc_socket("sl_park", SL_PARK_MAX * stride(), 64,
				    (int)socket);
	if (q->mem == NULL)
		return -1;
	for (i = 0; i < SL_PARK_MAX; i++)
		q->free[i] = (uint16_t)(SL_PARK_MAX - 1 - i);
	q->n_free = SL_PARK_MAX;
	q->head = q->tail = SL_PARK_NIL;
	return 0;
}

void
sl_parkq_free(struct sl_parkq *q)
{
	rte_free(q->mem);
	q->mem = NULL;
}

uint16_t
sl_parkq_add(struct sl_parkq *q, const struct sl_need *ns, uint32_t n,
	     const struct sl_identity *id, int16_t tier, uint64_t deadline_ns)
{
	uint16_t i = q->free[--q->n_free];
	struct sl_parked *e = sl_parkq_entry(q, i);

	memset(e, 0, sizeof(*e));
	e->in_use = 1;
	e->n_need = (uint8_t)n;
	memcpy(e->need, ns, n * sizeof(ns[0]));
	e->id = *id;
	e->tier = tier;
	e->deadline_ns = deadline_ns;
	e->next = SL_PARK_NIL;
	e->prev = q->tail;
	if (q->tail != SL_PARK_NIL)
		sl_parkq_entry(q, q->tail)->next = i;
	else
		q->head = i;
	q->tail = i;
	return i;
}

void
sl_parkq_attach(struct sl_parkq *q, uint16_t i, struct rte_mbuf *m,
		const struct sl_pkt *p, const struct sl_flow_key *k,
		const struct sl_park_place *at)
{
	struct sl_parked *e = sl_parkq_entry(q, i);

	e->m = m;
	e->p = *p;
	e->fk = *k;
	e->rest_off = at->rest_off;
	e->rest_len = p->payload_len > at->rest_off
			      ? p->payload_len - at->rest_off
			      : 0;
	e->first = at->first;
	e->keep = at->keep;
	e->head_off = at->head_off;
}

int
sl_parkq_hold(struct sl_parkq *q, uint16_t i, struct rte_mbuf *m)
{
	struct sl_parked *e = sl_parkq_entry(q, i);

	if (!e->in_use || e->n_held == SL_PARK_HELD)
		return -1;
	e->held[e->n_held++] = m;
	return 0;
}

void
sl_parkq_remove(struct sl_parkq *q, uint16_t i)
{
	struct sl_parked *e = sl_parkq_entry(q, i);

	if (e->prev != SL_PARK_NIL)
		sl_parkq_entry(q, e->prev)->next = e->next;
	else
		q->head = e->next;
	if (e->next != SL_PARK_NIL)
		sl_parkq_entry(q, e->next)->prev = e->prev;
	else
		q->tail = e->prev;
	e->in_use = 0;
	q->free[q->n_free++] = i;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>

#include "sl_mem.h"
#include "sl_table.h"

#define MAX_BKTS (1u << 28)

static size_t
bkts_bytes(const struct sl_table *t)
{
	return ((size_t)t->mask + 1) * sizeof(struct sl_table_bkt);
}

static int
geometry(struct sl_table *t, uint32_t capacity)
{
	uint32_t nb = 1;

	if (capacity == 0 || capacity > MAX_BKTS * (SL_TABLE_SLOTS / 2))
		return -1;
	while ((uint64_t)nb * SL_TABLE_SLOTS < (uint64_t)capacity * 2)
		nb <<= 1;
	t->mask = nb - 1;
	t->capacity = capacity;
	return 0;
}

static void
all_free(struct sl_table *t)
{
	uint32_t i;

	for (i = 0; i < t->capacity; i++)
		t->free[i] = t->capacity - 1 - i;
	t->n_free = t->capacity;
	t->clock = 0;
}

int
sl_table_init(struct sl_table *t, uint32_t capacity)
{
	t->bkts = NULL;
	t->free = NULL;
	if (geometry(t, capacity) != 0)
		return -1;
	t->bkts = sl_mem_table(bkts_bytes(t));
	t->free = malloc((size_t)capacity * sizeof(uint32_t));
	if (t->bkts == NULL || t->free == NULL) {
		sl_table_fini(t);
		return -1;
	}
	all_free(t);
	return 0;
}

size_t
sl_table_arena_bytes(uint32_t capacity)
{
	struct sl_table t;

	if (geometry(&t, capacity) != 0)
		return 0;
	return bkts_bytes(&t) + 64 + (size_t)capacity * sizeof(uint32_t) + 64;
}

int
sl_table_init_in(struct sl_table *t, uint32_t capacity, struct sl_mem_arena *a)
{
	struct sl_table was = *t;

	if (geometry(t, capacity) != 0)
		return -1;
	if (!a->fresh && (was.mask != t->mask || was.capacity != capacity ||
			  was.n_free > capacity || was.clock >= capacity * 2u))
		return -1;
	t->bkts = sl_mem_carve(a, bkts_bytes(t));
	t->free = sl_mem_carve(a, (size_t)capacity * sizeof(uint32_t));
	if (t->bkts == NULL || t->free == NULL)
		return -1;
	if (a->fresh)
		all_free(t);
	return 0;
}

void
sl_table_fini(struct sl_table *t)
{
	if (t->bkts != NULL)
		sl_mem_table_free(t->bkts, bkts_bytes(t));
	free(t->free);
	t->bkts = NULL;
	t->free = NULL;
}

void
sl_table_prefault(struct sl_table *t)
{
	sl_mem_prefault(t->bkts, bkts_bytes(t));
}

uint64_t
sl_table_bytes(const struct sl_table *t)
{
	return bkts_bytes(t) + (uint64_t)t->capacity * sizeof(uint32_t);
}

uint32_t
sl_table_clock(struct sl_table *t, uint32_t scan, sl_table_before_fn before,
	       void *arg)
{
	uint32_t best = SL_TABLE_NONE, i;

	for (i = 0; i < scan || (best == SL_TABLE_NONE && i < 2 * t->capacity);
	     i++) {
		uint32_t c = t->clock;

		t->clock = c + 1 == t->capacity ? 0 : c + 1;
		if (before(arg, c, best))
			best = c;
	}
	return best;
}

uint32_t
sl_table_pair(const struct sl_table *t, uint32_t b1, uint32_t b2,
	      sl_table_before_fn before, void *arg)
{
	uint32_t bs[2] = {b1, b2}, best = SL_TABLE_NONE;
	int i, s;

	for (i = 0; i < 2; i++)
		for (s = 0; s < SL_TABLE_SLOTS; s++) {
			uint32_t e = t->bkts[bs[i]].idx[s];

			if (e != 0 && before(arg, e - 1, best))
				best = e - 1;
		}
	return best;
}

int
sl_table_shift(struct sl_table *t, uint32_t b, sl_table_other_fn other,
	       void *arg, struct sl_table_move *mv)
{
	struct sl_table_bkt *bk = &t->bkts[b];
	int s, to;

	mv->entry = SL_TABLE_NONE;
	for (s = 0; s < SL_TABLE_SLOTS; s++) {
		uint32_t e = bk->idx[s] - 1, o;

		if (bk->idx[s] == 0)
			return s; /* room after all */
		o = other(arg, e, b);
		if (o == b || (to = sl_table_free_slot(t, o)) < 0)
			continue;
		t->bkts[o].sig[to] = bk->sig[s];
		t->bkts[o].idx[to] = bk->idx[s];
		bk->sig[s] = 0;
		bk->idx[s] = 0;
		mv->entry = e;
		mv->bucket = o;
		mv->slot = (uint32_t)to;
		return s;
	}
	return -1;
}

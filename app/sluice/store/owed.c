/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "owed.h"

#define MASK (SL_OWED_CAP - 1)

static uint32_t
home(uint64_t k1, uint64_t k2)
{
	uint64_t h =
		(k1 ^ (k2 * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)(h >> 40) & MASK;
}

int
sl_owed_add(struct sl_owed *o, const struct sl_coord_msg *q, uint64_t units,
	    uint64_t now)
{
	uint32_t i = home(q->k1, q->k2);
	uint8_t type =
		q->type == SL_CO_GIVE_BACK ? SL_CO_GIVE_BACK : SL_CO_TAKEN;

	if (units == 0)
		return 0;
	for (;; i = (i + 1) & MASK) {
		struct sl_coord_msg *e = &o->e[i];

		if (e->back.units == 0)
			break;
		if (e->k1 == q->k1 && e->k2 == q->k2 && e->type == type) {
			e->back.units += units;
			return 0;
		}
	}
	/* one slot stays free so that every probe ends */
	if (o->n + 1 >= SL_OWED_CAP) {
		o->dropped_units += units;
		return -1;
	}
	o->e[i] = *q;
	o->e[i].type = type;
	o->e[i].back.units = units;
	o->e[i].back.since_ns = now;
	o->n++;
	return 0;
}

int
sl_owed_next(struct sl_owed *o)
{
	uint32_t k;

	if (o->n == 0)
		return -1;
	for (k = 0; k < SL_OWED_CAP; k++, o->cursor = (o->cursor + 1) & MASK)
		if (o->e[o->cursor].back.units != 0)
			return (int)o->cursor;
	return -1;
}

void
sl_owed_skip(struct sl_owed *o)
{
	o->cursor = (o->cursor + 1) & MASK;
}

/* Whether home h lies cyclically in (i, j]: an entry there may not move
 * back to i without being lost to its probe. */
static int
between(uint32_t i, uint32_t h, uint32_t j)
{
	return i <= j ? (i < h && h <= j) : (i < h || h <= j);
}

void
sl_owed_remove(struct sl_owed *o, uint32_t i)
{
	uint32_t j = i;

	o->n--;
	/* linear probing without tombstones: later entries of the same
	 * run move back into the hole */
	for (;;) {
		o->e[i].back.units = 0;
		do {
			j = (j + 1) & MASK;
			if (o->e[j].back.units == 0)
				return;
		} while (between(i, home(o->e[j].k1, o->e[j].k2), j));
		o->e[i] = o->e[j];
		i = j;
	}
}

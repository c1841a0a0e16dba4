/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A region's slices of its global limits, per identity: an open-addressing
 * table filled once by the control plane and then only read (workers look
 * an identity up per request of a global rule; a new set is a new table).
 */
#include <string.h>

#include "sl_lease.h"

static uint32_t
slot_of(uint64_t k1, uint64_t k2)
{
	uint64_t h =
		(k1 ^ (k2 * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)(h >> 40) & (SL_SLICE_SLOTS - 1);
}

void
sl_slices_clear(struct sl_slices *t)
{
	memset(t, 0, sizeof(*t));
}

int
sl_slices_put(struct sl_slices *t, uint64_t k1, uint64_t k2, uint32_t parts)
{
	uint32_t i = slot_of(k1, k2);

	if (parts > SL_SLICE_PARTS)
		return -1;
	for (;; i = (i + 1) & (SL_SLICE_SLOTS - 1)) {
		struct sl_slice_entry *e = &t->e[i];

		if (e->parts1 == 0) {
			/* kept at most half full: a miss ends its probe soon */
			if (t->n >= SL_SLICE_SLOTS / 2)
				return -1;
			e->k1 = k1;
			e->k2 = k2;
			t->n++;
		} else if (e->k1 != k1 || e->k2 != k2) {
			continue;
		}
		e->parts1 = parts + 1;
		return 0;
	}
}

int
sl_slices_find(const struct sl_slices *t, uint64_t k1, uint64_t k2,
	       uint32_t *parts)
{
	uint32_t i = slot_of(k1, k2);

	if (t == NULL || t->n == 0)
		return 0;
	for (;; i = (i + 1) & (SL_SLICE_SLOTS - 1)) {
		const struct sl_slice_entry *e = &t->e[i];

		if (e->parts1 == 0)
			return 0;
		if (e->k1 == k1 && e->k2 == k2) {
			*parts = e->parts1 - 1;
			return 1;
		}
	}
}

/* n x parts / SL_SLICE_PARTS, at least 1: a limit is never zero. */
static uint64_t
scaled(uint64_t n, uint32_t parts)
{
	uint64_t v = (uint64_t)((unsigned __int128)n * parts / SL_SLICE_PARTS);

	return v > 0 ? v : 1;
}

void
sl_slice_apply(uint64_t global_count, uint64_t global_burst, uint32_t parts,
	       uint64_t *count, uint64_t *burst)
{
	*count = scaled(global_count, parts);
	*burst = scaled(global_burst, parts);
}

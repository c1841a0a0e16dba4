/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_OWED_H
#define SLUICE_OWED_H

/*
 * Units the node admitted that the store has not counted yet: decided from
 * the node's share while the store was out, taken by workers alone, or
 * covered for an ask whose reply can no longer come; and units given back
 * while the store was out, which it still counts as spent. One entry per
 * (rule, identity) and direction (SL_CO_TAKEN: to charge, SL_CO_GIVE_BACK:
 * to refund), the units summed, sent once the store answers again.
 * Fixed size, no allocation after creation; a full table drops the units
 * and counts them.
 */

#include <stdint.h>

#include "sl_lanes.h"

#define SL_OWED_CAP 4096 /* a power of two */

struct sl_owed {
	struct sl_coord_msg
		e[SL_OWED_CAP]; /* TAKEN or GIVE_BACK; back.units 0: free */
	uint32_t n;
	uint32_t cursor;
	uint64_t dropped_units;
};

/* Adds units owed for q's (rule, identity), admitted at now (the first
 * ones' time is kept: back.since_ns), q's numbers kept: to refund when
 * q->type is SL_CO_GIVE_BACK, else to charge. 0, or -1 (full: counted in
 * dropped_units). */
int sl_owed_add(struct sl_owed *o, const struct sl_coord_msg *q, uint64_t units,
		uint64_t now_ns);

/* The next entry to charge, from a cursor that goes round: its index, or
 * -1 when none is owed. */
int sl_owed_next(struct sl_owed *o);
/* Passes over the entry sl_owed_next gave (its node cannot take it now):
 * the next call gives the one after it. */
void sl_owed_skip(struct sl_owed *o);

/* Forgets entry i (charged). */
void sl_owed_remove(struct sl_owed *o, uint32_t i);

#endif /* SLUICE_OWED_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_WHY_H
#define SLUICE_WHY_H

/*
 * /sluice/why: a client's limits as the workers hold them, read through
 * each owner's probe mailbox (contract/sl_probe.h).
 */

#include "sl_app.h"
#include "sl_probe.h"
#include "sl_view.h"

struct sl_why;

/* Registers /sluice/why over n workers and the node's authority's
 * mailbox (NULL: no authority); NULL when out of memory. */
struct sl_why *sl_why_start(const struct sl_app *app,
			    const struct sl_worker_view *views, unsigned int n,
			    struct sl_probe *node);
/* Withdraws the command, then frees it (before the workers go). */
void sl_why_free(struct sl_why *y);

#endif /* SLUICE_WHY_H */

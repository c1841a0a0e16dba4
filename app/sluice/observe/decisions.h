/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_DECISIONS_H
#define SLUICE_DECISIONS_H

/*
 * The writer of the sampled decision stream: a control thread drains the
 * workers' rings (records in sl_decision.h) and writes JSON lines to a
 * file, or XADDs to a capped Redis Stream over its own connection.
 */

#include "sl_app.h"
#include "sl_decision.h"
#include "sl_view.h"

struct sl_decisions;

/*
 * Sets the workers' rings and opens the file. *out stays NULL when cfg
 * names no sink. Returns -1 when the file cannot be opened (or no memory).
 */
int sl_decisions_create(const struct sl_config *cfg, const struct sl_app *app,
			const struct sl_worker_view *ws, unsigned int n,
			struct sl_decisions **out);
/* Starts the writer thread; call once the workers are set up. */
int sl_decisions_start(struct sl_decisions *d);
/* Reopens the file (after a reload: log rotation). */
void sl_decisions_reopen(struct sl_decisions *d);
/* Drains what the workers left, flushes, stops the thread. */
void sl_decisions_stop(struct sl_decisions *d);

#endif /* SLUICE_DECISIONS_H */

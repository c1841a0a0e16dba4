/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_H
#define SLUICE_H

/*
 * The appliance itself (main.c, setup.c, ports.c): the only place that
 * sees every subject. Each folder beside this one is a subject with its
 * own library and include directory, and uses only what its meson.build
 * names (scripts/check-deps.py holds the build to it):
 *
 *   contract/   what both paths see: settings, policy, lanes, records
 *   worker/     the data path, one per lcore
 *   store/      Redis: nodes, cluster map, scripts, breaker, what is owed
 *   regions/    the aggregator's slices and the usage reports
 *   authority/  the node's authority: leases, ledgers, the store behind
 *   policy/     config to policy, reload, published rule sets
 *   observe/    the sampled decision stream
 */

#include "sl_app.h"
#include "sl_worker.h"

/* The node's authority c (NULL: none) as the app holds it: the control
 * path's handle and the workers' lanes. */
struct sl_coord;
void sl_app_set_coord(struct sl_app *app, struct sl_coord *c);

int sl_ports_init(struct sl_app *app, uint16_t want_queues);
void sl_ports_close(const struct sl_app *app);

#endif /* SLUICE_H */

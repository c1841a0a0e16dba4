/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_REGIONS_H
#define SLUICE_REGIONS_H

/*
 * Regions: the aggregator's slices of global rules, read from the
 * region's store and published to the workers under RCU (slices.c), and
 * each global rule's demand, counted for the reports (usage.c).
 */

#include <stdint.h>

#include "redis.h"
#include "sl_app.h"

struct sl_store;

/* The aggregator's slices of global rules, read from the region's store
 * (slices.c): host/port of its first node, for the announcements. */
struct sl_slicesync;
struct sl_slicesync *sl_slicesync_create(struct sl_app *app,
					 struct sl_store *store,
					 const char *host, uint16_t port,
					 const struct sl_redis_auth *auth);
void sl_slicesync_poll(struct sl_slicesync *s, uint64_t now_ns);
/* Frees it and the workers' table (the workers stopped); NULL: nothing. */
void sl_slicesync_free(struct sl_slicesync *s);
/* The workers' slices table (app->slices) replaced by t (NULL: none);
 * the one replaced waits in g until every worker passed a quiescent
 * point: sl_slices_reap frees it then and returns 1 (also when nothing
 * waits), else 0, and a swap must wait for that. */
struct sl_slices_retired {
	struct sl_slices *t;
	uint64_t token;
};
int sl_slices_reap(struct sl_app *app, struct sl_slices_retired *g);
void sl_slices_swap(struct sl_app *app, struct sl_slices_retired *g,
		    struct sl_slices *t);

#endif /* SLUICE_REGIONS_H */

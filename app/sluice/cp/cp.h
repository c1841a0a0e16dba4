/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_CP_H
#define SLUICE_CP_H

/*
 * The control path: everything that runs on the main lcore or a control
 * thread (reload, rule sync, the policy's life, the coordinator and its
 * store, the decision writer, telemetry). It meets the workers only
 * through the RCU-published policy, the coordinator's rings, the
 * decision rings and the counters registered once at start.
 */

#include <pthread.h>

#include "sluice.h"

/* Live reload (reload.c): from the file; returns 0, or -1 with errors. */
int sl_reload(struct sl_app *app, char *msg, size_t len);
int sl_reload_init(struct sl_app *app);
/* Applies a rule set published through the store (the file then yields). */
int sl_reload_text(struct sl_app *app, const char *version, const char *text,
		   size_t n, char *msg, size_t len);
/* Reloads when the file changed on disk; call every second or so. */
void sl_reload_poll(struct sl_app *app);

/* Rule sets published through the store (rulesync.c). */
struct sl_rulesync;
struct sl_rulesync *sl_rulesync_create(struct sl_app *app, const char *host,
				       uint16_t port, const char *channel,
				       uint32_t reconcile_ms);
void sl_rulesync_poll(struct sl_rulesync *r, uint64_t now_ns);

/* The aggregator's slices of global rules, read from the region's store
 * (slices.c): host/port of its first node, for the announcements. */
struct sl_slicesync;
struct sl_slicesync *sl_slicesync_create(struct sl_app *app, const char *host,
					 uint16_t port);
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

/* The one place a configuration becomes a running policy (policy.c). */
struct sl_policy *sl_policy_build(const struct sl_config *cfg);
/* Recomputes rule_of_slot after slot[] changed. */
void sl_policy_index_slots(struct sl_policy *p);
void sl_policy_free(struct sl_policy *p);

/*
 * What a thread other than a worker may read of the running policy,
 * copied under the reload lock: every swap holds it until the old policy
 * is freed, and RCU covers only the workers, so a telemetry or signal
 * handler must not dereference app->policy on its own.
 */
struct sl_policy_peek {
	char version[32];
	uint32_t dec_ppm[2];
};
void sl_policy_peek(const struct sl_app *app, struct sl_policy_peek *out);
/* The policy lock: held by every policy swap (reload.c) until the old
 * policy is freed, and by sl_policy_peek. */
void sl_policy_hold(void);
void sl_policy_release(void);

#endif /* SLUICE_CP_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_POLICY_API_H
#define SLUICE_POLICY_API_H

/*
 * The policy's life on the control path: a config becomes a running
 * policy here and only here (policy.c), is replaced by a reload of the
 * file (reload.c) or by a rule set published through the store
 * (rulesync.c), and is freed after the workers' grace period. Every
 * option the workers act on is one field of struct sl_policy, read from
 * the config in one place (sl_policy_build).
 */

#include <stddef.h>
#include <stdint.h>

#include "redis.h"
#include "sl_app.h"
#include "sl_policy.h"

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

/* Live reload (reload.c): from the file; returns 0, or -1 with errors. */
int sl_reload(struct sl_app *app, char *msg, size_t len);
int sl_reload_init(struct sl_app *app);
void sl_reload_free(struct sl_app *app);
/* Applies a rule set published through the store (the file then yields). */
int sl_reload_text(struct sl_app *app, const char *version, const char *text,
		   size_t n, char *msg, size_t len);
/* Reloads when the file changed on disk; call every second or so. */
void sl_reload_poll(struct sl_app *app);

/* Rule sets published through the store (rulesync.c). */
struct sl_rulesync;
struct sl_rulesync *sl_rulesync_create(struct sl_app *app, const char *host,
				       uint16_t port,
				       const struct sl_redis_auth *auth,
				       const char *channel,
				       uint32_t reconcile_ms);
void sl_rulesync_poll(struct sl_rulesync *r, uint64_t now_ns);
/* Closes its connections; its telemetry answers an error from then on. */
void sl_rulesync_free(struct sl_rulesync *r);

#endif /* SLUICE_POLICY_API_H */

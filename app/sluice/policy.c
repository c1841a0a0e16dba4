/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The running policy for readers other than the workers. The workers
 * read app->policy under RCU; everyone else (telemetry handlers, signal
 * and file-watch reloads, the decision stream's status) goes through
 * here: every swap (reload.c) holds sl_policy_lock until the old policy
 * is freed, so a copy taken under it is never of freed memory. A leaf:
 * it calls nothing of app/, so the readers depend on it and not on the
 * reload code.
 */
#include <pthread.h>
#include <stdio.h>

#include "sluice.h"

pthread_mutex_t sl_policy_lock = PTHREAD_MUTEX_INITIALIZER;

void
sl_policy_peek(const struct sl_app *app, struct sl_policy_peek *out)
{
	const struct sl_policy *p;

	pthread_mutex_lock(&sl_policy_lock);
	p = app->policy;
	snprintf(out->version, sizeof(out->version), "%s",
		 sl_ruleset_version(p->rs));
	out->dec_ppm[0] = p->dec_ppm[0];
	out->dec_ppm[1] = p->dec_ppm[1];
	pthread_mutex_unlock(&sl_policy_lock);
}

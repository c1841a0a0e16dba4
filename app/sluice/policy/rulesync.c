/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rule sets published through the store: `sluicectl publish` writes a
 * validated config under CHANNEL:v<N>, sets CHANNEL:current to N and
 * announces N on CHANNEL. Every appliance subscribed applies it within
 * milliseconds; a periodic reconcile (GET CHANNEL:current) repairs one
 * that missed the message. Both connections are hiredis asynchronous ones
 * driven from the main lcore's loop. Once a published set is applied the
 * appliance follows the store, and file reloads say so and yield.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "policy.h"
#include "sl_telemetry.h"
#include "redis.h"

struct sl_rulesync {
	struct sl_app *app;
	char host[256];
	uint16_t port;
	struct sl_redis_auth auth;
	char channel[SL_NAME_MAX];
	struct sl_redis_conn cmd, sub;
	uint64_t reconcile_ns, next_reconcile;
	char active[32];
	uint64_t applied, refused, messages, reconciles;
};

/* The text of version n arrived: validate and apply it. */
static void
on_text(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_rulesync *r = ac->data;
	redisReply *rep = reply;
	char version[32], msg[4096];

	snprintf(version, sizeof(version), "v%lu",
		 (unsigned long)(uintptr_t)priv);
	if (rep == NULL || rep->type != REDIS_REPLY_STRING ||
	    strcmp(version, r->active) == 0)
		return;
	if (sl_reload_text(r->app, version, rep->str, (size_t)rep->len, msg,
			   sizeof(msg)) == 0) {
		snprintf(r->active, sizeof(r->active), "%s", version);
		r->applied++;
		SL_LOG(NOTICE, "rules: published %s applied%s%s", version,
		       msg[0] ? "; " : "", msg);
	} else {
		r->refused++;
		SL_LOG(ERR,
		       "rules: published %s refused, running rules kept:\n%s",
		       version, msg);
	}
}

static void
fetch(struct sl_rulesync *r, unsigned long n)
{
	char key[SL_NAME_MAX + 32], version[32];

	snprintf(version, sizeof(version), "v%lu", n);
	if (r->cmd.ac == NULL || n == 0 || strcmp(version, r->active) == 0)
		return;
	snprintf(key, sizeof(key), "%s:v%lu", r->channel, n);
	redisAsyncCommand(r->cmd.ac, on_text, (void *)(uintptr_t)n, "GET %s",
			  key);
}

static void
on_message(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_rulesync *r = ac->data;
	redisReply *rep = reply;

	(void)priv;
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
	    rep->elements != 3 || rep->element[2]->type != REDIS_REPLY_STRING)
		return; /* the subscription's own confirmation, or noise */
	r->messages++;
	fetch(r, strtoul(rep->element[2]->str, NULL, 10));
}

static void
on_current(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_rulesync *r = ac->data;
	redisReply *rep = reply;

	(void)priv;
	if (rep != NULL && rep->type == REDIS_REPLY_STRING)
		fetch(r, strtoul(rep->str, NULL, 10));
}

/* /sluice/rulesync: the published set running, and what came and how. */
static int
cmd_rulesync(void *ctx, const char *params, struct rte_tel_data *d)
{
	const struct sl_rulesync *r = ctx;

	(void)params;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "channel", r->channel);
	rte_tel_data_add_dict_string(d, "active", r->active);
	rte_tel_data_add_dict_u64(d, "applied", r->applied);
	rte_tel_data_add_dict_u64(d, "refused", r->refused);
	rte_tel_data_add_dict_u64(d, "messages", r->messages);
	rte_tel_data_add_dict_u64(d, "reconciles", r->reconciles);
	return 0;
}

struct sl_rulesync *
sl_rulesync_create(struct sl_app *app, const char *host, uint16_t port,
		   const struct sl_redis_auth *auth, const char *channel,
		   uint32_t reconcile_ms)
{
	struct sl_rulesync *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	if (sl_telemetry_cmd("/sluice/rulesync", cmd_rulesync, r,
			     "Published rule sets: active, applied, refused") !=
	    0)
		SL_LOG(WARNING, "/sluice/rulesync not registered");
	r->app = app;
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->port = port;
	r->auth = *auth;
	snprintf(r->channel, sizeof(r->channel), "%s", channel);
	r->reconcile_ns = reconcile_ms * 1000000ULL;
	return r;
}

void
sl_rulesync_free(struct sl_rulesync *r)
{
	if (r == NULL)
		return;
	sl_telemetry_withdraw("/sluice/rulesync", r);
	sl_redis_close(&r->sub);
	sl_redis_close(&r->cmd);
	free(r);
}

void
sl_rulesync_poll(struct sl_rulesync *r, uint64_t now)
{
	if (r->sub.ac == NULL &&
	    sl_redis_open(&r->sub, r->host, r->port, &r->auth, r) == 0)
		redisAsyncCommand(r->sub.ac, on_message, NULL, "SUBSCRIBE %s",
				  r->channel);
	if (r->cmd.ac == NULL)
		sl_redis_open(&r->cmd, r->host, r->port, &r->auth, r);
	if (now >= r->next_reconcile && r->cmd.ac != NULL) {
		char key[SL_NAME_MAX + 16];

		snprintf(key, sizeof(key), "%s:current", r->channel);
		redisAsyncCommand(r->cmd.ac, on_current, NULL, "GET %s", key);
		r->reconciles++;
		r->next_reconcile = now + r->reconcile_ns;
	}
	sl_redis_drive(&r->sub);
	sl_redis_drive(&r->cmd);
}

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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "sluice.h"

struct conn {
	redisAsyncContext *ac;
	uint8_t rd, wr;
};

struct sl_rulesync {
	struct sl_app *app;
	char host[256];
	uint16_t port;
	char channel[SL_NAME_MAX];
	struct conn cmd, sub;
	uint64_t reconcile_ns, next_reconcile;
	char active[32];
	uint64_t applied, refused, messages, reconciles;
};

static void
ev_rd(void *p)
{
	((struct conn *)p)->rd = 1;
}

static void
ev_unrd(void *p)
{
	((struct conn *)p)->rd = 0;
}

static void
ev_wr(void *p)
{
	((struct conn *)p)->wr = 1;
}

static void
ev_unwr(void *p)
{
	((struct conn *)p)->wr = 0;
}

static void
on_connected(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->ev.data;

	if (status != REDIS_OK)
		c->ac = NULL; /* hiredis frees it */
}

static void
on_gone(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->ev.data;

	(void)status;
	c->ac = NULL;
}

static int
open_conn(struct sl_rulesync *r, struct conn *c)
{
	c->ac = redisAsyncConnect(r->host, r->port);
	if (c->ac == NULL || c->ac->err) {
		if (c->ac != NULL)
			redisAsyncFree(c->ac);
		c->ac = NULL;
		return -1;
	}
	c->rd = c->wr = 0;
	c->ac->data = r;
	c->ac->ev.data = c;
	c->ac->ev.addRead = ev_rd;
	c->ac->ev.delRead = ev_unrd;
	c->ac->ev.addWrite = ev_wr;
	c->ac->ev.delWrite = ev_unwr;
	redisAsyncSetConnectCallback(c->ac, on_connected);
	redisAsyncSetDisconnectCallback(c->ac, on_gone);
	return 0;
}

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

struct sl_rulesync *
sl_rulesync_create(struct sl_app *app, const char *host, uint16_t port,
		   const char *channel, uint32_t reconcile_ms)
{
	struct sl_rulesync *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->app = app;
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->port = port;
	snprintf(r->channel, sizeof(r->channel), "%s", channel);
	r->reconcile_ns = reconcile_ms * 1000000ULL;
	return r;
}

static void
drive(struct conn *c)
{
	if (c->ac != NULL && c->wr)
		redisAsyncHandleWrite(c->ac);
	if (c->ac != NULL && c->rd) {
		struct pollfd p = {.fd = c->ac->c.fd, .events = POLLIN};

		if (poll(&p, 1, 0) > 0)
			redisAsyncHandleRead(c->ac);
	}
}

void
sl_rulesync_poll(struct sl_rulesync *r, uint64_t now)
{
	if (r->sub.ac == NULL && open_conn(r, &r->sub) == 0)
		redisAsyncCommand(r->sub.ac, on_message, NULL, "SUBSCRIBE %s",
				  r->channel);
	if (r->cmd.ac == NULL)
		open_conn(r, &r->cmd);
	if (now >= r->next_reconcile && r->cmd.ac != NULL) {
		char key[SL_NAME_MAX + 16];

		snprintf(key, sizeof(key), "%s:current", r->channel);
		redisAsyncCommand(r->cmd.ac, on_current, NULL, "GET %s", key);
		r->reconciles++;
		r->next_reconcile = now + r->reconcile_ns;
	}
	drive(&r->sub);
	drive(&r->cmd);
}

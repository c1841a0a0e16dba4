/* SPDX-License-Identifier: BSD-3-Clause */
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sl_app.h"
#include "redis.h"

void
sl_redis_auth_set(struct sl_redis_auth *a, const char *user,
		  const char *password)
{
	snprintf(a->user, sizeof(a->user), "%s", user ? user : "");
	snprintf(a->pass, sizeof(a->pass), "%s", password ? password : "");
}

/* A refused AUTH: said once per connection, the reason Redis gave. */
static void
on_auth(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *rep = r;

	(void)priv;
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR)
		SL_LOG(ERR, "redis %s:%d refused the credentials: %s",
		       ac->c.tcp.host ? ac->c.tcp.host : "?", ac->c.tcp.port,
		       rep->str);
}

static void
send_auth(redisAsyncContext *ac, const struct sl_redis_auth *a)
{
	if (a == NULL || a->pass[0] == '\0')
		return;
	if (a->user[0] != '\0')
		redisAsyncCommand(ac, on_auth, NULL, "AUTH %s %s", a->user,
				  a->pass);
	else
		redisAsyncCommand(ac, on_auth, NULL, "AUTH %s", a->pass);
}

/* hiredis's event hooks: remember what it wants; the caller's loop polls. */
static void
ev_rd(void *p)
{
	((struct sl_redis_conn *)p)->rd = 1;
}

static void
ev_unrd(void *p)
{
	((struct sl_redis_conn *)p)->rd = 0;
}

static void
ev_wr(void *p)
{
	((struct sl_redis_conn *)p)->wr = 1;
}

static void
ev_unwr(void *p)
{
	((struct sl_redis_conn *)p)->wr = 0;
}

/* A failed connect, or a disconnect: hiredis frees the context itself. */
static void
on_connect(const redisAsyncContext *ac, int status)
{
	struct sl_redis_conn *c = ac->ev.data;

	if (status != REDIS_OK)
		c->ac = NULL;
}

static void
on_disconnect(const redisAsyncContext *ac, int status)
{
	struct sl_redis_conn *c = ac->ev.data;

	(void)status;
	c->ac = NULL;
}

int
sl_redis_open(struct sl_redis_conn *c, const char *host, uint16_t port,
	      const struct sl_redis_auth *auth, void *owner)
{
	c->ac = redisAsyncConnect(host, port);
	if (c->ac == NULL || c->ac->err) {
		if (c->ac != NULL)
			redisAsyncFree(c->ac);
		c->ac = NULL;
		return -1;
	}
	c->rd = c->wr = 0;
	c->owner = owner;
	c->ac->data = owner;
	c->ac->ev.data = c;
	c->ac->ev.addRead = ev_rd;
	c->ac->ev.delRead = ev_unrd;
	c->ac->ev.addWrite = ev_wr;
	c->ac->ev.delWrite = ev_unwr;
	redisAsyncSetConnectCallback(c->ac, on_connect);
	redisAsyncSetDisconnectCallback(c->ac, on_disconnect);
	send_auth(c->ac, auth);
	return 0;
}

void
sl_redis_drive(struct sl_redis_conn *c)
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
sl_redis_close(struct sl_redis_conn *c)
{
	if (c->ac != NULL)
		redisAsyncFree(c->ac);
	c->ac = NULL;
}

redisContext *
sl_redis_connect_sync(const char *host, uint16_t port,
		      const struct sl_redis_auth *auth, uint32_t connect_ms,
		      uint32_t io_ms)
{
	int want = auth != NULL && auth->pass[0] != '\0';
	struct timeval tv = {connect_ms / 1000, (connect_ms % 1000) * 1000};
	struct timeval rw = {io_ms / 1000, (io_ms % 1000) * 1000};
	redisContext *c = redisConnectWithTimeout(host, port, tv);

	redisReply *r = NULL;

	if (c == NULL || c->err || redisSetTimeout(c, rw) != REDIS_OK) {
		if (c != NULL)
			redisFree(c);
		return NULL;
	}
	if (want)
		r = auth->user[0] != '\0'
			    ? redisCommand(c, "AUTH %s %s", auth->user,
					   auth->pass)
			    : redisCommand(c, "AUTH %s", auth->pass);
	if (want && (r == NULL || r->type == REDIS_REPLY_ERROR)) {
		SL_LOG(ERR, "redis %s:%u refused the credentials: %s", host,
		       port, r != NULL ? r->str : "no reply");
		if (r != NULL)
			freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	if (r != NULL)
		freeReplyObject(r);
	return c;
}

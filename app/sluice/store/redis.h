/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_REDIS_H
#define SLUICE_REDIS_H

/*
 * The hiredis glue every Redis user of the control path shares (the
 * store, rule sync, the decision stream): an asynchronous connection
 * driven by polling from the caller's own loop — no event library, no
 * thread, no blocking call — and a blocking one with timeouts for the
 * control threads that may wait. Knows nothing of what is sent: replies
 * go to the callbacks given with each command, with their own context.
 * Where a connection is opened is the one place credentials are sent:
 * AUTH (an ACL user and password, or a password alone) goes first on
 * every new connection, before anything the caller sends.
 */

#include <stdint.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

struct sl_redis_conn {
	redisAsyncContext *ac; /* NULL: not connected */
	uint8_t rd, wr;        /* hiredis wants to read / write */
	void *owner;           /* ac->data, for the callbacks */
};

/*
 * Whom a connection authenticates as (from store.redis): an ACL user
 * (empty: the default user) and its password (empty: no AUTH). Each user
 * of Redis keeps its own copy beside its host and port. A refused AUTH is
 * logged (once per connection) and leaves the connection up: its commands
 * are answered NOAUTH errors, which the store counts as failures (the
 * circuit opens, rules decide by on_store_failure), never a crash.
 */
struct sl_redis_auth {
	char user[64];
	char pass[256];
};

void sl_redis_auth_set(struct sl_redis_auth *a, const char *user,
		       const char *password);

/* Starts connecting (auth may be NULL: none); 0, or -1 (c->ac stays NULL)
 * when it cannot. */
int sl_redis_open(struct sl_redis_conn *c, const char *host, uint16_t port,
		  const struct sl_redis_auth *auth, void *owner);

/* Whatever hiredis wants done now: writes, then reads if any are there. */
void sl_redis_drive(struct sl_redis_conn *c);

/* Closes it; every pending callback runs once with a NULL reply. */
void sl_redis_close(struct sl_redis_conn *c);

/* A blocking connection with connect and command timeouts, authenticated;
 * NULL: none (a refused AUTH is logged). */
redisContext *sl_redis_connect_sync(const char *host, uint16_t port,
				    const struct sl_redis_auth *auth,
				    uint32_t connect_ms, uint32_t io_ms);

#endif /* SLUICE_REDIS_H */

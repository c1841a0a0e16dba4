/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "sl_app.h"
#include "sl_redis.h"
#include "store_lua.h"
#include "store_priv.h"

/* ---- the connection of one node ---- */

static void
on_sha(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *rep = r;
	char *dst = priv;

	(void)ac;
	if (rep != NULL && rep->type == REDIS_REPLY_STRING && rep->len < 48)
		memcpy(dst, rep->str, (size_t)rep->len + 1);
}

/*
 * Redis 7 functions: the two scripts as one library, loaded once per
 * connection. Names carry a hash of the scripts, so appliances running
 * different versions never call each other's code.
 */
static char fn_lib[16384];
char sl_fn_reserve[40], sl_fn_refund[40];

/* FNV-1a over a string, continuing from h. */
static uint64_t
fnv1a(uint64_t h, const char *p)
{
	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	return h;
}

static void
build_library(void)
{
	uint64_t h;

	if (fn_lib[0])
		return;
	h = fnv1a(fnv1a(1469598103934665603ULL, SL_LUA_RESERVE), SL_LUA_REFUND);
	snprintf(sl_fn_reserve, sizeof(sl_fn_reserve), "sl_reserve_%016llx",
		 (unsigned long long)h);
	snprintf(sl_fn_refund, sizeof(sl_fn_refund), "sl_refund_%016llx",
		 (unsigned long long)h);
	snprintf(
		fn_lib, sizeof(fn_lib),
		"#!lua name=sluice_%016llx\n"
		"redis.register_function('%s', function(KEYS, ARGV)\n%s\nend)\n"
		"redis.register_function('%s', function(KEYS, "
		"ARGV)\n%s\nend)\n",
		(unsigned long long)h, sl_fn_reserve, SL_LUA_RESERVE,
		sl_fn_refund, SL_LUA_REFUND);
}

/* Redis before 7 answers an unknown command: EVALSHA it stays. */
static void
on_fn_load(redisAsyncContext *ac, void *r, void *priv)
{
	redisReply *rep = r;
	struct node *n = priv;

	(void)ac;
	n->fn = rep != NULL && (rep->type != REDIS_REPLY_ERROR ||
				strstr(rep->str, "already exists") != NULL);
}

void
sl_node_load_functions(struct node *n)
{
	build_library();
	n->fn = 0;
	redisAsyncCommand(n->conn.ac, on_fn_load, n, "FUNCTION LOAD %s",
			  fn_lib);
}

/* Connects a node and loads the scripts on it. */
static void
node_connect(struct node *n)
{
	n->answered = NULL; /* (a new connection may reuse the old's address) */
	if (sl_redis_open(&n->conn, n->host, n->port, &n->s->auth, n->s) != 0)
		return;
	n->sha_reserve[0] = n->sha_refund[0] = '\0';
	redisAsyncCommand(n->conn.ac, on_sha, n->sha_reserve, "SCRIPT LOAD %s",
			  SL_LUA_RESERVE);
	redisAsyncCommand(n->conn.ac, on_sha, n->sha_refund, "SCRIPT LOAD %s",
			  SL_LUA_REFUND);
	sl_node_load_functions(n);
}

int
sl_node_of(struct sl_store *s, const char *host, uint16_t port)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++)
		if (s->nodes[i].port == port &&
		    strcmp(s->nodes[i].host, host) == 0)
			return (int)i;
	if (s->n_nodes == MAX_NODES)
		return -1;
	i = s->n_nodes++;
	memset(&s->nodes[i], 0, sizeof(s->nodes[i]));
	s->nodes[i].s = s;
	snprintf(s->nodes[i].host, sizeof(s->nodes[i].host), "%.*s",
		 (int)sizeof(s->nodes[i].host) - 1, host);
	s->nodes[i].port = port;
	node_connect(&s->nodes[i]);
	return (int)i;
}

/* ---- cluster: which node holds a key ---- */

uint16_t
sl_slot_of(const char *key)
{
	return sl_redis_slot(key, strlen(key));
}

/*
 * A CLUSTER SLOTS reply applied: each range to its master (host "" is
 * the node asked, at from). Returns the slots mapped; a reply that maps
 * none changes nothing.
 */
uint32_t
sl_nodes_apply_slots(struct sl_store *s, const redisReply *r, const char *from)
{
	uint32_t mapped = 0, i;
	size_t j;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return 0;
	for (j = 0; j < r->elements; j++) {
		const redisReply *e = r->element[j], *m;
		long long lo, hi, k;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER)
			continue;
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		m = e->element[2];
		if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
		    m->element[0]->type != REDIS_REPLY_STRING ||
		    m->element[1]->type != REDIS_REPLY_INTEGER || lo < 0 ||
		    hi >= SLOTS || lo > hi)
			continue;
		n = sl_node_of(s,
			       m->element[0]->len ? m->element[0]->str : from,
			       (uint16_t)m->element[1]->integer);
		for (k = lo; n >= 0 && k <= hi; k++, mapped++)
			s->slot_node[k] = (uint8_t)n;
	}
	/* nothing mapped: the counts stand (zeroed, every node would look
	 * like one the map moved away from, and a dead one no longer be
	 * read again for) */
	if (mapped == 0)
		return 0;
	for (i = 0; i < s->n_nodes; i++)
		s->nodes[i].slots = 0;
	for (j = 0; j < SLOTS; j++)
		s->nodes[s->slot_node[j]].slots++;
	s->st.nodes = s->n_nodes;
	return mapped;
}

/* The slot map from a seed, with a short blocking call at start (before
 * any worker runs); later it is read again as it changes. */
int
sl_nodes_load_slots(struct sl_store *s, const char *host, uint16_t port)
{
	redisContext *c =
		sl_redis_connect_sync(host, port, &s->auth, 1000, 1000);
	redisReply *r;
	uint32_t mapped;

	if (c == NULL)
		return -1;
	r = redisCommand(c, "CLUSTER SLOTS");
	mapped = sl_nodes_apply_slots(s, r, host);
	if (r != NULL)
		freeReplyObject(r);
	redisFree(c);
	return mapped > 0 ? 0 : -1;
}

/* ---- the slot map as the cluster changes ---- */

static void
on_slots(redisAsyncContext *ac, void *r, void *priv)
{
	struct sl_store *s = ac->data;
	uint32_t gen = (uint32_t)(uintptr_t)priv;

	if (sl_nodes_apply_slots(s, r, ac->c.tcp.host ? ac->c.tcp.host : "") >
	    0) {
		s->st.refreshes++;
	} else {
		s->st.refresh_failed++;
		s->want_refresh = 1; /* another node, next time */
	}
	if (gen == s->refresh_gen)
		s->refreshing = 0;
}

void
sl_nodes_refresh_soon(struct sl_store *s)
{
	if (s->cluster)
		s->want_refresh = 1;
}

/* CLUSTER SLOTS to the next node that is up; none up: a seed is
 * connected (the next one each time) to be asked at the next poll. */
static void
refresh(struct sl_store *s, uint64_t now)
{
	uint32_t k, i;

	s->last_refresh_ns = now;
	for (k = 0; k < s->n_nodes; k++) {
		i = (s->next_node + k) % s->n_nodes;
		if (s->nodes[i].conn.ac == NULL)
			continue;
		if (redisAsyncCommand(s->nodes[i].conn.ac, on_slots,
				      (void *)(uintptr_t)++s->refresh_gen,
				      "CLUSTER SLOTS") != REDIS_OK)
			continue;
		s->next_node = i + 1;
		s->refreshing = 1;
		s->want_refresh = 0;
		s->moved = 0;
		s->next_refresh_ns = now + s->refresh_ns;
		return;
	}
	if (s->n_seeds > 0) {
		const struct sl_endpoint *e =
			&s->seeds[s->next_seed++ % s->n_seeds];
		int n = sl_node_of(s, e->host, e->port);

		if (n >= 0 && s->nodes[n].conn.ac == NULL)
			node_connect(&s->nodes[n]);
	}
}

#define BACKOFF_MIN_NS 100000000ULL  /* 100 ms */
#define BACKOFF_MAX_NS 2000000000ULL /* 2 s */
#define REFRESH_GAP_NS 250000000ULL  /* slot map reads at most this often */

void
sl_nodes_poll(struct sl_store *s, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		int up = n->conn.ac != NULL;

		/* slots served by a node that is down: read the map until
		 * they move (a replica promoted) or it is back */
		if (!up && n->slots > 0)
			sl_nodes_refresh_soon(s);
		if (n->was_up && !up) {
			/* its asks were answered as failed by hiredis; the
			 * slots it served may have moved */
			n->drops++;
			sl_nodes_refresh_soon(s);
			n->retry_ns = now + (n->backoff_ns ? n->backoff_ns
							   : BACKOFF_MIN_NS);
		}
		if (!up && now >= n->retry_ns) {
			node_connect(n);
			n->backoff_ns = n->backoff_ns ? n->backoff_ns * 2
						      : BACKOFF_MIN_NS;
			if (n->backoff_ns > BACKOFF_MAX_NS)
				n->backoff_ns = BACKOFF_MAX_NS;
			n->retry_ns = now + n->backoff_ns;
		}
		n->was_up = n->conn.ac != NULL;
	}
	if (!s->cluster)
		return;
	/* a refresh with no reply for a second is given up */
	if (s->refreshing && now - s->last_refresh_ns > 1000000000ULL)
		s->refreshing = 0;
	if (!s->refreshing && (s->want_refresh || now >= s->next_refresh_ns) &&
	    now - s->last_refresh_ns >= REFRESH_GAP_NS)
		refresh(s, now);
}

void
sl_node_reconnect(struct node *n, int up_too)
{
	if (up_too)
		sl_redis_close(&n->conn);
	if (n->conn.ac == NULL)
		node_connect(n);
}

void
sl_nodes_reconnect(struct sl_store *s, int up_too)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++)
		sl_node_reconnect(&s->nodes[i], up_too);
}

int
sl_nodes_any_connected(const struct sl_store *s)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++)
		if (s->nodes[i].conn.ac != NULL)
			return 1;
	return 0;
}

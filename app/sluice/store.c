/* SPDX-License-Identifier: BSD-3-Clause */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <rte_ring.h>

#include "sluice.h"
#include "store.h"
#include "store_lua.h"

#define INFLIGHT   8192
#define FAILS_OPEN 3
#define MAX_NODES  16
#define SLOTS      16384

struct inflight {
	struct sl_coord_msg q;
	uint64_t sent_ns;
	uint32_t gen;
	uint8_t used;
	uint8_t eval; /* sent as EVAL already: no second try */
	uint8_t hops; /* MOVED/ASK redirections followed */
	uint8_t node;
};

/* One Redis node (the only one, or a cluster master) and its connection. */
struct node {
	redisAsyncContext *ac;
	struct sl_store *s;
	char host[64];
	uint16_t port;
	uint8_t rd, wr;
	char sha_reserve[48], sha_refund[48];
	uint8_t fn; /* the function library is loaded: FCALL */
};

struct sl_store {
	struct node nodes[MAX_NODES];
	uint32_t n_nodes;
	uint8_t cluster;
	uint8_t slot_node[SLOTS]; /* cluster: which node serves a slot */
	uint32_t fails;
	uint64_t timeout_ns, probe_ns, next_probe_ns;
	struct inflight fl[INFLIGHT];
	uint32_t fifo[INFLIGHT]; /* in-flight indexes in send order */
	uint32_t head, tail, n;
	uint32_t gen;
	struct sl_store_stats st;
};

static struct sl_store *the_store;
static struct sl_coord *the_coord;
static uint64_t the_now;

/* ---- the connection of one node ---- */

static void
ev_rd(void *p)
{
	((struct node *)p)->rd = 1;
}

static void
ev_unrd(void *p)
{
	((struct node *)p)->rd = 0;
}

static void
ev_wr(void *p)
{
	((struct node *)p)->wr = 1;
}

static void
ev_unwr(void *p)
{
	((struct node *)p)->wr = 0;
}

static void
on_connect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->ev.data;

	if (status != REDIS_OK)
		n->ac = NULL; /* hiredis frees it */
}

static void
on_disconnect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->ev.data;

	(void)status;
	n->ac = NULL;
}

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
static char fn_lib[16384], fn_reserve[40], fn_refund[40];

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
	snprintf(fn_reserve, sizeof(fn_reserve), "sl_reserve_%016llx",
		 (unsigned long long)h);
	snprintf(fn_refund, sizeof(fn_refund), "sl_refund_%016llx",
		 (unsigned long long)h);
	snprintf(
		fn_lib, sizeof(fn_lib),
		"#!lua name=sluice_%016llx\n"
		"redis.register_function('%s', function(KEYS, ARGV)\n%s\nend)\n"
		"redis.register_function('%s', function(KEYS, "
		"ARGV)\n%s\nend)\n",
		(unsigned long long)h, fn_reserve, SL_LUA_RESERVE, fn_refund,
		SL_LUA_REFUND);
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

static void
load_functions(struct node *n)
{
	build_library();
	n->fn = 0;
	redisAsyncCommand(n->ac, on_fn_load, n, "FUNCTION LOAD %s", fn_lib);
}

static void
connect_node(struct node *n)
{
	n->ac = redisAsyncConnect(n->host, n->port);
	if (n->ac == NULL || n->ac->err) {
		if (n->ac != NULL)
			redisAsyncFree(n->ac);
		n->ac = NULL;
		return;
	}
	n->rd = n->wr = 0;
	n->ac->data = n->s;
	n->ac->ev.data = n;
	n->ac->ev.addRead = ev_rd;
	n->ac->ev.delRead = ev_unrd;
	n->ac->ev.addWrite = ev_wr;
	n->ac->ev.delWrite = ev_unwr;
	redisAsyncSetConnectCallback(n->ac, on_connect);
	redisAsyncSetDisconnectCallback(n->ac, on_disconnect);
	n->sha_reserve[0] = n->sha_refund[0] = '\0';
	redisAsyncCommand(n->ac, on_sha, n->sha_reserve, "SCRIPT LOAD %s",
			  SL_LUA_RESERVE);
	redisAsyncCommand(n->ac, on_sha, n->sha_refund, "SCRIPT LOAD %s",
			  SL_LUA_REFUND);
	load_functions(n);
}

static int
node_of(struct sl_store *s, const char *host, uint16_t port)
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
	connect_node(&s->nodes[i]);
	return (int)i;
}

/* ---- cluster: which node holds a key ---- */

/* CRC16/XMODEM, as Redis Cluster hashes keys. */
static uint16_t
crc16(const char *b, size_t n)
{
	uint16_t crc = 0;
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		crc ^= (uint16_t)((uint8_t)b[i] << 8);
		for (k = 0; k < 8; k++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021
						      : crc << 1);
	}
	return crc;
}

static uint16_t
slot_of(const char *key)
{
	const char *l = strchr(key, '{'), *r = l ? strchr(l + 1, '}') : NULL;

	if (l != NULL && r != NULL && r > l + 1)
		return crc16(l + 1, (size_t)(r - l - 1)) % SLOTS;
	return crc16(key, strlen(key)) % SLOTS;
}

/*
 * The slot map, read once from a seed with a short blocking call at start
 * (before any worker runs); later changes arrive as MOVED and are learnt
 * one slot at a time.
 */
static int
load_slots(struct sl_store *s, const char *host, uint16_t port)
{
	struct timeval tv = {1, 0};
	redisContext *c = redisConnectWithTimeout(host, port, tv);
	redisReply *r;
	size_t i;

	if (c == NULL || c->err) {
		if (c != NULL)
			redisFree(c);
		return -1;
	}
	r = redisCommand(c, "CLUSTER SLOTS");
	if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
		if (r != NULL)
			freeReplyObject(r);
		redisFree(c);
		return -1;
	}
	for (i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i], *m;
		long long lo, hi, k;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			continue;
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		m = e->element[2];
		if (m->type != REDIS_REPLY_ARRAY || m->elements < 2)
			continue;
		n = node_of(s, m->element[0]->str,
			    (uint16_t)m->element[1]->integer);
		for (k = lo; n >= 0 && k <= hi && k < SLOTS; k++)
			s->slot_node[k] = (uint8_t)n;
	}
	freeReplyObject(r);
	redisFree(c);
	return s->n_nodes > 0 ? 0 : -1;
}

struct sl_store *
sl_store_create(const char *host, uint16_t port, int cluster,
		uint32_t timeout_ms, uint32_t probe_ms)
{
	struct sl_store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->cluster = (uint8_t)cluster;
	s->timeout_ns = timeout_ms * 1000000ULL;
	s->probe_ns = probe_ms * 1000000ULL;
	if (cluster && load_slots(s, host, port) != 0)
		SL_LOG(WARNING,
		       "store: no slot map from %s:%u yet; asks are "
		       "decided by on_store_failure until it answers",
		       host, port);
	if (!cluster)
		node_of(s, host, port);
	s->st.nodes = s->n_nodes;
	return s;
}

/* ---- breaker ---- */

static int
any_connected(const struct sl_store *s)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++)
		if (s->nodes[i].ac != NULL)
			return 1;
	return 0;
}

static void
open_breaker(struct sl_store *s, uint64_t now)
{
	if (s->st.state != SL_BR_OPEN) {
		s->st.opened++;
		SL_LOG(WARNING, "store: circuit open, rules decide by "
				"on_store_failure");
	}
	s->st.state = SL_BR_OPEN;
	s->next_probe_ns = now + s->probe_ns;
}

int
sl_store_usable(struct sl_store *s, uint64_t now)
{
	uint32_t i;

	if (s->st.state == SL_BR_CLOSED)
		return s->n_nodes > 0;
	if (s->st.state == SL_BR_OPEN && now >= s->next_probe_ns) {
		/* half open: fresh connections, the next ask is the probe */
		for (i = 0; i < s->n_nodes; i++) {
			if (s->nodes[i].ac != NULL)
				redisAsyncFree(s->nodes[i].ac);
			s->nodes[i].ac = NULL;
			connect_node(&s->nodes[i]);
		}
		s->st.state = SL_BR_HALF_OPEN;
		s->next_probe_ns = now + s->probe_ns;
	}
	return s->st.state == SL_BR_HALF_OPEN && s->n == 0 && any_connected(s);
}

/* ---- asks ---- */

static void
key_of(char *buf, size_t size, const struct sl_coord_msg *q)
{
	/* one hash tag per (rule, identity): its state stays in one slot */
	snprintf(buf, size, "sl:{%016llx}:%016llx", (unsigned long long)q->k1,
		 (unsigned long long)q->k2);
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv);

static int
send_reserve(struct sl_store *s, uint32_t i, int eval, int asking)
{
	struct inflight *f = &s->fl[i];
	const struct sl_coord_msg *q = &f->q;
	struct node *nd;
	char key[64], a[6][24];
	const char *argv[10];
	size_t len[10];
	int k;

	key_of(key, sizeof(key), q);
	if (s->cluster && !asking)
		f->node = s->slot_node[slot_of(key)];
	nd = &s->nodes[f->node];
	if (nd->ac == NULL)
		return REDIS_ERR;
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu", (unsigned long long)q->ask.count);
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu", (unsigned long long)q->ask.burst);
	snprintf(a[4], 24, "%u", q->ask.want);
	snprintf(a[5], 24, "%u", q->ask.need);
	eval = eval || (!nd->fn && !nd->sha_reserve[0]);
	argv[0] = eval ? "EVAL" : nd->fn ? "FCALL" : "EVALSHA";
	argv[1] = eval ? SL_LUA_RESERVE : nd->fn ? fn_reserve : nd->sha_reserve;
	argv[2] = "1";
	argv[3] = key;
	for (k = 0; k < 6; k++)
		argv[4 + k] = a[k];
	for (k = 0; k < 10; k++)
		len[k] = strlen(argv[k]);
	f->eval = (uint8_t)eval;
	if (asking)
		redisAsyncCommand(nd->ac, NULL, NULL, "ASKING");
	return redisAsyncCommandArgv(
		nd->ac, on_reply,
		(void *)(uintptr_t)((uint64_t)f->gen << 16 | i), 10, argv, len);
}

int
sl_store_ask(struct sl_store *s, struct sl_coord *c,
	     const struct sl_coord_msg *q, uint64_t now)
{
	uint32_t i;

	(void)c;
	if (s->n_nodes == 0 || s->n == INFLIGHT)
		return -1;
	for (i = s->tail; s->fl[i].used; i = (i + 1) % INFLIGHT)
		;
	memset(&s->fl[i], 0, sizeof(s->fl[i]));
	s->fl[i].q = *q;
	s->fl[i].sent_ns = now;
	s->fl[i].gen = ++s->gen & 0xffffffu;
	s->fl[i].used = 1;
	if (send_reserve(s, i, 0, 0) != REDIS_OK) {
		s->fl[i].used = 0;
		return -1;
	}
	s->fifo[s->tail] = i;
	s->tail = (s->tail + 1) % INFLIGHT;
	s->n++;
	s->st.calls++;
	return 0;
}

int
sl_store_give_back(struct sl_store *s, const struct sl_coord_msg *q)
{
	char key[64], a[5][24];
	const char *argv[9];
	size_t len[9];
	struct node *nd;
	int k;

	if (s->n_nodes == 0 || s->st.state != SL_BR_CLOSED)
		return -1;
	key_of(key, sizeof(key), q);
	nd = &s->nodes[s->cluster ? s->slot_node[slot_of(key)] : 0];
	if (nd->ac == NULL || (!nd->fn && !nd->sha_refund[0]))
		return -1;
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu", (unsigned long long)q->back.count);
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu", (unsigned long long)q->back.burst);
	snprintf(a[4], 24, "%llu", (unsigned long long)q->back.units);
	argv[0] = nd->fn ? "FCALL" : "EVALSHA";
	argv[1] = nd->fn ? fn_refund : nd->sha_refund;
	argv[2] = "1";
	argv[3] = key;
	for (k = 0; k < 5; k++)
		argv[4 + k] = a[k];
	for (k = 0; k < 9; k++)
		len[k] = strlen(argv[k]);
	s->st.calls++;
	return redisAsyncCommandArgv(nd->ac, NULL, NULL, 9, argv, len);
}

static void
answer_worker(struct sl_coord *c, struct sl_coord_msg *a)
{
	if (rte_ring_enqueue_elem(c->ans[a->worker], a, sizeof(*a)) != 0)
		c->st.answers_dropped++;
}

/*
 * A cluster said the key lives elsewhere: MOVED updates the slot map and
 * the ask goes there; ASK goes there once, after ASKING. Returns 1 when
 * the ask was sent again.
 */
int
sl_redis_redirect(const char *err, struct sl_redirect *r)
{
	unsigned int port;

	r->moved = strncmp(err, "MOVED ", 6) == 0;
	if ((!r->moved && strncmp(err, "ASK ", 4) != 0) ||
	    sscanf(err + (r->moved ? 6 : 4), "%u %255[^:]:%u", &r->slot,
		   r->host, &port) != 3 ||
	    r->slot >= SLOTS)
		return 0;
	r->port = (uint16_t)port;
	return 1;
}

static int
redirect(struct sl_store *s, uint32_t i, const char *err)
{
	struct inflight *f = &s->fl[i];
	struct sl_redirect r;
	int n;

	/* a node's name has room for 63 bytes */
	if (f->hops >= 3 || !sl_redis_redirect(err, &r) ||
	    strlen(r.host) >= sizeof(s->nodes[0].host))
		return 0;
	n = node_of(s, r.host, r.port);
	if (n < 0)
		return 0;
	f->hops++;
	s->st.redirects++;
	s->st.nodes = s->n_nodes;
	if (r.moved)
		s->slot_node[r.slot] = (uint8_t)n;
	f->node = (uint8_t)n;
	return send_reserve(s, i, f->eval, !r.moved) == REDIS_OK;
}

static void
on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct sl_store *s = the_store;
	redisReply *rep = r;
	uint32_t i = (uint32_t)((uintptr_t)priv & 0xffff);
	uint32_t gen = (uint32_t)((uintptr_t)priv >> 16);
	struct inflight *f = &s->fl[i];
	struct sl_coord_msg a;

	(void)ac;
	if (!f->used || f->gen != gen)
		return; /* timed out already: answered by policy */
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR) {
		int fn_gone = strstr(rep->str, "Function not found") != NULL;

		/* functions flushed (a restart without persistence): load
		 * them again, and send this one with the script itself */
		if (fn_gone && s->nodes[f->node].ac != NULL)
			load_functions(&s->nodes[f->node]);
		if ((fn_gone || strstr(rep->str, "NOSCRIPT") != NULL) &&
		    !f->eval && send_reserve(s, i, 1, 0) == REDIS_OK)
			return;
		if (s->cluster && redirect(s, i, rep->str))
			return;
	}
	f->used = 0;
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
	    rep->elements != 4) {
		s->st.errors++;
		s->fails++;
		/* the worker gets an answer now, not after its own timeout */
		sl_coord_answer_degraded(the_coord, &f->q, the_now);
		return;
	}
	s->st.replies++;
	s->fails = 0;
	s->st.rtt_ns_last = the_now - f->sent_ns;
	s->st.rtt_ns_sum += s->st.rtt_ns_last;
	if (s->st.state == SL_BR_HALF_OPEN) {
		s->st.state = SL_BR_CLOSED;
		SL_LOG(NOTICE, "store: circuit closed");
	}
	memset(&a, 0, sizeof(a));
	a.k1 = f->q.k1;
	a.k2 = f->q.k2;
	a.type = SL_CO_ANSWER;
	a.worker = f->q.worker;
	a.ans.granted = (uint32_t)rep->element[0]->integer;
	a.ans.retry_ns = (uint64_t)rep->element[1]->integer * 1000000ULL;
	a.ans.reset_ns = (uint64_t)rep->element[2]->integer * 1000000ULL;
	a.ans.remaining = rep->element[3]->integer > 0
				  ? (uint64_t)rep->element[3]->integer
				  : 0;
	a.ans.expires_ns = the_now + the_coord->lease_ns;
	if (a.ans.granted)
		the_coord->st.granted_units += a.ans.granted;
	else
		the_coord->st.refusals++;
	answer_worker(the_coord, &a);
}

/* ---- tiers of keys outside the static map ---- */

struct tier_req {
	struct sl_coord *c;
	struct sl_coord_msg q;
};

static void
on_tier(redisAsyncContext *ac, void *r, void *priv)
{
	struct tier_req *t = priv;
	redisReply *rep = r;
	struct sl_coord_msg a = t->q;

	(void)ac;
	a.type = SL_CO_TIER_ANSWER;
	a.tier.found = 0;
	a.tier.len = 0;
	if (rep != NULL && rep->type == REDIS_REPLY_STRING &&
	    rep->len < (int)sizeof(a.tier.text)) {
		memcpy(a.tier.text, rep->str, (size_t)rep->len);
		a.tier.len = (uint8_t)rep->len;
		a.tier.found = 1;
	}
	answer_worker(t->c, &a);
	free(t);
}

int
sl_store_tier(struct sl_store *s, struct sl_coord *c,
	      const struct sl_coord_msg *q)
{
	struct tier_req *t;
	struct node *nd;

	if (s->n_nodes == 0 || s->st.state != SL_BR_CLOSED)
		return -1;
	nd = &s->nodes[s->cluster ? s->slot_node[slot_of(c->keys_hash)] : 0];
	if (nd->ac == NULL || (t = malloc(sizeof(*t))) == NULL)
		return -1;
	t->c = c;
	t->q = *q;
	s->st.calls++;
	if (redisAsyncCommand(nd->ac, on_tier, t, "HGET %s %b", c->keys_hash,
			      q->tier.text, (size_t)q->tier.len) != REDIS_OK) {
		free(t);
		return -1;
	}
	return 0;
}

/* Asks nobody answered in time: answered by policy, and counted. */
static void
expire(struct sl_store *s, struct sl_coord *c, uint64_t now)
{
	while (s->head != s->tail) {
		struct inflight *f = &s->fl[s->fifo[s->head]];

		if (f->used && now - f->sent_ns < s->timeout_ns)
			break;
		if (f->used) {
			f->used = 0;
			s->st.timeouts++;
			s->fails++;
			sl_coord_answer_degraded(c, &f->q, now);
		}
		s->head = (s->head + 1) % INFLIGHT;
		s->n--;
	}
	if (s->fails >= FAILS_OPEN ||
	    (s->st.state == SL_BR_HALF_OPEN && s->fails > 0) ||
	    (!any_connected(s) && s->st.state != SL_BR_OPEN)) {
		open_breaker(s, now);
		s->fails = 0;
	}
}

void
sl_store_poll(struct sl_store *s, struct sl_coord *c, uint64_t now)
{
	uint32_t i;

	the_store = s;
	the_coord = c;
	the_now = now;
	for (i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];

		if (n->ac != NULL && n->wr)
			redisAsyncHandleWrite(n->ac);
		if (n->ac != NULL && n->rd) {
			struct pollfd p = {.fd = n->ac->c.fd, .events = POLLIN};

			if (poll(&p, 1, 0) > 0)
				redisAsyncHandleRead(n->ac);
		}
	}
	s->st.connected = (uint8_t)any_connected(s);
	s->st.functions = 0;
	for (i = 0; i < s->n_nodes; i++)
		s->st.functions += s->nodes[i].ac != NULL && s->nodes[i].fn;
	expire(s, c, now);
}

const struct sl_store_stats *
sl_store_stats(const struct sl_store *s)
{
	return &s->st;
}

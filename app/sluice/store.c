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

struct inflight {
	struct sl_coord_msg q;
	uint64_t sent_ns;
	uint32_t gen;
	uint8_t used;
	uint8_t eval; /* sent as EVAL already: no second try */
};

struct sl_store {
	redisAsyncContext *ac;
	char host[256];
	uint16_t port;
	uint8_t want_read, want_write;
	uint32_t fails;
	uint64_t timeout_ns, probe_ns, next_probe_ns;
	char sha_reserve[48], sha_refund[48];
	struct inflight fl[INFLIGHT];
	uint32_t fifo[INFLIGHT]; /* in-flight indexes in send order */
	uint32_t head, tail, n;
	uint32_t gen;
	struct sl_store_stats st;
};

static void
ev_add_read(void *p)
{
	((struct sl_store *)p)->want_read = 1;
}
static void
ev_del_read(void *p)
{
	((struct sl_store *)p)->want_read = 0;
}
static void
ev_add_write(void *p)
{
	((struct sl_store *)p)->want_write = 1;
}
static void
ev_del_write(void *p)
{
	((struct sl_store *)p)->want_write = 0;
}

static void
on_connect(const redisAsyncContext *ac, int status)
{
	struct sl_store *s = ac->data;

	if (status != REDIS_OK) {
		s->ac = NULL; /* hiredis frees it */
		s->st.connected = 0;
		return;
	}
	s->st.connected = 1;
}

static void
on_disconnect(const redisAsyncContext *ac, int status)
{
	struct sl_store *s = ac->data;

	(void)status;
	s->ac = NULL;
	s->st.connected = 0;
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

static void
open_breaker(struct sl_store *s, uint64_t now)
{
	if (s->st.state != SL_BR_OPEN) {
		s->st.opened++;
		SL_LOG(WARNING,
		       "store %s:%u: circuit open, rules decide by "
		       "on_store_failure",
		       s->host, s->port);
	}
	s->st.state = SL_BR_OPEN;
	s->next_probe_ns = now + s->probe_ns;
}

static void
connect_store(struct sl_store *s)
{
	s->ac = redisAsyncConnect(s->host, s->port);
	if (s->ac == NULL || s->ac->err) {
		if (s->ac != NULL)
			redisAsyncFree(s->ac);
		s->ac = NULL;
		return;
	}
	s->ac->data = s;
	s->ac->ev.data = s;
	s->ac->ev.addRead = ev_add_read;
	s->ac->ev.delRead = ev_del_read;
	s->ac->ev.addWrite = ev_add_write;
	s->ac->ev.delWrite = ev_del_write;
	redisAsyncSetConnectCallback(s->ac, on_connect);
	redisAsyncSetDisconnectCallback(s->ac, on_disconnect);
	s->sha_reserve[0] = s->sha_refund[0] = '\0';
	redisAsyncCommand(s->ac, on_sha, s->sha_reserve, "SCRIPT LOAD %s",
			  SL_LUA_RESERVE);
	redisAsyncCommand(s->ac, on_sha, s->sha_refund, "SCRIPT LOAD %s",
			  SL_LUA_REFUND);
}

struct sl_store *
sl_store_create(const char *host, uint16_t port, uint32_t timeout_ms,
		uint32_t probe_ms)
{
	struct sl_store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->port = port;
	s->timeout_ns = timeout_ms * 1000000ULL;
	s->probe_ns = probe_ms * 1000000ULL;
	connect_store(s);
	return s;
}

int
sl_store_usable(struct sl_store *s, uint64_t now)
{
	if (s->st.state == SL_BR_CLOSED)
		return s->ac != NULL;
	if (s->st.state == SL_BR_OPEN && now >= s->next_probe_ns) {
		/* half open: a fresh connection, the next ask is the probe */
		if (s->ac != NULL)
			redisAsyncFree(s->ac);
		s->ac = NULL;
		connect_store(s);
		s->st.state = SL_BR_HALF_OPEN;
		s->next_probe_ns = now + s->probe_ns;
	}
	return s->st.state == SL_BR_HALF_OPEN && s->n == 0 && s->ac != NULL;
}

static void
key_of(char *buf, size_t size, const struct sl_coord_msg *q)
{
	/* one hash tag per (rule, identity): a request's state stays in a slot
	 */
	snprintf(buf, size, "sl:{%016llx}:%016llx", (unsigned long long)q->k1,
		 (unsigned long long)q->k2);
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv);

static int
send_reserve(struct sl_store *s, uint32_t i, int eval)
{
	const struct sl_coord_msg *q = &s->fl[i].q;
	char key[64], a[6][24];
	const char *argv[10];
	size_t len[10];
	int k;

	key_of(key, sizeof(key), q);
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu", (unsigned long long)q->ask.count);
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu", (unsigned long long)q->ask.burst);
	snprintf(a[4], 24, "%u", q->ask.want);
	snprintf(a[5], 24, "%u", q->ask.need);
	eval = eval || !s->sha_reserve[0];
	argv[0] = eval ? "EVAL" : "EVALSHA";
	argv[1] = eval ? SL_LUA_RESERVE : s->sha_reserve;
	argv[2] = "1";
	argv[3] = key;
	for (k = 0; k < 6; k++)
		argv[4 + k] = a[k];
	for (k = 0; k < 10; k++)
		len[k] = strlen(argv[k]);
	s->fl[i].eval = (uint8_t)eval;
	return redisAsyncCommandArgv(
		s->ac, on_reply,
		(void *)(uintptr_t)((uint64_t)s->fl[i].gen << 16 | i), 10, argv,
		len);
}

int
sl_store_ask(struct sl_store *s, struct sl_coord *c,
	     const struct sl_coord_msg *q, uint64_t now)
{
	uint32_t i;

	(void)c;
	if (s->ac == NULL || s->n == INFLIGHT)
		return -1;
	for (i = s->tail; s->fl[i].used; i = (i + 1) % INFLIGHT)
		;
	s->fl[i].q = *q;
	s->fl[i].sent_ns = now;
	s->fl[i].gen = ++s->gen & 0xffffffu;
	s->fl[i].used = 1;
	if (send_reserve(s, i, 0) != REDIS_OK) {
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
	int k;

	if (s->ac == NULL || s->st.state != SL_BR_CLOSED || !s->sha_refund[0])
		return -1;
	key_of(key, sizeof(key), q);
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu", (unsigned long long)q->back.count);
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu", (unsigned long long)q->back.burst);
	snprintf(a[4], 24, "%llu", (unsigned long long)q->back.units);
	argv[0] = "EVALSHA";
	argv[1] = s->sha_refund;
	argv[2] = "1";
	argv[3] = key;
	for (k = 0; k < 5; k++)
		argv[4 + k] = a[k];
	for (k = 0; k < 9; k++)
		len[k] = strlen(argv[k]);
	s->st.calls++;
	return redisAsyncCommandArgv(s->ac, NULL, NULL, 9, argv, len);
}

static struct sl_store *the_store;
static struct sl_coord *the_coord;
static uint64_t the_now;

static void
answer_worker(struct sl_coord *c, struct sl_coord_msg *a)
{
	if (rte_ring_enqueue_elem(c->ans[a->worker], a, sizeof(*a)) != 0)
		c->st.answers_dropped++;
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
		return; /* timed out already: the worker decided without it */
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR &&
	    strstr(rep->str, "NOSCRIPT") != NULL && !f->eval && s->ac != NULL &&
	    send_reserve(s, i, 1) == REDIS_OK)
		return; /* sent again with the script itself, same slot */
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
		SL_LOG(NOTICE, "store %s:%u: circuit closed", s->host, s->port);
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

/* Asks nobody answered in time: the breaker hears of it. */
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
	    (s->ac == NULL && s->st.state != SL_BR_OPEN)) {
		open_breaker(s, now);
		s->fails = 0;
	}
}

void
sl_store_poll(struct sl_store *s, struct sl_coord *c, uint64_t now)
{
	the_store = s;
	the_coord = c;
	the_now = now;
	if (s->ac != NULL && s->want_write)
		redisAsyncHandleWrite(s->ac);
	if (s->ac != NULL && s->want_read) {
		struct pollfd p = {.fd = s->ac->c.fd, .events = POLLIN};

		if (poll(&p, 1, 0) > 0)
			redisAsyncHandleRead(s->ac);
	}
	expire(s, c, now);
}

const struct sl_store_stats *
sl_store_stats(const struct sl_store *s)
{
	return &s->st;
}

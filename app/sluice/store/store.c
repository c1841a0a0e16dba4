/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "sl_app.h"
#include "store.h"
#include "owed.h"
#include "sl_redis.h"
#include "redis.h"
#include "store_lua.h"
#include "store_priv.h"

void
sl_store_free(struct sl_store *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n_nodes; i++)
		sl_redis_close(&s->nodes[i].conn);
	free(s);
}

void
sl_store_keep_owed(struct sl_store *s, struct sl_owed *o)
{
	uint32_t i;

	if (s == NULL || o == NULL || o == s->owed)
		return;
	for (i = 0; i < SL_OWED_CAP; i++)
		if (s->owed->e[i].back.units > 0)
			sl_owed_add(o, &s->owed->e[i], s->owed->e[i].back.units,
				    s->owed->e[i].back.since_ns);
	o->dropped_units += s->owed->dropped_units;
	s->owed = o;
}

struct sl_store *
sl_store_create(const struct sl_store_conf *conf,
		const struct sl_store_sink *sink)
{
	struct sl_store *s = calloc(1, sizeof(*s));
	uint32_t i;
	int mapped = -1;

	if (s == NULL || conf->n_seeds == 0) {
		free(s);
		return NULL;
	}
	s->sink = *sink;
	s->owed = &s->owed_own;
	s->cluster = (uint8_t)conf->cluster;
	/* appliances start on different sub-buckets */
	s->next_sub = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	s->timeout_ns = conf->timeout_ms * 1000000ULL;
	s->probe_ns = conf->probe_ms * 1000000ULL;
	s->refresh_ns =
		(conf->refresh_ms ? conf->refresh_ms : 10000) * 1000000ULL;
	s->n_seeds = conf->n_seeds < SL_MAX_ENDPOINTS ? conf->n_seeds
						      : SL_MAX_ENDPOINTS;
	memcpy(s->seeds, conf->seeds, s->n_seeds * sizeof(s->seeds[0]));
	s->auth = conf->auth;
	/* the first seed that answers gives the map */
	for (i = 0; s->cluster && i < s->n_seeds && mapped != 0; i++)
		mapped = sl_nodes_load_slots(s, s->seeds[i].host,
					     s->seeds[i].port);
	if (s->cluster && mapped != 0)
		SL_LOG(WARNING,
		       "store: no slot map from any of %u seeds yet; asks "
		       "are decided by on_store_failure until one answers",
		       s->n_seeds);
	if (!s->cluster)
		sl_node_of(s, s->seeds[0].host, s->seeds[0].port);
	s->next_refresh_ns = 0; /* at the first poll: clocks start there */
	s->st.nodes = s->n_nodes;
	return s;
}

int
sl_store_node_info(const struct sl_store *s, uint32_t i,
		   struct sl_store_node *out)
{
	const struct node *n = &s->nodes[i];

	if (i >= s->n_nodes)
		return -1;
	snprintf(out->name, sizeof(out->name), "%s:%u", n->host, n->port);
	out->up = n->conn.ac != NULL;
	out->slots = s->cluster ? n->slots : SLOTS;
	out->replies = n->replies;
	out->errors = n->errors;
	out->drops = n->drops;
	out->state = n->br.state;
	return 0;
}

/* ---- asks ---- */

/*
 * The store key of q's (rule, identity), or of its sub-bucket sub. One
 * hash tag per (rule, identity): its state stays in one slot. With
 * sub-buckets, the sub-th tag is the first "<rule>.<sub>.<j>", j = 0, 1,
 * ..., whose slot falls in the sub-th of q->subs equal parts of the slot
 * space: every appliance finds the same keys without a word, their
 * slots distinct and spread as masters hold them (redis-cli --cluster
 * create gives each master one range of equal size; ~subs tries each).
 */
static void
key_of(char *buf, size_t size, const struct sl_coord_msg *q, uint32_t sub)
{
	uint32_t j;

	if (q->subs <= 1) {
		snprintf(buf, size, "sl:{%016llx}:%016llx",
			 (unsigned long long)q->k1, (unsigned long long)q->k2);
		return;
	}
	for (j = 0; j < 4096; j++) {
		snprintf(buf, size, "sl:{%016llx.%u.%u}:%016llx",
			 (unsigned long long)q->k1, sub, j,
			 (unsigned long long)q->k2);
		if ((uint32_t)sl_slot_of(buf) * q->subs / SLOTS == sub)
			return;
	}
}

/*
 * The sub-bucket an ask (or units given back) goes to: each in turn, so
 * that every sub-bucket's refill is drawn on. Fixed per worker, one with
 * no worker of any appliance on it lost its refill to its cap (a key
 * above its limit is granted reservations, rarely refused, so it seldom
 * spilled over): 0.89 x the limit on 3 masters.
 */
static uint32_t
pick_sub(struct sl_store *s, const struct sl_coord_msg *q)
{
	return q->subs > 1 ? s->next_sub++ % q->subs : 0;
}

/* A sub-bucket holds count / subs and burst / subs (at least 1). */
static uint64_t
part_of(uint64_t n, uint8_t subs)
{
	return subs > 1 ? (n / subs > 0 ? n / subs : 1) : n;
}

/* The node that serves key. */
static struct node *
node_of_key(struct sl_store *s, const char *key)
{
	return s->cluster ? &s->nodes[s->slot_node[sl_slot_of(key)]]
			  : &s->nodes[0];
}

/* The node that holds q's sub-bucket sub. */
static struct node *
node_for(struct sl_store *s, const struct sl_coord_msg *q, uint32_t sub)
{
	char key[64];

	if (!s->cluster)
		return &s->nodes[0];
	key_of(key, sizeof(key), q, sub);
	return node_of_key(s, key);
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv);

#define SCRIPT_ARGS_MAX 9

/* One call of a store script on one key: CMD SCRIPT 1 KEY ARGS... */
static int
call_script(redisAsyncContext *ac, redisCallbackFn *fn, void *priv,
	    const char *cmd, const char *script, const char *key, char (*a)[24],
	    int na)
{
	const char *argv[4 + SCRIPT_ARGS_MAX];
	size_t len[4 + SCRIPT_ARGS_MAX];
	int k;

	argv[0] = cmd;
	argv[1] = script;
	argv[2] = "1";
	argv[3] = key;
	for (k = 0; k < na; k++)
		argv[4 + k] = a[k];
	for (k = 0; k < 4 + na; k++)
		len[k] = strlen(argv[k]);
	return redisAsyncCommandArgv(ac, fn, priv, 4 + na, argv, len);
}

static int
send_reserve(struct sl_store *s, uint32_t i, int eval, int asking)
{
	struct inflight *f = &s->fl[i];
	const struct sl_coord_msg *q = &f->q;
	struct node *nd;
	char key[64], a[SCRIPT_ARGS_MAX][24];

	uint64_t burst = part_of(q->ask.burst, q->subs);
	/* no more than a sub-bucket can hold (the lease was sized on the
	 * whole key's burst) */
	uint64_t want = q->ask.want < burst ? q->ask.want : burst;
	uint64_t need = q->ask.need < want ? q->ask.need : want;

	key_of(key, sizeof(key), q, f->sub);
	if (s->cluster && !asking)
		f->node = s->slot_node[sl_slot_of(key)];
	nd = &s->nodes[f->node];
	if (nd->conn.ac == NULL)
		return REDIS_ERR;
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu",
		 (unsigned long long)part_of(q->ask.count, q->subs));
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu", (unsigned long long)burst);
	snprintf(a[4], 24, "%llu", (unsigned long long)want);
	snprintf(a[5], 24, "%llu", (unsigned long long)need);
	snprintf(a[6], 24, "%u", f->charge); /* taken whatever is left */
	snprintf(a[7], 24, "%u", f->charge ? q->ask.span_ms : 0);
	snprintf(a[8], 24, "%u", f->charge ? 0 : q->ask.ahead_ms);
	eval = eval || (!nd->fn && !nd->sha_reserve[0]);
	f->eval = (uint8_t)eval;
	if (asking)
		redisAsyncCommand(nd->conn.ac, NULL, NULL, "ASKING");
	return call_script(nd->conn.ac, on_reply,
			   (void *)(uintptr_t)((uint64_t)f->gen << 16 | i),
			   eval     ? "EVAL"
			   : nd->fn ? "FCALL"
				    : "EVALSHA",
			   eval     ? SL_LUA_RESERVE
			   : nd->fn ? sl_fn_reserve
				    : nd->sha_reserve,
			   key, a, 9);
}

int
sl_store_cmd(struct sl_store *s, const char *key, int argc, const char **argv,
	     redisCallbackFn *fn, void *priv)
{
	struct node *nd = node_of_key(s, key);
	size_t len[8];
	int k;

	if (argc > 8 || nd->conn.ac == NULL || nd->br.state != SL_BR_CLOSED)
		return -1;
	for (k = 0; k < argc; k++)
		len[k] = strlen(argv[k]);
	return redisAsyncCommandArgv(nd->conn.ac, fn, priv, argc, argv, len) ==
			       REDIS_OK
		       ? 0
		       : -1;
}

int
sl_store_send(struct sl_store *s, const char *key, int argc, const char **argv)
{
	return sl_store_cmd(s, key, argc, argv, NULL, NULL);
}

/* A free slot; one whose ask timed out is kept a while for its reply. */
static uint32_t
free_slot(struct sl_store *s)
{
	uint32_t i = s->tail, probes;

	for (probes = 0; probes < 64; probes++, i = (i + 1) % INFLIGHT)
		if (!s->fl[i].used && !s->fl[i].timed_out)
			return i;
	for (; s->fl[i].used; i = (i + 1) % INFLIGHT)
		;
	if (s->fl[i].timed_out) {
		s->st.late_unmatched++; /* its reply can no longer be told */
		sl_store_owe_covered(s, &s->fl[i]);
	}
	return i;
}

static int
send_new(struct sl_store *s, const struct sl_coord_msg *q, int charge,
	 uint64_t now)
{
	struct node *nd;
	uint32_t i, sub;

	if (s->n_nodes == 0 || s->n == INFLIGHT)
		return -1;
	sub = pick_sub(s, q);
	nd = node_for(s, q, sub);
	/* a charge waits for a node that answers, on this connection: one
	 * still being made may never be (a charge sent into it was lost,
	 * seen when a restart found units owed); an ask may be a probe */
	if (charge ? nd->br.state != SL_BR_CLOSED || nd->conn.ac == NULL ||
			     nd->answered != nd->conn.ac
		   : !sl_node_usable(s, nd, now))
		return -1;
	i = free_slot(s);
	memset(&s->fl[i], 0, sizeof(s->fl[i]));
	s->fl[i].q = *q;
	s->fl[i].sent_ns = now;
	s->fl[i].gen = ++s->gen & 0xffffffu;
	s->fl[i].used = 1;
	s->fl[i].charge = (uint8_t)charge;
	s->fl[i].sub = (uint8_t)sub;
	s->fl[i].judged = (uint8_t)sl_node_index(s, nd);
	s->fl[i].probe = nd->br.state == SL_BR_HALF_OPEN;
	if (send_reserve(s, i, 0, 0) != REDIS_OK) {
		s->fl[i].used = 0;
		return -1;
	}
	nd->br.probe_out |= s->fl[i].probe;
	s->fifo[s->tail] = i;
	s->tail = (s->tail + 1) % INFLIGHT;
	s->n++;
	s->st.calls++;
	return 0;
}

int
sl_store_ask(struct sl_store *s, const struct sl_coord_msg *q, uint64_t now)
{
	return send_new(s, q, 0, now);
}

/* Sends charge q (SL_CO_TAKEN) now: as an ask for exactly the units,
 * taken whatever is left, whose answer no one waits for. */
static int
send_charge(struct sl_store *s, const struct sl_coord_msg *q, uint64_t now)
{
	struct sl_coord_msg c = *q;

	c.type = SL_CO_ASK;
	c.ask.count = q->back.count;
	c.ask.burst = q->back.burst;
	c.ask.on_failure = q->back.on_failure;
	c.ask.want = c.ask.need =
		(uint32_t)(q->back.units > UINT32_MAX ? UINT32_MAX
						      : q->back.units);
	c.ask.span_ms =
		q->back.since_ns == 0 || now <= q->back.since_ns
			? 0
			: (uint32_t)((now - q->back.since_ns) / 1000000 + 1);
	if (send_new(s, &c, 1, now) != 0)
		return -1;
	s->st.charges++;
	return 0;
}

int
sl_store_charge(struct sl_store *s, const struct sl_coord_msg *q, uint64_t now)
{
	if (send_charge(s, q, now) == 0)
		return 0;
	/* the store out or full: owed, charged once it answers again */
	if (sl_owed_add(s->owed, q, q->back.units, now) != 0)
		return -1;
	s->st.owed_units += q->back.units;
	return 0;
}

/* A refund sent; -1: its node cannot take it now. */
static int
send_refund(struct sl_store *s, const struct sl_coord_msg *q)
{
	char key[64], a[5][24];
	struct node *nd;

	if (s->n_nodes == 0)
		return -1;
	/* to the next sub-bucket, whichever granted them: one that is full
	 * loses what it cannot hold (fewer admissions, never more) */
	key_of(key, sizeof(key), q, pick_sub(s, q));
	nd = &s->nodes[s->cluster ? s->slot_node[sl_slot_of(key)] : 0];
	if (nd->br.state != SL_BR_CLOSED || nd->conn.ac == NULL ||
	    (!nd->fn && !nd->sha_refund[0]))
		return -1;
	snprintf(a[0], 24, "%u", q->algo);
	snprintf(a[1], 24, "%llu",
		 (unsigned long long)part_of(q->back.count, q->subs));
	snprintf(a[2], 24, "%u", q->period_ms);
	snprintf(a[3], 24, "%llu",
		 (unsigned long long)part_of(q->back.burst, q->subs));
	snprintf(a[4], 24, "%llu", (unsigned long long)q->back.units);
	s->st.calls++;
	return call_script(nd->conn.ac, NULL, NULL,
			   nd->fn ? "FCALL" : "EVALSHA",
			   nd->fn ? sl_fn_refund : nd->sha_refund, key, a, 5);
}

int
sl_store_give_back(struct sl_store *s, const struct sl_coord_msg *q,
		   uint64_t now)
{
	if (send_refund(s, q) == 0)
		return 0;
	/* the store out: it counts them as spent until told */
	if (sl_owed_add(s->owed, q, q->back.units, now) != 0)
		return -1;
	s->st.refunds_owed += q->back.units;
	return 0;
}

/* Charges what is owed and refunds what was given back meanwhile, a few
 * per poll, while the store answers. */
static void
settle(struct sl_store *s, uint64_t now)
{
	int k, i;

	for (k = 0; k < 32; k++) {
		const struct sl_coord_msg *e;
		int refund;

		i = sl_owed_next(s->owed);
		if (i < 0)
			return;
		e = &s->owed->e[i];
		refund = e->type == SL_CO_GIVE_BACK;
		/* its node out: the others' are sent meanwhile */
		if ((refund ? send_refund(s, e) : send_charge(s, e, now)) !=
		    0) {
			sl_owed_skip(s->owed);
			continue;
		}
		if (refund)
			s->st.refunds_settled += e->back.units;
		else
			s->st.owed_charged += e->back.units;
		sl_owed_remove(s->owed, (uint32_t)i);
	}
}

/*
 * A cluster said the key lives elsewhere: MOVED updates the slot map and
 * the ask goes there; ASK goes there once, after ASKING. Returns 1 when
 * the ask was sent again.
 */
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
	n = sl_node_of(s, r.host, r.port);
	if (n < 0)
		return 0;
	f->hops++;
	s->st.redirects++;
	s->st.nodes = s->n_nodes;
	if (r.moved)
		s->slot_node[r.slot] = (uint8_t)n;
	/* slots moving in numbers (a reshard, a failover): the whole map
	 * again rather than one slot a MOVED at a time */
	if (r.moved && ++s->moved >= 16)
		sl_nodes_refresh_soon(s);
	f->node = (uint8_t)n;
	return send_reserve(s, i, f->eval, !r.moved) == REDIS_OK;
}

/* The reserve script's answer: granted, retry ms, reset ms, remaining. */
static int
answer_of(struct sl_coord_msg *a, const struct sl_coord_msg *q,
	  const redisReply *rep)
{
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 4)
		return -1;
	memset(a, 0, sizeof(*a));
	a->k1 = q->k1;
	a->k2 = q->k2;
	a->type = SL_CO_ANSWER;
	a->worker = q->worker;
	a->ans.granted = (uint32_t)rep->element[0]->integer;
	a->ans.retry_ns = (uint64_t)rep->element[1]->integer * 1000000ULL;
	a->ans.reset_ns = (uint64_t)rep->element[2]->integer * 1000000ULL;
	a->ans.remaining = rep->element[3]->integer > 0
				   ? (uint64_t)rep->element[3]->integer
				   : 0;
	return 0;
}

/*
 * The reply of an ask already decided in its place (timed out): what the
 * store granted and what the node granted instead must not both count.
 * Units the store charged beyond those go back; units the node granted
 * beyond the store's are charged to it, as taken.
 */
static void
late_reply(struct sl_store *s, struct node *nd, struct inflight *f,
	   const redisReply *rep)
{
	struct sl_coord_msg a, b;
	uint64_t g;

	if (!f->timed_out || f->charge)
		return;
	if (answer_of(&a, &f->q, rep) != 0) {
		sl_store_owe_covered(s,
				     f); /* no count from the store: charged */
		return;
	}
	f->timed_out = 0;
	/* slow, not out */
	if (nd != NULL)
		sl_breaker_close(nd);
	g = a.ans.granted;
	s->st.late_answers++;
	s->st.late_units += g;
	if (f->waiting) { /* nothing was decided in its place */
		f->waiting = 0;
		s->st.late_delivered++;
		s->sink.answer(s->sink.ctx, &f->q, &a, s->now);
		return;
	}
	s->sink.late(s->sink.ctx, &f->q, &a, s->now);
	s->st.late_covered += g < f->covered ? g : f->covered;
	if (g > f->covered) {
		sl_msg_taken(&b, &f->q, g - f->covered);
		b.type = SL_CO_GIVE_BACK;
		if (sl_store_give_back(s, &b, s->now) == 0)
			s->st.late_given_back += b.back.units;
	} else if (f->covered > g) {
		sl_msg_taken(&b, &f->q, f->covered - g);
		if (sl_store_charge(s, &b, s->now) == 0)
			s->st.late_charged += b.back.units;
	}
}

/* A failed reply: the store refusing the appliance itself (credentials,
 * permissions, no connection) is an outage; any other error is one ask's.
 * An unauthenticated connection's ask with more than a few arguments is
 * not answered NOAUTH but "ERR Protocol error: unauthenticated multibulk
 * length" (and the connection closed): read as one ask's error, a
 * fail_closed key was served from the share with a wrong password. */
static int
failure_of(const redisReply *rep)
{
	if (rep == NULL || (rep->type == REDIS_REPLY_ERROR &&
			    (strncmp(rep->str, "NOAUTH", 6) == 0 ||
			     strncmp(rep->str, "WRONGPASS", 9) == 0 ||
			     strncmp(rep->str, "NOPERM", 6) == 0 ||
			     strstr(rep->str, "unauthenticated") != NULL)))
		return SL_SF_OUT;
	return SL_SF_ERROR;
}

#define ERR_LOG_NS 60000000000ULL

/*
 * An error reply no retry answers (a wrong type, no permission, a
 * script the server refuses): the operator is told what Redis said,
 * once a minute at most, not only that a circuit opened.
 */
static void
said_error(struct sl_store *s, const struct node *nd, const char *what,
	   const redisReply *rep, const char *so)
{
	if (s->err_logged_ns != 0 && s->now - s->err_logged_ns < ERR_LOG_NS)
		return;
	s->err_logged_ns = s->now;
	SL_LOG(WARNING, "store: %s:%u answered %s: %.*s (%s)",
	       nd != NULL ? nd->host : "?", nd != NULL ? nd->port : 0, what,
	       (int)RTE_MIN(rep->len, (size_t)200), rep->str, so);
}

/* Any reply from a node (returned; NULL if none has ac now): it is up
 * (its backoff starts afresh); an error is counted, and a cluster that
 * says it is down is read again. */
static struct node *
node_said(struct sl_store *s, const redisAsyncContext *ac,
	  const redisReply *rep)
{
	struct node *nd = NULL;
	uint32_t k;

	for (k = 0; k < s->n_nodes && s->nodes[k].conn.ac != ac; k++)
		;
	if (k < s->n_nodes) {
		nd = &s->nodes[k];
		nd->answered = ac;
		nd->replies++;
		nd->backoff_ns = 0;
		nd->errors += rep->type == REDIS_REPLY_ERROR;
		/* an error proves a server, not a store that answers */
		if (rep->type != REDIS_REPLY_ERROR)
			nd->br.last_reply_ns = s->now;
	}
	if (rep->type == REDIS_REPLY_ERROR &&
	    (strncmp(rep->str, "CLUSTERDOWN", 11) == 0 ||
	     strncmp(rep->str, "TRYAGAIN", 8) == 0))
		sl_nodes_refresh_soon(s);
	return nd;
}

/*
 * A sub-bucket refused an ask: sent on to the next, until one grants or
 * every one has refused. A key's holders reserve from different ones,
 * and one may have units while the others are in debt: sent once more
 * only, an appliance's asks that met two empty sub-buckets of three were
 * refused for the seconds the others' reservations ran, while the third
 * filled to its cap (2/3 of the limit admitted for 3 s, e2e/cluster).
 * Its reply counts as a reply of the store.
 */
static int
send_on(struct sl_store *s, struct node *nd, uint32_t i, const redisReply *rep)
{
	struct inflight *f = &s->fl[i];
	uint64_t retry;

	if (f->charge || f->q.subs <= 1 || rep == NULL ||
	    rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
	    rep->element[0]->integer != 0)
		return 0;
	retry = rep->element[1]->integer > 0
			? (uint64_t)rep->element[1]->integer
			: 0;
	if (f->tried == 0 || retry < f->soonest_ms)
		f->soonest_ms = retry;
	if (++f->tried >= f->q.subs)
		return 0;
	f->hops = 0;
	f->sub = (uint8_t)((f->sub + 1) % f->q.subs);
	if (send_reserve(s, i, f->eval, 0) != REDIS_OK)
		return 0;
	s->st.replies++;
	if (nd != NULL)
		sl_breaker_close(nd);
	s->st.sub_retries++;
	return 1;
}

static void
on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct sl_store *s = ac->data;
	redisReply *rep = r;
	uint32_t i = (uint32_t)((uintptr_t)priv & 0xffff);
	uint32_t gen = (uint32_t)((uintptr_t)priv >> 16);
	struct inflight *f = &s->fl[i];
	struct node *nd = rep != NULL ? node_said(s, ac, rep) : NULL;
	struct sl_coord_msg a;

	if (f->gen != gen)
		return; /* its slot went to another ask: counted there */
	if (!f->used) {
		late_reply(s, nd, f, rep);
		return;
	}
	if (f->probe) { /* answered: another may go */
		s->nodes[f->judged].br.probe_out = 0;
		f->probe = 0;
	}
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR) {
		int fn_gone = strstr(rep->str, "Function not found") != NULL;

		/* functions flushed (a restart without persistence): load
		 * them again, and send this one with the script itself */
		if (fn_gone && s->nodes[f->node].conn.ac != NULL)
			sl_node_load_functions(&s->nodes[f->node]);
		if ((fn_gone || strstr(rep->str, "NOSCRIPT") != NULL) &&
		    !f->eval && send_reserve(s, i, 1, 0) == REDIS_OK)
			return;
		if (s->cluster && redirect(s, i, rep->str))
			return;
	}
	if (send_on(s, nd, i, rep))
		return;
	f->used = 0;
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
	    rep->elements != 4) {
		s->st.errors++;
		s->nodes[f->judged].br.fails++;
		if (rep != NULL && rep->type == REDIS_REPLY_ERROR)
			said_error(s, nd, f->charge ? "a charge" : "an ask",
				   rep,
				   "decided by the rule's on_store_failure");
		/* the worker gets an answer now, not after its own timeout;
		 * one failed reply while the breaker is closed is late, not
		 * an outage */
		if (!f->charge)
			s->sink.failed(s->sink.ctx, &f->q, failure_of(rep),
				       s->now, &f->covered);
		return;
	}
	s->st.replies++;
	s->st.rtt_ns_last = s->now - f->sent_ns;
	s->st.rtt_ns_sum += s->st.rtt_ns_last;
	if (nd != NULL)
		sl_breaker_close(nd);
	if (f->charge) {
		s->st.charged_units += (uint64_t)rep->element[0]->integer;
		return;
	}
	answer_of(&a, &f->q, rep);
	/* every sub-bucket refused: ask again when the first has units */
	if (f->tried > 0 && a.ans.granted == 0 &&
	    f->soonest_ms * 1000000ULL < a.ans.retry_ns)
		a.ans.retry_ns = f->soonest_ms * 1000000ULL;
	s->sink.answer(s->sink.ctx, &f->q, &a, s->now);
}

/* ---- tiers of keys outside the static map ---- */

struct tier_req {
	struct sl_store *s;
	const char *hash;
	struct sl_coord_msg q;
};

static void
on_tier(redisAsyncContext *ac, void *r, void *priv)
{
	struct tier_req *t = priv;
	redisReply *rep = r;
	struct sl_coord_msg a = t->q;
	struct node *nd = rep != NULL ? node_said(t->s, ac, rep) : NULL;

	/* any reply but an error proves the node answers: it closes a
	 * breaker no lease ask may come to close (every key waiting for
	 * its tier, or holding what it has) */
	if (rep != NULL && rep->type != REDIS_REPLY_ERROR && nd != NULL)
		sl_breaker_close(nd);
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR) {
		char what[sizeof("the keys hash ") + SL_NAME_MAX];

		t->s->st.tier_errors++;
		snprintf(what, sizeof(what), "the keys hash %s", t->hash);
		said_error(t->s, nd, what, rep,
			   "keys outside the static map are in the default "
			   "tier");
	}
	a.type = SL_CO_TIER_ANSWER;
	a.tier.len = 0;
	/* nil: the hash does not name the key; no reply (the connection
	 * went) or an error (NOPERM, LOADING): nothing is known of it */
	a.tier.found = rep != NULL && rep->type == REDIS_REPLY_NIL
			       ? SL_TIER_UNNAMED
			       : SL_TIER_UNSAID;
	if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
		a.tier.found = SL_TIER_UNNAMED; /* too long for a tier */
		if (rep->len < (int)sizeof(a.tier.text)) {
			memcpy(a.tier.text, rep->str, (size_t)rep->len);
			a.tier.len = (uint8_t)rep->len;
			a.tier.found = SL_TIER_NAMED;
		}
	}
	t->s->sink.answer(t->s->sink.ctx, &t->q, &a, t->s->now);
	free(t);
}

int
sl_store_tier(struct sl_store *s, const char *hash,
	      const struct sl_coord_msg *q, const char *key, uint32_t len)
{
	struct tier_req *t;
	struct node *nd;

	if (s->n_nodes == 0)
		return -1;
	nd = &s->nodes[s->cluster ? s->slot_node[sl_slot_of(hash)] : 0];
	/* half-open (its probe time come) it is asked too, not as the
	 * probe: a reply closes the breaker, none leaves it as it was */
	(void)sl_node_usable(s, nd, s->now);
	if (nd->br.state == SL_BR_OPEN || nd->conn.ac == NULL ||
	    (t = malloc(sizeof(*t))) == NULL)
		return -1;
	t->s = s;
	t->hash = hash;
	t->q = *q;
	s->st.calls++;
	s->st.tier_asks++;
	if (redisAsyncCommand(nd->conn.ac, on_tier, t, "HGET %s %b", hash, key,
			      (size_t)len) != REDIS_OK) {
		free(t);
		return -1;
	}
	return 0;
}

void
sl_store_poll(struct sl_store *s, uint64_t now)
{
	uint32_t i;

	s->now = now;
	for (i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];

		sl_redis_drive(&n->conn);
	}
	sl_nodes_poll(s, now);
	s->st.connected = (uint8_t)sl_nodes_any_connected(s);
	s->st.functions = 0;
	for (i = 0; i < s->n_nodes; i++)
		s->st.functions +=
			s->nodes[i].conn.ac != NULL && s->nodes[i].fn;
	sl_store_expire(s, now);
	sl_store_state(s);
	if (s->st.connected)
		settle(s, now);
	s->st.owed_keys = s->owed->n;
	s->st.owed_dropped = s->owed->dropped_units;
}

const struct sl_store_stats *
sl_store_stats(const struct sl_store *s)
{
	return &s->st;
}

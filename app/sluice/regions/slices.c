/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The aggregator's slices, applied (docs/design/leases.md, "Rebalancing
 * slices"). For each global rule of the running policy, sluice-aggregator keeps
 * in this region's Redis sl:slice:{RULE}: v (version), t (written), x (how long
 * a slice lives unrenewed, ms) and, per identity (32 hex digits: its bucket's
 * k1 and k2), its slice here in parts of SL_SLICE_PARTS, and announces "RULE
 * VERSION" on sl:slices. The hash is read on the announcement and every second
 * (a missed message is repaired within one), through the store's connection to
 * the node serving the key; what it holds becomes a new read-only table for the
 * workers, swapped in and the old one freed after a grace period, as the policy
 * is. A rule's slices not read again within their x (the aggregator down, the
 * key expired, this region's Redis out) are dropped: its identities go
 * back to the static slice.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "regions.h"
#include "sl_policy.h"
#include "sl_telemetry.h"
#include "usage.h"
#include "redis.h"
#include "store.h"

#define CHANNEL       "sl:slices"
#define READ_NS       1000000000ULL
#define TTL_MS_DEF    10000 /* a hash without x: the aggregator's default */
#define RULE_TOP      64    /* identities per rule, as the aggregator gives */
#define REGIONS_SHOWN 16    /* of them per rule in /sluice/regions */

struct rule_slices {
	uint64_t rid;
	char name[SL_NAME_MAX];
	uint32_t static_parts; /* the rule's static slice here */
	uint64_t version;      /* 0: none held */
	uint64_t read_ns;      /* last read that held them */
	uint64_t until_ns;     /* dropped then unless read again */
	uint64_t written_ms;   /* the aggregator's t */
	/* the aggregator's p: how it cut them (its policy and options) */
	char policy[64];
	uint32_t n;
	struct {
		uint64_t k1, k2;
		uint32_t parts;
	} e[RULE_TOP];
};

struct sl_slicesync {
	struct sl_app *app;
	struct sl_store *store; /* the region's: where the slices are read */
	char region[SL_NAME_MAX];
	char host[256];
	uint16_t port;
	struct sl_redis_auth auth;
	struct sl_redis_conn sub;
	struct rule_slices r[SL_USAGE_RULES];
	uint32_t n;
	uint64_t now_ns, next_read;
	int dirty; /* r[] changed since the workers' table was built */
	struct sl_slices_retired retired;
	uint64_t messages, reads, versions, expired, unreadable, swaps, dropped;
	uint64_t refused; /* reads answered with an error */
};

static struct rule_slices *
rule_in(struct rule_slices *r, uint32_t n, uint64_t rid)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (r[i].rid == rid)
			return &r[i];
	return NULL;
}

static struct rule_slices *
rule_by_id(struct sl_slicesync *s, uint64_t rid)
{
	return rule_in(s->r, s->n, rid);
}

/* 16 hex digits at p (not terminated there) */
static int
hex64(const char *p, uint64_t *out)
{
	char buf[17];
	char *end;

	memcpy(buf, p, 16);
	buf[16] = '\0';
	*out = strtoull(buf, &end, 16);
	return end == buf + 16 ? 0 : -1;
}

static int
num_of(const redisReply *v, uint64_t max, uint64_t *out)
{
	char *end;

	if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 20)
		return -1;
	*out = strtoull(v->str, &end, 10);
	return end == v->str + v->len && *out <= max ? 0 : -1;
}

/* The hash's fields into r; -1 (r unchanged) when any is unreadable. */
static int
parse(struct rule_slices *r, const redisReply *rep, uint64_t *ttl_ms)
{
	struct rule_slices t = *r;
	uint64_t v = 0, x;
	size_t i;

	t.n = 0;
	t.policy[0] = '\0';
	*ttl_ms = TTL_MS_DEF;
	for (i = 0; i + 1 < rep->elements; i += 2) {
		const redisReply *f = rep->element[i],
				 *val = rep->element[i + 1];

		if (f->type != REDIS_REPLY_STRING)
			return -1;
		if (strcmp(f->str, "v") == 0) {
			if (num_of(val, UINT64_MAX, &v) != 0)
				return -1;
		} else if (strcmp(f->str, "t") == 0) {
			if (num_of(val, UINT64_MAX, &t.written_ms) != 0)
				return -1;
		} else if (strcmp(f->str, "x") == 0) {
			if (num_of(val, 24ULL * 3600 * 1000, ttl_ms) != 0)
				return -1;
		} else if (strcmp(f->str, "p") == 0) {
			if (val->type != REDIS_REPLY_STRING)
				return -1;
			snprintf(t.policy, sizeof(t.policy), "%.*s",
				 (int)val->len, val->str);
		} else if (f->len == 32 && t.n < RULE_TOP) {
			if (hex64(f->str, &t.e[t.n].k1) != 0 ||
			    hex64(f->str + 16, &t.e[t.n].k2) != 0 ||
			    num_of(val, SL_SLICE_PARTS, &x) != 0)
				return -1;
			t.e[t.n++].parts = (uint32_t)x;
		}
	}
	if (v == 0)
		return -1;
	t.version = v;
	*r = t;
	return 0;
}

static int
same(const struct rule_slices *a, const struct rule_slices *b)
{
	uint32_t i;

	if (a->version != b->version || a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->e[i].k1 != b->e[i].k1 || a->e[i].k2 != b->e[i].k2 ||
		    a->e[i].parts != b->e[i].parts)
			return 0;
	return 1;
}

/* A rule's slices gone (expired here or in Redis): the static ones. */
static void
drop(struct sl_slicesync *s, struct rule_slices *r)
{
	if (r->version != 0)
		s->expired++;
	r->version = 0;
	r->n = 0;
	r->policy[0] = '\0';
}

/* One per process (the coordinator's). The store's replies find it here:
 * a reply carries one pointer, the rule's id, so that a reply for a rule
 * gone is dropped. mu guards it, its rules and counters against
 * /sluice/regions' thread. */
static struct sl_slicesync *the_sync;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void
on_hash(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_slicesync *s = the_sync;
	const redisReply *rep = reply;
	struct rule_slices *r, before;
	uint64_t ttl_ms;

	(void)ac;
	/* the_sync is only ever set or cleared on this thread */
	if (rep == NULL || s == NULL)
		return;
	if (rep->type != REDIS_REPLY_ARRAY) {
		/* NOPERM (an ACL without sl:slice:*), or worse: said once */
		pthread_mutex_lock(&mu);
		if (s->refused++ == 0 && rep->type == REDIS_REPLY_ERROR)
			SL_LOG(ERR, "slices: Redis refused reading them: %s",
			       rep->str);
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_lock(&mu);
	s->reads++;
	r = rule_by_id(s, (uint64_t)(uintptr_t)priv);
	if (r == NULL) {
		pthread_mutex_unlock(&mu);
		return;
	}
	before = *r;
	if (rep->elements == 0) {
		drop(s, r); /* expired, or never written */
	} else if (parse(r, rep, &ttl_ms) != 0) {
		s->unreadable++;
	} else {
		r->read_ns = s->now_ns;
		r->until_ns = s->now_ns + ttl_ms * 1000000ULL;
		s->versions += r->version != before.version;
	}
	if (!same(r, &before))
		s->dirty = 1;
	pthread_mutex_unlock(&mu);
}

static void
read_rule(struct sl_slicesync *s, const struct rule_slices *r)
{
	struct sl_store *st = s->store;
	char key[48];
	const char *argv[] = {"HGETALL", key};

	snprintf(key, sizeof(key), "sl:slice:{%016" PRIx64 "}", r->rid);
	/* the node out (breaker open): nothing read, the slices age */
	sl_store_cmd(st, key, 2, argv, on_hash, (void *)(uintptr_t)r->rid);
}

static void
on_message(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_slicesync *s = ac->data;
	const redisReply *rep = reply;
	struct rule_slices *r;
	uint64_t rid;

	(void)priv;
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
	    rep->elements != 3 || rep->element[2]->type != REDIS_REPLY_STRING)
		return; /* the subscription's own confirmation, or noise */
	pthread_mutex_lock(&mu);
	s->messages++;
	r = rep->element[2]->len > 17 && rep->element[2]->str[16] == ' ' &&
			    hex64(rep->element[2]->str, &rid) == 0
		    ? rule_by_id(s, rid)
		    : NULL;
	if (r != NULL &&
	    strtoull(rep->element[2]->str + 17, NULL, 10) != r->version)
		read_rule(s, r);
	pthread_mutex_unlock(&mu);
}

/*
 * The running policy's global rules, their slices kept where the rule
 * still is (a reload keeps a rule's name, and so its id). Runs on the
 * main lcore, which alone swaps the policy.
 */
static void
follow_rules(struct sl_slicesync *s)
{
	const struct sl_policy *pol = s->app->policy;
	struct rule_slices next[SL_USAGE_RULES];
	uint32_t i, n = 0;

	for (i = 0; i < pol->n_rules && n < SL_USAGE_RULES; i++) {
		const struct sl_rule *rule = sl_ruleset_rule(pol->rs, i);
		uint64_t rid = sl_ruleset_rule_id(pol->rs, i);
		const struct rule_slices *had = rule_by_id(s, rid);

		if (!rule->global || rule->shadow)
			continue;
		if (had != NULL)
			next[n] = *had;
		else
			memset(&next[n], 0, sizeof(next[n]));
		next[n].rid = rid;
		snprintf(next[n].name, sizeof(next[n].name), "%s", rule->name);
		next[n].static_parts =
			(uint32_t)((uint64_t)SL_SLICE_PARTS * rule->slice_num /
				   (rule->slice_den ? rule->slice_den : 1));
		n++;
	}
	for (i = 0; i < s->n; i++) /* a rule gone with slices held */
		if (s->r[i].n > 0 && rule_in(next, n, s->r[i].rid) == NULL)
			s->dirty = 1;
	memcpy(s->r, next, sizeof(next[0]) * n);
	s->n = n;
}

/* Rules whose slices were not read again within their lifetime. */
static void
expire(struct sl_slicesync *s, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->r[i].version != 0 && now >= s->r[i].until_ns) {
			drop(s, &s->r[i]);
			s->dirty = 1;
		}
}

/*
 * The table a swap replaced is freed once every worker passed a
 * quiescent point: checked on later polls, never waited for (the
 * coordinator shares this loop). A second swap waits for that.
 */
int
sl_slices_reap(struct sl_app *app, struct sl_slices_retired *g)
{
	if (g->t == NULL)
		return 1;
	if (rte_rcu_qsbr_check(app->qs, g->token, false) != 1)
		return 0;
	free(g->t);
	g->t = NULL;
	return 1;
}

void
sl_slices_swap(struct sl_app *app, struct sl_slices_retired *g,
	       struct sl_slices *t)
{
	struct sl_slices *old = app->slices;

	__atomic_store_n(&app->slices, t, __ATOMIC_RELEASE);
	if (old != NULL) {
		g->t = old;
		g->token = rte_rcu_qsbr_start(app->qs);
	}
}

/* The workers' table built afresh and swapped in. */
static void
publish(struct sl_slicesync *s)
{
	struct sl_slices *t = NULL;
	uint32_t i, j, n = 0;

	if (!sl_slices_reap(s->app, &s->retired) || !s->dirty)
		return;
	for (i = 0; i < s->n; i++)
		n += s->r[i].n;
	if (n > 0 && (t = malloc(sizeof(*t))) == NULL)
		return; /* tried again next poll */
	if (t != NULL)
		sl_slices_clear(t);
	for (i = 0; t != NULL && i < s->n; i++)
		for (j = 0; j < s->r[i].n; j++)
			s->dropped += sl_slices_put(t, s->r[i].e[j].k1,
						    s->r[i].e[j].k2,
						    s->r[i].e[j].parts) != 0;
	sl_slices_swap(s->app, &s->retired, t);
	s->dirty = 0;
	s->swaps++;
}

void
sl_slicesync_poll(struct sl_slicesync *s, uint64_t now)
{
	uint32_t i;

	if (s->sub.ac == NULL &&
	    sl_redis_open(&s->sub, s->host, s->port, &s->auth, s) == 0)
		redisAsyncCommand(s->sub.ac, on_message, NULL, "SUBSCRIBE %s",
				  CHANNEL);
	pthread_mutex_lock(&mu);
	s->now_ns = now;
	if (now >= s->next_read) {
		follow_rules(s);
		for (i = 0; i < s->n; i++)
			read_rule(s, &s->r[i]);
		s->next_read = now + READ_NS;
	}
	expire(s, now);
	publish(s);
	pthread_mutex_unlock(&mu);
	sl_redis_drive(&s->sub);
}

/* /sluice/regions: this region, and per global rule the slices held. */
static int
cmd_regions(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct sl_slicesync *s = ctx;
	uint32_t i, j;

	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&mu);
	rte_tel_data_add_dict_string(d, "region", s->region);
	rte_tel_data_add_dict_u64(d, "messages", s->messages);
	rte_tel_data_add_dict_u64(d, "reads", s->reads);
	rte_tel_data_add_dict_u64(d, "versions", s->versions);
	rte_tel_data_add_dict_u64(d, "expired", s->expired);
	rte_tel_data_add_dict_u64(d, "unreadable", s->unreadable);
	rte_tel_data_add_dict_u64(d, "refused", s->refused);
	rte_tel_data_add_dict_u64(d, "swaps", s->swaps);
	rte_tel_data_add_dict_u64(d, "dropped", s->dropped);
	for (i = 0; i < s->n; i++) {
		const struct rule_slices *r = &s->r[i];
		struct rte_tel_data *one = rte_tel_data_alloc();
		char key[RTE_TEL_MAX_STRING_LEN], id[40];

		if (one == NULL)
			break;
		rte_tel_data_start_dict(one);
		rte_tel_data_add_dict_string(one, "name", r->name);
		rte_tel_data_add_dict_u64(one, "static_parts", r->static_parts);
		rte_tel_data_add_dict_u64(one, "version", r->version);
		rte_tel_data_add_dict_u64(
			one, "age_ms",
			r->version ? (s->now_ns - r->read_ns) / 1000000 : 0);
		rte_tel_data_add_dict_u64(one, "expires_in_ms",
					  r->version && r->until_ns > s->now_ns
						  ? (r->until_ns - s->now_ns) /
							    1000000
						  : 0);
		rte_tel_data_add_dict_u64(one, "written_ms", r->written_ms);
		rte_tel_data_add_dict_string(one, "policy", r->policy);
		rte_tel_data_add_dict_u64(one, "identities", r->n);
		/* the first of them as read: identity -> parts */
		for (j = 0; j < r->n && j < REGIONS_SHOWN; j++) {
			snprintf(id, sizeof(id), "%016" PRIx64 "%016" PRIx64,
				 r->e[j].k1, r->e[j].k2);
			rte_tel_data_add_dict_u64(one, id, r->e[j].parts);
		}
		sl_tel_key(key, r->name, sizeof(key));
		rte_tel_data_add_dict_container(d, key, one, 0);
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

struct sl_slicesync *
sl_slicesync_create(struct sl_app *app, struct sl_store *store,
		    const char *host, uint16_t port,
		    const struct sl_redis_auth *auth)
{
	struct sl_slicesync *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->app = app;
	s->store = store;
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->port = port;
	s->auth = *auth;
	snprintf(s->region, sizeof(s->region), "%s", app->cfg->store.region);
	pthread_mutex_lock(&mu);
	the_sync = s;
	pthread_mutex_unlock(&mu);
	if (sl_telemetry_cmd(
		    "/sluice/regions", cmd_regions, s,
		    "This region's slices of global rules, per identity") != 0)
		SL_LOG(WARNING, "/sluice/regions not registered");
	return s;
}

void
sl_slicesync_free(struct sl_slicesync *s)
{
	if (s == NULL)
		return;
	sl_telemetry_withdraw("/sluice/regions", s);
	sl_redis_close(&s->sub);
	pthread_mutex_lock(&mu);
	free(s->app->slices);
	s->app->slices = NULL;
	free(s->retired.t);
	the_sync = NULL;
	pthread_mutex_unlock(&mu);
	free(s);
}

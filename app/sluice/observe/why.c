/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /sluice/why: why a client is (or is not) limited. Given an identity
 * and, optionally, the request's method, path and host (or one rule by
 * name), it finds the rules that bind the request as the workers would,
 * asks each owner of the limit's state for it (every worker, the node's
 * authority) through their probe mailboxes, and answers per rule its
 * numbers, what is left, and when the next request would be admitted.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_telemetry.h>

#include "policy.h"
#include "sl_app.h"
#include "sl_policy.h"
#include "sl_probe.h"
#include "sl_telemetry.h"
#include "sl_view.h"
#include "why.h"

#define NS           1000000000ULL
#define MAX_WHY      16 /* rules answered per question */
#define WAIT_STEP_US 200
#define WAIT_MAX_US  250000 /* an owner silent this long is stuck */

struct sl_why {
	const struct sl_app *app;
	const struct sl_worker_view *views;
	unsigned int n;
	struct sl_probe *node; /* the authority's mailbox; NULL: none */
};

/* What was asked: "key:K,user:U,ip:A,method:M,path:P,host:H,rule:R". */
struct question {
	char key[256], user[256], method[16], path[1024], host[256];
	char rule[SL_NAME_MAX];
	uint8_t af, addr[16];
};

/* One rule's limit for this identity, found under the policy lock. */
struct limit_q {
	char name[SL_NAME_MAX];
	uint8_t scope, algo, shadow, log, on_failure, override;
	uint32_t cost;
	struct sl_bucket_key key;
	struct sl_limit_params lp;
};

static int
field(struct question *q, const char *k, size_t kl, const char *v, size_t vl)
{
	static const struct {
		const char *name;
		size_t off, cap;
	} fs[] = {
		{"key", offsetof(struct question, key), 256},
		{"user", offsetof(struct question, user), 256},
		{"method", offsetof(struct question, method), 16},
		{"path", offsetof(struct question, path), 1024},
		{"host", offsetof(struct question, host), 256},
		{"rule", offsetof(struct question, rule), SL_NAME_MAX},
	};
	char ip[64];
	size_t i;

	if (kl == 2 && memcmp(k, "ip", 2) == 0) {
		snprintf(ip, sizeof(ip), "%.*s", (int)vl, v);
		if (inet_pton(AF_INET, ip, q->addr) == 1)
			q->af = SL_AF_INET;
		else if (inet_pton(AF_INET6, ip, q->addr) == 1)
			q->af = SL_AF_INET6;
		return q->af != 0 ? 0 : -1;
	}
	for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if (strlen(fs[i].name) == kl &&
		    memcmp(fs[i].name, k, kl) == 0 && vl < fs[i].cap) {
			memcpy((char *)q + fs[i].off, v, vl);
			((char *)q + fs[i].off)[vl] = '\0';
			return 0;
		}
	return -1;
}

/* Comma-separated name:value pairs; 0, or -1 on one it cannot read. */
static int
parse(const char *params, struct question *q)
{
	const char *p = params;

	memset(q, 0, sizeof(*q));
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ','), *colon;
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		colon = memchr(p, ':', len);
		if (colon == NULL || field(q, p, (size_t)(colon - p), colon + 1,
					   len - (size_t)(colon - p) - 1) != 0)
			return -1;
		p = end != NULL ? end + 1 : NULL;
	}
	return q->key[0] || q->user[0] || q->af || q->rule[0] ? 0 : -1;
}

/* The request the question describes, as the parser would have read it. */
static void
request_of(const struct question *q, struct sl_http_req *req)
{
	memset(req, 0, sizeof(*req));
	req->method = (struct sl_str){
		q->method[0] ? q->method : "GET",
		(uint32_t)strlen(q->method[0] ? q->method : "GET")};
	req->target =
		(struct sl_str){q->path[0] ? q->path : "/",
				(uint32_t)strlen(q->path[0] ? q->path : "/")};
	req->host = (struct sl_str){q->host, (uint32_t)strlen(q->host)};
	req->api_key = (struct sl_str){q->key, (uint32_t)strlen(q->key)};
	req->user = (struct sl_str){q->user, (uint32_t)strlen(q->user)};
	req->minor_version = 1;
}

/* Rule i for this identity: its key and numbers (an override's if one
 * is active); -1 when the question gives no identity of its scope. */
static int
limit_of(const struct sl_policy *pol, uint32_t i, const struct sl_http_req *req,
	 const struct sl_identity *id, int has_ip, struct limit_q *l)
{
	const struct sl_rule *r = sl_ruleset_rule(pol->rs, i);
	const struct sl_override *o = NULL;
	struct sl_scope_id s;
	uint64_t w[2];

	if ((r->scope == SL_SCOPE_KEY && req->api_key.len == 0) ||
	    (r->scope == SL_SCOPE_USER && req->user.len == 0) ||
	    (r->scope == SL_SCOPE_IP && !has_ip))
		return -1;
	sl_scope_of(r->scope, req, id, &s);
	sl_bucket_words(sl_ruleset_rule_id(pol->rs, i), &s, w);
	snprintf(l->name, sizeof(l->name), "%s", r->name);
	l->key = (struct sl_bucket_key){w[0], w[1]};
	l->lp = pol->params[i];
	if (s.kind != 0xff)
		o = sl_ruleset_override(pol->rs, i, s.kind, s.b, s.len,
					(int64_t)time(NULL));
	if (o != NULL)
		sl_rule_params(r, &o->limit, o->burst, &l->lp);
	l->override = o != NULL;
	l->scope = r->scope;
	l->algo = r->algo;
	l->shadow = r->shadow;
	l->log = r->algo == SL_ALGO_SLIDING_LOG;
	l->on_failure = r->on_store_failure;
	l->cost = r->cost;
	return 0;
}

/* The limits the question's request is held to, under the policy lock;
 * returns how many, or -1 (with why in err) when it cannot be read. */
static int
limits(const struct sl_app *app, const struct question *q, struct limit_q *out,
       const char **err)
{
	const struct sl_policy *pol;
	struct sl_http_req req;
	struct sl_identity id;
	struct sl_http_norm nt;
	struct sl_match_req m;
	uint16_t idx[SL_MAX_RULES];
	char scratch[sizeof(q->path) + sizeof(q->host)];
	uint8_t peer[16] = {0};
	uint32_t n, i, k = 0;
	int tier = -1;

	request_of(q, &req);
	memcpy(peer, q->addr, 16);
	/* no address asked about: a stand-in (TEST-NET-1) that no rule is
	 * asked about (limit_of leaves out the address's rules) */
	if (q->af == 0)
		memcpy(peer, (const uint8_t[]){192, 0, 2, 1}, 4);
	if (sl_ident_extract(&app->ident, &req, q->af ? q->af : SL_AF_INET,
			     peer, &id) != 0) {
		*err = "the identity is not one sluice would accept";
		return -1;
	}
	sl_policy_hold();
	pol = app->policy;
	if (q->rule[0] != '\0') {
		n = 0;
		for (i = 0; i < pol->n_rules; i++)
			if (strcmp(sl_ruleset_rule(pol->rs, i)->name,
				   q->rule) == 0)
				idx[n++] = (uint16_t)i;
	} else if (sl_http_normalize(&pol->norm, &req, scratch, sizeof(scratch),
				     &nt) != 0) {
		sl_policy_release();
		*err = "the path is one sluice refuses (400)";
		return -1;
	} else {
		sl_match_req_init(&m, pol->rs, &req, &nt);
		if (m.has_key &&
		    !sl_ruleset_key_info(pol->rs, q->key,
					 (uint32_t)strlen(q->key), &tier))
			tier = sl_ruleset_default_tier(pol->rs);
		m.tier = (int16_t)(m.has_key ? tier : -1);
		n = sl_ruleset_match(pol->rs, &m, idx, SL_MAX_RULES);
	}
	for (i = 0; i < n && k < MAX_WHY; i++)
		if (limit_of(pol, idx[i], &req, &id, q->af != 0, &out[k]) == 0)
			k++;
	sl_policy_release();
	return (int)k;
}

/* ---- asking the owners ---- */

static void
post(struct sl_probe *p, const struct limit_q *l)
{
	p->key = l->key;
	p->count = l->lp.count;
	p->burst = l->lp.burst;
	p->period_ms = l->lp.period_ms;
	p->log = l->log;
	p->on_failure = l->on_failure;
	__atomic_store_n(&p->asked, p->asked + 1, __ATOMIC_RELEASE);
}

static int
answered(const struct sl_probe *p)
{
	return __atomic_load_n(&p->served, __ATOMIC_ACQUIRE) == p->asked;
}

/* Asks every owner about l; returns how many answered in time. An owner
 * that did not is not asked again until it has (its mailbox is busy). */
static unsigned int
ask_all(struct sl_why *y, const struct limit_q *l, uint8_t *ok)
{
	unsigned int i, got = 0, asked = 0, waited;

	for (i = 0; i <= y->n; i++) {
		struct sl_probe *p = i < y->n ? y->views[i].probe : y->node;

		ok[i] = 0;
		if (p != NULL && answered(p)) {
			post(p, l);
			asked++;
		}
	}
	/* a stuck owner delays one question, not every rule's */
	for (waited = 0; waited <= WAIT_MAX_US; waited += WAIT_STEP_US) {
		got = 0;
		for (i = 0; i <= y->n; i++) {
			struct sl_probe *p =
				i < y->n ? y->views[i].probe : y->node;

			ok[i] = p != NULL && answered(p) &&
				p->key.k1 == l->key.k1 &&
				p->key.k2 == l->key.k2;
			got += ok[i];
		}
		if (got == asked)
			break;
		nanosleep(&(struct timespec){0, WAIT_STEP_US * 1000}, NULL);
	}
	return got;
}

/* ---- the answer ---- */

/* What the owners said of one limit, summed up. */
struct verdict {
	uint64_t left;        /* units the deciding state has now */
	uint64_t wait_ns;     /* until it admits cost units (0: now) */
	uint64_t lease_units; /* held by the workers' leases */
	uint32_t leases;      /* workers holding one */
	uint8_t seen;         /* some owner holds state of it */
	uint8_t unknown;      /* the store decides: not known here */
	uint8_t refused;      /* the store refused it lately */
};

/* A state's units now and the wait for cost of them (on a copy). */
static void
state_says(const struct limit_q *l, struct sl_probe_state *s, uint64_t now,
	   uint64_t *left, uint64_t *wait)
{
	struct sl_limit_result r;

	sl_limit_check(&l->lp, &s->s, l->cost, now, &r);
	*left = r.allow ? r.remaining + l->cost : 0;
	*wait = r.allow ? 0 : r.retry_after_ns;
}

static void
leases_say(const struct sl_why *y, const struct limit_q *l, const uint8_t *ok,
	   struct verdict *v, int *lease_now)
{
	unsigned int i;

	*lease_now = 0;
	for (i = 0; i < y->n; i++) {
		const struct sl_probe *p = y->views[i].probe;

		if (!ok[i] || !p->has_lease || p->lease.units == 0)
			continue;
		v->seen = 1;
		v->leases++;
		v->lease_units += p->lease.units;
		if (p->lease.units >= l->cost &&
		    sl_lease_until(&p->lease, l->cost, p->now_ns) == 0)
			*lease_now = 1;
	}
}

/* Local buckets: the soonest a worker would admit (a new connection may
 * land on any); a worker with no state of it admits now. */
static void
local_says(const struct sl_why *y, const struct limit_q *l, const uint8_t *ok,
	   struct verdict *v)
{
	unsigned int i;
	uint64_t left, wait;

	v->left = l->lp.burst;
	for (i = 0; i < y->n; i++) {
		struct sl_probe *p = y->views[i].probe;

		if (!ok[i] || !p->has_state) {
			v->wait_ns = 0;
			continue;
		}
		state_says(l, &p->state, p->now_ns, &left, &wait);
		if (!v->seen || wait < v->wait_ns)
			v->wait_ns = wait;
		if (!v->seen || left < v->left)
			v->left = left;
		v->seen = 1;
	}
}

static void
verdict_of(struct sl_why *y, const struct limit_q *l, const uint8_t *ok,
	   struct verdict *v)
{
	struct sl_probe *np = y->node;
	int lease_now;

	memset(v, 0, sizeof(*v));
	/* shadow rules count in each worker's own buckets, leases or not */
	if (y->app->lanes == NULL || l->shadow) {
		local_says(y, l, ok, v);
		return;
	}
	leases_say(y, l, ok, v, &lease_now);
	v->left = l->lp.burst;
	if (np == NULL || !ok[y->n])
		v->unknown = 1;
	else if (np->has_state) {
		v->seen = 1;
		state_says(l, &np->state, np->now_ns, &v->left, &v->wait_ns);
	} else if (np->has_ledger) {
		/* the node's part of the store's limit: what it may admit
		 * alone; the store's own count is the store's */
		v->seen = 1;
		v->refused = np->refused;
		v->left = sl_ledger_left(&np->ledger, &np->share, np->now_ns);
		v->unknown = 1;
	} else if (y->app->reserves)
		v->unknown = 1;
	if (lease_now) {
		v->wait_ns = 0;
		v->unknown = 0;
	}
}

static void
add_limit(struct rte_tel_data *d, const struct limit_q *l,
	  const struct verdict *v)
{
	rte_tel_data_add_dict_string(d, "name", l->name);
	rte_tel_data_add_dict_string(d, "scope", sl_scope_name(l->scope));
	rte_tel_data_add_dict_string(d, "algorithm", sl_algo_name(l->algo));
	rte_tel_data_add_dict_u64(d, "limit", l->lp.count);
	rte_tel_data_add_dict_u64(d, "period_ms", l->lp.period_ms);
	rte_tel_data_add_dict_u64(d, "burst", l->lp.burst);
	rte_tel_data_add_dict_u64(d, "cost", l->cost);
	rte_tel_data_add_dict_u64(d, "shadow", l->shadow);
	rte_tel_data_add_dict_u64(d, "override", l->override);
	rte_tel_data_add_dict_u64(d, "seen", v->seen);
	rte_tel_data_add_dict_u64(d, "left", v->left);
	rte_tel_data_add_dict_u64(d, "lease_units", v->lease_units);
	rte_tel_data_add_dict_u64(d, "leases", v->leases);
	rte_tel_data_add_dict_u64(d, "store_refused", v->refused);
	if (v->unknown)
		rte_tel_data_add_dict_string(d, "admits", "the store decides");
	else if (v->wait_ns == 0)
		rte_tel_data_add_dict_string(d, "admits", "now");
	else
		rte_tel_data_add_dict_string(d, "admits", "later");
	rte_tel_data_add_dict_int(
		d, "admits_in_ms",
		v->unknown ? -1 : (int)((v->wait_ns + 999999) / 1000000));
}

static const char *
mode_of(const struct sl_why *y, const struct limit_q *l)
{
	if (y->app->lanes == NULL || l->shadow)
		return "worker";
	return y->app->reserves ? "store" : "node";
}

static int
cmd_why(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct sl_why *y = ctx;
	struct question q;
	struct limit_q ls[MAX_WHY];
	uint8_t ok[RTE_MAX_LCORE + 1];
	const char *err = NULL;
	int n, i;

	rte_tel_data_start_dict(d);
	if (params == NULL || parse(params, &q) != 0) {
		rte_tel_data_add_dict_string(
			d, "error",
			"usage: /sluice/why,key:K|user:U|ip:A[,method:M]"
			"[,path:P][,host:H][,rule:NAME]");
		return 0;
	}
	n = limits(y->app, &q, ls, &err);
	if (n < 0) {
		rte_tel_data_add_dict_string(d, "error", err);
		return 0;
	}
	rte_tel_data_add_dict_u64(d, "rules", (uint64_t)n);
	/* those asked about each limit: every worker, and the authority */
	rte_tel_data_add_dict_u64(d, "owners", y->n + (y->node != NULL));
	for (i = 0; i < n; i++) {
		struct rte_tel_data *r = rte_tel_data_alloc();
		struct verdict v;
		char key[SL_NAME_MAX];

		if (r == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(r);
		rte_tel_data_add_dict_u64(r, "answered",
					  ask_all(y, &ls[i], ok));
		verdict_of(y, &ls[i], ok, &v);
		rte_tel_data_add_dict_string(r, "decided_by",
					     mode_of(y, &ls[i]));
		add_limit(r, &ls[i], &v);
		sl_tel_key(key, ls[i].name, sizeof(key));
		if (rte_tel_data_add_dict_container(d, key, r, 0) != 0)
			rte_tel_data_free(r);
	}
	return 0;
}

struct sl_why *
sl_why_start(const struct sl_app *app, const struct sl_worker_view *views,
	     unsigned int n, struct sl_probe *node)
{
	struct sl_why *y = calloc(1, sizeof(*y));

	if (y == NULL)
		return NULL;
	*y = (struct sl_why){app, views, n, node};
	if (sl_telemetry_cmd("/sluice/why", cmd_why, y,
			     "Why a client is limited. Params: key:K|user:U|"
			     "ip:A[,method:M][,path:P][,host:H][,rule:NAME]") !=
	    0) {
		free(y);
		return NULL;
	}
	return y;
}

void
sl_why_free(struct sl_why *y)
{
	if (y == NULL)
		return;
	sl_telemetry_withdraw("/sluice/why", y);
	free(y);
}

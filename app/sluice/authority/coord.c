/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_malloc.h>
#include <rte_telemetry.h>

#include "coord.h"
#include "sl_lease.h"
#include "sl_app.h"
#include "sl_telemetry.h"
#include "owed.h"
#include "store.h"

_Static_assert(RTE_MAX_LCORE <= 256, "a worker's index fits a message's byte");

#define RING_SIZE   4096
#define COORD_BURST 64
/* global rules' demand reported this often, kept in Redis this long */
#define USAGE_EVERY_NS 1000000000ULL
#define USAGE_TTL_MS   "10000"

struct sl_coord *
sl_coord_create(uint32_t workers, uint32_t capacity)
{
	static uint32_t made; /* ring names are global to the process */
	struct sl_coord *c = rte_zmalloc("sl_coord", sizeof(*c), 64);
	uint32_t i;

	if (c == NULL)
		return NULL;
	c->n = workers;
	c->lease_ns = SL_LEASE_LIFETIME_NS;
	c->div_open = c->div_strict = 1;
	c->lanes.refused = &c->refused;
	if (gethostname(c->node_name, 64) != 0)
		snprintf(c->node_name, 64, "sluice");
	c->node_name[63] = '\0';
	snprintf(c->node_name + strlen(c->node_name), 32, ":%d", (int)getpid());
	c->state = sl_bucket_table_create(capacity, 1);
	if (c->state == NULL)
		return NULL;
	/* the main lcore uses it: faulted in here, before traffic */
	sl_bucket_table_prefault(c->state);
	for (i = 0; i < workers; i++) {
		char name[32];

		snprintf(name, sizeof(name), "sl_ask%u_%u", made, i);
		c->lanes.ask[i] = rte_ring_create_elem(
			name, sizeof(struct sl_coord_msg), RING_SIZE,
			SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "sl_ans%u_%u", made, i);
		c->lanes.ans[i] = rte_ring_create_elem(
			name, sizeof(struct sl_coord_msg), RING_SIZE,
			SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (c->lanes.ask[i] == NULL || c->lanes.ans[i] == NULL)
			return NULL;
	}
	made++;
	return c;
}

void
sl_coord_free(struct sl_coord *c)
{
	uint32_t i;

	if (c == NULL)
		return;
	sl_telemetry_withdraw("/sluice/store", c);
	sl_store_free(c->store);
	for (i = 0; i < c->n; i++) {
		rte_ring_free(c->lanes.ask[i]);
		rte_ring_free(c->lanes.ans[i]);
	}
	sl_bucket_table_free(c->state);
	sl_state_unmap(&c->file, 0);
	rte_free(c);
}

#define STATE_FILE "node.state"

/* The file's layout: the table's kind and size. The header's size is
 * what it was before family and size_arg were appended (a file from
 * then is still found as it is). */
static uint64_t
state_layout(uint32_t capacity)
{
	const uint64_t v[] = {2,
			      capacity,
			      sl_bucket_table_arena_bytes(capacity, 1),
			      offsetof(struct sl_state_hdr, family),
			      sizeof(struct sl_owed),
			      SL_OWED_CAP};

	return sl_hash64(v, sizeof(v), 0);
}

/* The same but for the capacity: a file of another is carried over. */
static uint64_t
state_family(void)
{
	const uint64_t v[] = {3, sizeof(struct sl_state_hdr),
			      sizeof(struct sl_owed), SL_OWED_CAP};

	return sl_hash64(v, sizeof(v), 0);
}

static size_t
state_payload(uint32_t capacity)
{
	return sl_bucket_table_arena_bytes(capacity, 1) + 64 +
	       sizeof(struct sl_owed);
}

int
sl_coord_state_resumed(const char *dir, uint32_t capacity, uint64_t wall,
		       uint64_t *now)
{
	return sl_state_resumed(dir, STATE_FILE, state_layout(capacity),
				state_family(), wall, now);
}

/*
 * The buckets and the debts of a file of another capacity (its payload
 * copied into old), read as that table and put in t and o: a resize
 * grants nothing either. A debt list that is not whole is left.
 */
static void
carry_over(struct sl_coord *c, struct sl_bucket_table *t, struct sl_owed *o,
	   void *old, size_t len, uint64_t old_cap, uint64_t now)
{
	struct sl_mem_arena a = {.base = old, .size = len, .fresh = 0};
	struct sl_bucket_table *ot = NULL;
	const struct sl_owed *oo;

	if (old_cap > 0 && old_cap <= UINT32_MAX &&
	    len >= state_payload((uint32_t)old_cap))
		ot = sl_bucket_table_create_in((uint32_t)old_cap, 1, &a);
	if (ot == NULL)
		return;
	oo = sl_mem_carve(&a, sizeof(*oo));
	c->carried = sl_bucket_copy(t, ot, now);
	c->carried_from = (uint32_t)old_cap;
	if (oo != NULL && oo->n <= SL_OWED_CAP && oo->cursor < SL_OWED_CAP)
		memcpy(o, oo, sizeof(*o));
}

int
sl_coord_keep_state(struct sl_coord *c, const char *dir, uint32_t capacity,
		    uint64_t now)
{
	struct sl_bucket_table *t;
	struct sl_owed *o = NULL;
	uint64_t old_cap = 0;
	size_t old_len = 0;
	void *old = sl_state_other(dir, STATE_FILE, state_family(),
				   state_layout(capacity), &old_cap, &old_len);
	int rc = sl_state_map(&c->file, dir, STATE_FILE,
			      state_payload(capacity), state_layout(capacity),
			      state_family(), capacity, now);

	c->carried = UINT32_MAX;
	if (rc != 0) {
		free(old);
		return rc;
	}
	t = sl_bucket_table_create_in(capacity, 1, &c->file.arena);
	if (t != NULL)
		o = sl_mem_carve(&c->file.arena, sizeof(*o));
	if (t == NULL || o == NULL || o->n > SL_OWED_CAP ||
	    o->cursor >= SL_OWED_CAP) {
		/* the header vouched for tables that are not ours */
		sl_state_reset(&c->file);
		t = sl_bucket_table_create_in(capacity, 1, &c->file.arena);
		o = sl_mem_carve(&c->file.arena, sizeof(*o));
	}
	if (t == NULL || o == NULL) {
		free(old);
		sl_state_unmap(&c->file, now);
		return -ENOMEM;
	}
	if (old != NULL && !c->file.found)
		carry_over(c, t, o, old, old_len, old_cap, now);
	free(old);
	sl_bucket_table_free(c->state);
	c->state = t;
	sl_bucket_table_prefault(c->state);
	c->owed_kept = o;
	sl_store_keep_owed(c->store, o);
	return 0;
}

static void
answer(struct sl_coord *c, const struct sl_coord_msg *q, struct sl_coord_msg *a,
       uint64_t now)
{
	struct sl_limit_params p;
	struct sl_bucket_key k = {q->k1, q->k2};
	struct sl_limit_state *s;
	struct sl_lease_grant g;

	memset(a, 0, sizeof(*a));
	a->k1 = q->k1;
	a->k2 = q->k2;
	a->type = SL_CO_ANSWER;
	a->worker = q->worker;
	c->st.asks++;
	if (sl_limit_params_init(&p, q->algo, q->ask.count,
				 q->period_ms * 1000000ULL, q->ask.burst) != 0)
		return; /* unreadable: refused, retry 0 */
	sl_bucket_begin(c->state);
	s = sl_bucket_get(c->state, &k, now);
	sl_lease_grant(&p, s, q->ask.want, q->ask.need, now, c->lease_ns, &g);
	a->ans.granted = (uint32_t)g.granted;
	a->ans.expires_ns = g.expires_ns;
	a->ans.retry_ns = g.retry_ns;
	a->ans.reset_ns = g.reset_ns;
	a->ans.remaining = g.remaining;
	if (g.granted == 0) {
		c->st.refusals++;
		return;
	}
	sl_bucket_touch(c->state, s, now + g.reset_ns);
	c->st.granted_units += g.granted;
}

/* ---- the node's ledger: its share of each limit, charged with all it
 * admits (see sl_ledger in lib/lease) ---- */

#define LEDGER_SALT 0x6c65646765727331ULL /* apart from the shared keys */

static void
share_for(const struct sl_coord *c, uint64_t count, uint64_t burst,
	  uint32_t period_ms, uint8_t on_failure, struct sl_share *sh)
{
	sl_share_of(sh, count, burst, period_ms * 1000000ULL,
		    on_failure == SL_LOCAL_STRICT ? c->div_strict
						  : c->div_open);
}

/* The node's ledger of a (rule, identity), and the store's last word. */
struct node_ledger {
	struct sl_ledger g;
	uint64_t refused_at;  /* the store's last refusal of it */
	uint64_t drained_for; /* the refusal its burst was drained for */
	uint64_t ahead_ns;    /* how far ahead the store's bucket was
			       * promised at its last answer */
};

/*
 * The store cannot answer now (out, late or in error) and had nothing
 * left for this key when it last did (sl_refused_lately): the node's
 * share keeps its rate from now, not its burst. A node the others
 * outpaced (its grants few, its share refilled to its burst meanwhile)
 * would add that burst to what they spend of their reservations
 * (measured 1.06-1.14 x over a 3 s pause). Nor its rate while the
 * store's bucket is promised to reservations (sl_store_promised_until).
 * Drained once per refusal: what it refills after is the node's to spend.
 */
static void
drain_if_empty_in_store(struct node_ledger *nl, const struct sl_share *sh,
			uint64_t now)
{
	if (!sl_refused_lately(nl->refused_at, now) ||
	    nl->drained_for == nl->refused_at)
		return;
	sl_ledger_drain(
		&nl->g, sh, now,
		sl_store_promised_until(nl->refused_at, nl->ahead_ns, now));
	nl->drained_for = nl->refused_at;
}

static struct node_ledger *
node_ledger(struct sl_coord *c, uint64_t k1, uint64_t k2, uint64_t now)
{
	struct sl_bucket_key k = {k1, k2 ^ LEDGER_SALT};
	struct sl_limit_state *s;

	_Static_assert(sizeof(struct node_ledger) <=
			       sizeof(struct sl_limit_state) +
				       SL_LOG_MAX * sizeof(uint32_t),
		       "a ledger fits in a state slot");
	sl_bucket_begin(c->state);
	s = sl_bucket_get(c->state, &k, now);
	/* kept while it holds debt or less than a full share: an hour */
	sl_bucket_touch(c->state, s, now + 3600000000000ULL);
	return (struct node_ledger *)s;
}

/* What the store's answer a to ask q says of the key: how far ahead its
 * bucket is promised; and, at its limit (nothing, or only a reservation,
 * left), the node's ledger and every worker learn that too. Returns the
 * node's ledger of it. */
static struct node_ledger *
heard(struct sl_coord *c, const struct sl_coord_msg *q,
      const struct sl_coord_msg *a, uint64_t now)
{
	struct node_ledger *nl = node_ledger(c, q->k1, q->k2, now);

	nl->ahead_ns = sl_store_ahead_ns(q->algo, q->ask.count, q->ask.burst,
					 q->period_ms, a->ans.reset_ns,
					 a->ans.retry_ns);
	if (a->ans.granted >= q->ask.need && a->ans.retry_ns == 0)
		return nl;
	nl->refused_at = now;
	sl_refusals_note(&c->refused, q->k1, q->k2, now);
	return nl;
}

static struct sl_ledger *
ledger_of(struct sl_coord *c, uint64_t k1, uint64_t k2, uint64_t now)
{
	return &node_ledger(c, k1, k2, now)->g;
}

/* Units the node admitted (granted by the store, or taken alone), into
 * its ledger g of m's key. */
static void
ledger_charge(struct sl_coord *c, struct sl_ledger *g,
	      const struct sl_coord_msg *m, uint64_t count, uint64_t burst,
	      uint8_t on_failure, uint64_t units, uint64_t now)
{
	struct sl_share sh;

	share_for(c, count, burst, m->period_ms, on_failure, &sh);
	sl_ledger_open(g, &sh, 0, now);
	sl_ledger_charge(g, &sh, units, now);
}

/* The store's count of what m's limit has left, the node's part of it
 * into its ledger g (see sl_ledger_set). */
static void
ledger_level(struct sl_coord *c, struct sl_ledger *g,
	     const struct sl_coord_msg *m, uint64_t remaining, uint64_t now)
{
	uint32_t div = m->ask.on_failure == SL_LOCAL_STRICT ? c->div_strict
							    : c->div_open;
	struct sl_share sh;

	share_for(c, m->ask.count, m->ask.burst, m->period_ms,
		  m->ask.on_failure, &sh);
	sl_ledger_set(g, &sh, remaining / (div > 0 ? div : 1), now);
}

/* The node's own answer to ask q: nothing granted yet, its numbers. */
static void
node_answer(struct sl_coord_msg *a, const struct sl_coord_msg *q,
	    uint64_t retry, uint64_t reset, uint64_t remaining)
{
	memset(a, 0, sizeof(*a));
	a->k1 = q->k1;
	a->k2 = q->k2;
	a->type = SL_CO_ANSWER;
	a->worker = q->worker;
	a->ans.retry_ns = retry;
	a->ans.reset_ns = reset;
	a->ans.remaining = remaining;
	a->ans.degraded = 1;
}

/*
 * Units the node admitted while the store could not be asked: charged to
 * it (once it answers again), so that the fleet's count has them and the
 * grants after an outage are that much smaller. A late ask's units are
 * squared with its reply instead (the store's late_reply).
 */
static void
owe(struct sl_coord *c, const struct sl_coord_msg *q, uint64_t units,
    uint64_t now)
{
	struct sl_coord_msg b;

	sl_msg_taken(&b, q, units);
	if (sl_store_charge(c->store, &b, now) != 0)
		c->st.taken_uncharged += units;
}

/*
 * Decided by the node in the store's place, from its ledger: the need
 * (the request waiting, not a lease's worth) if the share has it, else a
 * refusal until it would. Late (one slow reply while the breaker is
 * closed): every rule is decided so while the share has room and the
 * store has not refused the key within a lease's lifetime; otherwise the
 * late reply decides. An error reply (nothing more to come, not an
 * outage): the same, but the node decides either way. Out (the breaker
 * open, or the store refusing the appliance itself): fail_closed
 * refuses, the others decide from the share.
 */
static int
answer_degraded(struct sl_coord *c, const struct sl_coord_msg *q,
		struct sl_coord_msg *a, uint64_t now, int how)
{
	int late = how == SL_SF_LATE;

	struct sl_share sh;
	struct node_ledger *nl;
	struct sl_ledger *g;
	uint64_t units = 0;

	if (how == SL_SF_OUT && q->ask.on_failure == SL_FAIL_CLOSED) {
		c->st.degraded++;
		node_answer(a, q, 1000000000ULL, 1000000000ULL, 0);
		c->st.refusals++;
		return 1;
	}
	share_for(c, q->ask.count, q->ask.burst, q->period_ms,
		  q->ask.on_failure, &sh);
	nl = node_ledger(c, q->k1, q->k2, now);
	g = &nl->g;
	/* a ledger the store granted to is in use already: as it is (what
	 * the store did not grant since); one never used is the whole
	 * share, late or out — a key this node never had a unit of (a
	 * fresh client) is not refused because the store is slow: its
	 * reply, when it comes, is squared with what was granted here */
	sl_ledger_open(g, &sh, 1, now);
	drain_if_empty_in_store(nl, &sh, now);
	if (sl_ledger_room(g, &sh, q->ask.need, now))
		units = q->ask.need;
	/* a key the store refused lately is at its limit: what the node's
	 * share has left is not the fleet's, and the reply will say */
	if (how != SL_SF_OUT && nl->refused_at != 0 &&
	    now - nl->refused_at < SL_LEASE_LIFETIME_NS)
		units = 0;
	if (units == 0 && late)
		return 0; /* the store's reply, late, decides */
	c->st.degraded++;
	c->st.degraded_late += how != SL_SF_OUT;
	if (units == 0) {
		node_answer(a, q, sl_ledger_wait_ns(g, &sh, q->ask.need, now),
			    sl_ledger_wait_ns(g, &sh, sh.burst, now),
			    sl_ledger_left(g, &sh, now));
		c->st.refusals++;
		return 1;
	}
	sl_ledger_charge(g, &sh, units, now);
	if (!late) /* no reply to square them with */
		owe(c, q, units, now);
	node_answer(a, q, 0, sl_ledger_wait_ns(g, &sh, sh.burst, now),
		    sl_ledger_left(g, &sh, now));
	a->ans.granted = (uint32_t)units;
	a->ans.expires_ns = now + c->lease_ns;
	c->st.granted_units += units;
	return 1;
}

static void
to_worker(struct sl_coord *c, struct sl_coord_msg *a)
{
	if (rte_ring_enqueue_elem(c->lanes.ans[a->worker], a, sizeof(*a)) != 0)
		c->st.answers_dropped++;
}

/*
 * The store failed an ask: the node decides it (returns 1, *covered the
 * units it granted) — or, one reply late and the node's share spent,
 * leaves it to that reply (returns 0): refusing a client the store may
 * well admit, for want of a few milliseconds, would be worse than its
 * wait (bounded by the worker's own deadline).
 */
static int
store_failed(void *ctx, const struct sl_coord_msg *q, int how, uint64_t now,
	     uint64_t *covered)
{
	struct sl_coord *c = ctx;
	struct sl_coord_msg a;

	if (!answer_degraded(c, q, &a, now, how)) {
		c->st.late_waited++;
		*covered = 0;
		return 0;
	}
	to_worker(c, &a);
	*covered = a.ans.granted;
	return 1;
}

/* The store answered: a lease from now, charged to the node's ledger;
 * or a refusal; or a tier. */
static void
store_answer(void *ctx, const struct sl_coord_msg *q, struct sl_coord_msg *a,
	     uint64_t now)
{
	struct sl_coord *c = ctx;

	if (a->type == SL_CO_ANSWER) {
		/* a reservation lives a lease's lifetime from when it is
		 * good; a saturated key's lease (what its holder spends in
		 * at most SL_LEASE_SATURATED_MS) as long as that */
		uint64_t life = c->lease_ns;
		struct node_ledger *nl;

		if (q->ask.ahead_ms > 0 &&
		    life < SL_LEASE_SATURATED_MS * 1000000ULL)
			life = SL_LEASE_SATURATED_MS * 1000000ULL;
		a->ans.expires_ns =
			now + life + (a->ans.granted ? a->ans.retry_ns : 0);
		/* a reservation: the key is at its limit */
		c->st.reservations += a->ans.granted && a->ans.retry_ns;
		nl = heard(c, q, a, now);
		if (a->ans.granted) {
			c->st.granted_units += a->ans.granted;
			ledger_charge(c, &nl->g, q, q->ask.count, q->ask.burst,
				      q->ask.on_failure, a->ans.granted, now);
			if (a->ans.retry_ns == 0)
				ledger_level(c, &nl->g, q, a->ans.remaining,
					     now);
		} else {
			c->st.refusals++;
		}
	}
	to_worker(c, a);
}

/* A reply that came after the node answered in its place says of the
 * key what an answer in time would. */
static void
store_late(void *ctx, const struct sl_coord_msg *q,
	   const struct sl_coord_msg *a, uint64_t now)
{
	heard(ctx, q, a, now);
}

/*
 * Each global rule's demand over the second just past, into the region's
 * Redis for sluice-aggregator: HSET sl:usage:{RULE} NODE REPORT, and the
 * rule in sl:usage:rules, both expiring unless renewed (a node gone
 * leaves nothing behind; the aggregator ignores a report older than
 * three intervals anyway).
 */
/* A report Redis refused (NOPERM: an ACL without the usage keys' rights;
 * OOM): counted, or a region's demand would vanish without a word. */
static void
usage_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	const redisReply *rep = reply;
	struct sl_coord *c = priv;

	(void)ac;
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR)
		c->usage.refused++;
}

static void
report_usage(struct sl_coord *c, uint64_t now)
{
	struct timespec ts;
	uint64_t wall_ms, span_ms = (now - c->usage.since_ns) / 1000000;
	char key[48], rule[24], json[8192];
	const char *sexp[] = {"PEXPIRE", "sl:usage:rules", USAGE_TTL_MS};
	uint32_t i;
	int sent = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	wall_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	for (i = 0; i < c->usage.n; i++) {
		const struct sl_usage_rule *r = &c->usage.r[i];
		const char *hset[] = {"HSET", key, c->node_name, json};
		const char *exp[] = {"PEXPIRE", key, USAGE_TTL_MS};
		const char *sadd[] = {"SADD", "sl:usage:rules", rule};

		snprintf(rule, sizeof(rule), "%016llx",
			 (unsigned long long)r->rid);
		snprintf(key, sizeof(key), "sl:usage:{%s}", rule);
		if (sl_usage_json(r, wall_ms, span_ms, json, sizeof(json)) <
			    0 ||
		    sl_store_cmd(c->store, key, 4, hset, usage_reply, c) != 0) {
			c->usage.unsent += r->total;
			continue;
		}
		sl_store_send(c->store, key, 3, exp);
		sl_store_cmd(c->store, "sl:usage:rules", 3, sadd, usage_reply,
			     c);
		c->usage.reports++;
		sent = 1;
	}
	if (sent) /* the set of rules renewed once a round */
		sl_store_send(c->store, "sl:usage:rules", 3, sexp);
	sl_usage_reset(&c->usage, now);
}

int
sl_coord_attach_store(struct sl_coord *c, const struct sl_store_conf *conf)
{
	struct sl_store_sink sink = {.answer = store_answer,
				     .failed = store_failed,
				     .late = store_late,
				     .ctx = c};

	c->store = sl_store_create(conf, &sink);
	c->lanes.store = c->store != NULL;
	sl_store_keep_owed(c->store, c->owed_kept);
	return c->store != NULL ? 0 : -1;
}

/* Unspent units of an expired lease: back to the authority. With a
 * store, the node's ledger is credited too: they were never admitted. */
static void
give_back(struct sl_coord *c, const struct sl_coord_msg *q, uint64_t now)
{
	struct sl_limit_params p;
	struct sl_bucket_key k = {q->k1, q->k2};

	c->st.given_back += q->back.units;
	if (c->store != NULL) {
		struct sl_share sh;

		share_for(c, q->back.count, q->back.burst, q->period_ms,
			  q->back.on_failure, &sh);
		sl_ledger_credit(ledger_of(c, q->k1, q->k2, now), &sh,
				 q->back.units, now);
		/* the store out: refunded once it answers again (lost
		 * to its count, they were a quarter of a 3 s pause's
		 * allowance); a full table keeps them (fewer admissions) */
		if (sl_store_give_back(c->store, q, now) != 0)
			c->st.given_back_lost += q->back.units;
		return;
	}
	if (sl_limit_params_init(&p, q->algo, q->back.count,
				 q->period_ms * 1000000ULL, q->back.burst) != 0)
		return;
	sl_bucket_begin(c->state);
	sl_lease_give_back(&p, sl_bucket_get(c->state, &k, now), q->back.units,
			   now);
}

/*
 * Units a worker admitted without a grant (its slice decided alone): the
 * authority counts them — the node's own state exactly, or the store
 * (and the node's ledger) — so later grants are that much smaller.
 */
static void
taken(struct sl_coord *c, const struct sl_coord_msg *q, uint64_t now)
{
	struct sl_limit_params p;
	struct sl_bucket_key k = {q->k1, q->k2};
	struct sl_limit_state *s;
	struct sl_limit_result after;

	c->st.taken_units += q->back.units;
	if (c->store != NULL) {
		ledger_charge(c, ledger_of(c, q->k1, q->k2, now), q,
			      q->back.count, q->back.burst, q->back.on_failure,
			      q->back.units, now);
		if (sl_store_charge(c->store, q, now) != 0)
			c->st.taken_uncharged += q->back.units;
		return;
	}
	if (sl_limit_params_init(&p, q->algo, q->back.count,
				 q->period_ms * 1000000ULL, q->back.burst) != 0)
		return;
	sl_bucket_begin(c->state);
	s = sl_bucket_get(c->state, &k, now);
	sl_limit_commit(&p, s, (uint32_t)q->back.units, now);
	/* kept until full again: a bucket the table took for full (one
	 * first made by this charge, or charged past its last grant's
	 * reset) was swept at the next poll, and the units with it */
	sl_limit_check(&p, s, 0, now, &after);
	sl_bucket_touch(c->state, s, now + after.reset_ns);
}

/* /sluice/why's look at a key: the node's bucket of it (its own
 * authority), or its ledger of the store's and the store's last word. */
static void
serve_probe(struct sl_coord *c, uint64_t now)
{
	struct sl_probe *p = &c->probe;
	struct sl_bucket_key kl = {p->key.k1, p->key.k2 ^ LEDGER_SALT};
	const struct node_ledger *nl =
		c->store != NULL ? (const struct node_ledger *)sl_bucket_find(
					   c->state, &kl)
				 : NULL;

	p->now_ns = now;
	sl_probe_copy_state(
		p, c->store == NULL ? sl_bucket_find(c->state, &p->key) : NULL,
		1);
	p->has_ledger = nl != NULL && nl->g.used;
	if (nl != NULL) {
		p->ledger = nl->g;
		p->refused = (uint8_t)sl_refused_lately(nl->refused_at, now);
		share_for(c, p->count, p->burst, p->period_ms, p->on_failure,
			  &p->share);
	}
	sl_probe_answered(p);
}

/*
 * A worker's ask for the tier of key in[i], whose rest is in the
 * messages behind it: in this burst, else still in the ring (enqueued
 * with it), read onto the burst's end (*n grows; the main loop passes
 * over them). 0 when asked of the store (answered when it replies),
 * else 1 with the answer in *a: no store, no hash names the key; out,
 * the worker keeps what it knew and asks again.
 */
static int
tier_ask(struct sl_coord *c, uint32_t w, struct sl_coord_msg *in,
	 unsigned int *n, unsigned int i, struct sl_coord_msg *a)
{
	char key[SL_TIER_KEY_MAX];
	uint32_t len = in[i].tier.len, more = sl_tier_msgs(len) - 1, j;
	uint32_t got = RTE_MIN(len, SL_TIER_TEXT);

	if (i + more >= *n)
		*n += rte_ring_dequeue_bulk_elem(c->lanes.ask[w], in + *n,
						 sizeof(in[0]),
						 i + more + 1 - *n, NULL);
	memcpy(key, in[i].tier.text, got);
	for (j = i + 1; j <= i + more && j < *n; j++) {
		if (in[j].type != SL_CO_TIER_MORE || got + in[j].tier.len > len)
			break;
		memcpy(key + got, in[j].tier.text, in[j].tier.len);
		got += in[j].tier.len;
	}
	if (got == len && c->store != NULL &&
	    sl_store_tier(c->store, c->keys_hash, &in[i], key, len) == 0)
		return 0;
	*a = in[i];
	a->type = SL_CO_TIER_ANSWER;
	a->tier.found = c->store == NULL ? SL_TIER_UNNAMED : SL_TIER_UNSAID;
	return 1;
}

uint32_t
sl_coord_poll(struct sl_coord *c, uint64_t now)
{
	/* room behind a burst for the rest of a long key's tier ask */
	struct sl_coord_msg in[COORD_BURST + SL_TIER_MSGS_MAX];
	struct sl_coord_msg out[COORD_BURST];
	uint32_t w, total = 0;

	sl_state_tick(&c->file, now);
	for (w = 0; w < c->n; w++) {
		unsigned int n, i, k = 0;

		n = rte_ring_dequeue_burst_elem(
			c->lanes.ask[w], in, sizeof(in[0]), COORD_BURST, NULL);
		for (i = 0; i < n; i++) {
			if ((in[i].type == SL_CO_ASK ||
			     in[i].type == SL_CO_DEMAND) &&
			    in[i].ask.global && c->store != NULL)
				sl_usage_note(
					&c->usage, in[i].ask.rid, in[i].k1,
					in[i].k2, in[i].ask.seen,
					(struct sl_usage_lim){in[i].ask.gcount,
							      in[i].period_ms});
			if (in[i].type == SL_CO_ASK && c->store == NULL)
				answer(c, &in[i], &out[k++], now);
			else if (in[i].type == SL_CO_ASK &&
				 sl_store_ask(c->store, &in[i], now) != 0)
				answer_degraded(c, &in[i], &out[k++], now,
						SL_SF_OUT);
			else if (in[i].type == SL_CO_ASK)
				c->st.asks++; /* answered when the store replies
					       */
			else if (in[i].type == SL_CO_TIER)
				k += (unsigned int)tier_ask(c, w, in, &n, i,
							    &out[k]);
			else if (in[i].type == SL_CO_GIVE_BACK)
				give_back(c, &in[i], now);
			else if (in[i].type == SL_CO_TAKEN)
				taken(c, &in[i], now);
		}
		/* the ring holds RING_SIZE: a worker never has more in flight
		 */
		if (k &&
		    rte_ring_enqueue_burst_elem(c->lanes.ans[w], out,
						sizeof(out[0]), k, NULL) < k)
			c->st.answers_dropped++;
		total += n;
	}
	if (c->store != NULL) {
		sl_store_poll(c->store, now);
		if (now - c->usage.since_ns >= USAGE_EVERY_NS)
			report_usage(c, now);
	}
	sl_bucket_expire(c->state, now, 64);
	if (sl_probe_asked(&c->probe))
		serve_probe(c, now);
	return total;
}

/* ---- /sluice/store ---- */

static const char *
breaker_name(uint8_t state)
{
	static const char *const st[] = {"closed", "open", "half_open"};

	return state < RTE_DIM(st) ? st[state] : "?";
}

/* Each node: its name, up or down, the slots it serves, its traffic, its
 * breaker's state. */
static void
add_node_list(struct rte_tel_data *d, const struct sl_store *s)
{
	struct rte_tel_data *l = rte_tel_data_alloc();
	struct sl_store_node n;
	uint32_t i;

	if (l == NULL)
		return;
	rte_tel_data_start_array(l, RTE_TEL_STRING_VAL);
	for (i = 0; sl_store_node_info(s, i, &n) == 0; i++) {
		char v[RTE_TEL_MAX_STRING_LEN];

		snprintf(v, sizeof(v),
			 "%s %s, %u slots, %llu replies, %llu errors, %llu "
			 "drops, circuit %s",
			 n.name, n.up ? "up" : "down", n.slots,
			 (unsigned long long)n.replies,
			 (unsigned long long)n.errors,
			 (unsigned long long)n.drops, breaker_name(n.state));
		rte_tel_data_add_array_string(l, v);
	}
	if (rte_tel_data_add_dict_container(d, "node_list", l, 0) != 0)
		rte_tel_data_free(l);
}

static int
cmd_store(void *ctx, const char *params, struct rte_tel_data *d)
{
	const struct sl_coord *c = ctx;
	const struct sl_coord_stats *s;
	struct sl_hist h;
	uint64_t parked = 0, degraded = 0, dropped = 0;
	unsigned int i, b;

	s = &c->st;
	RTE_SET_USED(params);
	memset(&h, 0, sizeof(h));
	for (i = 0; i < c->n_views; i++) {
		parked += c->views[i].ctr->parked;
		degraded += c->views[i].ctr->degraded;
		dropped += c->views[i].ctr->park_dropped;
		for (b = 0; b < SL_HIST_BUCKETS; b++)
			h.b[b] += c->views[i].park_latency->b[b];
	}
	rte_tel_data_start_dict(d);
	if (c->store == NULL) {
		/* the node is its own authority: nothing to be unreachable */
		rte_tel_data_add_dict_string(d, "kind", "local");
		rte_tel_data_add_dict_string(d, "state", "closed");
	} else {
		const struct sl_store_stats *ss = sl_store_stats(c->store);

		rte_tel_data_add_dict_string(
			d, "kind", ss->nodes > 1 ? "redis-cluster" : "redis");
		rte_tel_data_add_dict_u64(d, "nodes", ss->nodes);
		/* Redis 7 functions where every node has them */
		rte_tel_data_add_dict_string(
			d, "scripts",
			ss->functions > 0 && ss->functions == ss->nodes
				? "fcall"
				: "evalsha");
		rte_tel_data_add_dict_u64(d, "redirects", ss->redirects);
		rte_tel_data_add_dict_u64(d, "sub_bucket_retries",
					  ss->sub_retries);
		rte_tel_data_add_dict_u64(d, "slot_map_reads", ss->refreshes);
		rte_tel_data_add_dict_u64(d, "slot_map_failed",
					  ss->refresh_failed);
		add_node_list(d, c->store);
		rte_tel_data_add_dict_string(d, "state",
					     breaker_name(ss->state));
		rte_tel_data_add_dict_u64(d, "connected", ss->connected);
		rte_tel_data_add_dict_u64(d, "store_calls", ss->calls);
		rte_tel_data_add_dict_u64(d, "store_replies", ss->replies);
		rte_tel_data_add_dict_u64(d, "store_errors", ss->errors);
		rte_tel_data_add_dict_u64(d, "store_timeouts", ss->timeouts);
		rte_tel_data_add_dict_u64(d, "circuit_opened", ss->opened);
		rte_tel_data_add_dict_u64(
			d, "rtt_ns_avg",
			ss->replies ? ss->rtt_ns_sum / ss->replies : 0);
		rte_tel_data_add_dict_u64(d, "late_answers", ss->late_answers);
		rte_tel_data_add_dict_u64(d, "late_units", ss->late_units);
		rte_tel_data_add_dict_u64(d, "late_given_back",
					  ss->late_given_back);
		rte_tel_data_add_dict_u64(d, "late_charged", ss->late_charged);
		rte_tel_data_add_dict_u64(d, "late_covered", ss->late_covered);
		rte_tel_data_add_dict_u64(d, "late_unmatched",
					  ss->late_unmatched);
		rte_tel_data_add_dict_u64(d, "late_delivered",
					  ss->late_delivered);
		rte_tel_data_add_dict_u64(d, "charged_units",
					  ss->charged_units);
		/* global rules' demand reported for sluice-aggregator */
		rte_tel_data_add_dict_u64(d, "usage_reports", c->usage.reports);
		rte_tel_data_add_dict_u64(d, "usage_unsent", c->usage.unsent);
		rte_tel_data_add_dict_u64(d, "usage_refused", c->usage.refused);
		/* admitted while the store could not count them, charged
		 * when it answers again */
		rte_tel_data_add_dict_u64(d, "owed_units", ss->owed_units);
		rte_tel_data_add_dict_u64(d, "owed_charged", ss->owed_charged);
		rte_tel_data_add_dict_u64(d, "owed_dropped", ss->owed_dropped);
		rte_tel_data_add_dict_u64(d, "refunds_owed", ss->refunds_owed);
		rte_tel_data_add_dict_u64(d, "refunds_settled",
					  ss->refunds_settled);
		rte_tel_data_add_dict_u64(d, "owed_keys", ss->owed_keys);
		rte_tel_data_add_dict_u64(d, "tier_asks", ss->tier_asks);
		rte_tel_data_add_dict_u64(d, "tier_errors", ss->tier_errors);
	}
	/* asks the node decided in the store's place, and of them those
	 * after one late reply (not an outage: every rule by its share) */
	rte_tel_data_add_dict_u64(d, "store_degraded", s->degraded);
	rte_tel_data_add_dict_u64(d, "store_degraded_late", s->degraded_late);
	rte_tel_data_add_dict_u64(d, "late_waited", s->late_waited);
	rte_tel_data_add_dict_u64(d, "taken_units", s->taken_units);
	rte_tel_data_add_dict_u64(d, "taken_uncharged", s->taken_uncharged);
	rte_tel_data_add_dict_u64(d, "asks", s->asks);
	rte_tel_data_add_dict_u64(d, "granted_units", s->granted_units);
	rte_tel_data_add_dict_u64(d, "refusals", s->refusals);
	/* grants good from later on, to keys above their limit */
	rte_tel_data_add_dict_u64(d, "reservations", s->reservations);
	rte_tel_data_add_dict_u64(d, "given_back_units", s->given_back);
	rte_tel_data_add_dict_u64(d, "given_back_lost", s->given_back_lost);
	rte_tel_data_add_dict_u64(d, "answers_dropped", s->answers_dropped);
	rte_tel_data_add_dict_u64(d, "parked", parked);
	rte_tel_data_add_dict_u64(d, "park_dropped", dropped);
	/* requests decided without the store (the workers' count, as in
	 * /sluice/stats) */
	rte_tel_data_add_dict_u64(d, "degraded", degraded);
	rte_tel_data_add_dict_u64(d, "parked_ns_p50",
				  sl_hist_quantile(&h, 0.5));
	rte_tel_data_add_dict_u64(d, "parked_ns_p99",
				  sl_hist_quantile(&h, 0.99));
	/* the longest wait's bucket: nobody waits for a store that is out */
	rte_tel_data_add_dict_u64(d, "parked_ns_max",
				  sl_hist_quantile(&h, 1.0));
	rte_tel_data_add_dict_u64(d, "lease_ms", c->lease_ns / 1000000);
	return 0;
}

int
sl_coord_telemetry(struct sl_coord *c, const struct sl_worker_view *ws,
		   unsigned int n)
{
	c->views = ws;
	c->n_views = n;
	return sl_telemetry_cmd(
		"/sluice/store", cmd_store, c,
		"The authority behind the leases: kind, state, lease traffic");
}

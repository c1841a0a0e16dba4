/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Cluster slot map and when it is read again (store/nodes.c), without a
 * cluster: CLUSTER SLOTS replies built by hand are applied to a store
 * whose seeds do not answer, and the refresh decisions are driven with a
 * clock passed in. Nodes named in the replies are on 127.0.0.1 at ports
 * nothing listens on: their connections fail, as a dead master's would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store_priv.h"

#define MS 1000000ULL

static const struct sl_endpoint seeds[] = {{"127.0.0.1", 9}, {"127.0.0.1", 7}};

static int
nop_failed(void *ctx, const struct sl_coord_msg *q, int how, uint64_t now,
	   uint64_t *covered)
{
	(void)ctx, (void)q, (void)how, (void)now;
	*covered = 0;
	return 1;
}

static struct sl_store *
store(void)
{
	struct sl_store_conf conf = {.seeds = seeds,
				     .n_seeds = 2,
				     .cluster = 1,
				     .timeout_ms = 5,
				     .probe_ms = 100,
				     .refresh_ms = 10000};
	struct sl_store_sink sink = {.failed = nop_failed};
	struct sl_store *s = sl_store_create(&conf, &sink);

	assert_non_null(s);
	assert_int_equal(s->n_nodes, 0); /* no seed gave a map */
	return s;
}

/* ---- replies built by hand ---- */

static redisReply *
reply(int type)
{
	redisReply *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->type = type;
	return r;
}

static redisReply *
integer(long long v)
{
	redisReply *r = reply(REDIS_REPLY_INTEGER);

	r->integer = v;
	return r;
}

static redisReply *
string(const char *v)
{
	redisReply *r = reply(REDIS_REPLY_STRING);

	r->str = strdup(v);
	r->len = strlen(v);
	return r;
}

static redisReply *
array(size_t n, ...)
{
	redisReply *r = reply(REDIS_REPLY_ARRAY);
	va_list ap;
	size_t i;

	r->elements = n;
	r->element = calloc(n, sizeof(*r->element));
	va_start(ap, n);
	for (i = 0; i < n; i++)
		r->element[i] = va_arg(ap, redisReply *);
	va_end(ap);
	return r;
}

/* One CLUSTER SLOTS range: lo-hi served by host:port. */
static redisReply *
range(long long lo, long long hi, const char *host, long long port)
{
	return array(3, integer(lo), integer(hi),
		     array(3, string(host), integer(port), string("id")));
}

static int
node_at(const struct sl_store *s, uint16_t port)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++)
		if (s->nodes[i].port == port)
			return (int)i;
	return -1;
}

/* Three masters, one named "" (the node that was asked). */
static void
map_applied(void **state)
{
	struct sl_store *s = store();
	redisReply *r = array(3, range(0, 5460, "127.0.0.1", 1),
			      range(5461, 10922, "", 2),
			      range(10923, 16383, "127.0.0.1", 3));
	int a, b, c;

	(void)state;
	assert_int_equal(sl_nodes_apply_slots(s, r, "127.0.0.1"), 16384);
	a = node_at(s, 1), b = node_at(s, 2), c = node_at(s, 3);
	assert_true(a >= 0 && b >= 0 && c >= 0);
	assert_string_equal(s->nodes[b].host, "127.0.0.1");
	assert_int_equal(s->slot_node[0], a);
	assert_int_equal(s->slot_node[5460], a);
	assert_int_equal(s->slot_node[5461], b);
	assert_int_equal(s->slot_node[16383], c);
	assert_int_equal(s->nodes[a].slots, 5461);
	assert_int_equal(s->nodes[b].slots, 5462);
	assert_int_equal(s->nodes[c].slots, 5461);
	assert_int_equal(s->st.nodes, 3);
	freeReplyObject(r);
	sl_store_free(s);
}

/* A reply that maps nothing (an error, ranges out of bounds, a master
 * without a port) leaves the map as it was. */
static void
bad_replies_change_nothing(void **state)
{
	struct sl_store *s = store();
	redisReply *good = array(1, range(0, 16383, "127.0.0.1", 1));
	redisReply *err = reply(REDIS_REPLY_ERROR);
	redisReply *bad = array(
		3, range(0, 16384, "127.0.0.1", 4), range(9, 3, "127.0.0.1", 4),
		array(3, integer(0), integer(100), array(1, string("x"))));

	(void)state;
	err->str = strdup("CLUSTERDOWN The cluster is down");
	err->len = strlen(err->str);
	assert_int_equal(sl_nodes_apply_slots(s, good, "127.0.0.1"), 16384);
	assert_int_equal(sl_nodes_apply_slots(s, err, "127.0.0.1"), 0);
	assert_int_equal(sl_nodes_apply_slots(s, NULL, "127.0.0.1"), 0);
	assert_int_equal(sl_nodes_apply_slots(s, bad, "127.0.0.1"), 0);
	assert_int_equal(node_at(s, 4), -1); /* never added */
	assert_int_equal(s->nodes[node_at(s, 1)].slots, 16384);
	freeReplyObject(good);
	freeReplyObject(err);
	freeReplyObject(bad);
	sl_store_free(s);
}

/* A failover: the dead master's range now served by its replica; the
 * dead one keeps its entry (its connection, its counters) with 0 slots,
 * and no longer counts in the store's state. */
static void
failover_moves_slots(void **state)
{
	struct sl_store *s = store();
	redisReply *before = array(2, range(0, 8191, "127.0.0.1", 1),
				   range(8192, 16383, "127.0.0.1", 2));
	redisReply *after = array(2, range(0, 8191, "127.0.0.1", 5),
				  range(8192, 16383, "127.0.0.1", 2));

	(void)state;
	sl_nodes_apply_slots(s, before, "127.0.0.1");
	sl_nodes_apply_slots(s, after, "127.0.0.1");
	assert_int_equal(s->n_nodes, 3);
	assert_int_equal(s->nodes[node_at(s, 1)].slots, 0);
	assert_int_equal(s->nodes[node_at(s, 5)].slots, 8192);
	assert_int_equal(s->slot_node[0], node_at(s, 5));
	assert_int_equal(s->slot_node[8192], node_at(s, 2));
	freeReplyObject(before);
	freeReplyObject(after);
	sl_store_free(s);
}

/* Every node down (no connection, none to be retried yet). */
static void
all_down(struct sl_store *s)
{
	uint32_t i;

	for (i = 0; i < s->n_nodes; i++) {
		sl_redis_close(&s->nodes[i].conn);
		s->nodes[i].was_up = 0;
		s->nodes[i].retry_ns = UINT64_MAX;
	}
}

/*
 * When the map is read again: while a node that serves slots is down
 * (no node up: the next seed is connected for it, in turn), at most
 * every 250 ms; a read with no reply for a second is given up, and
 * every refresh_ms regardless.
 */
static void
refresh_decisions(void **state)
{
	struct sl_store *s = store();
	redisReply *r = array(2, range(0, 8191, "127.0.0.1", 1),
			      range(8192, 16383, "127.0.0.1", 2));
	uint64_t t = 1000 * MS;
	uint32_t seed0;

	(void)state;
	sl_nodes_apply_slots(s, r, "127.0.0.1");
	all_down(s);
	s->last_refresh_ns = t;
	s->next_refresh_ns = t + 10000 * MS;
	s->want_refresh = 0;
	seed0 = s->next_seed;
	/* a node serving slots is down: wanted, but 250 ms apart */
	sl_nodes_poll(s, t + 100 * MS);
	assert_true(s->want_refresh);
	assert_int_equal(s->last_refresh_ns, t);
	assert_int_equal(s->next_seed, seed0);
	/* past the gap: no node up, so the next seed is connected for it */
	sl_nodes_poll(s, t + 260 * MS);
	assert_int_equal(s->last_refresh_ns, t + 260 * MS);
	assert_int_equal(s->next_seed, seed0 + 1);
	all_down(s);
	sl_nodes_poll(s, t + 400 * MS); /* too soon again */
	assert_int_equal(s->next_seed, seed0 + 1);
	sl_nodes_poll(s, t + 520 * MS); /* the other seed, in turn */
	assert_int_equal(s->next_seed, seed0 + 2);
	/* a read in flight and no reply: given up after a second */
	all_down(s);
	s->refreshing = 1;
	s->last_refresh_ns = t + 600 * MS;
	sl_nodes_poll(s, t + 1500 * MS);
	assert_true(s->refreshing);
	sl_nodes_poll(s, t + 1700 * MS);
	assert_int_equal(s->last_refresh_ns, t + 1700 * MS);
	/* every node up again, nothing wanted: only refresh_ms brings one */
	s->want_refresh = 0;
	s->nodes[0].slots = s->nodes[1].slots = 0; /* none down serving */
	s->next_refresh_ns = t + 9000 * MS;
	sl_nodes_poll(s, t + 8000 * MS);
	assert_int_equal(s->last_refresh_ns, t + 1700 * MS);
	sl_nodes_poll(s, t + 9000 * MS);
	assert_int_equal(s->last_refresh_ns, t + 9000 * MS);
	freeReplyObject(r);
	sl_store_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(map_applied),
		cmocka_unit_test(bad_replies_change_nothing),
		cmocka_unit_test(failover_moves_slots),
		cmocka_unit_test(refresh_decisions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

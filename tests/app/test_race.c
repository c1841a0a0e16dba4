/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path and the control path at once, on two threads, for a
 * ThreadSanitizer build (meson -Db_sanitize=thread; scripts/test.sh runs
 * it): a worker thread drives the real worker (requests on many keys,
 * leased through the coordinator, parked until answered), while the main
 * thread runs the coordinator, sums the counters as telemetry does, and
 * swaps the rule set through the real reload (RCU: the old policy freed
 * once the worker has passed a quiescent point), and the aggregator's
 * slices table as slices.c swaps it (the old one freed after RCU too).
 * What is shared between lcores — the rings both ways, the policy and
 * slices pointers and their lifetimes, the counters — is exercised for
 * real; the sanitizer reports any access the
 * code does not order. In an ordinary build it checks that every request
 * was decided once and that the counters add up.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "coord.h"
#include "policy.h"
#include "regions.h"
#include "sluice.h"
#include "dpframes.h"

#define ROUNDS    2000 /* requests at least */
#define RELOADS   6    /* and on until this many reloads were applied */
#define KEYS      40
#define WORKER_ID 1 /* its RCU reader id */

static const char RULES[] =
	"version: 1\n"
	"dataplane: {service_ports: [80], flows_per_worker: 4096,\n"
	"  head_buffers_per_worker: 64, mbufs: 4095,\n"
	"  coordinator_timeout_ms: 20}\n"
	"identity: {api_key_header: X-API-Key}\n"
	"tiers: [free]\n"
	"regions: {a: 1, b: 1}\n"
	"rules:\n"
	"  - {name: two, scope: key, match: {path_prefix: /two}, limit: "
	"%u/min}\n"
	"  - {name: wide, scope: key, match: {path_prefix: /two}, limit: "
	"100000/min, across_regions: true}\n"
	"store: {region: a, redis: {endpoints: [\"127.0.0.1:1\"],\n"
	"  timeout_ms: %u}}\n"
	"response: {retry_jitter: %s, headers: %s, expose_rule: %s}\n"
	"request: {merge_slashes: %s, path_params: %s}\n"
	"decisions: {sample: %s, stream: \"sl:decisions\"}\n"
	"blocklist: {keys: [k-gone-%u]}\n";

static struct sl_app app;
static struct rte_mempool *pool;
static int finished;
static unsigned int reloaded, ran;

/*
 * Round r's rules: the limit moves between 2 and 3 a minute, and every
 * option a reload applies (the response's, the request's, the sampling
 * rate, the blocklist) changes with it, so that the workers read each
 * one's new value while the reloader frees the old; the store's timeout,
 * which only a restart applies, changes every other round.
 */
static void
config_text(char *buf, size_t len, unsigned int r)
{
	static const char *const hdr[] = {"draft", "legacy", "both"};
	const char *yes = r % 2 ? "true" : "false";

	snprintf(buf, len, RULES, 2 + r % 2, 5 + r % 2, r % 2 ? "0.1" : "0",
		 hdr[r % 3], yes, yes, r % 2 ? "strip" : "keep",
		 r % 2 ? "0.5" : "0", r);
}

static void
feed(struct sl_worker *w, struct rte_mbuf *m, int from)
{
	if (m == NULL)
		return;
	w->now = rte_rdtsc();
	sl_worker_burst(w, &m, 1, from);
}

/* Its own frames in, what it sent drained and freed: every mbuf stays on
 * this thread. */
static void
one_request(struct sl_worker *w, unsigned int i)
{
	struct conn c = {.cport = (uint16_t)(10000 + i % 50000),
			 .cseq = 1000,
			 .sseq = 5000};
	char head[160];

	snprintf(head, sizeof(head),
		 "GET /two HTTP/1.1\r\nHost: api\r\nX-API-Key: k%u\r\n\r\n",
		 i % KEYS);
	/* the handshake through the worker both ways, then the head */
	feed(w, dp_frame(pool, 1, &c, RTE_TCP_SYN_FLAG, NULL), 0);
	c.cseq++;
	feed(w,
	     dp_frame(pool, 0, &c, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG, NULL),
	     1);
	c.sseq++;
	feed(w, dp_frame(pool, 1, &c, RTE_TCP_ACK_FLAG, NULL), 0);
	feed(w,
	     dp_frame(pool, 1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, head),
	     0);
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(&app, w->now);
	sl_worker_leases(w);
	sl_worker_flush(w);
	dp_drain(&app);
}

static void *
worker_thread(void *arg)
{
	struct sl_worker *w = arg;
	unsigned int i;
	uint64_t until;

	rte_rcu_qsbr_thread_register(app.qs, WORKER_ID);
	rte_rcu_qsbr_thread_online(app.qs, WORKER_ID);
	/* every option in both its states at least once (config_text) */
	for (i = 0; i < ROUNDS ||
		    __atomic_load_n(&reloaded, __ATOMIC_RELAXED) < RELOADS;
	     i++) {
		w->pol = __atomic_load_n(&app.policy, __ATOMIC_ACQUIRE);
		one_request(w, i);
		rte_rcu_qsbr_quiescent(app.qs, WORKER_ID);
	}
	ran = i;
	/* what is still parked is decided by its deadline */
	until = rte_rdtsc() + rte_get_tsc_hz() / 10;
	while (!sl_parkq_empty(&w->parkq) && rte_rdtsc() < until) {
		w->now = rte_rdtsc();
		w->now_ns = sl_tsc_ns(&app, w->now);
		sl_worker_leases(w);
		sl_worker_flush(w);
		rte_rcu_qsbr_quiescent(app.qs, WORKER_ID);
	}
	/* offline (its release store is what a reload acquires from now
	 * on); unregistered by the main thread once it stops reloading:
	 * DPDK's library clears the bit unseen by ThreadSanitizer */
	rte_rcu_qsbr_thread_offline(app.qs, WORKER_ID);
	__atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A new slices table for the global rule, as slices.c publishes one, once
 * the last one replaced is freed: the workers read every table while it
 * is swapped (identities that match no test key: each lookup still walks
 * its slots). Returns whether it swapped.
 */
static int
new_slices(struct sl_slices_retired *g, unsigned int round)
{
	struct sl_slices *t;
	unsigned int i;

	if (!sl_slices_reap(&app, g))
		return 0;
	t = malloc(sizeof(*t));
	assert_non_null(t);
	sl_slices_clear(t);
	for (i = 0; i < 64; i++)
		assert_int_equal(
			sl_slices_put(t, round * 977u + i * 7919u, i, 100 + i),
			0);
	sl_slices_swap(&app, g, t);
	return 1;
}

static void
both_at_once(void **state)
{
	struct sl_worker *w = rte_zmalloc(NULL, sizeof(*w), 64);
	struct sl_telemetry_src src;
	struct sl_counters sum;
	struct sl_flow_stats fs;
	char text[1024], msg[1024], ver[16];
	unsigned int loops = 0, reloads = 0, swaps = 0;
	struct sl_slices_retired gone = {0};
	uint64_t next_reload = rte_rdtsc(), gap = rte_get_tsc_hz() / 500;
	uint64_t began_run, most;
	pthread_t t;

	(void)state;
	assert_non_null(w);
	assert_int_equal(sl_worker_init(w, &app, WORKER_ID, 0, 0), 0);
	src = (struct sl_telemetry_src){.lcore = WORKER_ID,
					.ctr = &w->ctr,
					.flows = w->flows,
					.buckets = w->buckets,
					.leases = w->leases,
					.rules = w->rules,
					.top = &w->top,
					.latency = &w->latency,
					.tiers = w->tiers_ctr};
	assert_int_equal(sl_telemetry_register(&src, 1), 0);
	began_run = rte_rdtsc();
	assert_int_equal(pthread_create(&t, NULL, worker_thread, w), 0);
	while (!__atomic_load_n(&finished, __ATOMIC_ACQUIRE)) {
		sl_coord_poll(app.coord, sl_tsc_ns(&app, rte_rdtsc()));
		if (++loops % 256 == 0)
			sl_telemetry_sum(&sum, &fs);
		swaps += (unsigned int)new_slices(&gone, loops);
		if (rte_rdtsc() >= next_reload) {
			/* the limit moves between 2 and 3 a minute, every
			 * 2 ms or four times as long as a reload takes (a
			 * sanitizer build's are slow): every reload a new
			 * policy, the old one freed after RCU, and the
			 * coordinator polled most of the time in between */
			uint64_t began = rte_rdtsc(), took;

			snprintf(ver, sizeof(ver), "v%u", ++reloads);
			config_text(text, sizeof(text), reloads);
			assert_int_equal(sl_reload_text(&app, ver, text,
							strlen(text), msg,
							sizeof(msg)),
					 0);
			/* applied, and what waits for a restart said so */
			assert_int_equal(strstr(msg, "store") != NULL,
					 reloads % 2);
			__atomic_store_n(&reloaded, reloads, __ATOMIC_RELAXED);
			took = rte_rdtsc() - began;
			next_reload = rte_rdtsc() + RTE_MAX(gap, 4 * took);
		}
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	rte_rcu_qsbr_thread_unregister(app.qs, WORKER_ID);
	assert_int_equal(sl_slices_reap(&app, &gone), 1); /* none reads it */
	free(app.slices);
	app.slices = NULL;
	sl_telemetry_sum(&sum, &fs);
	/* every request decided once, however the threads interleaved */
	assert_int_equal(sum.requests, ran);
	assert_int_equal(sum.allowed + sum.rejected, ran);
	/* 40 keys at 2 or 3 a minute: each key's first request admitted
	 * (a reload drops a lease's unspent units, counted as spent: the
	 * safe side), none over the higher limit whatever the reloads did.
	 * A reload once restarted the worker's slices full (321 admitted),
	 * and a lease entry swept while its slice was spent came back full
	 * (up to 151) */
	/* ... and what the higher limit refilled while the run lasted: a
	 * loaded sanitizer build once took 46 s, not 4, and each key's
	 * bucket then held two more units (128 admitted of 200 due) */
	most = KEYS * 3 +
	       KEYS * (3 * (rte_rdtsc() - began_run) / rte_get_tsc_hz() / 60);
	if (sum.allowed < KEYS || sum.allowed > most)
		fail_msg("%llu allowed of at most %llu, %llu decided by the "
			 "worker alone, %u "
			 "reloads, %llu units taken unreported; coordinator: "
			 "%llu granted, %llu taken, %llu answers dropped, %llu "
			 "given back",
			 (unsigned long long)sum.allowed,
			 (unsigned long long)most,
			 (unsigned long long)sum.degraded, reloads,
			 (unsigned long long)sum.taken_unreported,
			 (unsigned long long)app.coord->st.granted_units,
			 (unsigned long long)app.coord->st.taken_units,
			 (unsigned long long)app.coord->st.answers_dropped,
			 (unsigned long long)app.coord->st.given_back);
	assert_true(reloads >= RELOADS);
	assert_true(swaps >= 1);
	printf("race: %u rounds, %llu allowed of at most %llu (%llu decided "
	       "by the worker alone), %u reloads, %u slices tables, %u "
	       "coordinator loops\n",
	       ran, (unsigned long long)sum.allowed, (unsigned long long)most,
	       (unsigned long long)sum.degraded, reloads, swaps, loops);
	sl_worker_free(w);
	rte_free(w);
}

int
main(int argc, char **argv)
{
	char text[1024];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_at_once),
	};
	struct sl_config *cfg;
	int rc;

	(void)argc;
	if (dp_eal(argv[0], "test_race") != 0)
		return 1;
	config_text(text, sizeof(text), 0);
	cfg = dp_app(&app, &pool, "test_race", text, strlen(text));
	if (cfg == NULL)
		return 1;
	sl_app_set_coord(&app, sl_coord_create(1, 4096));
	if (app.coord == NULL || sl_reload_init(&app) != 0) {
		fprintf(stderr, "test_race: setup failed\n");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	sl_coord_free(app.coord);
	sl_ports_close(&app);
	sl_reload_free(&app);
	sl_policy_free(app.policy);
	sl_config_free(cfg);
	rte_eal_cleanup();
	return rc;
}

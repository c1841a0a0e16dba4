/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --coord: the lease protocol in one thread, with or without a live
 * redis-server behind the coordinator.
 */
#include "bench.h"

/* A live redis-server behind the coordinator, scripts loaded. */
static void
attach_redis(struct sl_app *app, uint16_t port)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz() * 3;

	struct sl_endpoint e = {"127.0.0.1", port};
	struct sl_store_conf sc = {
		.seeds = &e, .n_seeds = 1, .timeout_ms = 50, .probe_ms = 1000};

	if (sl_coord_attach_store(app->coord, &sc) != 0)
		rte_exit(EXIT_FAILURE, "coord: cannot create the store\n");
	while (rte_rdtsc() < end &&
	       !sl_store_stats(app->coord->store)->connected) {
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
		rte_delay_us_sleep(1000);
	}
	/* SCRIPT LOAD answers come right after the connection */
	end = rte_rdtsc() + rte_get_tsc_hz() / 5;
	while (rte_rdtsc() < end)
		sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	if (!sl_store_stats(app->coord->store)->connected)
		rte_exit(EXIT_FAILURE, "coord: no redis-server on port %u\n",
			 port);
}

/*
 * The lease protocol in one thread: a worker decides bursts of the corpus
 * against a per-key limit of 10 000/s, and between bursts the coordinator
 * answers and the parked requests are resolved. Counts the coordinator's
 * messages per 1000 admitted requests: the traffic a store behind it
 * would see, against one store call per request.
 */
void
sl_bench_coord_run(const struct bopts *o, struct sl_app *base, uint32_t keys,
		   const char *label)
{
	struct bopts ko = *o;
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = sl_bench_app_copy(base);
	struct corpus c = {0};
	struct sl_worker *w;
	uint32_t r, i;

	ko.keys = keys;
	sl_config_defaults(cfg);
	app->policy = sl_bench_policy(cfg, 10000, 1000);
	sl_bench_with_coordinator(app, 1u << 20);
	if (o->redis_port)
		attach_redis(app, o->redis_port);
	w = sl_bench_worker(app, 0);
	sl_bench_seed(0x2545f4914f6cdd1dULL);
	if (sl_bench_build_corpus(&c, &ko, app->pool) != 0)
		rte_exit(EXIT_FAILURE, "coord: out of mbufs\n");
	for (r = 0; r < o->rounds; r++) {
		/* --rate: a burst no sooner than its time; the wait answers */
		uint64_t gap = o->rate ? app->tsc_hz * SL_BURST / o->rate : 0;
		uint64_t due = rte_rdtsc();

		sl_bench_set_round(&c, r);
		sl_bench_prime(w, c.m, c.n, r == 0);
		for (i = 0; i < c.n; i += SL_BURST, due += gap) {
			while (rte_rdtsc() < due)
				sl_bench_answer_once(app, w);
			w->now = rte_rdtsc();
			sl_worker_burst(
				w, &c.m[i],
				(uint16_t)RTE_MIN((uint32_t)SL_BURST, c.n - i),
				0);
			sl_bench_answer_once(app, w);
		}
		/* whatever still waits is answered before the next round */
		sl_bench_answer_all(app, w);
	}
	for (i = 0; i < c.n; i++)
		rte_pktmbuf_free(c.m[i]);
	if (app->coord->store != NULL) {
		const struct sl_store_stats *ss =
			sl_store_stats(app->coord->store);

		printf("{\"coord\": \"%s\", \"store\": \"redis\", "
		       "\"store_calls\": %lu, \"store_replies\": %lu, "
		       "\"store_timeouts\": %lu, \"degraded\": %lu, "
		       "\"store_calls_per_1000_admitted\": %.1f, "
		       "\"rtt_ns_avg\": %lu}\n",
		       label, ss->calls, ss->replies, ss->timeouts,
		       w->ctr.degraded,
		       1000.0 * (double)ss->calls /
			       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
		       ss->replies ? ss->rtt_ns_sum / ss->replies : 0);
	}
	printf("{\"coord\": \"%s\", \"offered_per_sec\": %u, "
	       "\"keys\": %u, \"requests\": %lu, "
	       "\"admitted\": %lu, \"refused\": %lu, "
	       "\"coord_messages_per_1000_admitted\": %.1f, "
	       "\"store_calls_per_1000_admitted_per_request_design\": %.1f, "
	       "\"parked\": %lu, \"parked_ns_p50\": %lu, "
	       "\"parked_ns_p99\": %lu, \"latency_ns_p50\": %lu, "
	       "\"latency_ns_p99\": %lu, \"latency_ns_p999\": %lu}\n",
	       label, o->rate, keys, w->ctr.requests, w->ctr.allowed,
	       w->ctr.rejected,
	       1000.0 * (double)(w->ctr.coord_asks) /
		       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
	       1000.0 * (double)w->ctr.requests /
		       (double)(w->ctr.allowed ? w->ctr.allowed : 1),
	       w->ctr.parked, sl_hist_quantile(&w->park_latency, 0.5),
	       sl_hist_quantile(&w->park_latency, 0.99),
	       sl_hist_quantile(&w->latency, 0.5),
	       sl_hist_quantile(&w->latency, 0.99),
	       sl_hist_quantile(&w->latency, 0.999));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The workers the passes time, each set up as the appliance would run it
 * for that pass: local buckets, sampled, leased, or not inspected.
 */
#include "bench.h"

void
sl_bench_setup_ports(struct sl_app *app)
{
	if (rte_eth_dev_count_avail() < 2) {
		/* No ports given: two null ports, whose TX frees the mbuf. */
		if (rte_vdev_init("net_null0", "copy=0") != 0 ||
		    rte_vdev_init("net_null1", "copy=0") != 0)
			rte_exit(EXIT_FAILURE,
				 "cannot create net_null ports\n");
	}
	if (sl_ports_init(app, (uint16_t)rte_lcore_count()) != 0)
		rte_exit(EXIT_FAILURE, "port setup failed\n");
}

/* One key rule: generous enough to allow all, or tight enough to refuse. */
void
sl_bench_rule(struct sl_rule *r, uint64_t count, uint64_t period_ms)
{
	sl_rule_defaults(r);
	strcpy(r->name, "bench-key");
	r->scope = SL_SCOPE_KEY;
	r->algo = SL_ALGO_TOKEN_BUCKET;
	r->limit.count = count;
	r->limit.period_ms = period_ms;
	r->burst = count;
}

struct sl_policy *
sl_bench_policy(struct sl_config *cfg, uint64_t count, uint64_t period_ms)
{
	return sl_bench_cost_policy(cfg, count, period_ms, NULL);
}

/* The same rule, its cost read from the response's field cost_header
 * (NULL: declared): the rule then stays in cfg, where a worker looks at
 * start for a rule that settles costs. */
struct sl_policy *
sl_bench_cost_policy(struct sl_config *cfg, uint64_t count, uint64_t period_ms,
		     const char *cost_header)
{
	struct sl_rule *r = calloc(1, sizeof(*r));
	struct sl_policy *p;

	if (r == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	sl_bench_rule(r, count, period_ms);
	if (cost_header != NULL)
		snprintf(r->cost_header, sizeof(r->cost_header), "%s",
			 cost_header);
	cfg->rules = r;
	cfg->n_rules = 1;
	p = sl_policy_build(cfg);
	if (cost_header == NULL) {
		cfg->rules = NULL;
		cfg->n_rules = 0;
		free(r);
	}
	if (p == NULL)
		rte_exit(EXIT_FAILURE, "cannot build the bench policy\n");
	return p;
}

struct sl_worker *
sl_bench_worker(const struct sl_app *app, int track_only)
{
	struct sl_worker *w =
		rte_zmalloc(NULL, sizeof(*w), RTE_CACHE_LINE_SIZE);

	if (w == NULL || sl_worker_init(w, app, 0, 0, track_only) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	/* as a worker does before its loop: no page faults in the passes */
	sl_worker_prefault(w);
	return w;
}

/* A round's worth of records: the ring never fills, so the pass measures
 * sampling and queueing, not the drop path. */
uint32_t
sl_bench_c_n_ring(const struct bopts *o)
{
	return rte_align32pow2(o->packets + 1);
}

/* A worker's own copy of the app, to change what the pass needs. */
struct sl_app *
sl_bench_app_copy(const struct sl_app *app)
{
	struct sl_app *a = calloc(1, sizeof(*a));

	if (a == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	*a = *app;
	return a;
}

/* The node's own authority, as main() starts it, for one lease holder. */
void
sl_bench_with_coordinator(struct sl_app *a, uint32_t capacity)
{
	sl_app_set_coord(a, sl_coord_create(1, capacity));
	a->holders = 1;
	a->expected = 1;
	/* answered on the same thread between bursts: late only when the
	 * thread lost its CPU, which at 50 ms, beside the test suites at
	 * the lowest priority, degraded 1-6 of func/bench's decisions */
	a->store_timeout_ns = 1000000000ULL;
	if (a->coord == NULL)
		rte_exit(EXIT_FAILURE, "cannot create the coordinator\n");
}

/* The main lcore's turn (the coordinator answers), then the worker's. */
void
sl_bench_answer_once(const struct sl_app *app, struct sl_worker *w)
{
	sl_coord_poll(app->coord, sl_tsc_ns(app, rte_rdtsc()));
	w->now = rte_rdtsc();
	w->now_ns = sl_tsc_ns(app, w->now);
	sl_worker_leases(w);
}

/* Whatever still waits for a first grant is answered, and sent. */
void
sl_bench_answer_all(const struct sl_app *app, struct sl_worker *w)
{
	while (!sl_parkq_empty(&w->parkq))
		sl_bench_answer_once(app, w);
	sl_worker_flush(w);
}

/* The keep-alive worker with every decision going to the stream's ring. */
struct sl_worker *
sl_bench_sampling_worker(const struct sl_app *app, struct sl_config *cfg,
			 uint32_t ring)
{
	struct sl_app *a = sl_bench_app_copy(app);
	struct sl_worker *w;

	a->policy = sl_bench_policy(cfg, 1000000000, 1000);
	a->policy->dec_ppm[0] = a->policy->dec_ppm[1] = 1000000;
	w = sl_bench_worker(a, 0);
	w->dec_ring = rte_ring_create_elem(
		"bench_dec", sizeof(struct sl_dec_rec), ring, SOCKET_ID_ANY,
		RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->dec_ring == NULL)
		rte_exit(EXIT_FAILURE, "no memory for the decision ring\n");
	return w;
}

/* The same frames to a port nobody inspects: classified and forwarded. */
struct sl_worker *
sl_bench_passthrough_worker(const struct sl_app *app)
{
	struct sl_app *a = sl_bench_app_copy(app);

	memset(a->service, 0, sizeof(a->service));
	return sl_bench_worker(a, 0);
}

/*
 * The keep-alive worker as the appliance runs it: every limit leased from
 * the node's own authority (the coordinator, which main() always starts),
 * answered between bursts as the main lcore would.
 */
struct sl_worker *
sl_bench_leased_worker(const struct sl_app *app, struct sl_config *cfg)
{
	struct sl_app *a = sl_bench_app_copy(app);

	a->policy = sl_bench_policy(cfg, 1000000000, 1000);
	sl_bench_with_coordinator(a, cfg->dataplane.buckets_per_worker * 2);
	return sl_bench_worker(a, 0);
}

/* What the writer thread would take, outside the timed pass. */
void
sl_bench_drain_samples(struct sl_worker *w)
{
	static struct sl_dec_rec recs[256];

	while (rte_ring_sc_dequeue_burst_elem(w->dec_ring, recs,
					      sizeof(recs[0]), 256, NULL) > 0)
		;
}

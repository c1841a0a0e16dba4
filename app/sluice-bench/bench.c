/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-bench: runs the worker's per-burst code in-process over a corpus
 * of request frames held in mbufs, and prints cycles per request for each
 * pass measured in the same run, so the ratios hold on a noisy machine.
 * The passes are the rows of sl_bench_passes (passes.c):
 *
 *   forward  - the same mbufs handed to tx_burst (net_null) untouched
 *   flow     - classify + checksum + flow table, no HTTP
 *   parse    - the whole decision on keep-alive flows, every request allowed
 *   allow    - the whole decision on new (mid-stream) flows, all allowed
 *   reject   - the same, every request answered 429 (+ RST to the server)
 *   scan     - a plain scan of the same heads for the blank line (floor)
 *
 * usage: sluice-bench [EAL args] -- [--packets N] [--flows N] [--keys N]
 *                      [--rounds N] [--json] [--only PASS] ...
 */
#include "bench.h"
#include "blocklist.h"
#include "hashcmp.h"
#include "micro.h"
#include "norm.h"
#include "stream.h"

static int
pass_of(const char *name)
{
	int m;

	for (m = 0; m < M__N; m++)
		if (strcmp(name, sl_bench_passes[m].name) == 0)
			return m;
	return -2;
}

static int
runs(const struct bopts *o, int m)
{
	return o->only < 0 || o->only == m;
}

/* The respond passes hold a response's frame and the one it is answered
 * with, each round, per request. */
static uint32_t
responses(const struct bopts *o)
{
	return runs(o, M_RESPOND) || runs(o, M_RESPOND_BUDGET) ||
			       runs(o, M_RESPOND_COST)
		       ? 2
		       : 0;
}

static int
parse_bopts(int argc, char **argv, struct bopts *o)
{
	static const struct option lo[] = {
		{"packets", required_argument, NULL, 'p'},
		{"flows", required_argument, NULL, 'f'},
		{"keys", required_argument, NULL, 'k'},
		{"rounds", required_argument, NULL, 'r'},
		{"zipf", required_argument, NULL, 'z'},
		{"flood", required_argument, NULL, 'F'},
		{"workers", required_argument, NULL, 'W'},
		{"coord", no_argument, NULL, 'C'},
		{"redis", required_argument, NULL, 'R'},
		{"rate", required_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"only", required_argument, NULL, 'O'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			o->packets = (uint32_t)atoi(optarg);
			break;
		case 'f':
			o->flows = (uint32_t)atoi(optarg);
			break;
		case 'k':
			o->keys = (uint32_t)atoi(optarg);
			break;
		case 'r':
			o->rounds = (uint32_t)atoi(optarg);
			break;
		case 'z':
			o->zipf = atof(optarg);
			break;
		case 'F':
			o->flood = (uint32_t)atoi(optarg);
			break;
		case 'W':
			o->workers = (uint32_t)atoi(optarg);
			break;
		case 'C':
			o->coord = 1;
			break;
		case 'T':
			o->rate = (uint32_t)atoi(optarg);
			break;
		case 'R':
			o->redis_port = (uint16_t)atoi(optarg);
			o->coord = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'O':
			o->only = pass_of(optarg);
			break;
		default:
			return -1;
		}
	}
	if (o->packets < SL_BURST || o->flows == 0 || o->keys == 0 ||
	    o->rounds < 2 || o->only < -1)
		return -1;
	return 0;
}

/* Round 0 opens the flows and drains the tight bucket: not counted. */
static void
run_rounds(struct bench_env *e, uint64_t **t)
{
	uint32_t r;
	int m;

	for (r = 0; r <= e->o->rounds; r++)
		for (m = 0; m < M__N; m++) {
			uint64_t d;

			if (!runs(e->o, m))
				continue;
			d = sl_bench_passes[m].round(e, m, r);
			if (r > 0)
				t[m][r - 1] = d;
		}
}

/* The leased pass's asks to its authority per 1 000 timed requests. */
static double
leased_asks(const struct bench_env *e)
{
	const struct sl_worker *w = e->w[M_LEASED];
	uint64_t req = w->ctr.requests - e->requests0;

	return req > 0 ? 1000.0 * (double)(w->ctr.coord_asks - e->asks0) /
				 (double)req
		       : 0.0;
}

static void
check_passes(const struct bench_env *e)
{
	char buf[512];
	int m;

	for (m = 0; m < M__N; m++) {
		const char *err;

		if (!runs(e->o, m) || sl_bench_passes[m].check == NULL)
			continue;
		err = sl_bench_passes[m].check(e, m, buf, sizeof(buf));
		if (err != NULL)
			rte_exit(EXIT_FAILURE, "%s\n", err);
	}
}

/* --rounds N among argv, else dflt (a test's quick run asks for few). */
static uint32_t
rounds_of(int argc, char **argv, uint32_t dflt)
{
	int m;

	for (m = 1; m + 1 < argc; m++)
		if (strcmp(argv[m], "--rounds") == 0 && atoi(argv[m + 1]) >= 2)
			return (uint32_t)atoi(argv[m + 1]);
	return dflt;
}

/* --norm, --stream, --micro (no EAL) and --blocklist time one module
 * alone. */
static int
one_module(int argc, char **argv, int *rc)
{
	int m;

	for (m = 1; m < argc; m++) {
		int json = m + 1 < argc && strcmp(argv[m + 1], "--json") == 0;

		if (strcmp(argv[m], "--norm") == 0) {
			*rc = sl_bench_norm(rounds_of(argc, argv, 15), json);
			return 1;
		}
		if (strcmp(argv[m], "--stream") == 0) {
			*rc = sl_bench_stream(rounds_of(argc, argv, 9), json);
			return 1;
		}
		if (strcmp(argv[m], "--micro") == 0) {
			*rc = sl_bench_micro(json);
			return 1;
		}
	}
	return 0;
}

static void
usage(void)
{
	rte_exit(EXIT_FAILURE,
		 "usage: sluice-bench [EAL] -- [--packets N] [--flows "
		 "N>=packets] "
		 "[--keys N] [--rounds N>=2] [--zipf S] [--flood N] "
		 "[--workers N] [--coord] [--redis PORT] [--rate N] "
		 "[--json] [--only PASS]\n"
		 "       sluice-bench -- --norm [--json]\n"
		 "       sluice-bench -- --stream [--json]\n"
		 "       sluice-bench -- --micro [--json]\n"
		 "       sluice-bench [EAL] -- --blocklist [--json]\n"
		 "       sluice-bench [EAL] -- --hashcmp [--json [--small]]\n"
		 "(one request per connection per round, so that every "
		 "request of the reject pass is decided)\n");
}

/* The apps the passes run under, the workers, the corpus. */
static void
setup(struct bench_env *e)
{
	const struct bopts *o = e->o;
	int m;

	e->cfg = calloc(1, sizeof(*e->cfg));
	e->app = calloc(1, sizeof(*e->app));
	e->tight = calloc(1, sizeof(*e->tight));
	if (e->cfg == NULL || e->app == NULL || e->tight == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	sl_config_defaults(e->cfg);
	e->cfg->dataplane.flows_per_worker = o->flows * 2;
	e->cfg->dataplane.buckets_per_worker = o->keys * 2;
	e->cfg->dataplane.head_buffers_per_worker = 1024;
	e->cfg->dataplane.flow_idle_ms = 3600000;
	/* the base passes close after a 429 and leave responses alone; the
	 * keep and budget passes turn each on (their own configs, below) */
	e->cfg->response.keep_alive = 0;
	e->cfg->response.headers_on_allow = 0;
	/*
	 * A worker holds a decided head's mbuf until the server's ACK within
	 * an eighth of the configured mbufs (past it, a digest is kept). A
	 * round leaves every request of the corpus awaiting that ACK at
	 * once, so the config is the one an appliance with that many would
	 * run (8 per request, within the option's range). The mbufs held are
	 * the corpus's own, in a pool of its own (struct corpus): the pool
	 * made below holds the frames built besides (ACKs, responses, RSTs).
	 */
	e->cfg->dataplane.mbufs =
		RTE_MIN(RTE_MAX(e->cfg->dataplane.mbufs, o->packets * 8 + 4096),
			1u << 22);
	sl_app_setup(e->app, e->cfg);
	e->app->pool = rte_pktmbuf_pool_create(
		"bench", o->packets * (o->workers + responses(o)) + 4096, 256,
		0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (e->app->pool == NULL)
		rte_exit(EXIT_FAILURE, "mbuf pool: %s (try -m 1024)\n",
			 rte_strerror(rte_errno));
	sl_bench_setup_ports(e->app);
	*e->tight = *e->app;
	e->app->policy = sl_bench_policy(e->cfg, 1000000000, 1000);
	e->tight->policy = sl_bench_policy(e->cfg, 1, 3600000);
	e->cfg_keep = calloc(1, sizeof(*e->cfg_keep));
	e->tight_keep = calloc(1, sizeof(*e->tight_keep));
	if (e->cfg_keep == NULL || e->tight_keep == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	*e->cfg_keep = *e->cfg;
	e->cfg_keep->response.keep_alive = 1;
	*e->tight_keep = *e->tight;
	e->tight_keep->cfg = e->cfg_keep;
	e->tight_keep->policy = sl_bench_policy(e->cfg_keep, 1, 3600000);
	e->cfg_budget = calloc(1, sizeof(*e->cfg_budget));
	e->keep = calloc(1, sizeof(*e->keep));
	e->budget = calloc(1, sizeof(*e->budget));
	e->resp = calloc(o->packets, sizeof(*e->resp));
	if (e->cfg_budget == NULL || e->keep == NULL || e->budget == NULL ||
	    e->resp == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	*e->cfg_budget = *e->cfg_keep;
	e->cfg_budget->response.headers_on_allow = 1;
	*e->keep = *e->app;
	e->keep->cfg = e->cfg_keep;
	e->keep->policy = sl_bench_policy(e->cfg_keep, 1000000000, 1000);
	*e->budget = *e->app;
	e->budget->cfg = e->cfg_budget;
	e->budget->policy = sl_bench_policy(e->cfg_budget, 1000000000, 1000);
	e->cfg_cost = calloc(1, sizeof(*e->cfg_cost));
	e->cost = calloc(1, sizeof(*e->cost));
	if (e->cfg_cost == NULL || e->cost == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	*e->cfg_cost = *e->cfg_keep;
	*e->cost = *e->app;
	e->cost->cfg = e->cfg_cost;
	e->cost->policy = sl_bench_cost_policy(e->cfg_cost, 1000000000, 1000,
					       "X-RateLimit-Cost");
	/* a worker's tables are sized for the corpus (two flows and two
	 * buckets a request): 1M requests with every pass's would not fit */
	for (m = 0; m < M__N; m++)
		if (sl_bench_passes[m].setup != NULL && runs(o, m))
			e->w[m] = sl_bench_passes[m].setup(e);
	if (sl_bench_build_corpus(&e->c, o, NULL) != 0)
		rte_exit(EXIT_FAILURE, "out of memory\n");
}

int
main(int argc, char **argv)
{
	struct bopts o = {.workers = 1,
			  .flood = 1000000,
			  .packets = 32768,
			  .flows = 32768,
			  .keys = 100000,
			  .rounds = 15,
			  .zipf = 0.99,
			  .only = -1};
	struct bench_env e = {.o = &o};
	struct flood_result fr;
	uint64_t *t[M__N];
	double v[M__N];
	uint32_t diff;
	int m, ret;

	if (one_module(argc, argv, &ret))
		return ret;
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	for (m = ret; m < argc; m++) {
		int json = m + 1 < argc && strcmp(argv[m + 1], "--json") == 0;

		if (strcmp(argv[m], "--blocklist") == 0)
			return sl_bench_blocklist(json);
		if (strcmp(argv[m], "--hashcmp") == 0)
			return sl_bench_hashcmp(
				json, m + 2 < argc && strcmp(argv[m + 2],
							     "--small") == 0);
	}
	argv[ret] = argv[0];
	if (parse_bopts(argc - ret, argv + ret, &o) != 0 || o.flows < o.packets)
		usage();
	sl_logtype =
		rte_log_register_type_and_pick_level("sl.app", RTE_LOG_WARNING);
	setup(&e);
	for (m = 0; m < M__N; m++)
		t[m] = calloc(o.rounds, sizeof(uint64_t));
	run_rounds(&e, t);
	check_passes(&e);
	for (m = 0; m < M__N; m++)
		v[m] = sl_bench_median_per(t[m], o.rounds, e.c.n);
	if (o.only >= 0) {
		/* for profiles: one figure, to weigh the samples with */
		printf("{\"only\": \"%s\", \"cycles_per_request\": %.1f, "
		       "\"per_sec\": %.0f, \"packets\": %u, \"rounds\": %u",
		       sl_bench_passes[o.only].name, v[o.only],
		       (double)rte_get_tsc_hz() / v[o.only], e.c.n, o.rounds);
		if (o.only == M_LEASED)
			printf(", \"leased_asks_per_1000_requests\": %.1f",
			       leased_asks(&e));
		printf("}\n");
		rte_eal_cleanup();
		return 0;
	}
	diff = sl_bench_differential(&e);
	sl_bench_flood(&o, e.app, &fr);
	sl_bench_report(&o, &e.c, e.app, v, &e.w[M_KEEPALIVE]->latency, &fr,
			leased_asks(&e), diff);
	if (o.coord) {
		sl_bench_coord_run(&o, e.app, 1, "hot key, 10000/s");
		sl_bench_coord_run(&o, e.app, 100000,
				   "100000 keys, 10000/s each");
	}
	if (o.workers > 1)
		sl_bench_scale(&o, e.app);
	rte_eal_cleanup();
	return 0;
}

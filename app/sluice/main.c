/* SPDX-License-Identifier: BSD-3-Clause */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pdump.h>
#include <rte_telemetry.h>
#include <rte_version.h>

#include "coord.h"
#include "decisions.h"
#include "explain.h"
#include "notify.h"
#include "policy.h"
#include "redis.h"
#include "regions.h"
#include "sluice.h"
#include "store.h"
#include "version.h"
#include "why.h"

#define ERRBUF 8192

static volatile sig_atomic_t reload_requested;
static volatile sig_atomic_t quit_requested;

struct opts {
	const char *config;
	int check_only;
	const char *log_level;
	const char *explain; /* a request head to explain, "-": stdin */
	const char *peer;    /* its client address */
	int help, version;
	int strict; /* --check-config: warnings fail it */
	int rules;  /* --check-config: the compiled rules as JSON lines */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sluice [EAL args] -- --config FILE [--log-level "
		"LEVEL]\n"
		"       sluice -- --config FILE --check-config [--strict]\n"
		"       sluice -- --config FILE --explain HEAD_FILE|- [--peer "
		"ADDR]\n"
		"       sluice --version | -- --help\n"
		"\n"
		"  --config FILE      the rules and settings (YAML)\n"
		"  --check-config     validate FILE and exit (no EAL, no "
		"port)\n"
		"  --rules            with --check-config: each rule as the "
		"parser read it,\n"
		"                     one JSON line each (sluicectl diff)\n"
		"  --strict           with --check-config: a warning fails "
		"it (exit 1)\n"
		"  --log-level LEVEL  the sl.* log level (1-8, DPDK's)\n"
		"  --explain HEADS    how each request head (back to back) "
		"would be decided, then exit\n"
		"  --peer ADDR        the client address for --explain\n"
		"  --version          versions of sluice and DPDK, then exit\n"
		"  --help             this, then exit\n"
		"\n"
		"example:\n"
		"  sluice -l 0-2 -a 0000:03:00.0 -a 0000:03:00.1 -- --config "
		"/etc/sluice/sluice.yaml\n");
}

static void
version(void)
{
	printf("sluice %s (release %s), %s\n", SL_VERSION, SL_RELEASE,
	       rte_version());
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", no_argument, NULL, 'k'},
		{"strict", no_argument, NULL, 's'},
		{"rules", no_argument, NULL, 'r'},
		{"log-level", required_argument, NULL, 'l'},
		{"explain", required_argument, NULL, 'x'},
		{"peer", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'k':
			o->check_only = 1;
			break;
		case 's':
			o->strict = 1;
			break;
		case 'r':
			o->rules = 1;
			break;
		case 'l':
			o->log_level = optarg;
			break;
		case 'x':
			o->explain = optarg;
			break;
		case 'p':
			o->peer = optarg;
			break;
		case 'h':
			o->help = 1;
			break;
		case 'v':
			o->version = 1;
			break;
		default: /* getopt named the option */
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sluice: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	if (o->config == NULL && !o->help && !o->version)
		fprintf(stderr, "sluice: --config FILE is required\n");
	return o->config != NULL || o->help || o->version ? 0 : -1;
}

static void
warn_line(void *arg, uint32_t line, const char *msg)
{
	fprintf(stderr, "%s:%u: warning: %s\n", (const char *)arg, line, msg);
}

/* The rules as compiled, every default filled in: what sluicectl diff
 * compares with /sluice/rules (names are YAML-checked: no quotes). */
static void
print_rules(const struct sl_config *c)
{
	uint32_t i;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];

		printf("{\"name\":\"%s\",\"scope\":\"%s\",\"algorithm\":"
		       "\"%s\",\"limit\":%llu,\"period_ms\":%llu,\"burst\":"
		       "%llu,\"cost\":%u,\"shadow\":%s,\"global\":%s}\n",
		       r->name, sl_scope_name(r->scope), sl_algo_name(r->algo),
		       (unsigned long long)r->limit.count,
		       (unsigned long long)r->limit.period_ms,
		       (unsigned long long)r->burst, r->cost,
		       r->shadow ? "true" : "false",
		       r->global ? "true" : "false");
	}
}

/* Validates without EAL: --check-config must not touch any port. */
static int
check_config(const char *path, int strict, int rules)
{
	char err[ERRBUF];
	struct sl_config *c = sl_config_load(path, err, sizeof(err));
	uint32_t warned;

	if (c == NULL) {
		fputs(err, stderr);
		return 1;
	}
	warned = sl_config_lint(c, warn_line, (void *)path);
	if (strict && warned > 0) {
		fprintf(stderr, "%s: %u warning(s), refused (--strict)\n", path,
			warned);
		sl_config_free(c);
		return 1;
	}
	printf("OK rules=%u version=%s\n", c->n_rules, c->version);
	if (rules)
		print_rules(c);
	sl_config_free(c);
	return 0;
}

/* Wrong credentials said at start, plainly (the store then runs degraded
 * until they are fixed, as with a Redis that is down). */
static void
check_credentials(const struct sl_endpoint *e, const struct sl_redis_auth *a)
{
	redisContext *c =
		sl_redis_connect_sync(e->host, e->port, a, 1000, 1000);

	if (c != NULL) {
		SL_LOG(NOTICE, "store: authenticated to %s:%u", e->host,
		       e->port);
		redisFree(c);
	}
}

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		quit_requested = 1;
}

/* SIGHUP: the same reload as the telemetry command and the file watch. */
static void
reload(struct sl_app *app)
{
	char err[ERRBUF];
	struct sl_policy_peek pk;

	sl_decisions_reopen(app->decisions); /* after log rotation */
	if (sl_reload(app, err, sizeof(err)) == 0) {
		sl_policy_peek(app, &pk);
		SL_LOG(NOTICE, "reload (SIGHUP): rules version %s%s%s",
		       pk.version, err[0] ? "; " : "", err);
	} else
		SL_LOG(ERR, "reload (SIGHUP) refused, running rules kept:\n%s",
		       err);
}

static void
print_final(void)
{
	struct sl_counters c;
	struct sl_flow_stats f;

	sl_telemetry_sum(&c, &f);
	printf("sluice: final rx=%lu tx=%lu tx_dropped=%lu passthrough=%lu "
	       "requests=%lu allowed=%lu rejected=%lu blocked=%lu invalid=%lu "
	       "malformed=%lu flows_created=%lu flows_evicted=%lu\n",
	       c.rx, c.tx, c.tx_dropped, c.passthrough, c.requests, c.allowed,
	       c.rejected, c.blocked, c.invalid, c.malformed, f.created,
	       f.evicted);
	fflush(stdout);
}

/* The node's authority table: room for every worker's keys twice over. */
static uint32_t
node_capacity(const struct sl_config *cfg)
{
	return cfg->dataplane.buckets_per_worker * 2;
}

/*
 * dataplane.state_dir: the node's buckets found where the last process
 * left them (a restart grants nothing), the clock going on from theirs by
 * the wall time since; else kept there from now on. Before any worker
 * or store reads the clock.
 */
static void
keep_state(struct sl_app *app)
{
	const char *dir = app->cfg->dataplane.state_dir;
	uint32_t cap = node_capacity(app->cfg);
	uint64_t now;
	int rc;

	if (dir[0] == '\0')
		return;
	if (sl_coord_state_resumed(dir, cap, sl_state_wall_ns(), &now) == 0)
		sl_app_set_epoch(app, (int64_t)now - (int64_t)sl_tsc_ns(
							     app, rte_rdtsc()));
	rc = sl_coord_keep_state(app->coord, dir, cap,
				 sl_tsc_ns(app, rte_rdtsc()));
	if (rc != 0)
		SL_LOG(WARNING,
		       "state_dir %s: cannot keep the buckets there (%s): "
		       "in memory only, a restart starts them full",
		       dir, strerror(-rc));
	else if (app->coord->carried != UINT32_MAX)
		SL_LOG(INFO,
		       "state_dir %s: %u buckets carried over from a table of "
		       "%u (buckets_per_worker changed)",
		       dir, app->coord->carried, app->coord->carried_from);
	else
		SL_LOG(INFO, "state_dir %s: buckets %s", dir,
		       app->coord->file.found
			       ? "found as the last process left them"
			       : "started afresh");
}

/* Starts the workers; views (RTE_MAX_LCORE, the caller's for the whole
 * run): what the control path may read of each. */
static struct sl_worker *
start_workers(struct sl_app *app, unsigned int *n_out,
	      struct sl_worker_view *views)
{
	struct sl_telemetry_src src[RTE_MAX_LCORE];
	struct sl_worker *ws;
	unsigned int lcore, n = 0;

	ws = rte_zmalloc("sl_workers", sizeof(*ws) * app->n_queues,
			 RTE_CACHE_LINE_SIZE);
	if (ws == NULL)
		rte_exit(EXIT_FAILURE, "cannot allocate workers\n");
	RTE_LCORE_FOREACH_WORKER(lcore)
	{
		if (n == app->n_queues)
			break;
		if (sl_worker_init(&ws[n], app, lcore, (uint16_t)n, 0) != 0)
			rte_exit(EXIT_FAILURE,
				 "cannot allocate the flow table of lcore %u "
				 "(flows_per_worker too large?)\n",
				 lcore);
		src[n] = (struct sl_telemetry_src){.lcore = lcore,
						   .ctr = &ws[n].ctr,
						   .flows = ws[n].flows,
						   .buckets = ws[n].buckets,
						   .leases = ws[n].leases,
						   .rules = ws[n].rules,
						   .health = ws[n].hl,
						   .top = &ws[n].top,
						   .latency = &ws[n].latency,
						   .tiers = ws[n].tiers_ctr,
						   .beat = &ws[n].beat};
		views[n] = (struct sl_worker_view){.lcore = lcore,
						   .ctr = &ws[n].ctr,
						   .park_latency =
							   &ws[n].park_latency,
						   .dec_ring = &ws[n].dec_ring,
						   .beat = &ws[n].beat,
						   .probe = &ws[n].probe};
		n++;
	}
	if (sl_telemetry_register(src, n) != 0)
		SL_LOG(WARNING, "telemetry commands not registered");
	/* the workers' decision rings exist before any worker runs */
	if (sl_decisions_create(app->cfg, app, views, n, &app->decisions) !=
		    0 ||
	    sl_decisions_start(app->decisions) != 0)
		rte_exit(EXIT_FAILURE, "decisions: cannot open %s\n",
			 app->cfg->decisions.file);
	for (lcore = 0; lcore < n; lcore++)
		rte_eal_remote_launch(sl_worker_main, &ws[lcore],
				      ws[lcore].lcore);
	*n_out = n;
	return ws;
}

/*
 * The watchdog's ping, sent only while every worker has completed a loop
 * within half the interval: a worker stuck in a loop (or a lock it must
 * never take) stops the pings, and systemd restarts the appliance. A
 * stall is logged once, when it is seen.
 */
static void
watchdog(const struct sl_worker_view *vs, unsigned int n, uint64_t limit_us,
	 int *stalled)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t age = sl_telemetry_loop_age_us(vs[i].beat);

		if (age > limit_us) {
			if (!*stalled)
				SL_LOG(ERR,
				       "worker lcore %u has completed no loop "
				       "for %" PRIu64 " ms: no watchdog ping",
				       vs[i].lcore, age / 1000);
			*stalled = 1;
			return;
		}
	}
	*stalled = 0;
	sl_notify("WATCHDOG=1");
}

#ifndef NDEBUG
/*
 * Debug builds only: /sluice/stall,I,MS stops worker I (its index) for MS
 * milliseconds, once, as a worker stuck in a bug would be: what the
 * watchdog's test needs, and nothing a release appliance answers.
 */
struct stall_ctx {
	struct sl_worker *ws;
	unsigned int n;
};

static int
cmd_stall(void *ctx, const char *params, struct rte_tel_data *d)
{
	const struct stall_ctx *c = ctx;
	unsigned int i, ms;

	if (params == NULL || sscanf(params, "%u,%u", &i, &ms) != 2 ||
	    i >= c->n)
		return -EINVAL;
	__atomic_store_n(&c->ws[i].stall_ms, ms, __ATOMIC_RELAXED);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "lcore", c->ws[i].lcore);
	rte_tel_data_add_dict_u64(d, "ms", ms);
	return 0;
}
#endif

static void
main_loop(struct sl_app *app, volatile sig_atomic_t *reload_flag,
	  const struct sl_worker_view *vs, unsigned int n_workers)
{
	uint64_t hz = rte_get_tsc_hz(), next = rte_rdtsc(), idle = 0;
	uint64_t wd_us = sl_notify_watchdog_us(), wd_next = 0;
	uint64_t wd_tsc = wd_us * (hz / 1000000) / 2;
	uint32_t ticks = 0;
	int stalled = 0;

	while (!quit_requested) {
		uint64_t now = rte_rdtsc();

		/* the coordinator answers within microseconds while busy */
		if (sl_coord_poll(app->coord, sl_tsc_ns(app, now)) > 0)
			idle = 0;
		else if (++idle > 1024)
			rte_delay_us_sleep(20);
		if (now < next)
			continue;
		next = now + hz / 20;
		if (*reload_flag) {
			*reload_flag = 0;
			reload(app);
		}
		if (app->rulesync != NULL)
			sl_rulesync_poll(app->rulesync, sl_tsc_ns(app, now));
		if (app->slicesync != NULL)
			sl_slicesync_poll(app->slicesync, sl_tsc_ns(app, now));
		if (++ticks % 20 == 0)
			sl_reload_poll(app);
		if (wd_us != 0 && now >= wd_next) {
			watchdog(vs, n_workers, wd_us / 2, &stalled);
			wd_next = now + wd_tsc / 2;
		}
	}
}

/* An option of sluice's own, not EAL's. */
static int
app_opt(const char *a)
{
	static const char *const own[] = {"--config",  "--check-config",
					  "--explain", "--strict",
					  "--rules",   "--peer"};
	size_t i, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		n = strlen(own[i]);
		if (strncmp(a, own[i], n) == 0 && (a[n] == '\0' || a[n] == '='))
			return 1;
	}
	return 0;
}

static int
run_eal_free(const struct opts *o)
{
	if (o->help)
		usage(stdout);
	else if (o->version)
		version();
	if (o->help || o->version)
		return 0;
	if (o->check_only)
		return check_config(o->config, o->strict, o->rules);
	return sl_explain(o->config, o->explain,
			  o->peer ? o->peer : "198.18.0.1");
}

/*
 * What sluice does without EAL, said before EAL starts (it would leave
 * its runtime directory behind, and refuse sluice's options with its
 * whole usage, 111 lines): --help, --version, --check-config and
 * --explain, after "--" or, with no EAL arguments, without it. Returns
 * the exit code, or -1 when the command line starts the appliance.
 */
static int
eal_free(int argc, char **argv)
{
	struct opts o = {0};
	int dd, own = 0, bad;
	char *sep;

	for (dd = 1; dd < argc && strcmp(argv[dd], "--") != 0; dd++) {
		if (strcmp(argv[dd], "--version") == 0 ||
		    strcmp(argv[dd], "--help") == 0 ||
		    strcmp(argv[dd], "-h") == 0) {
			o.version = argv[dd][2] == 'v';
			o.help = !o.version;
			return run_eal_free(&o);
		}
		own |= app_opt(argv[dd]);
	}
	if (own && dd == argc) {
		/* no "--": every argument sluice's, in a mode without EAL */
		opterr = 0;
		bad = parse_opts(argc, argv, &o);
		opterr = 1;
		if (bad == 0 && (o.check_only || o.explain != NULL))
			return run_eal_free(&o);
	}
	if (own) {
		fprintf(stderr,
			"sluice: sluice's options go after '--' (sluice [EAL "
			"args] -- --config FILE ...)\n");
		return 1;
	}
	if (dd == argc) {
		fprintf(stderr, "sluice: --config FILE is required (sluice "
				"[EAL args] -- --config FILE; --help)\n");
		return 1;
	}
	sep = argv[dd];
	argv[dd] = (char *)"sluice"; /* getopt's name in its errors */
	bad = parse_opts(argc - dd, argv + dd, &o);
	argv[dd] = sep; /* EAL still needs it */
	if (bad) {
		usage(stderr);
		return 1;
	}
	if (o.help || o.version || o.check_only || o.explain != NULL)
		return run_eal_free(&o);
	return -1;
}

/*
 * The ports forward once every worker has faulted its tables in and
 * completed a loop (a million-flow table takes a while): said then to
 * systemd and the log, with the time from exec, which is what a restart
 * costs the traffic. A worker that never loops is the watchdog's: READY
 * goes after a minute regardless.
 */
static void
announce_ready(const struct sl_worker_view *v, unsigned int n)
{
	uint64_t end = rte_get_timer_cycles() + 60 * rte_get_timer_hz();
	unsigned int i = 0;
	char msg[96];
	int64_t ms;

	while (i < n && !quit_requested && rte_get_timer_cycles() < end) {
		if (__atomic_load_n(v[i].beat, __ATOMIC_RELAXED) != 0)
			i++;
		else
			rte_delay_us_sleep(1000);
	}
	ms = sl_since_exec_ms();

	SL_LOG(NOTICE, "forwarding %lld ms after exec", (long long)ms);
	snprintf(msg, sizeof(msg),
		 "READY=1\nSTATUS=forwarding (%lld ms after exec)",
		 (long long)ms);
	sl_notify(msg);
}

int
main(int argc, char **argv)
{
	struct opts o = {0};
	struct sl_app app;
	struct sl_config *cfg;
	struct sl_worker *ws;
	struct sl_why *why;
	struct sl_worker_view views[RTE_MAX_LCORE];
	char err[ERRBUF];
	unsigned int n_workers, i;
	int ret;

	ret = eal_free(argc, argv);
	if (ret >= 0)
		return ret;
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	argc -= ret;
	argv += ret;
	argv[0] = (char *)"sluice";
	memset(&o, 0, sizeof(o));
	if (parse_opts(argc, argv, &o) != 0) {
		usage(stderr);
		rte_exit(EXIT_FAILURE, "bad arguments\n");
	}
	sl_logtype =
		rte_log_register_type_and_pick_level("sl.app", RTE_LOG_INFO);
	if (o.log_level != NULL &&
	    rte_log_set_level_pattern("sl.*", atoi(o.log_level)) != 0)
		SL_LOG(WARNING, "bad --log-level %s", o.log_level);
	/* dpdk-dumpcap and dpdk-pdump attach as secondary processes and
	 * ask for copies of what the ports receive and send: "what exactly
	 * did the client send?" answered on a running appliance */
	if (rte_pdump_init() != 0)
		SL_LOG(WARNING, "packet capture not available: %s",
		       rte_strerror(rte_errno));
	cfg = sl_config_load(o.config, err, sizeof(err));
	if (cfg == NULL) {
		fputs(err, stderr);
		rte_exit(EXIT_FAILURE, "invalid configuration\n");
	}
	sl_app_setup(&app, cfg);
	app.quit = &quit_requested;
	app.policy = sl_policy_build(cfg);
	if (app.policy == NULL)
		rte_exit(EXIT_FAILURE, "cannot compile the rules\n");
	app.config_path = o.config;
	if (sl_reload_init(&app) != 0)
		rte_exit(EXIT_FAILURE, "cannot set up live reload\n");
	if (rte_lcore_count() < 2)
		rte_exit(EXIT_FAILURE,
			 "need at least 2 lcores (main + worker)\n");
	app.pool = rte_pktmbuf_pool_create("sl_mbufs", cfg->dataplane.mbufs,
					   256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   rte_socket_id());
	if (app.pool == NULL)
		rte_exit(EXIT_FAILURE, "cannot create the mbuf pool: %s\n",
			 rte_strerror(rte_errno));
	if (sl_ports_init(&app, (uint16_t)(rte_lcore_count() - 1)) != 0)
		rte_exit(EXIT_FAILURE, "port setup failed\n");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	/* the node's authority for every limit, shared by the workers */
	app.holders = app.n_queues * app.expected;
	sl_app_set_coord(&app,
			 sl_coord_create(app.n_queues, node_capacity(cfg)));
	if (app.coord == NULL)
		rte_exit(EXIT_FAILURE, "cannot create the coordinator\n");
	keep_state(&app);
	app.coord->div_open = app.expected;
	app.coord->div_strict = app.holders;
	if (cfg->store.present) {
		const struct sl_endpoint *e = &cfg->store.endpoints[0];

		struct sl_store_conf sc = {.seeds = cfg->store.endpoints,
					   .n_seeds = cfg->store.n_endpoints,
					   .cluster = cfg->store.cluster,
					   .timeout_ms = cfg->store.timeout_ms,
					   .probe_ms =
						   cfg->store.probe_interval_ms,
					   .refresh_ms = cfg->store.refresh_ms};

		sl_redis_auth_set(&sc.auth, cfg->store.username,
				  cfg->store.password);
		if (sc.auth.pass[0] != '\0')
			check_credentials(e, &sc.auth);

		if (sl_coord_attach_store(app.coord, &sc) != 0)
			rte_exit(EXIT_FAILURE, "cannot create the store\n");
		snprintf(app.coord->keys_hash, sizeof(app.coord->keys_hash),
			 "%s", cfg->store.keys_hash);
		SL_LOG(NOTICE, "store: Redis%s at %s:%u",
		       cfg->store.cluster ? " Cluster" : "", e->host, e->port);
		app.rulesync = sl_rulesync_create(
			&app, e->host, e->port, &sc.auth,
			cfg->store.rules_channel, cfg->store.reconcile_ms);
		/* slices are given per region: none without one */
		if (cfg->store.region[0] != '\0' &&
		    (app.slicesync = sl_slicesync_create(&app, app.coord->store,
							 e->host, e->port,
							 &sc.auth)) == NULL)
			rte_exit(EXIT_FAILURE, "cannot follow the slices\n");
	}
	ws = start_workers(&app, &n_workers, views);
	sl_telemetry_set_authority(app.coord->state);
	if (sl_coord_telemetry(app.coord, views, n_workers) != 0)
		SL_LOG(WARNING, "/sluice/store not registered");
	/* the authority answers probes only where workers lease from it */
	why = sl_why_start(&app, views, n_workers,
			   app.lanes != NULL ? &app.coord->probe : NULL);
	if (why == NULL)
		SL_LOG(WARNING, "/sluice/why not registered");
	SL_LOG(NOTICE, "running: %u worker(s), rules=%u version=%s", n_workers,
	       cfg->n_rules, cfg->version);
#ifndef NDEBUG
	static struct stall_ctx stall;

	stall = (struct stall_ctx){.ws = ws, .n = n_workers};
	sl_telemetry_cmd(
		"/sluice/stall", cmd_stall, &stall,
		"Debug builds: stops worker I for MS ms. Params: I,MS");
#endif
	announce_ready(views, n_workers);
	main_loop(&app, &reload_requested, views, n_workers);
	rte_eal_mp_wait_lcore();
	sl_decisions_stop(app.decisions);
	print_final();
	sl_ports_close(&app);
	sl_telemetry_set_authority(NULL);
	sl_why_free(why);
	sl_coord_free(app.coord);
	sl_slicesync_free(app.slicesync);
	sl_rulesync_free(app.rulesync);
	for (i = 0; i < n_workers; i++)
		sl_worker_free(&ws[i]);
	sl_reload_free(&app);
	sl_policy_free(app.policy);
	rte_free(ws);
	sl_config_free(cfg);
	rte_pdump_uninit();
	rte_eal_cleanup();
	return 0;
}

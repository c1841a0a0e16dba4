/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --workers N: every lcore runs the keep-alive pass at once.
 */
#include "bench.h"

/*
 * Scaling: every lcore runs the keep-alive decision pass over its own
 * copy of the corpus at the same time, on its own queue; each times only
 * its passes, so the sum of their rates is the appliance's with that many
 * workers sharing caches and memory bandwidth.
 */
struct scale_job {
	struct sl_worker *w;
	struct corpus c;
	uint32_t rounds;
	uint64_t cycles;
	volatile uint32_t *start;
};

static int
scale_run(void *arg)
{
	struct scale_job *j = arg;
	uint32_t r;

	while (!*j->start)
		rte_pause();
	for (r = 0; r <= j->rounds; r++) {
		uint64_t d;

		sl_bench_set_round(&j->c, r);
		sl_bench_prime(j->w, j->c.m, j->c.n, r == 0);
		d = sl_bench_pass_worker(j->w, &j->c);
		if (r > 0)
			j->cycles += d;
	}
	return 0;
}

static struct scale_job *
scale_setup(const struct bopts *o, struct sl_app *app)
{
	static struct scale_job jobs[RTE_MAX_LCORE];
	unsigned int lc, n = 0;

	RTE_LCORE_FOREACH(lc)
	{
		struct scale_job *j = &jobs[n];

		if (n == o->workers)
			break;
		j->w = sl_bench_worker(app, 0);
		j->w->queue = (uint16_t)n;
		j->w->lcore = lc;
		j->rounds = o->rounds;
		sl_bench_seed(
			0x9e3779b97f4a7c15ULL); /* the same corpus for all */
		if (sl_bench_build_corpus(&j->c, o, app->pool) != 0)
			rte_exit(EXIT_FAILURE,
				 "scale: out of mbufs (try -m 2048)\n");
		n++;
	}
	if (n < o->workers)
		rte_exit(EXIT_FAILURE, "--workers %u needs %u lcores (-l)\n",
			 o->workers, o->workers);
	return jobs;
}

/* Runs n workers at once; returns their summed rate (requests/s). */
static double
scale_run_n(struct scale_job *jobs, uint32_t n, const struct sl_app *app,
	    double *per_worker)
{
	volatile uint32_t start = 0;
	double total = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		jobs[i].start = &start;
		jobs[i].cycles = 0;
		sl_worker_reset_flows(jobs[i].w);
	}
	for (i = 1; i < n; i++)
		rte_eal_remote_launch(scale_run, &jobs[i], jobs[i].w->lcore);
	start = 1;
	scale_run(&jobs[0]);
	rte_eal_mp_wait_lcore();
	for (i = 0; i < n; i++) {
		per_worker[i] = (double)app->tsc_hz * jobs[i].c.n *
				jobs[i].rounds / (double)jobs[i].cycles;
		total += per_worker[i];
	}
	return total;
}

void
sl_bench_scale(const struct bopts *o, struct sl_app *app)
{
	struct scale_job *jobs = scale_setup(o, app);
	double per[RTE_MAX_LCORE], one, total;
	uint32_t i;

	one = scale_run_n(jobs, 1, app, per);
	total = scale_run_n(jobs, o->workers, app, per);
	if (!o->json) {
		printf("scale: 1 worker %.2f Mreq/s; %u workers %.2f "
		       "Mreq/s (",
		       one / 1e6, o->workers, total / 1e6);
		for (i = 0; i < o->workers; i++)
			printf("%s%.2f", i ? " " : "", per[i] / 1e6);
		printf("), speedup %.2f\n", total / one);
	}
	printf("{\"workers\": %u, \"scale_mreq_per_sec_1\": %.3f, "
	       "\"scale_mreq_per_sec\": %.3f, \"scale_speedup\": "
	       "%.2f}\n",
	       o->workers, one / 1e6, total / 1e6, total / one);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --flood N: spoofed sources never grow the memory.
 */
#include "bench.h"

static uint64_t
rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;

	if (f != NULL) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

static const char flood_req[] = "GET /v1/flood HTTP/1.1\r\nHost: api\r\n\r\n";

/*
 * Requests from n distinct client addresses through one worker. Each
 * frame is written whole every time: the worker may have made the last
 * one sent from that mbuf into a reply in place (a probe of a flow
 * picked up mid-stream has no payload), and every later frame would
 * have been that.
 */
static void
flood_pass(struct sl_worker *w, struct rte_mbuf **m, uint32_t from, uint32_t n)
{
	uint32_t i, k;

	for (i = 0; i < n; i += SL_BURST) {
		uint32_t b = RTE_MIN((uint32_t)SL_BURST, n - i);

		for (k = 0; k < b; k++) {
			uint8_t *f;
			uint32_t a = from + i + k;
			struct sl_pkt p;

			sl_bench_write_frame(m[k], 0, flood_req,
					     (int)sizeof(flood_req) - 1);
			f = rte_pktmbuf_mtod(m[k], uint8_t *);
			/* synthetic, never sent: any address will do */
			f[26] = (uint8_t)(a >> 24);
			f[27] = (uint8_t)(a >> 16);
			f[28] = (uint8_t)(a >> 8);
			f[29] = (uint8_t)a;
			sl_bench_sum_frame(f, m[k]->data_len, &p);
			rte_mbuf_refcnt_update(m[k], 1); /* a flow may hold */
		}
		sl_bench_prime(w, m, b, 1);
		w->now = rte_rdtsc();
		sl_worker_burst(w, m, (uint16_t)b, 0);
		sl_worker_flush(w);
	}
}

/*
 * Memory under a flood of distinct client addresses, with the default
 * table sizes and one rule per client address: resident size once the
 * tables are full, and again after the flood. It must not grow.
 */
void
sl_bench_flood(const struct bopts *o, struct sl_app *base,
	       struct flood_result *fr)
{
	struct sl_config *cfg = calloc(1, sizeof(*cfg));
	struct sl_app *app = calloc(1, sizeof(*app));
	struct sl_rule *r = calloc(1, sizeof(*r));
	struct rte_mbuf *m[SL_BURST];
	struct sl_worker *w;
	uint32_t cap;

	sl_config_defaults(cfg);
	sl_app_setup(app, cfg);
	app->pool = base->pool;
	app->port[0] = base->port[0];
	app->port[1] = base->port[1];
	sl_rule_defaults(r);
	strcpy(r->name, "per-ip");
	r->scope = SL_SCOPE_IP;
	r->limit = (struct sl_rate){100, 60000};
	r->burst = 100;
	cfg->rules = r;
	cfg->n_rules = 1;
	app->policy = sl_policy_build(cfg);
	cfg->rules = NULL;
	cfg->n_rules = 0;
	w = sl_bench_worker(app, 0);
	if (app->policy == NULL ||
	    rte_pktmbuf_alloc_bulk(app->pool, m, SL_BURST))
		rte_exit(EXIT_FAILURE, "flood: out of memory\n");
	cap = RTE_MAX(cfg->dataplane.flows_per_worker,
		      cfg->dataplane.buckets_per_worker);
	flood_pass(w, m, 0x0a000000u, cap + cap / 2); /* fill both tables */
	fr->rss_kb_before = rss_kb();
	flood_pass(w, m, 0x0b000000u, o->flood);
	fr->rss_kb_after = rss_kb();
	if (w->ctr.allowed < (uint64_t)o->flood)
		rte_exit(EXIT_FAILURE,
			 "flood: only %lu of %u requests decided\n",
			 w->ctr.allowed, o->flood);
	fr->flows_evicted = sl_flow_stats(w->flows)->evicted;
	fr->buckets_evicted = sl_bucket_stats(w->buckets)->evicted;
	fr->head_pool_bytes = sl_flow_head_pool_bytes(w->flows);
	fr->bytes_per_flow =
		(double)(sl_flow_table_bytes(w->flows) - fr->head_pool_bytes) /
		cfg->dataplane.flows_per_worker;
	fr->bytes_per_bucket = (double)sl_bucket_table_bytes(w->buckets) /
			       cfg->dataplane.buckets_per_worker;
	rte_pktmbuf_free_bulk(m, SL_BURST);
}

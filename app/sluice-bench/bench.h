/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

/*
 * sluice-bench's own parts: the corpus (corpus.c), the workers each pass
 * times (workers.c), the passes and their table (passes.c), the report
 * (report.c) and the runs besides the table: --coord (leases.c),
 * --workers (scale.c), --flood (flood.c); --norm, --stream and
 * --blocklist time one module alone (norm.c, stream.c, blocklist.c).
 */

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "coord.h"
#include "policy.h"
#include "sluice.h"
#include "rnd.h"
#include "sl_decision.h"
#include "store.h"

struct bopts {
	int coord;
	uint16_t redis_port; /* --coord against a live redis-server */
	uint32_t rate;       /* --coord: requests/s offered; 0: flat out */
	uint32_t workers;
	uint32_t flood;
	uint32_t packets;
	uint32_t flows;
	uint32_t keys;
	uint32_t rounds;
	double zipf;
	int json;
	int only; /* --only: the one pass to run (for profiles); -1: all */
};

struct corpus {
	struct rte_mbuf **m;
	uint8_t **pristine; /* each frame as built: rejects overwrite them */
	uint32_t n;
	uint32_t *flow_of;    /* flow index of each packet */
	uint32_t *seq0;       /* sequence number in round 0 */
	uint32_t *flow_bytes; /* payload bytes per flow per round */
	uint64_t head_bytes;
	/*
	 * The corpus's own pool (NULL: its mbufs came from a shared one).
	 * A pass frees each mbuf once, and the next round takes it back
	 * out of the pool, so the worker meets a count of one, as an
	 * appliance's received mbuf is (sl_bench_set_round).
	 */
	struct rte_mempool *pool;
	uint8_t lent; /* set_round lent them to a pass since */
};

/* What the flood measured. */
struct flood_result {
	uint64_t rss_kb_before, rss_kb_after, flows_evicted, buckets_evicted;
	double bytes_per_flow, bytes_per_bucket;
	uint64_t head_pool_bytes; /* per worker, whatever the flows */
};

/* The passes, in the order of the table and the report. */
enum {
	M_FWD,
	M_PASS,
	M_FLOW,
	M_PARSE_FLOW,
	M_PARSE_FLOW_OFFLOAD,
	M_KEEPALIVE,
	M_KEEPALIVE_ACKED,
	M_KEEPALIVE_PLAIN,
	M_KEEPALIVE_OFFLOAD,
	M_ALLOW,
	M_REJECT,
	M_REJECT_KEEP,
	M_SAMPLE,
	M_LEASED,
	M_RESPOND,
	M_RESPOND_BUDGET,
	M_RESPOND_COST,
	M_PARSE_ALONE,
	M_SCAN,
	M__N
};

/* What every pass runs in: one corpus, the apps, a worker per pass. */
struct bench_env {
	const struct bopts *o;
	struct sl_config *cfg;
	struct sl_app *app;   /* limits that allow everything */
	struct sl_app *tight; /* one that refuses everything after round 0 */
	/* the same with response.keep_alive: a 429 keeps the connection */
	struct sl_app *tight_keep;
	struct sl_config *cfg_keep;
	/* limits that allow everything, with keep_alive, and with it and
	 * headers_on_allow (every allowed response given its budget) */
	struct sl_app *keep, *budget;
	struct sl_config *cfg_budget;
	/* keep_alive, and a rule whose cost the response says */
	struct sl_app *cost;
	struct sl_config *cfg_cost;
	struct rte_mbuf **resp; /* a round's server responses */
	struct corpus c;
	struct sl_worker *w[M__N];
	uint64_t found;          /* the scan's blank lines */
	uint64_t parsed;         /* heads the parser alone completed */
	uint64_t parsed_flow[2]; /* and those the parse-and-flow passes did */
	/* the leased pass's asks and requests before its timed rounds */
	uint64_t asks0, requests0;
	uint64_t leased_end; /* TSC at its last round's end */
};

/*
 * One row of the table: its --only name and report label, the worker it
 * times (NULL: none), one round (returns the timed cycles), and what it
 * must have decided over all rounds (NULL: no check; else an error).
 */
struct bench_pass {
	const char *name;
	const char *label;
	struct sl_worker *(*setup)(struct bench_env *e);
	uint64_t (*round)(struct bench_env *e, int m, uint32_t r);
	const char *(*check)(const struct bench_env *e, int m, char *buf,
			     size_t len);
};

extern const struct bench_pass sl_bench_passes[M__N];

/* corpus.c */
void sl_bench_seed(uint64_t seed);
void sl_bench_set_round(struct corpus *c, uint32_t round);
/* The pass after set_round freed none of the mbufs (it only read them). */
void sl_bench_kept(struct corpus *c);
void sl_bench_write_frame(struct rte_mbuf *m, uint32_t flow, const char *head,
			  int hlen);
/* The same frame into f (54 + hlen bytes), checksums not set. */
void sl_bench_frame_bytes(uint8_t *f, uint32_t flow, const char *head,
			  int hlen);
/* Sets a built frame's IPv4 and TCP checksums; p: the frame, parsed. */
enum sl_pkt_class sl_bench_sum_frame(uint8_t *f, uint32_t len,
				     struct sl_pkt *p);
/* mp NULL: the corpus makes a pool of its own (struct corpus). */
int sl_bench_build_corpus(struct corpus *c, const struct bopts *o,
			  struct rte_mempool *mp);
/* The server's first response on request frame data's connection. */
void sl_bench_response_frame(struct rte_mbuf *out, const struct rte_mbuf *data,
			     const char *payload, uint32_t len);
void sl_bench_prime(struct sl_worker *w, struct rte_mbuf **data, uint32_t n,
		    int open);
/*
 * The server's ACK of all of round r's bytes, after its pass: the frames
 * built first, the worker's part timed (returned). Every hold of the
 * round is let go before another pass meets the same mbufs.
 */
uint64_t sl_bench_acks(struct sl_worker *w, const struct corpus *c, uint32_t r);

/* workers.c */
struct sl_worker *sl_bench_worker(const struct sl_app *app, int track_only);
/* The bench's rule: a token bucket per API key, count per period_ms. */
void sl_bench_rule(struct sl_rule *r, uint64_t count, uint64_t period_ms);
struct sl_policy *sl_bench_policy(struct sl_config *cfg, uint64_t count,
				  uint64_t period_ms);
struct sl_policy *sl_bench_cost_policy(struct sl_config *cfg, uint64_t count,
				       uint64_t period_ms,
				       const char *cost_header);
struct sl_worker *sl_bench_passthrough_worker(const struct sl_app *app);
struct sl_worker *sl_bench_leased_worker(const struct sl_app *app,
					 struct sl_config *cfg);
uint32_t sl_bench_c_n_ring(const struct bopts *o);
struct sl_worker *sl_bench_sampling_worker(const struct sl_app *app,
					   struct sl_config *cfg,
					   uint32_t ring);
struct sl_app *sl_bench_app_copy(const struct sl_app *app);
void sl_bench_answer_all(const struct sl_app *app, struct sl_worker *w);
void sl_bench_drain_samples(struct sl_worker *w);
void sl_bench_answer_once(const struct sl_app *app, struct sl_worker *w);
void sl_bench_setup_ports(struct sl_app *app);
void sl_bench_with_coordinator(struct sl_app *a, uint32_t capacity);

/* diff.c: the burst path's decisions against one frame at a time;
 * returns how many were compared (exits where any differs) */
uint32_t sl_bench_differential(struct bench_env *e);

/* passes.c */
uint64_t sl_bench_pass_worker(struct sl_worker *w, struct corpus *c);
uint64_t sl_bench_pass_leased(struct sl_worker *w, struct corpus *c);
uint64_t sl_bench_pass_forward(const struct sl_app *app, struct corpus *c);
double sl_bench_median_per(uint64_t *v, uint32_t n, uint32_t per);
uint64_t sl_bench_pass_scan(struct corpus *c, uint64_t *found);

/* leases.c */
void sl_bench_coord_run(const struct bopts *o, struct sl_app *base,
			uint32_t keys, const char *label);

/* scale.c: --workers N, its report printed */
void sl_bench_scale(const struct bopts *o, struct sl_app *app);

/* flood.c */
void sl_bench_flood(const struct bopts *o, struct sl_app *base,
		    struct flood_result *fr);

/* report.c */
void sl_bench_report(const struct bopts *o, const struct corpus *c,
		     const struct sl_app *app, double *v,
		     const struct sl_hist *lat, const struct flood_result *fr,
		     double leased_asks, uint32_t diff);

#endif /* SLUICE_BENCH_H */

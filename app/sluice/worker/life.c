/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's tables: made at start (on its lcore's node), made again
 * (benchmarks), faulted in before traffic, freed at the end.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "dp.h"

/* A connection with records waiting for its responses ends. */
static void
flow_gone(void *arg, struct sl_flow *f)
{
	struct sl_worker *w = arg;

	sl_health_gone(w, f);
	sl_cost_abandoned(w, f);
}

/*
 * Decided bytes held by their mbuf's reference count until the server
 * acknowledges them (sl_flow_hold): the clean path computes no digest.
 * The handle is the mbuf with the range's offset in its top 16 bits
 * (user addresses fit in 48). Only the segment being read can be held,
 * its bytes in its first buffer, and no more than a share of the pool:
 * past it the digest is kept.
 */
static uint64_t
hold_keep(void *arg, const uint8_t *p, uint32_t n)
{
	struct sl_worker *w = arg;
	struct rte_mbuf *m = w->hold_m;
	const uint8_t *d;

	if (m == NULL || ((uintptr_t)m >> 48) != 0)
		return 0;
	if (w->rec_held >= w->rec_held_max) {
		w->ctr.decided_share_full++;
		return 0;
	}
	d = rte_pktmbuf_mtod(m, const uint8_t *);
	if (p < d || p + n > d + m->data_len || p - d > UINT16_MAX)
		return 0;
	rte_mbuf_refcnt_update(m, 1);
	w->rec_held++;
	w->ctr.decided_held++;
	return (uint64_t)(p - d) << 48 | (uintptr_t)m;
}

static struct rte_mbuf *
held_mbuf(uint64_t h)
{
	return (struct rte_mbuf *)(uintptr_t)(h & ((1ULL << 48) - 1));
}

static const uint8_t *
hold_bytes(void *arg, uint64_t h)
{
	(void)arg;
	return rte_pktmbuf_mtod(held_mbuf(h), const uint8_t *) + (h >> 48);
}

/*
 * Freed a burst later: by the server's ACK the mbuf's header (its count
 * in the first line, its chain in the second) has left the cache, and
 * the release's load of it was most of what the ACK cost; asked for at
 * the end of this burst, it has come in by the end of the next. Asked
 * for at once and freed at this burst's end, the prefetch waited for
 * the burst's own outstanding misses instead (BENCHMARKS.md).
 */
static void
hold_release(void *arg, uint64_t h)
{
	struct sl_worker *w = arg;
	struct rte_mbuf *m = held_mbuf(h);

	if (unlikely(w->n_let_go == SL_LET_GO_MAX)) {
		rte_pktmbuf_free(m);
		w->rec_held--;
		return;
	}
	w->let_go[w->n_let_go++] = m;
}

/* n of them freed: the share counts mbufs kept out of the pool, those
 * waiting for their free too */
static void
free_held(struct sl_worker *w, struct rte_mbuf **m, uint16_t n)
{
	if (n == 0)
		return;
	rte_pktmbuf_free_bulk(m, n);
	w->rec_held -= n;
}

void
sl_worker_let_go(struct sl_worker *w, int all)
{
	uint16_t i;

	free_held(w, w->going, w->n_going);
	w->n_going = 0;
	if (all) {
		free_held(w, w->let_go, w->n_let_go);
		w->n_let_go = 0;
		return;
	}
	for (i = 0; i < w->n_let_go; i++) {
		/* to L2: two lines of each of up to 64 asked for into L1 at
		 * once waited for its fill buffers */
		rte_prefetch1(w->let_go[i]);
		rte_prefetch1((char *)w->let_go[i] + RTE_CACHE_LINE_SIZE);
		w->going[i] = w->let_go[i];
	}
	w->n_going = w->n_let_go;
	w->n_let_go = 0;
}

/* The flow table's parameters, for a worker's first table and any reset. */
static struct sl_flow_params
flow_params(struct sl_worker *w, int track_only)
{
	const struct sl_config *c = w->app->cfg;

	return (struct sl_flow_params){
		.capacity = c->dataplane.flows_per_worker,
		.head_slots = c->dataplane.head_buffers_per_worker,
		.max_head_bytes = c->dataplane.max_head_bytes,
		.idle_timeout = w->app->idle_tsc,
		.closed_timeout = w->app->tsc_hz, /* TIME_WAIT is the hosts' */
		.young_grace = w->app->tsc_hz,    /* a handshake's second */
		.head_timeout =
			c->dataplane.head_timeout_ms * w->app->tsc_hz / 1000,
		.heads_per_source = c->dataplane.head_buffers_per_source,
		.http = &w->app->http,
		.track_only = (uint8_t)track_only,
		.no_normalise = w->no_normalise,
		.hash_seed = w->flow_seed,
		.gone = flow_gone,
		.gone_arg = w,
		.hold = {hold_keep, hold_bytes, hold_release, w},
	};
}

int
sl_worker_init(struct sl_worker *w, const struct sl_app *app,
	       unsigned int lcore, uint16_t queue, int track_only)
{
	const struct sl_config *c = app->cfg;
	uint32_t nlog = c->dataplane.buckets_per_worker / 16;
	struct sl_flow_params fp;

	memset(w, 0, sizeof(*w));
	w->app = app;
	w->lcore = lcore;
	w->queue = queue;
	w->rng = 0x2545f4914f6cdd1dULL ^ ((uint64_t)lcore << 32) ^ rte_rdtsc();
	w->flow_seed = rte_rand() | 1;
	/* an eighth of the pool, shared: RX must never run dry of it */
	w->rec_held_max = c->dataplane.mbufs / 8 /
			  (app->n_queues > 0 ? app->n_queues : 1);
	fp = flow_params(w, track_only);
	w->flows = sl_flow_table_create(&fp);
	w->buckets = sl_bucket_table_create(c->dataplane.buckets_per_worker, 0);
	w->logs = sl_bucket_table_create(nlog < 1024 ? 1024 : nlog, 1);
	w->norm_buf = rte_malloc_socket("sl_norm", c->dataplane.max_head_bytes,
					0, rte_lcore_to_socket_id(lcore));
	if (w->flows == NULL || w->buckets == NULL || w->logs == NULL ||
	    w->norm_buf == NULL || sl_leased_init(w) != 0 ||
	    sl_xlate_init(w) != 0 || sl_cost_init(w) != 0 ||
	    sl_health_init(w) != 0)
		return -ENOMEM;
	return 0;
}

/* Forgets every connection (benchmarks: each round starts afresh). */
int
sl_worker_reset_flows(struct sl_worker *w)
{
	struct sl_flow_params fp = flow_params(w, 0);

	sl_flow_table_free(w->flows);
	sl_worker_let_go(w, 1);
	w->flows = sl_flow_table_create(&fp);
	if (w->flows == NULL)
		return -ENOMEM;
	/* (xl entries count only under a flow's SL_NF_XLATE: none now) */
	sl_flow_table_prefault(w->flows);
	return 0;
}

void
sl_worker_free(struct sl_worker *w)
{
	if (w->n_rst > 0)
		rte_pktmbuf_free_bulk(w->rst, w->n_rst);
	w->n_rst = 0;
	sl_flow_table_free(w->flows);
	sl_worker_let_go(w, 1);
	sl_bucket_table_free(w->buckets);
	sl_bucket_table_free(w->logs);
	rte_free(w->norm_buf);
	w->norm_buf = NULL;
	sl_leased_free(w);
	sl_xlate_free(w);
	sl_cost_free(w);
	sl_health_free(w);
}

void
sl_worker_prefault(struct sl_worker *w)
{
	sl_flow_table_prefault(w->flows);
	sl_bucket_table_prefault(w->buckets);
	sl_bucket_table_prefault(w->logs);
	sl_bucket_table_prefault(w->leases);
	sl_bucket_table_prefault(w->tiers);
}

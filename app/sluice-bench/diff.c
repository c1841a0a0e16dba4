/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The differential check: the decisions of the burst path (SL_BURST
 * frames a call, each burst's flows and buckets prefetched before any of
 * them is decided) against the plain one (one frame a call, nothing
 * ahead), over the same corpus, on new flows, under a limit that lets
 * each key go three times and then refuses it. Every decision must be the
 * same and in the same order: verdict, deciding rule, what it had left,
 * the identity. Every sluice-bench run ends with it (func/bench in CI),
 * so that an optimisation of the burst cannot change a verdict unseen.
 */
#include "bench.h"

#define DIFF_LIMIT 3

/* A worker of its own app, every decision recorded in a ring of n. */
static struct sl_worker *
recording_worker(const struct sl_app *app, struct sl_config *cfg,
		 const char *ring, uint32_t n)
{
	struct sl_app *a = sl_bench_app_copy(app);
	struct sl_worker *w;

	/* an hour's limit: nothing refills while the check runs */
	a->policy = sl_bench_policy(cfg, DIFF_LIMIT, 3600000);
	a->policy->dec_ppm[0] = a->policy->dec_ppm[1] = 1000000;
	w = sl_bench_worker(a, 0);
	w->dec_ring = rte_ring_create_elem(
		ring, sizeof(struct sl_dec_rec), rte_align32pow2(n + 1),
		SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->dec_ring == NULL)
		rte_exit(EXIT_FAILURE, "no memory for the check's ring\n");
	return w;
}

/* The corpus's round 0 through w, per frames at a call. */
static void
feed(struct sl_worker *w, struct corpus *c, uint16_t per)
{
	uint32_t i;

	sl_bench_set_round(c, 0);
	sl_bench_prime(w, c->m, c->n, 1);
	for (i = 0; i < c->n; i += per) {
		w->now = rte_rdtsc();
		sl_worker_burst(w, &c->m[i], (uint16_t)RTE_MIN(per, c->n - i),
				0);
	}
	sl_worker_flush(w);
}

/* What a decision is, without when it was made or the worker's id. */
static int
same(const struct sl_dec_rec *x, const struct sl_dec_rec *y)
{
	return x->verdict == y->verdict && x->slot == y->slot &&
	       x->remaining == y->remaining && x->tier == y->tier &&
	       x->flags == y->flags && x->kind == y->kind && x->len == y->len &&
	       memcmp(x->id, y->id, x->len) == 0;
}

static uint32_t
drain(struct sl_worker *w, struct sl_dec_rec *out, uint32_t n)
{
	uint32_t got = 0, k;

	while (got < n && (k = rte_ring_sc_dequeue_burst_elem(
				   w->dec_ring, out + got, sizeof(*out),
				   n - got, NULL)) > 0)
		got += k;
	return got;
}

uint32_t
sl_bench_differential(struct bench_env *e)
{
	uint32_t n = e->c.n, na, nb, i, refused = 0;
	struct sl_worker *a =
		recording_worker(e->app, e->cfg, "bench_diff_a", n);
	struct sl_worker *b =
		recording_worker(e->app, e->cfg, "bench_diff_b", n);
	struct sl_dec_rec *ra = calloc(n, sizeof(*ra)),
			  *rb = calloc(n, sizeof(*rb));

	if (ra == NULL || rb == NULL)
		rte_exit(EXIT_FAILURE, "out of memory\n");
	feed(a, &e->c, SL_BURST);
	feed(b, &e->c, 1);
	na = drain(a, ra, n);
	nb = drain(b, rb, n);
	if (na != n || nb != n)
		rte_exit(EXIT_FAILURE,
			 "differential: %u decisions in bursts, %u one at a "
			 "time, of %u requests\n",
			 na, nb, n);
	for (i = 0; i < n; i++) {
		if (!same(&ra[i], &rb[i]))
			rte_exit(EXIT_FAILURE,
				 "differential: request %u decided %u "
				 "(rule %u, %lu left) in a burst, %u (rule "
				 "%u, %lu left) alone\n",
				 i, ra[i].verdict, ra[i].slot, ra[i].remaining,
				 rb[i].verdict, rb[i].slot, rb[i].remaining);
		refused += ra[i].verdict != SL_V_ALLOWED;
	}
	/* a check that refused nothing, or everything, tells nothing */
	if (refused == 0 || refused == n)
		rte_exit(EXIT_FAILURE,
			 "differential: %u of %u refused: the limit does not "
			 "split the corpus\n",
			 refused, n);
	free(ra);
	free(rb);
	return n;
}

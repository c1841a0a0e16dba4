/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_telemetry.h>

#include "coord.h"
#include "sluice.h"
#include "store.h"

#define RING_SIZE   4096
#define COORD_BURST 64

struct sl_coord *
sl_coord_create(uint32_t workers, uint32_t capacity)
{
	static uint32_t made; /* ring names are global to the process */
	struct sl_coord *c = rte_zmalloc("sl_coord", sizeof(*c), 64);
	uint32_t i;

	if (c == NULL)
		return NULL;
	c->n = workers;
	c->lease_ns = SL_LEASE_LIFETIME_NS;
	c->state = sl_bucket_table_create(capacity, 1);
	if (c->state == NULL)
		return NULL;
	/* the main lcore uses it: faulted in here, before traffic */
	sl_bucket_table_prefault(c->state);
	for (i = 0; i < workers; i++) {
		char name[32];

		snprintf(name, sizeof(name), "sl_ask%u_%u", made, i);
		c->ask[i] = rte_ring_create_elem(
			name, sizeof(struct sl_coord_msg), RING_SIZE,
			SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "sl_ans%u_%u", made, i);
		c->ans[i] = rte_ring_create_elem(
			name, sizeof(struct sl_coord_msg), RING_SIZE,
			SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (c->ask[i] == NULL || c->ans[i] == NULL)
			return NULL;
	}
	made++;
	return c;
}

/* Units granted now stay good until the lease or the window ends. */
static uint64_t
lease_end(const struct sl_coord *c, const struct sl_limit_params *p,
	  uint64_t now)
{
	uint64_t end = now + c->lease_ns;

	if (p->algo == SL_LIM_FIXED_WINDOW ||
	    p->algo == SL_LIM_SLIDING_WINDOW) {
		uint64_t w = (now / p->period_ns + 1) * p->period_ns;

		if (w < end)
			end = w;
	}
	return end;
}

static void
answer(struct sl_coord *c, const struct sl_coord_msg *q, struct sl_coord_msg *a,
       uint64_t now)
{
	struct sl_limit_params p;
	struct sl_bucket_key k = {q->k1, q->k2};
	struct sl_limit_state *s;
	struct sl_limit_result r, after;
	uint32_t g = 0;

	memset(a, 0, sizeof(*a));
	a->k1 = q->k1;
	a->k2 = q->k2;
	a->type = SL_CO_ANSWER;
	a->worker = q->worker;
	c->st.asks++;
	if (sl_limit_params_init(&p, q->algo, q->ask.count,
				 q->period_ms * 1000000ULL, q->ask.burst) != 0)
		return; /* unreadable: refused, retry 0 */
	sl_bucket_begin(c->state);
	s = sl_bucket_get(c->state, &k, now);
	sl_limit_check(&p, s, q->ask.want, now, &r);
	if (r.allow) {
		g = q->ask.want;
	} else if (q->ask.need < q->ask.want) {
		sl_limit_check(&p, s, q->ask.need, now, &r);
		g = r.allow ? q->ask.need : 0;
	}
	if (g == 0) {
		c->st.refusals++;
		a->ans.retry_ns = r.retry_after_ns;
		a->ans.reset_ns = r.reset_ns;
		a->ans.remaining = r.remaining;
		return;
	}
	sl_limit_commit(&p, s, g, now);
	sl_limit_check(&p, s, 0, now, &after);
	sl_bucket_touch(c->state, s, now + after.reset_ns);
	c->st.granted_units += g;
	a->ans.granted = g;
	a->ans.expires_ns = lease_end(c, &p, now);
	a->ans.remaining = after.remaining;
	a->ans.reset_ns = after.reset_ns;
}

/*
 * The store is out: the rule's on_store_failure decides, with this node's
 * own authority under the reduced numbers (still exact across the node).
 */
static void
answer_degraded(struct sl_coord *c, const struct sl_coord_msg *q,
		struct sl_coord_msg *a, uint64_t now)
{
	struct sl_coord_msg d = *q;
	uint32_t div = q->ask.on_failure == SL_LOCAL_STRICT ? q->ask.div_strict
							    : q->ask.div_open;

	c->st.degraded++;
	if (q->ask.on_failure == SL_FAIL_CLOSED) {
		memset(a, 0, sizeof(*a));
		a->k1 = q->k1;
		a->k2 = q->k2;
		a->type = SL_CO_ANSWER;
		a->worker = q->worker;
		a->ans.retry_ns = 1000000000ULL;
		a->ans.reset_ns = 1000000000ULL;
		c->st.refusals++;
		return;
	}
	if (div < 1)
		div = 1;
	d.ask.count = RTE_MAX(q->ask.count / div, 1ULL);
	d.ask.burst = RTE_MAX(q->ask.burst / div, 1ULL);
	/* kept apart from the shared state's keys */
	d.k2 ^= 0xdeadbeefcafef00dULL;
	answer(c, &d, a, now);
	a->k2 = q->k2;
}

void
sl_coord_answer_degraded(struct sl_coord *c, const struct sl_coord_msg *q,
			 uint64_t now)
{
	struct sl_coord_msg a;

	answer_degraded(c, q, &a, now);
	if (rte_ring_enqueue_elem(c->ans[a.worker], &a, sizeof(a)) != 0)
		c->st.answers_dropped++;
}

static void
give_back(struct sl_coord *c, const struct sl_coord_msg *q, uint64_t now)
{
	struct sl_limit_params p;
	struct sl_bucket_key k = {q->k1, q->k2};

	if (sl_limit_params_init(&p, q->algo, q->back.count,
				 q->period_ms * 1000000ULL, q->back.burst) != 0)
		return;
	sl_bucket_begin(c->state);
	sl_limit_refund(&p, sl_bucket_get(c->state, &k, now), q->back.units,
			now);
	c->st.given_back += q->back.units;
}

uint32_t
sl_coord_poll(struct sl_coord *c, uint64_t now)
{
	struct sl_coord_msg in[COORD_BURST], out[COORD_BURST];
	uint32_t w, total = 0;

	for (w = 0; w < c->n; w++) {
		unsigned int n, i, k = 0;

		n = rte_ring_dequeue_burst_elem(c->ask[w], in, sizeof(in[0]),
						COORD_BURST, NULL);
		for (i = 0; i < n; i++) {
			if (in[i].type == SL_CO_ASK && c->store == NULL)
				answer(c, &in[i], &out[k++], now);
			else if (in[i].type == SL_CO_ASK &&
				 (!sl_store_usable(c->store, now) ||
				  sl_store_ask(c->store, c, &in[i], now) != 0))
				answer_degraded(c, &in[i], &out[k++], now);
			else if (in[i].type == SL_CO_ASK)
				c->st.asks++; /* answered when the store replies
					       */
			else if (in[i].type == SL_CO_TIER &&
				 (c->store == NULL ||
				  sl_store_tier(c->store, c, &in[i]) != 0)) {
				/* no store, or out: the default tier holds */
				out[k] = in[i];
				out[k].type = SL_CO_TIER_ANSWER;
				out[k++].tier.found = 0;
			} else if (in[i].type == SL_CO_TIER)
				continue;
			else if (in[i].type == SL_CO_GIVE_BACK &&
				 (c->store == NULL ||
				  sl_store_give_back(c->store, &in[i]) != 0))
				give_back(c, &in[i], now);
		}
		/* the ring holds RING_SIZE: a worker never has more in flight
		 */
		if (k && rte_ring_enqueue_burst_elem(
				 c->ans[w], out, sizeof(out[0]), k, NULL) < k)
			c->st.answers_dropped++;
		total += n;
	}
	if (c->store != NULL)
		sl_store_poll(c->store, c, now);
	sl_bucket_expire(c->state, now, 64);
	return total;
}

/* ---- /sluice/store ---- */

static const struct sl_coord *tel_coord;
static const struct sl_worker *tel_workers;
static unsigned int tel_n;

static int
cmd_store(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct sl_coord_stats *s = &tel_coord->st;
	struct sl_hist h;
	uint64_t parked = 0, degraded = 0, dropped = 0;
	unsigned int i, b;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	memset(&h, 0, sizeof(h));
	for (i = 0; i < tel_n; i++) {
		parked += tel_workers[i].ctr.parked;
		degraded += tel_workers[i].ctr.degraded;
		dropped += tel_workers[i].ctr.park_dropped;
		for (b = 0; b < SL_HIST_BUCKETS; b++)
			h.b[b] += tel_workers[i].park_latency.b[b];
	}
	rte_tel_data_start_dict(d);
	if (tel_coord->store == NULL) {
		/* the node is its own authority: nothing to be unreachable */
		rte_tel_data_add_dict_string(d, "kind", "local");
		rte_tel_data_add_dict_string(d, "state", "closed");
	} else {
		static const char *const st[] = {"closed", "open", "half_open"};
		const struct sl_store_stats *ss =
			sl_store_stats(tel_coord->store);

		rte_tel_data_add_dict_string(
			d, "kind", ss->nodes > 1 ? "redis-cluster" : "redis");
		rte_tel_data_add_dict_u64(d, "nodes", ss->nodes);
		/* Redis 7 functions where every node has them */
		rte_tel_data_add_dict_string(
			d, "scripts",
			ss->functions > 0 && ss->functions == ss->nodes
				? "fcall"
				: "evalsha");
		rte_tel_data_add_dict_u64(d, "redirects", ss->redirects);
		rte_tel_data_add_dict_string(d, "state", st[ss->state]);
		rte_tel_data_add_dict_u64(d, "connected", ss->connected);
		rte_tel_data_add_dict_u64(d, "store_calls", ss->calls);
		rte_tel_data_add_dict_u64(d, "store_replies", ss->replies);
		rte_tel_data_add_dict_u64(d, "store_errors", ss->errors);
		rte_tel_data_add_dict_u64(d, "store_timeouts", ss->timeouts);
		rte_tel_data_add_dict_u64(d, "circuit_opened", ss->opened);
		rte_tel_data_add_dict_u64(
			d, "rtt_ns_avg",
			ss->replies ? ss->rtt_ns_sum / ss->replies : 0);
	}
	rte_tel_data_add_dict_u64(d, "store_degraded", s->degraded);
	rte_tel_data_add_dict_u64(d, "asks", s->asks);
	rte_tel_data_add_dict_u64(d, "granted_units", s->granted_units);
	rte_tel_data_add_dict_u64(d, "refusals", s->refusals);
	rte_tel_data_add_dict_u64(d, "given_back_units", s->given_back);
	rte_tel_data_add_dict_u64(d, "answers_dropped", s->answers_dropped);
	rte_tel_data_add_dict_u64(d, "parked", parked);
	rte_tel_data_add_dict_u64(d, "park_dropped", dropped);
	rte_tel_data_add_dict_u64(d, "degraded", degraded);
	rte_tel_data_add_dict_u64(d, "parked_ns_p50",
				  sl_hist_quantile(&h, 0.5));
	rte_tel_data_add_dict_u64(d, "parked_ns_p99",
				  sl_hist_quantile(&h, 0.99));
	rte_tel_data_add_dict_u64(d, "lease_ms", tel_coord->lease_ns / 1000000);
	return 0;
}

int
sl_coord_telemetry(const struct sl_coord *c, const struct sl_worker *ws,
		   unsigned int n)
{
	tel_coord = c;
	tel_workers = ws;
	tel_n = n;
	return rte_telemetry_register_cmd(
		"/sluice/store", cmd_store,
		"The authority behind the leases: kind, state, lease traffic");
}

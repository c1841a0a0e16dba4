/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "sl_ident.h"
#include "sl_telemetry.h"

#define MAX_SRC 128

struct top_row {
	struct sl_top_entry e;
	uint64_t count;
};

/*
 * What the /sluice commands read, their context: the workers' sources
 * (set at start), the rules (swapped by a reload while a reader may be in
 * flight: under rules_lock), the node's authority, and /sluice/top's
 * merge. One per process, as DPDK's telemetry socket is.
 */
static struct tel_state {
	struct sl_telemetry_src srcs[MAX_SRC];
	unsigned int n_srcs;
	pthread_mutex_t rules_lock;
	const struct sl_ruleset *rules;
	const uint16_t *rule_slots;
	const struct sl_bucket_table *authority;
	struct top_row rows[MAX_SRC * SL_TOP_K];
} tel = {.rules_lock = PTHREAD_MUTEX_INITIALIZER};

void
sl_telemetry_set_rules(const struct sl_ruleset *rs, const uint16_t *slots)
{
	struct tel_state *t = &tel;
	pthread_mutex_lock(&t->rules_lock);
	t->rules = rs;
	t->rule_slots = slots;
	pthread_mutex_unlock(&t->rules_lock);
}

static void
add_table(struct sl_bucket_stats *o, const struct sl_bucket_table *t)
{
	const struct sl_bucket_stats *b;

	if (t == NULL)
		return;
	b = sl_bucket_stats(t);
	o->active += b->active;
	o->created += b->created;
	o->evicted += b->evicted;
	o->shifted += b->shifted;
	o->expired += b->expired;
}

void
sl_telemetry_set_authority(const struct sl_bucket_table *t)
{
	tel.authority = t;
}

static void
bucket_sums(struct sl_bucket_stats *o, const struct sl_telemetry_src *s,
	    unsigned int n)
{
	unsigned int i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < n; i++) {
		add_table(o, s[i].buckets);
		add_table(o, s[i].leases);
	}
}

/*
 * Both structs are all uint64_t: each is summed word by word, racing the
 * worker's plain increments on purpose (an aligned 8-byte load is never
 * torn; a sum a few increments old is what telemetry promises). Not
 * instrumented under ThreadSanitizer: tests/tsan.supp's entry for it
 * matched only while TSan could still restore this reader's stack, and
 * under load it could not (the race test failed on a counter read here).
 */
__attribute__((noinline, no_sanitize("thread"))) static void
add_words(uint64_t *d, const uint64_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] += s[i];
}

_Static_assert(sizeof(struct sl_counters) % sizeof(uint64_t) == 0 &&
		       sizeof(struct sl_flow_stats) % sizeof(uint64_t) == 0,
	       "counters are summed as arrays of uint64_t");

void
sl_telemetry_sum(struct sl_counters *out, struct sl_flow_stats *fs)
{
	struct tel_state *t = &tel;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	memset(fs, 0, sizeof(*fs));
	for (i = 0; i < t->n_srcs; i++) {
		add_words((uint64_t *)out, (const uint64_t *)t->srcs[i].ctr,
			  sizeof(*out) / sizeof(uint64_t));
		if (t->srcs[i].flows != NULL)
			add_words((uint64_t *)fs,
				  (const uint64_t *)sl_flow_stats(
					  t->srcs[i].flows),
				  sizeof(*fs) / sizeof(uint64_t));
	}
}

#define U64(d, name, v) rte_tel_data_add_dict_u64(d, name, v)

static void
fill(struct rte_tel_data *d, const struct sl_counters *c,
     const struct sl_flow_stats *f, const struct sl_bucket_stats *b)
{
	U64(d, "rx", c->rx);
	U64(d, "tx", c->tx);
	U64(d, "tx_dropped", c->tx_dropped);
	U64(d, "passthrough", c->passthrough);
	U64(d, "inspected", c->inspected);
	U64(d, "requests", c->requests);
	U64(d, "allowed", c->allowed);
	U64(d, "rejected", c->rejected);
	U64(d, "blocked", c->blocked);
	U64(d, "invalid", c->invalid);
	U64(d, "shadow_rejected", c->shadow_rejected);
	U64(d, "degraded", c->degraded);
	U64(d, "decided_alone", c->decided_alone);
	U64(d, "malformed", c->malformed);
	U64(d, "malformed_dropped", c->malformed_dropped);
	U64(d, "frag_dropped", c->frag_dropped);
	U64(d, "bad_checksum", c->bad_checksum);
	U64(d, "head_too_large", c->head_too_large);
	U64(d, "ident_key", c->ident_key);
	U64(d, "ident_user", c->ident_user);
	U64(d, "ident_ip", c->ident_ip);
	U64(d, "replies", c->replies);
	U64(d, "absorbed", c->absorbed);
	U64(d, "keepalive_replies", c->keepalive_replies);
	U64(d, "keepalive_fallback", c->keepalive_fallback);
	U64(d, "keepalive_translated", c->keepalive_translated);
	U64(d, "keepalive_resent", c->keepalive_resent);
	U64(d, "keepalive_unkept", c->keepalive_unkept);
	U64(d, "decided_held", c->decided_held);
	U64(d, "decided_share_full", c->decided_share_full);
	U64(d, "budget_headers", c->budget_headers);
	U64(d, "budget_resent", c->budget_resent);
	U64(d, "budget_skipped", c->budget_skipped);
	U64(d, "budget_unauthenticated", c->budget_unauthenticated);
	U64(d, "budget_dropped", c->budget_dropped);
	U64(d, "cost_settled", c->cost_settled);
	U64(d, "cost_charged", c->cost_charged);
	U64(d, "cost_refunded", c->cost_refunded);
	U64(d, "cost_unsettled", c->cost_unsettled);
	U64(d, "cost_presumed", c->cost_presumed);
	U64(d, "cost_unanswered", c->cost_unanswered);
	U64(d, "health_unattributed", c->health_unattributed);
	U64(d, "reply_alloc_failed", c->reply_alloc_failed);
	U64(d, "coord_asks", c->coord_asks);
	U64(d, "parked", c->parked);
	U64(d, "tier_waits", c->tier_waits);
	U64(d, "park_dropped", c->park_dropped);
	U64(d, "taken_unreported", c->taken_unreported);
	U64(d, "back_unreported", c->back_unreported);
	U64(d, "decisions_sampled", c->decisions_sampled);
	U64(d, "decisions_dropped", c->decisions_dropped);
	U64(d, "idle_sleeps", c->idle_sleeps);
	U64(d, "buckets_active", b->active);
	U64(d, "buckets_created", b->created);
	U64(d, "buckets_evicted", b->evicted);
	U64(d, "buckets_shifted", b->shifted);
	U64(d, "buckets_expired", b->expired);
	U64(d, "flows_active", f->active);
	U64(d, "flows_created", f->created);
	U64(d, "flows_midstream", f->midstream);
	U64(d, "flows_evicted", f->evicted);
	U64(d, "flows_shifted", f->shifted);
	U64(d, "flows_expired", f->expired);
	U64(d, "flows_closed", f->closed);
	U64(d, "ooo_dropped", f->ooo_dropped);
	U64(d, "retransmits", f->retransmits);
	U64(d, "heads_reassembled", f->reassembled);
	U64(d, "head_slot_exhausted", f->head_slot_exhausted);
	U64(d, "head_timeout", c->head_timeout);
	U64(d, "head_timeouts", f->head_timeouts);
	U64(d, "head_evictions", f->head_evictions);
	U64(d, "rst_ignored", f->rst_ignored);
	U64(d, "syn_ignored", f->syn_ignored);
	U64(d, "reopened", f->reopened);
	U64(d, "syn_data", f->syn_data);
	U64(d, "midstream_probes", f->probes);
	U64(d, "midstream_reset", f->midstream_reset);
	U64(d, "upgrades", f->upgrades);
	U64(d, "upgrades_refused", f->upgrades_refused);
	U64(d, "responses", f->responses);
	U64(d, "resp_unframed", f->resp_unframed);
	U64(d, "after_close", f->after_close);
}

/* The normaliser's drops by reason, non-zero ones only. */
static void
fill_norm(struct rte_tel_data *d, const struct sl_flow_stats *f)
{
	struct rte_tel_data *nd = rte_tel_data_alloc();
	int i;

	if (nd == NULL)
		return;
	rte_tel_data_start_dict(nd);
	for (i = 1; i < SL_NR__COUNT; i++)
		if (f->norm[i])
			U64(nd, sl_norm_reason_name(i), f->norm[i]);
	rte_tel_data_add_dict_container(d, "normalizer_drops", nd, 0);
}

/* Non-zero reasons only, so the reply stays short and readable. */
static void
fill_reasons(struct rte_tel_data *d, const struct sl_counters *c)
{
	struct rte_tel_data *pe = rte_tel_data_alloc();
	struct rte_tel_data *mr = rte_tel_data_alloc();
	int i;

	if (pe == NULL || mr == NULL) {
		rte_tel_data_free(pe);
		rte_tel_data_free(mr);
		return;
	}
	rte_tel_data_start_dict(pe);
	rte_tel_data_start_dict(mr);
	for (i = 1; i < SL_HTTP_E__COUNT; i++)
		if (c->parse_error[i])
			U64(pe, sl_http_err_name(i), c->parse_error[i]);
	for (i = 1; i < SL_BAD__COUNT; i++)
		if (c->malformed_reason[i])
			U64(mr, sl_malformed_name(i), c->malformed_reason[i]);
	rte_tel_data_add_dict_container(d, "parse_errors", pe, 0);
	rte_tel_data_add_dict_container(d, "malformed_reasons", mr, 0);
}

static void
fill_latency(struct tel_state *t, struct rte_tel_data *d)
{
	struct sl_hist h;
	unsigned int i, b;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < t->n_srcs; i++)
		for (b = 0; t->srcs[i].latency && b < SL_HIST_BUCKETS; b++)
			h.b[b] += t->srcs[i].latency->b[b];
	U64(d, "latency_ns_p50", sl_hist_quantile(&h, 0.5));
	U64(d, "latency_ns_p99", sl_hist_quantile(&h, 0.99));
	U64(d, "latency_ns_p999", sl_hist_quantile(&h, 0.999));
}

static int
cmd_stats(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	struct sl_counters c;
	struct sl_flow_stats f;
	struct sl_bucket_stats b;

	RTE_SET_USED(params);
	sl_telemetry_sum(&c, &f);
	bucket_sums(&b, t->srcs, t->n_srcs);
	add_table(&b, t->authority);
	rte_tel_data_start_dict(d);
	fill(d, &c, &f, &b);
	fill_latency(t, d);
	fill_reasons(d, &c);
	fill_norm(d, &f);
	return 0;
}

uint64_t
sl_telemetry_loop_age_us(const uint64_t *beat)
{
	uint64_t b = __atomic_load_n(beat, __ATOMIC_RELAXED), now = rte_rdtsc();

	if (b == 0 || now < b)
		return 0;
	return (now - b) / (rte_get_tsc_hz() / 1000000);
}

static int
cmd_workers(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	unsigned int i;

	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	for (i = 0; i < t->n_srcs; i++) {
		struct rte_tel_data *w = rte_tel_data_alloc();
		struct sl_flow_stats none = {0};
		struct sl_bucket_stats b;
		char name[16];

		if (w == NULL)
			return -ENOMEM;
		bucket_sums(&b, &t->srcs[i], 1);
		rte_tel_data_start_dict(w);
		fill(w, t->srcs[i].ctr,
		     t->srcs[i].flows ? sl_flow_stats(t->srcs[i].flows) : &none,
		     &b);
		if (t->srcs[i].beat != NULL)
			U64(w, "loop_age_us",
			    sl_telemetry_loop_age_us(t->srcs[i].beat));
		snprintf(name, sizeof(name), "lcore%u", t->srcs[i].lcore);
		rte_tel_data_add_dict_container(d, name, w, 0);
	}
	return 0;
}

/*
 * Rule names are the keys: operators script against them, not indexes.
 * DPDK's telemetry nests one level deep, so the rules sit beside
 * "version" at the top (the loader reserves that name), and it accepts
 * only [A-Za-z0-9_./] in keys, so '-' is written '_' there; each entry
 * carries the real name in "name".
 */
void
sl_tel_key(char *dst, const char *name, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size && name[i]; i++)
		dst[i] = name[i] == '-' ? '_' : name[i];
	dst[i] = '\0';
}

/* What the backend answered to the rule in slot, summed over workers. */
static void
health_of(const struct tel_state *t, uint16_t slot, struct sl_rule_health *h)
{
	unsigned int i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < t->n_srcs; i++)
		if (t->srcs[i].health != NULL)
			sl_health_sum(h, &t->srcs[i].health[slot]);
}

/* The rule's line in /sluice/rules: the few numbers that say whether its
 * backend is well (the rest in /sluice/backend, which has room). */
static void
health_brief(const struct tel_state *t, struct rte_tel_data *d, uint16_t slot)
{
	struct sl_rule_health h;

	health_of(t, slot, &h);
	U64(d, "backend_p50_us", sl_health_quantile(&h, 0.5));
	U64(d, "backend_p99_us", sl_health_quantile(&h, 0.99));
	U64(d, "backend_2xx", h.cls[2]);
	U64(d, "backend_4xx", h.cls[4]);
	U64(d, "backend_5xx", h.cls[5]);
	U64(d, "backend_unanswered", h.cls[0]);
}

/*
 * All of it: quantiles of the time to the status line, every status
 * class, the bytes, and the histogram's buckets (cumulative, as an
 * exporter hands them on; "timed" is the last, unbounded one).
 */
static void
health_full(const struct tel_state *t, struct rte_tel_data *d, uint16_t slot)
{
	static const char *const cls[6] = {"unanswered", "1xx", "2xx",
					   "3xx",        "4xx", "5xx"};
	struct sl_rule_health h;
	uint64_t cum = 0;
	unsigned int i;
	char key[32];

	health_of(t, slot, &h);
	U64(d, "p50_us", sl_health_quantile(&h, 0.5));
	U64(d, "p90_us", sl_health_quantile(&h, 0.9));
	U64(d, "p99_us", sl_health_quantile(&h, 0.99));
	for (i = 0; i < 6; i++)
		U64(d, cls[i], h.cls[i]);
	U64(d, "unframed", h.unframed);
	U64(d, "bytes", h.bytes);
	U64(d, "timed", h.timed);
	U64(d, "sum_us", h.sum_us);
	for (i = 0; i < SL_HEALTH_BUCKETS - 1; i++) {
		cum += h.le[i];
		snprintf(key, sizeof(key), "le_us_%u", sl_health_le_us[i]);
		U64(d, key, cum);
	}
}

/*
 * /sluice/backend[,RULE]: the backend's answers per rule, or one rule's
 * (a reader with many rules asks one at a time: a reply holds 16 KiB).
 */
static int
cmd_backend(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	uint32_t r, n;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&t->rules_lock);
	n = t->rules == NULL ? 0 : sl_ruleset_count(t->rules);
	for (r = 0; r < n; r++) {
		const struct sl_rule *rule = sl_ruleset_rule(t->rules, r);
		struct rte_tel_data *one;
		char key[RTE_TEL_MAX_STRING_LEN];

		if (params != NULL && params[0] != '\0' &&
		    strcmp(params, rule->name) != 0)
			continue;
		one = rte_tel_data_alloc();
		if (one == NULL)
			break;
		rte_tel_data_start_dict(one);
		rte_tel_data_add_dict_string(one, "name", rule->name);
		health_full(t, one, t->rule_slots[r]);
		sl_tel_key(key, rule->name, sizeof(key));
		rte_tel_data_add_dict_container(d, key, one, 0);
	}
	pthread_mutex_unlock(&t->rules_lock);
	return 0;
}

static int
cmd_rules(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	uint32_t r, n;

	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&t->rules_lock);
	if (t->rules == NULL) {
		pthread_mutex_unlock(&t->rules_lock);
		return 0;
	}
	rte_tel_data_add_dict_string(d, "version",
				     sl_ruleset_version(t->rules));
	n = sl_ruleset_count(t->rules);
	for (r = 0; r < n; r++) {
		struct rte_tel_data *one = rte_tel_data_alloc();
		const struct sl_rule *rule = sl_ruleset_rule(t->rules, r);
		char key[RTE_TEL_MAX_STRING_LEN];
		uint64_t a = 0, j = 0, s = 0, g = 0;
		unsigned int i;

		if (one == NULL)
			break;
		for (i = 0; i < t->n_srcs; i++) {
			const struct sl_rule_ctr *rc =
				&t->srcs[i].rules[t->rule_slots[r]];

			a += rc->allowed;
			j += rc->rejected;
			s += rc->shadow_rejected;
			g += rc->degraded;
		}
		rte_tel_data_start_dict(one);
		rte_tel_data_add_dict_string(one, "name", rule->name);
		U64(one, "allowed", a);
		U64(one, "rejected", j);
		U64(one, "shadow_rejected", s);
		U64(one, "degraded", g);
		health_brief(t, one, t->rule_slots[r]);
		U64(one, "limit", rule->limit.count);
		U64(one, "period_s", rule->limit.period_ms / 1000);
		U64(one, "period_ms", rule->limit.period_ms);
		U64(one, "burst", rule->burst);
		U64(one, "cost", rule->cost);
		rte_tel_data_add_dict_string(one, "scope",
					     sl_scope_name(rule->scope));
		rte_tel_data_add_dict_string(one, "algorithm",
					     sl_algo_name(rule->algo));
		if (rule->global) {
			/* enforced here: limit = global_limit x slice */
			char sl[32];

			snprintf(sl, sizeof(sl), "%u/%u", rule->slice_num,
				 rule->slice_den);
			U64(one, "global_limit", rule->global_count);
			U64(one, "global_burst", rule->global_burst);
			rte_tel_data_add_dict_string(one, "slice", sl);
			/* the bound, as docs/design/leases.md, "Rebalancing
			 * slices" states it
			 */
			rte_tel_data_add_dict_string(
				one, "formula",
				"limit here = global_limit x parts/10000 of "
				"the "
				"identity's slice (/sluice/regions), else x "
				"slice; all regions <= global_limit");
		}
		rte_tel_data_add_dict_int(one, "shadow", rule->shadow);
		sl_tel_key(key, rule->name, sizeof(key));
		rte_tel_data_add_dict_container(d, key, one, 0);
	}
	pthread_mutex_unlock(&t->rules_lock);
	return 0;
}

/* One identity and rule across workers. */

static int
cmp_rows(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static uint32_t
merge_top(struct tel_state *t, struct top_row *rows, uint32_t max)
{
	struct sl_top_entry snap[SL_TOP_K];
	uint32_t n = 0, i, k, j;

	for (i = 0; i < t->n_srcs; i++) {
		uint32_t m = t->srcs[i].top
				     ? sl_top_snapshot(t->srcs[i].top, snap)
				     : 0;

		for (k = 0; k < m; k++) {
			for (j = 0; j < n; j++)
				if (rows[j].e.rule_slot == snap[k].rule_slot &&
				    rows[j].e.kind == snap[k].kind &&
				    rows[j].e.len == snap[k].len &&
				    memcmp(rows[j].e.id, snap[k].id,
					   snap[k].len) == 0)
					break;
			if (j == n && n == max)
				continue;
			if (j == n) {
				rows[n].e = snap[k];
				rows[n++].count = 0;
			}
			rows[j].count += snap[k].count;
		}
	}
	qsort(rows, n, sizeof(rows[0]), cmp_rows);
	return n;
}

static const char *
slot_name(struct tel_state *t, uint16_t slot)
{
	uint32_t r, n;

	if (slot == SL_SLOT_BLOCKLIST)
		return "blocklist";
	n = t->rules ? sl_ruleset_count(t->rules) : 0;
	for (r = 0; r < n; r++)
		if (t->rule_slots[r] == slot)
			return sl_ruleset_rule(t->rules, r)->name;
	return "(no longer configured)";
}

void
sl_telemetry_names(uint16_t slot, int tier, char *rule, size_t rule_len,
		   char *tname, size_t tier_len)
{
	struct tel_state *t = &tel;
	pthread_mutex_lock(&t->rules_lock);
	snprintf(rule, rule_len, "%s", slot_name(t, slot));
	if (tier < 0 || t->rules == NULL ||
	    (uint32_t)tier >= sl_ruleset_tier_count(t->rules))
		tname[0] = '\0';
	else
		snprintf(tname, tier_len, "%s",
			 sl_ruleset_tier_name(t->rules, (uint32_t)tier));
	pthread_mutex_unlock(&t->rules_lock);
}

/*
 * The most throttled identities, highest first, under keys "1", "2", …
 * (DPDK's telemetry carries dicts inside dicts, not inside arrays).
 */
static int
cmd_top(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	struct top_row *rows = t->rows;
	uint32_t n, i, show;

	show = params && *params ? (uint32_t)atoi(params) : 20;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&t->rules_lock);
	n = merge_top(t, rows, RTE_DIM(t->rows));
	for (i = 0; i < n && i < show; i++) {
		struct rte_tel_data *one = rte_tel_data_alloc();
		struct sl_identity id;
		char s[SL_TOP_ID_MAX * 2 + 16];

		if (one == NULL)
			break;
		memset(&id, 0, sizeof(id));
		id.kind = rows[i].e.kind;
		id.ip_af = rows[i].e.ip_af;
		id.len = rows[i].e.len;
		memcpy(id.id, rows[i].e.id, id.len);
		sl_ident_format(&id, s, sizeof(s));
		rte_tel_data_start_dict(one);
		rte_tel_data_add_dict_string(one, "identity", s);
		rte_tel_data_add_dict_string(one, "rule",
					     slot_name(t, rows[i].e.rule_slot));
		U64(one, "rejected", rows[i].count);
		snprintf(s, sizeof(s), "%u", i + 1);
		rte_tel_data_add_dict_container(d, s, one, 0);
	}
	pthread_mutex_unlock(&t->rules_lock);
	return 0;
}

/* Per tier, by name; "no_key" for requests without an API key. */
static int
cmd_tiers(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct tel_state *t = ctx;
	uint32_t k, n;

	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&t->rules_lock);
	n = t->rules ? sl_ruleset_tier_count(t->rules) : 0;
	for (k = 0; k <= n; k++) {
		struct rte_tel_data *one = rte_tel_data_alloc();
		struct sl_tier_ctr sum = {0};
		unsigned int i;

		if (one == NULL)
			break;
		for (i = 0; i < t->n_srcs; i++) {
			if (t->srcs[i].tiers == NULL)
				continue;
			sum.allowed += t->srcs[i].tiers[k].allowed;
			sum.rejected += t->srcs[i].tiers[k].rejected;
			sum.shadow_rejected +=
				t->srcs[i].tiers[k].shadow_rejected;
			sum.degraded += t->srcs[i].tiers[k].degraded;
		}
		rte_tel_data_start_dict(one);
		U64(one, "allowed", sum.allowed);
		U64(one, "rejected", sum.rejected);
		U64(one, "shadow_rejected", sum.shadow_rejected);
		U64(one, "degraded", sum.degraded);
		rte_tel_data_add_dict_container(
			d,
			k == 0 ? "no_key"
			       : sl_ruleset_tier_name(t->rules, k - 1),
			one, 0);
	}
	pthread_mutex_unlock(&t->rules_lock);
	return 0;
}

int
sl_telemetry_register(const struct sl_telemetry_src *src, unsigned int n)
{
	struct tel_state *t = &tel;
	static const struct {
		const char *name;
		sl_tel_fn fn;
		const char *help;
	} cmds[] = {
		{"/sluice/stats", cmd_stats,
		 "Totals over all workers. No parameters"},
		{"/sluice/workers", cmd_workers,
		 "Counters per worker lcore. No parameters"},
		{"/sluice/rules", cmd_rules,
		 "Rules version and counters per rule. No parameters"},
		{"/sluice/top", cmd_top,
		 "Most throttled identities. Parameter: how many (20)"},
		{"/sluice/tiers", cmd_tiers,
		 "Counters per tier, and for requests without a key"},
		{"/sluice/backend", cmd_backend,
		 "The backend's answers per rule. Parameter: a rule's name"},
	};
	unsigned int i;
	int rc = 0;

	if (n > MAX_SRC)
		return -E2BIG;
	memcpy(t->srcs, src, n * sizeof(*src));
	t->n_srcs = n;
	for (i = 0; i < RTE_DIM(cmds) && rc == 0; i++)
		rc = sl_telemetry_cmd(cmds[i].name, cmds[i].fn, t,
				      cmds[i].help);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A key's tier when the static map does not name it: asked of the keys
 * hash through the coordinator, cached with a TTL. Until the first
 * answer comes a request that can wait for it does (parked with the
 * limits of every tier it could be in); one that cannot is in the
 * default tier. A tier once known stands while it is asked again (at its TTL,
 * or while the store cannot say): dropping to the default meanwhile would put a
 * pro key under the free limit for a round trip every minute, and for a whole
 * minute each time the store stumbled.
 */
#include <string.h>

#include "dp.h"

#define TIER_TTL_NS   60000000000ULL
#define TIER_RETRY_NS 1000000000ULL /* the store could not say */
/* how long a tier past its TTL is kept to stand while it is asked again:
 * a key back after a quiet spell is not sent to the default tier for a
 * round trip (a batch client's first burst refused below its limit).
 * The table's size bounds what this keeps: the oldest go first. */
#define TIER_KEEP_NS 3600000000000ULL

struct tier_cache {
	/* the tier's name hashed (sl_tier_hash), not its index: a reload
	 * may reorder the tiers; 0: not in the hash, the default tier */
	uint64_t name_h;
	uint8_t known; /* name_h holds an answer (fresh until fresh_ns) */
	uint8_t asked; /* an ask is out, its answer due by asked_ns */
	uint64_t fresh_ns, asked_ns;
};

int
sl_tiers_init(struct sl_worker *w)
{
	w->tiers = sl_bucket_table_create_sized(
		RTE_MAX(w->app->cfg->dataplane.buckets_per_worker / 4, 1024u),
		sizeof(struct tier_cache));
	return w->tiers != NULL ? 0 : -1;
}

void
sl_tiers_free(struct sl_worker *w)
{
	sl_bucket_table_free(w->tiers);
	w->tiers = NULL;
}

static struct sl_bucket_key
tier_key(const char *key, uint32_t len)
{
	return (struct sl_bucket_key){sl_hash64(key, len, 0x7431),
				      sl_hash64(key, len, 0x7432)};
}

/* Kept while fresh, while an answer is due, and TIER_KEEP_NS past
 * freshness, so that a key seen again finds the tier to revalidate. */
static void
keep(struct sl_worker *w, struct tier_cache *e)
{
	uint64_t t = e->known ? e->fresh_ns + TIER_KEEP_NS : 0;

	if (e->asked && e->asked_ns > t)
		t = e->asked_ns;
	sl_bucket_touch(w->tiers, (struct sl_limit_state *)e, t);
}

/*
 * Asks the coordinator; the entry says so until the store timeout. A
 * key longer than a message goes in several, enqueued together, and
 * only while the ring is at most half full: a flood of long made-up
 * keys must not crowd out the lease asks.
 */
static void
ask(struct sl_worker *w, const struct sl_bucket_key *k, struct tier_cache *e,
    const char *key, uint32_t len)
{
	struct sl_coord_msg m[SL_TIER_MSGS_MAX];
	struct rte_ring *r = w->app->lanes->ask[w->queue];
	uint32_t n = sl_tier_msgs(len), i;

	memset(m, 0, sizeof(m[0]) * n);
	for (i = 0; i < n; i++) {
		uint32_t off = i * SL_TIER_TEXT;

		m[i].k1 = k->k1;
		m[i].k2 = k->k2;
		m[i].type = i == 0 ? SL_CO_TIER : SL_CO_TIER_MORE;
		m[i].worker = (uint8_t)w->queue;
		m[i].tier.len = (uint8_t)RTE_MIN(len - off, SL_TIER_TEXT);
		memcpy(m[i].tier.text, key + off, m[i].tier.len);
	}
	m[0].tier.len = (uint8_t)len;
	if ((n > 1 && rte_ring_free_count(r) < rte_ring_get_capacity(r) / 2) ||
	    rte_ring_enqueue_bulk_elem(r, m, sizeof(m[0]), n, NULL) != n)
		return;
	e->asked = 1;
	e->asked_ns = w->now_ns + w->app->store_timeout_ns;
	keep(w, e);
}

static int
known_tier(const struct sl_worker *w, const struct tier_cache *e)
{
	int def = sl_ruleset_default_tier(w->pol->rs), t;

	if (!e->known || e->name_h == 0)
		return def;
	t = sl_ruleset_tier_of_hash(w->pol->rs, e->name_h);
	return t >= 0 ? t : def;
}

int
sl_tier_of(struct sl_worker *w, const char *key, uint32_t len,
	   struct sl_bucket_key *asked)
{
	struct sl_bucket_key k = tier_key(key, len);
	struct tier_cache *e;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	if ((!e->known || w->now_ns >= e->fresh_ns) &&
	    (!e->asked || w->now_ns >= e->asked_ns) && len <= SL_TIER_KEY_MAX)
		ask(w, &k, e, key, len);
	if (e->known)
		return known_tier(w, e);
	*asked = k;
	return e->asked && w->now_ns < e->asked_ns ? SL_TIER_ANY
						   : known_tier(w, e);
}

int
sl_tier_known(struct sl_worker *w, const struct sl_bucket_key *k)
{
	const struct tier_cache *e =
		(const struct tier_cache *)sl_bucket_find(w->tiers, k);

	return e != NULL && e->known ? known_tier(w, e) : SL_TIER_ANY;
}

void
sl_tier_answer(struct sl_worker *w, const struct sl_coord_msg *a)
{
	struct sl_bucket_key k = {a->k1, a->k2};
	struct tier_cache *e;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	e->asked = 0;
	if (a->tier.found == SL_TIER_UNSAID) {
		/* what was known stands; the default until anything is */
		if (!e->known)
			e->name_h = 0;
		e->known = 1;
		e->fresh_ns = w->now_ns + TIER_RETRY_NS;
	} else {
		e->name_h = a->tier.found == SL_TIER_NAMED
				    ? sl_tier_hash(a->tier.text, a->tier.len)
				    : 0;
		e->known = 1;
		e->fresh_ns = w->now_ns + TIER_TTL_NS;
	}
	keep(w, e);
}

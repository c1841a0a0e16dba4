/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A key's tier when the static map does not name it: asked of the keys
 * hash through the coordinator, cached with a TTL. Until the answer
 * comes the key is in the default tier; nothing waits for it.
 */
#include <string.h>

#include "dp.h"

#define TIER_TTL_NS 60000000000ULL

struct tier_cache {
	int16_t tier;  /* -1: not in the hash: the default tier */
	uint8_t state; /* 0 unknown, 1 asked, 2 known */
	uint64_t until_ns;
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

/* Asks the coordinator; the entry says so until the store timeout. */
static void
ask(struct sl_worker *w, const struct sl_bucket_key *k, struct tier_cache *e,
    const char *key, uint32_t len)
{
	struct sl_coord_msg m;

	memset(&m, 0, sizeof(m));
	m.k1 = k->k1;
	m.k2 = k->k2;
	m.type = SL_CO_TIER;
	m.worker = (uint8_t)w->queue;
	m.tier.len = (uint8_t)len;
	memcpy(m.tier.text, key, len);
	if (sl_to_coord(w, &m) != 0)
		return;
	e->state = 1;
	e->until_ns = w->now_ns + w->app->store_timeout_ns;
	sl_bucket_touch(w->tiers, (struct sl_limit_state *)e, e->until_ns);
}

int
sl_tier_of(struct sl_worker *w, const char *key, uint32_t len)
{
	int def = sl_ruleset_default_tier(w->pol->rs);
	struct sl_bucket_key k = tier_key(key, len);
	struct tier_cache *e;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	if (e->state == 2 && w->now_ns < e->until_ns)
		return e->tier >= 0 ? e->tier : def;
	if (e->state == 1 && w->now_ns < e->until_ns)
		return def; /* asked already: the default until it answers */
	if (len <= sizeof(((struct sl_coord_msg *)0)->tier.text))
		ask(w, &k, e, key, len);
	return def;
}

void
sl_tier_answer(struct sl_worker *w, const struct sl_coord_msg *a)
{
	struct sl_bucket_key k = {a->k1, a->k2};
	struct tier_cache *e;

	sl_bucket_begin(w->tiers);
	e = (struct tier_cache *)sl_bucket_get(w->tiers, &k, w->now_ns);
	e->tier = a->tier.found ? (int16_t)sl_ruleset_tier_index(
					  w->pol->rs, a->tier.text, a->tier.len)
				: -1;
	e->state = 2;
	e->until_ns = w->now_ns + TIER_TTL_NS;
	sl_bucket_touch(w->tiers, (struct sl_limit_state *)e, e->until_ns);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regions: a global rule's limit holds across every region, each region
 * enforcing its slice of it against its own store (no cross-region round
 * trip on any ask). Until something rebalances them, the slices are the
 * static weights of `regions:`: region r enforces limit x w(r) / sum(w).
 * A client spread over every region gets up to the whole limit; one that
 * stays in one region gets that region's slice.
 */
#include <stdio.h>
#include <string.h>

#include "sl_config_priv.h"

void
sl_cfg_regions(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_pair_t *p;

	(void)o;
	if (v->type != YAML_MAPPING_NODE) {
		sl_cfg_error_at(
			L, v, "regions: expected a mapping of region: weight");
		return;
	}
	c->regions.n = 0;
	for (p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = sl_cfg_node(L, p->key);
		uint32_t i = c->regions.n;
		uint64_t w;

		if (i == SL_MAX_REGIONS) {
			sl_cfg_error_at(L, k, "regions: at most %d",
					SL_MAX_REGIONS);
			return;
		}
		if (sl_cfg_get_str(L, k, "regions", c->regions.name[i],
				   SL_NAME_MAX) != 0)
			continue;
		if (!sl_cfg_is_token(c->regions.name[i], 0)) {
			sl_cfg_error_at(L, k, "regions: '%s' is not a name",
					c->regions.name[i]);
			continue;
		}
		if (sl_cfg_get_u64(L, sl_cfg_node(L, p->value), "regions", 1,
				   1000000, &w) != 0)
			continue;
		c->regions.weight[i] = (uint32_t)w;
		c->regions.n++;
	}
}

/* The YAML item of rule `name` in the rules sequence, for messages. */
static yaml_node_t *
rule_node(struct loader *L, yaml_node_t *root, const char *name)
{
	yaml_node_t *rules = sl_cfg_value_of(L, root, "rules"), *it;

	if (rules == NULL || rules->type != YAML_SEQUENCE_NODE)
		return root;
	SEQ_FOREACH(L, rules, it)
	{
		yaml_node_t *n = sl_cfg_value_of(L, it, "name");

		if (n != NULL && n->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)n->data.scalar.value, name) == 0)
			return it;
	}
	return root;
}

/* n x num / den, rounded down: the slices never add up to more. */
static uint64_t
slice_of(uint64_t n, uint32_t num, uint32_t den)
{
	return n / den * num + n % den * num / den;
}

static int
region_of(const struct sl_config *c, const char *region, uint32_t *num,
	  uint32_t *den)
{
	uint32_t i;
	int at = -1;

	*den = 0;
	for (i = 0; i < c->regions.n; i++) {
		*den += c->regions.weight[i];
		if (strcmp(c->regions.name[i], region) == 0)
			at = (int)i;
	}
	if (at >= 0)
		*num = c->regions.weight[at];
	return at;
}

/* Global rules and their overrides at num / den of what was written. */
static void
cut(struct sl_config *c, uint32_t num, uint32_t den)
{
	uint32_t i;

	for (i = 0; i < c->n_rules; i++) {
		struct sl_rule *r = &c->rules[i];

		if (!r->global)
			continue;
		r->slice_num = num;
		r->slice_den = den;
		r->limit.count = slice_of(r->global_count, num, den);
		r->burst = slice_of(r->global_burst, num, den);
	}
	for (i = 0; i < c->n_overrides; i++) {
		struct sl_override *o = &c->overrides[i];

		if (o->rule >= c->n_rules || !c->rules[o->rule].global)
			continue;
		o->limit.count = slice_of(o->global_count, num, den);
		o->burst = slice_of(o->global_burst, num, den);
		if (o->limit.count == 0)
			o->limit.count = 1;
		if (o->burst == 0)
			o->burst = 1;
	}
}

int
sl_config_set_region(struct sl_config *c, const char *region)
{
	uint32_t num = 0, den = 0;

	if (region_of(c, region, &num, &den) < 0)
		return -1;
	snprintf(c->store.region, sizeof(c->store.region), "%s", region);
	cut(c, num, den);
	return 0;
}

void
sl_cfg_apply_regions(struct loader *L, yaml_node_t *root)
{
	struct sl_config *c = L->cfg;
	uint32_t i, num = 0, den = 0;
	int at = region_of(c, c->store.region, &num, &den);

	if (c->store.region[0] && at < 0) {
		yaml_node_t *st = sl_cfg_value_of(L, root, "store");
		yaml_node_t *rg =
			st != NULL ? sl_cfg_value_of(L, st, "region") : NULL;

		sl_cfg_error_at(L, rg != NULL ? rg : root,
				"store: region '%s' is not one of regions",
				c->store.region);
	}
	for (i = 0; i < c->n_overrides; i++) {
		c->overrides[i].global_count = c->overrides[i].limit.count;
		c->overrides[i].global_burst = c->overrides[i].burst;
	}
	for (i = 0; i < c->n_rules; i++) {
		struct sl_rule *r = &c->rules[i];

		r->global_count = r->limit.count;
		r->global_burst = r->burst;
		if (r->global && at < 0)
			sl_cfg_error_at(
				L, rule_node(L, root, r->name),
				"rule '%s': across_regions slices the limit "
				"between regions and needs regions and "
				"store.region; one limit across appliances "
				"needs only the store: drop %s",
				r->name,
				r->said & SL_SAID_GLOBAL ? "global"
							 : "across_regions");
	}
	if (at < 0)
		return;
	cut(c, num, den);
	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];

		if (r->global &&
		    (r->limit.count < r->cost || r->burst < r->cost))
			sl_cfg_error_at(L, rule_node(L, root, r->name),
					"rule '%s': region %s's slice (%u of "
					"%u) leaves "
					"less than its cost %u",
					r->name, c->store.region, num, den,
					r->cost);
	}
}

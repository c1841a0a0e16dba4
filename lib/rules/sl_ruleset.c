/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>

#include "sl_ident.h"
#include "sl_rules.h"

/*
 * Lookups the data path makes per request (key tier, blocklist, override)
 * go through small open-addressing tables of 64-bit hashes with the bytes
 * kept beside them for the final comparison: one or two cache lines per
 * lookup, no allocation, no locks (the set is immutable once built).
 */
struct hent {
	uint64_t h;
	uint32_t len; /* 0: empty */
	uint32_t val;
	const void *bytes;
};

struct htab {
	struct hent *e;
	uint32_t mask;
};

struct sl_ruleset {
	char version[32];
	struct sl_config cfg; /* arrays owned */
	uint64_t *rule_id;
	struct htab keys;     /* key -> tier */
	struct htab blocked;  /* key -> 1 */
	struct htab prefixes; /* (af, len, masked address) -> 1 */
	uint8_t lens4[33];    /* prefix lengths present, longest first */
	uint8_t n_lens4;
	uint8_t lens6[129];
	uint8_t n_lens6;
	struct htab ovr;               /* (rule, kind, id) -> override index */
	uint8_t has_ovr[SL_MAX_RULES]; /* a rule nobody overrides: no hash */
	uint8_t (*prefix_keys)[18];
	uint64_t tier_h[SL_MAX_TIERS]; /* each tier's sl_tier_hash */
	uint32_t methods; /* every method a rule names: 0, none does */
};

static int
ht_init(struct htab *t, uint32_t n)
{
	uint32_t sz = 8;

	while (sz < n * 2)
		sz <<= 1;
	t->e = calloc(sz, sizeof(*t->e));
	t->mask = sz - 1;
	return t->e ? 0 : -1;
}

static void
ht_put(struct htab *t, uint64_t h, const void *b, uint32_t len, uint32_t val)
{
	uint32_t i = (uint32_t)h & t->mask;

	while (t->e[i].len != 0) {
		if (t->e[i].h == h && t->e[i].len == len &&
		    memcmp(t->e[i].bytes, b, len) == 0)
			break; /* a repeat: the later entry wins */
		i = (i + 1) & t->mask;
	}
	t->e[i] = (struct hent){h, len, val, b};
}

static const struct hent *
ht_get(const struct htab *t, uint64_t h, const void *b, uint32_t len)
{
	uint32_t i = (uint32_t)h & t->mask;

	while (t->e[i].len != 0) {
		if (t->e[i].h == h && t->e[i].len == len &&
		    memcmp(t->e[i].bytes, b, len) == 0)
			return &t->e[i];
		i = (i + 1) & t->mask;
	}
	return NULL;
}

/* ---- blocklisted CIDRs: one probe per prefix length present ---- */

static void
mask_addr(uint8_t *dst, const uint8_t *a, uint8_t af, uint8_t len)
{
	uint32_t n = af == 4 ? 4 : 16, i;

	memset(dst, 0, 18);
	dst[0] = af;
	dst[1] = len;
	for (i = 0; i < n; i++) {
		uint32_t bit = i * 8;

		if (bit + 8 <= len)
			dst[2 + i] = a[i];
		else if (bit < len)
			dst[2 + i] = a[i] & (uint8_t)(0xff00 >> (len - bit));
	}
}

static void
add_len(uint8_t *lens, uint8_t *n, uint8_t len)
{
	uint8_t i, j;

	for (i = 0; i < *n; i++)
		if (lens[i] == len)
			return;
	for (i = 0; i < *n && lens[i] > len; i++)
		;
	for (j = *n; j > i; j--)
		lens[j] = lens[j - 1];
	lens[i] = len;
	(*n)++;
}

static int
build_cidrs(struct sl_ruleset *rs)
{
	const struct sl_config *c = &rs->cfg;
	uint32_t i;

	if (ht_init(&rs->prefixes, c->n_block_cidrs) != 0)
		return -1;
	rs->prefix_keys = calloc(c->n_block_cidrs + 1, 18);
	if (rs->prefix_keys == NULL)
		return -1;
	for (i = 0; i < c->n_block_cidrs; i++) {
		const struct sl_cidr *b = &c->block_cidrs[i];

		mask_addr(rs->prefix_keys[i], b->addr, b->af, b->prefix);
		ht_put(&rs->prefixes, sl_hash64(rs->prefix_keys[i], 18, 0),
		       rs->prefix_keys[i], 18, 1);
		if (b->af == 4)
			add_len(rs->lens4, &rs->n_lens4, b->prefix);
		else
			add_len(rs->lens6, &rs->n_lens6, b->prefix);
	}
	return 0;
}

int
sl_ruleset_ip_blocked(const struct sl_ruleset *rs, uint8_t af,
		      const uint8_t *addr)
{
	const uint8_t *lens = af == 4 ? rs->lens4 : rs->lens6;
	uint8_t n = af == 4 ? rs->n_lens4 : rs->n_lens6, i;
	uint8_t k[18];

	for (i = 0; i < n; i++) {
		mask_addr(k, addr, af, lens[i]);
		if (ht_get(&rs->prefixes, sl_hash64(k, 18, 0), k, 18) != NULL)
			return 1;
	}
	return 0;
}

/* ---- overrides ---- */

static uint64_t
ovr_hash(uint64_t rule_id, uint8_t kind, const uint8_t *id, uint32_t len)
{
	return sl_hash64(id, len, rule_id ^ ((uint64_t)kind << 56));
}

static int
build_overrides(struct sl_ruleset *rs)
{
	struct sl_config *c = &rs->cfg;
	uint32_t i;

	if (ht_init(&rs->ovr, c->n_overrides) != 0)
		return -1;
	for (i = 0; i < c->n_overrides; i++) {
		const struct sl_override *o = &c->overrides[i];
		const uint8_t *b = o->kind == SL_SCOPE_IP
					   ? o->id
					   : (const uint8_t *)o->key;
		uint32_t l = o->kind == SL_SCOPE_IP ? o->id_len
						    : (uint32_t)strlen(o->key);

		rs->has_ovr[o->rule] = 1;
		ht_put(&rs->ovr, ovr_hash(rs->rule_id[o->rule], o->kind, b, l),
		       b, l, i);
	}
	return 0;
}

const struct sl_override *
sl_ruleset_override(const struct sl_ruleset *rs, uint32_t i, uint8_t kind,
		    const uint8_t *id, uint32_t len, int64_t now_s)
{
	const struct hent *e;
	const struct sl_override *o;

	if (i >= SL_MAX_RULES || !rs->has_ovr[i])
		return NULL;
	e = ht_get(&rs->ovr, ovr_hash(rs->rule_id[i], kind, id, len), id, len);
	if (e == NULL)
		return NULL;
	o = &rs->cfg.overrides[e->val];
	if (o->rule != i || o->kind != kind || now_s >= o->expires)
		return NULL;
	return o;
}

/* ---- build ---- */

static void *
dup_array(const void *src, size_t n, size_t size)
{
	void *d = malloc(n * size + 1);

	if (d != NULL && n)
		memcpy(d, src, n * size);
	return d;
}

struct sl_ruleset *
sl_ruleset_build(const struct sl_config *src)
{
	struct sl_ruleset *rs = calloc(1, sizeof(*rs));
	struct sl_config *c;
	uint32_t i;

	if (rs == NULL)
		return NULL;
	c = &rs->cfg;
	*c = *src;
	c->keys = dup_array(src->keys, src->n_keys, sizeof(*src->keys));
	c->rules = dup_array(src->rules, src->n_rules, sizeof(*src->rules));
	c->overrides = dup_array(src->overrides, src->n_overrides,
				 sizeof(*src->overrides));
	c->block_keys = dup_array(src->block_keys, src->n_block_keys,
				  sizeof(*src->block_keys));
	c->block_cidrs = dup_array(src->block_cidrs, src->n_block_cidrs,
				   sizeof(*src->block_cidrs));
	rs->rule_id = calloc(src->n_rules + 1, sizeof(uint64_t));
	memcpy(rs->version, src->version, sizeof(rs->version));
	if (c->keys == NULL || c->rules == NULL || c->overrides == NULL ||
	    c->block_keys == NULL || c->block_cidrs == NULL ||
	    rs->rule_id == NULL || ht_init(&rs->keys, c->n_keys) != 0 ||
	    ht_init(&rs->blocked, c->n_block_keys) != 0) {
		sl_ruleset_free(rs);
		return NULL;
	}
	for (i = 0; i < c->n_rules; i++) {
		rs->rule_id[i] = sl_hash64(c->rules[i].name,
					   (uint32_t)strlen(c->rules[i].name),
					   0x52554c45u);
		rs->methods |= c->rules[i].methods;
	}
	for (i = 0; i < c->n_tiers; i++)
		rs->tier_h[i] = sl_tier_hash(c->tiers[i],
					     (uint32_t)strlen(c->tiers[i]));
	for (i = 0; i < c->n_keys; i++)
		ht_put(&rs->keys,
		       sl_hash64(c->keys[i].key,
				 (uint32_t)strlen(c->keys[i].key), 1),
		       c->keys[i].key, (uint32_t)strlen(c->keys[i].key),
		       c->keys[i].tier);
	for (i = 0; i < c->n_block_keys; i++)
		ht_put(&rs->blocked,
		       sl_hash64(c->block_keys[i],
				 (uint32_t)strlen(c->block_keys[i]), 1),
		       c->block_keys[i], (uint32_t)strlen(c->block_keys[i]), 1);
	if (build_cidrs(rs) != 0 || build_overrides(rs) != 0) {
		sl_ruleset_free(rs);
		return NULL;
	}
	return rs;
}

void
sl_ruleset_free(struct sl_ruleset *rs)
{
	if (rs == NULL)
		return;
	free(rs->cfg.keys);
	free(rs->cfg.rules);
	free(rs->cfg.overrides);
	free(rs->cfg.block_keys);
	free(rs->cfg.block_cidrs);
	free(rs->rule_id);
	free(rs->keys.e);
	free(rs->blocked.e);
	free(rs->prefixes.e);
	free(rs->ovr.e);
	free(rs->prefix_keys);
	free(rs);
}

/* ---- queries ---- */

const char *
sl_ruleset_version(const struct sl_ruleset *rs)
{
	return rs->version;
}

uint32_t
sl_ruleset_count(const struct sl_ruleset *rs)
{
	return rs->cfg.n_rules;
}

const struct sl_rule *
sl_ruleset_rule(const struct sl_ruleset *rs, uint32_t i)
{
	return &rs->cfg.rules[i];
}

uint64_t
sl_ruleset_rule_id(const struct sl_ruleset *rs, uint32_t i)
{
	return rs->rule_id[i];
}

int
sl_ruleset_tier(const struct sl_ruleset *rs, const char *key, uint32_t len)
{
	int t = sl_ruleset_tier_find(rs, key, len);

	return t >= 0 ? t : rs->cfg.default_tier;
}

int
sl_ruleset_tier_find(const struct sl_ruleset *rs, const char *key, uint32_t len)
{
	const struct hent *e;

	if (rs->cfg.n_keys == 0)
		return -1;
	e = ht_get(&rs->keys, sl_hash64(key, len, 1), key, len);
	return e ? (int)e->val : -1;
}

uint64_t
sl_tier_hash(const char *name, uint32_t len)
{
	return sl_hash64(name, len, 0x54494552u) | 1; /* never 0 */
}

uint64_t
sl_ruleset_tier_hash_of(const struct sl_ruleset *rs, int t)
{
	return t >= 0 && (uint32_t)t < rs->cfg.n_tiers ? rs->tier_h[t] : 0;
}

int
sl_ruleset_tier_of_hash(const struct sl_ruleset *rs, uint64_t h)
{
	uint32_t i;

	for (i = 0; i < rs->cfg.n_tiers; i++)
		if (rs->tier_h[i] == h)
			return (int)i;
	return -1;
}

int
sl_ruleset_default_tier(const struct sl_ruleset *rs)
{
	return rs->cfg.default_tier;
}

uint32_t
sl_ruleset_tier_count(const struct sl_ruleset *rs)
{
	return rs->cfg.n_tiers;
}

const char *
sl_ruleset_tier_name(const struct sl_ruleset *rs, uint32_t i)
{
	return rs->cfg.tiers[i];
}

int
sl_ruleset_key_blocked(const struct sl_ruleset *rs, const char *key,
		       uint32_t len)
{
	int tier;

	return sl_ruleset_key_info(rs, key, len, &tier);
}

int
sl_ruleset_key_info(const struct sl_ruleset *rs, const char *key, uint32_t len,
		    int *tier)
{
	const struct hent *e;
	uint64_t h;

	*tier = -1;
	if (rs->cfg.n_keys == 0 && rs->cfg.n_block_keys == 0)
		return 0;
	h = sl_hash64(key, len, 1); /* the seed both tables are built with */
	if (rs->cfg.n_keys > 0 && (e = ht_get(&rs->keys, h, key, len)) != NULL)
		*tier = (int)e->val;
	return rs->cfg.n_block_keys > 0 &&
	       ht_get(&rs->blocked, h, key, len) != NULL;
}

/* The rule's host against the request's normal host, ":port" ignored. */
static int
host_matches(const char *want, const char *h, uint32_t hl)
{
	size_t wl = strlen(want);

	if (hl < wl || (hl > wl && h[wl] != ':'))
		return 0;
	return memcmp(want, h, wl) == 0;
}

static int
bytes_eq(const char *a, const char *b, size_t n, int icase)
{
	size_t i;

	if (!icase)
		return memcmp(a, b, n) == 0;
	for (i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];

		if (x != y && !((x | 0x20) == (y | 0x20) && (x | 0x20) >= 'a' &&
				(x | 0x20) <= 'z'))
			return 0;
	}
	return 1;
}

int
sl_route_match(const char *route, const char *path, uint32_t len, int icase)
{
	uint32_t p = 0;

	/* both start at a '/': compare one segment at a time */
	while (*route == '/' && p < len && path[p] == '/') {
		const char *rs = route + 1, *re = strchr(rs, '/');
		uint32_t rl = re ? (uint32_t)(re - rs) : (uint32_t)strlen(rs);
		uint32_t ps = p + 1, pe = ps;

		if (rl == 1 && rs[0] == '*' && re == NULL)
			return 1;
		while (pe < len && path[pe] != '/')
			pe++;
		if (rl > 0 && rs[0] == '{') {
			if (pe == ps)
				return 0; /* a named segment is never empty */
		} else if (rl != pe - ps ||
			   !bytes_eq(rs, path + ps, rl, icase)) {
			return 0;
		}
		route = rs + rl;
		p = pe;
	}
	/* a route "/files/ *" (no space) also matches "/files" itself */
	if (p == len && strcmp(route, "/*") == 0)
		return 1;
	/* and "/v1/search/" is "/v1/search" to many frameworks: limiting
	 * both is the safe side */
	return *route == '\0' && (p == len || (p + 1 == len && path[p] == '/'));
}

static int
path_applies(const struct sl_rule *r, const char *path, uint32_t len)
{
	size_t pl;

	if (r->path_prefix[0]) {
		pl = strlen(r->path_prefix);
		if (len < pl ||
		    !bytes_eq(path, r->path_prefix, pl, r->path_icase))
			return 0;
	}
	return !r->path[0] || sl_route_match(r->path, path, len, r->path_icase);
}

static int
applies(const struct sl_rule *r, const struct sl_match_req *m)
{
	if (r->scope == SL_SCOPE_KEY && !m->has_key)
		return 0;
	if (r->scope == SL_SCOPE_USER && !m->has_user)
		return 0;
	if (r->tier >= 0 && r->tier != m->tier && m->tier != SL_TIER_ANY)
		return 0;
	if (r->methods && !(r->methods & m->method))
		return 0;
	if (!path_applies(r, m->path, m->path_len) &&
	    (m->alt_path == NULL ||
	     !path_applies(r, m->alt_path, m->alt_path_len)))
		return 0;
	if (r->host[0] && !host_matches(r->host, m->host, m->host_len))
		return 0;
	return 1;
}

static void
also_method(void *ctx, const char *v, uint32_t len)
{
	*(uint32_t *)ctx |= sl_method_bit_any_case(v, len);
}

/*
 * The methods the request may be served as: its own, and the one a
 * method override names, in a field or as the query's "_method"; and
 * the paths: its own, and the one a path override names (a framework
 * that honours them serves the request so). Every rule for either
 * applies, strictest wins.
 */
void
sl_match_req_init(struct sl_match_req *m, const struct sl_ruleset *rs,
		  const struct sl_http_req *req, const struct sl_http_norm *n)
{
	/* read by a rule that names methods alone: with none, the query's
	 * scan for "_method" was most of this (43 cycles a keep-alive
	 * decision) */
	m->method = 0;
	if (rs->methods != 0) {
		m->method =
			sl_method_bit_any_case(req->method.p, req->method.len);
		if (req->method_override.len)
			also_method(&m->method, req->method_override.p,
				    req->method_override.len);
		sl_http_query_methods(req->target, also_method, &m->method);
	}
	m->path = n->path.p;
	m->path_len = n->path.len;
	m->alt_path = n->alt_path.len ? n->alt_path.p : NULL;
	m->alt_path_len = n->alt_path.len;
	m->host = n->host.p;
	m->host_len = n->host.len;
	m->has_key = req->api_key.len > 0;
	m->has_user = req->user.len > 0;
	m->tier = -1;
}

uint32_t
sl_ruleset_match(const struct sl_ruleset *rs, const struct sl_match_req *m,
		 uint16_t *out, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < rs->cfg.n_rules && n < max; i++)
		if (applies(&rs->cfg.rules[i], m))
			out[n++] = (uint16_t)i;
	return n;
}

/* ---- what a bucket is keyed by ---- */

void
sl_scope_of(uint8_t scope, const struct sl_http_req *req,
	    const struct sl_identity *id, struct sl_scope_id *out)
{
	out->kind = 0xff;
	out->b = NULL;
	out->len = 0;
	switch (scope) {
	case SL_SCOPE_KEY:
		out->b = (const uint8_t *)req->api_key.p;
		out->len = req->api_key.len;
		out->kind = SL_SCOPE_KEY;
		break;
	case SL_SCOPE_USER:
		out->b = (const uint8_t *)req->user.p;
		out->len = req->user.len;
		out->kind = SL_SCOPE_USER;
		break;
	case SL_SCOPE_IP:
		out->b = id->client_ip;
		out->len = id->ip_af == 6 ? 16 : 4;
		out->kind = SL_SCOPE_IP;
		break;
	}
	sl_hash64x2(out->b, out->len, 0x5c09e + scope,
		    0x7e57 ^ ((uint64_t)scope << 40), out->h);
}

void
sl_bucket_words(uint64_t rid, const struct sl_scope_id *s, uint64_t out[2])
{
	out[0] = rid ^ s->h[0];
	out[1] = (rid * 0x9e3779b97f4a7c15ULL) + s->h[1];
}

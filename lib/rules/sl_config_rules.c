/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sections that name things: tiers, keys, rules (and their match),
 * overrides, blocklist. One handler or row per key.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_config_priv.h"
#include "sl_ident.h"
#include <arpa/inet.h>
#include <time.h>

static const char *const path_case_names[] = {"sensitive", "insensitive", NULL};
static const char *const scope_names[] = {"key",      "user",   "ip",
					  "endpoint", "global", NULL};
static const char *const algo_names[] = {"token_bucket", "gcra",
					 "fixed_window", "sliding_window",
					 "sliding_log",  NULL};
static const char *const onfail_names[] = {"fail_open", "local_strict",
					   "fail_closed", NULL};

void
sl_rule_defaults(struct sl_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->tier = -1;
	r->cost = 1;
	r->accuracy_ppm = 20000;
	r->sub_buckets = 1;
	r->headers_on_allow = 1;
	r->headers = 1;
	r->head_as_get = 1;
}

const char *
sl_scope_name(uint8_t scope)
{
	return scope < sizeof(scope_names) / sizeof(scope_names[0]) - 1
		       ? scope_names[scope]
		       : "?";
}

const char *
sl_algo_name(uint8_t algo)
{
	return algo < sizeof(algo_names) / sizeof(algo_names[0]) - 1
		       ? algo_names[algo]
		       : "?";
}

/* ---- tiers and keys ---- */

void
sl_cfg_tiers(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;
	struct sl_config *c = L->cfg;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "tiers"))
		return;
	c->n_tiers = 0;
	if (sl_cfg_seq_len(v) == 0 || sl_cfg_seq_len(v) > SL_MAX_TIERS)
		sl_cfg_error_at(L, v, "tiers: expected 1 to %d tiers",
				SL_MAX_TIERS);
	SEQ_FOREACH(L, v, it)
	{
		char name[SL_NAME_MAX];

		if (sl_cfg_get_str(L, it, "tiers", name, sizeof(name)) != 0)
			continue;
		if (!sl_cfg_is_token(name, 0))
			sl_cfg_error_at(
				L, it, "tiers: '%s' is not a valid name", name);
		else if (sl_cfg_find_tier(c, name) >= 0)
			sl_cfg_error_at(L, it, "tiers: duplicate tier '%s'",
					name);
		else if (c->n_tiers < SL_MAX_TIERS)
			strcpy(c->tiers[c->n_tiers++], name);
	}
}

void
sl_cfg_default_tier(struct loader *L, yaml_node_t *v, void *o)
{
	int t = sl_cfg_get_tier(L, v, "default_tier");

	(void)o;
	if (t >= 0)
		L->cfg->default_tier = (uint8_t)t;
}

void
sl_cfg_keys(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_pair_t *p;

	(void)o;
	if (v->type != YAML_MAPPING_NODE) {
		sl_cfg_error_at(L, v, "keys: expected a mapping of key: tier");
		return;
	}
	c->n_keys = 0;
	free(c->keys); /* a repeated section is reported; never leaked */
	c->keys = calloc((size_t)(v->data.mapping.pairs.top -
				  v->data.mapping.pairs.start) +
				 1,
			 sizeof(*c->keys));
	for (p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
	     p++) {
		struct sl_key_tier *kt = &c->keys[c->n_keys];
		int t;

		if (sl_cfg_get_str(L, sl_cfg_node(L, p->key), "keys", kt->key,
				   sizeof(kt->key)) != 0)
			continue;
		t = sl_cfg_get_tier(L, sl_cfg_node(L, p->value), "keys");
		if (t >= 0) {
			kt->tier = (uint8_t)t;
			c->n_keys++;
		}
	}
}

/* ---- rules ---- */

static void
f_methods(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;
	yaml_node_t *it;

	if (!sl_cfg_is_seq(L, v, "methods"))
		return;
	SEQ_FOREACH(L, v, it)
	{
		const char *s = sl_cfg_scalar(L, it, "methods");
		uint32_t b;

		if (s == NULL)
			continue;
		b = sl_method_bit(s, strlen(s));
		if (b == 0)
			sl_cfg_error_at(L, it, "methods: unknown method '%s'",
					s);
		r->methods |= b;
	}
}

/*
 * A rule's path must be written as sluice will see requests: in the
 * normal form of the request section (parsed before the rules), so that
 * a rule can never name a spelling no request resolves to.
 */
/*
 * A byte no request target carries raw (a request line is split at its
 * blanks, and sluice refuses control and non-ASCII bytes in it): a rule
 * naming one matches only its escape, which the normal form keeps.
 * Returns whether it said so, with that spelling.
 */
static int
check_raw_bytes(struct loader *L, yaml_node_t *v, const char *what,
		const char *path)
{
	char esc[SL_TEXT_MAX];
	size_t i, o = 0, bad = 0;

	for (i = 0; path[i] != '\0' && o + 4 < sizeof(esc); i++) {
		uint8_t b = (uint8_t)path[i];

		if (b > 0x20 && b < 0x7f) {
			esc[o++] = (char)b;
			continue;
		}
		o += (size_t)snprintf(esc + o, sizeof(esc) - o, "%%%02X", b);
		bad++;
	}
	esc[o] = '\0';
	if (bad == 0)
		return 0;
	sl_cfg_error_at(L, v,
			"%s: '%s' holds a byte no request target carries "
			"raw (a blank, a control or a non-ASCII byte): "
			"requests for it are spelt '%s'",
			what, path, esc);
	return 1;
}

static void
check_normal(struct loader *L, yaml_node_t *v, const char *what,
	     const char *path)
{
	uint32_t len = (uint32_t)strlen(path);
	char out[SL_TEXT_MAX];
	int n;

	if (path[0] != '/') {
		sl_cfg_error_at(L, v, "%s: must start with '/'", what);
		return;
	}
	if (check_raw_bytes(L, v, what, path))
		return;
	n = sl_http_normalize_path(&L->cfg->request, path, len, out);
	if (n < 0)
		sl_cfg_error_at(
			L, v, "%s: '%s' is refused as a request would be (%s)",
			what, path, sl_http_err_name(-n));
	else if ((uint32_t)n != len || memcmp(out, path, len) != 0)
		sl_cfg_error_at(
			L, v,
			"%s: '%s' is not in normal form; requests for it "
			"resolve to '%.*s'",
			what, path, n, out);
}

static void
f_path_prefix(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (sl_cfg_get_str(L, v, "path_prefix", r->path_prefix,
			   sizeof(r->path_prefix)) == 0)
		check_normal(L, v, "path_prefix", r->path_prefix);
}

/* "{name}" segments and a last "*": the shapes sl_route_match knows. */
static void
check_route(struct loader *L, yaml_node_t *v, const char *path)
{
	const char *seg = path;

	while (seg != NULL && *seg == '/') {
		const char *end = strchr(seg + 1, '/');
		size_t n = end ? (size_t)(end - seg - 1) : strlen(seg + 1);
		const char *s = seg + 1;

		if (n == 1 && s[0] == '*' && end != NULL)
			sl_cfg_error_at(
				L, v, "path: '*' may only be the last segment");
		else if (n > 0 && s[0] == '{' &&
			 (n < 3 || s[n - 1] != '}' ||
			  memchr(s + 1, '{', n - 2) ||
			  memchr(s + 1, '}', n - 2)))
			sl_cfg_error_at(
				L, v, "path: a '{name}' segment is malformed");
		else if (!(n > 0 && s[0] == '{') &&
			 (memchr(s, '{', n) || memchr(s, '}', n) ||
			  (n > 1 && memchr(s, '*', n))))
			sl_cfg_error_at(L, v,
					"path: '{name}' and '*' must be whole "
					"segments");
		seg = end;
	}
}

static void
f_path(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (sl_cfg_get_str(L, v, "path", r->path, sizeof(r->path)) != 0)
		return;
	check_normal(L, v, "path", r->path);
	check_route(L, v, r->path);
}

/*
 * Compared with the request's normal host, so kept in that form (lower
 * case, no trailing dot, no ":80"); a host no request's Host can be (a
 * '*', a blank) is an error: the rule would never match.
 */
static void
f_host(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;
	char out[sizeof(r->host)];
	int n;

	if (sl_cfg_get_str(L, v, "host", r->host, sizeof(r->host)) != 0 ||
	    r->host[0] == '\0')
		return;
	n = sl_http_normalize_host(r->host, (uint32_t)strlen(r->host), out);
	if (n < 0) {
		sl_cfg_error_at(L, v,
				"host: '%s' is refused as a request's Host "
				"would be (authority)%s",
				r->host,
				strchr(r->host, '*') != NULL
					? ": a host is matched whole, with no "
					  "wildcard; write a rule per host"
					: "");
		return;
	}
	memcpy(r->host, out, (size_t)n);
	r->host[n] = '\0';
}

static const struct field match_fields[] = {
	F_FN("methods", f_methods),
	F_FN("path_prefix", f_path_prefix),
	F_FN("path", f_path),
	F_ENUM("path_case", struct sl_rule, path_icase, path_case_names),
	F_FN("host", f_host),
	F_BOOL("head", struct sl_rule, head_as_get),
	F_END,
};

static void
f_rname(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (sl_cfg_get_str(L, v, "name", r->name, sizeof(r->name)) != 0)
		return;
	if (!sl_cfg_is_token(r->name, 1))
		sl_cfg_error_at(
			L, v,
			"name: '%s' may use only letters, digits, '-', '_' "
			"and '.'",
			r->name);
	else if (strcmp(r->name, "version") == 0)
		sl_cfg_error_at(
			L, v,
			"name: 'version' is reserved (telemetry reports it)");
}

static void
f_rtier(struct loader *L, yaml_node_t *v, void *o)
{
	int t = sl_cfg_get_tier(L, v, "tier");

	if (t >= 0)
		((struct sl_rule *)o)->tier = (int16_t)t;
}

static void
f_match(struct loader *L, yaml_node_t *v, void *o)
{
	sl_cfg_walk_map(L, v, "match", match_fields, o);
}

static void
f_limit(struct loader *L, yaml_node_t *v, void *o)
{
	sl_cfg_get_rate(L, v, "limit", &((struct sl_rule *)o)->limit);
}

/* A header name, as identity's are; given, it may not be empty. */
static void
f_cost_header(struct loader *L, yaml_node_t *v, void *o)
{
	char *h = ((struct sl_rule *)o)->cost_header;

	if (sl_cfg_header_name(L, v, "cost_from_response", h) == 0 &&
	    h[0] == '\0')
		sl_cfg_error_at(L, v,
				"cost_from_response: expected a header "
				"name");
}

static const struct field rule_fields[] = {
	F_FN("name", f_rname),
	F_ENUM("scope", struct sl_rule, scope, scope_names),
	F_FN("tier", f_rtier),
	F_FN("match", f_match),
	F_ENUM("algorithm", struct sl_rule, algo, algo_names),
	F_FN("limit", f_limit),
	F_UINT("burst", struct sl_rule, burst, 1, 1000000000),
	F_UINT("cost", struct sl_rule, cost, 1, 1000000),
	F_ENUM("on_store_failure", struct sl_rule, on_store_failure,
	       onfail_names),
	F_PPM("accuracy", struct sl_rule, accuracy_ppm, 100, 500000),
	F_UINT("sub_buckets", struct sl_rule, sub_buckets, 1, 16),
	F_BOOL("shadow", struct sl_rule, shadow),
	F_BOOL("across_regions", struct sl_rule, global),
	F_BOOL("global", struct sl_rule, global), /* the old spelling */
	F_BOOL("headers_on_allow", struct sl_rule, headers_on_allow),
	F_BOOL("headers", struct sl_rule, headers),
	F_FN("cost_from_response", f_cost_header),
	F_END,
};

/* What the limiter can represent exactly, said at load time. */
static void
check_rule_numbers(struct loader *L, yaml_node_t *it, const struct sl_rule *r)
{
	uint64_t period_ns = r->limit.period_ms * 1000000ULL;

	if (r->limit.count == 0)
		return;
	if (r->algo == SL_ALGO_SLIDING_LOG && r->limit.count > 64)
		sl_cfg_error_at(
			L, it,
			"rule '%s': sliding_log keeps every arrival; its "
			"limit is at most 64 per window",
			r->name);
	if ((r->algo == SL_ALGO_TOKEN_BUCKET || r->algo == SL_ALGO_GCRA) &&
	    r->burst > (UINT64_MAX >> 2) / period_ns)
		sl_cfg_error_at(
			L, it,
			"rule '%s': burst too large for the period: "
			"at most %llu for %s (fixed_window and "
			"sliding_window have no such bound)",
			r->name,
			(unsigned long long)((UINT64_MAX >> 2) / period_ns),
			r->limit.period_ms >= 86400000  ? "a day"
			: r->limit.period_ms >= 3600000 ? "an hour"
							: "it");
	if ((r->algo == SL_ALGO_TOKEN_BUCKET || r->algo == SL_ALGO_GCRA) &&
	    r->cost > r->burst)
		sl_cfg_error_at(
			L, it,
			"rule '%s': cost %u exceeds burst %llu: every request "
			"would be rejected",
			r->name, r->cost, (unsigned long long)r->burst);
	else if (r->algo != SL_ALGO_TOKEN_BUCKET && r->algo != SL_ALGO_GCRA &&
		 r->cost > r->limit.count)
		sl_cfg_error_at(
			L, it,
			"rule '%s': cost %u exceeds the limit: every request "
			"would be rejected",
			r->name, r->cost);
	/* each sub-bucket holds limit / k and burst / k, and must still
	 * admit a request */
	if (r->sub_buckets > 1 &&
	    (r->limit.count / r->sub_buckets < r->cost ||
	     ((r->algo == SL_ALGO_TOKEN_BUCKET || r->algo == SL_ALGO_GCRA) &&
	      r->burst / r->sub_buckets < r->cost)))
		sl_cfg_error_at(
			L, it,
			"rule '%s': sub_buckets %u leave each less than "
			"its cost %u (limit and burst are divided)",
			r->name, r->sub_buckets, r->cost);
	if (r->algo == SL_ALGO_SLIDING_WINDOW && r->limit.count > UINT32_MAX)
		sl_cfg_error_at(L, it,
				"rule '%s': sliding_window limit too large",
				r->name);
}

/* What the checker warns about (sl_config_lint), noted as written. */
static void
said(struct loader *L, yaml_node_t *it, struct sl_rule *r)
{
	if (sl_cfg_has_key(L, it, "on_store_failure"))
		r->said |= SL_SAID_ONFAIL;
	if (sl_cfg_has_key(L, it, "global"))
		r->said |= SL_SAID_GLOBAL;
	if (r->scope == SL_SCOPE_GLOBAL)
		r->said |= SL_SAID_SCOPE_GLOBAL;
	if (sl_cfg_has_key(L, it, "global") &&
	    sl_cfg_has_key(L, it, "across_regions"))
		sl_cfg_error_at(L, it,
				"rule '%s': 'global' and 'across_regions' are "
				"one option; keep across_regions",
				r->name);
}

static int
find_rule(const struct sl_config *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->n_rules; i++)
		if (strcmp(c->rules[i].name, name) == 0)
			return (int)i;
	return -1;
}

void
sl_cfg_rules(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "rules"))
		return;
	free(c->rules);
	c->n_rules = 0;
	c->rules = calloc(sl_cfg_seq_len(v) + 1, sizeof(*c->rules));
	SEQ_FOREACH(L, v, it)
	{
		struct sl_rule *r = &c->rules[c->n_rules];
		int before = L->nerr;

		/* a refused rule leaves its slot to the next: start clean */
		sl_rule_defaults(r);
		r->scope = 0xff; /* required: unset until read */
		r->line = (uint32_t)it->start_mark.line + 1;
		sl_cfg_walk_map(L, it, "rule", rule_fields, r);
		if (r->name[0] == '\0')
			sl_cfg_error_at(L, it, "rule: 'name' is required");
		else if (find_rule(c, r->name) >= 0)
			sl_cfg_error_at(L, it,
					"rule '%s': duplicate name (the first "
					"is at line %u)",
					r->name,
					c->rules[find_rule(c, r->name)].line);
		if (!sl_cfg_has_key(L, it, "limit"))
			sl_cfg_error_at(L, it, "rule '%s': 'limit' is required",
					r->name);
		if (!sl_cfg_has_key(L, it, "scope"))
			sl_cfg_error_at(L, it, "rule '%s': 'scope' is required",
					r->name);
		if (r->burst && r->algo != SL_ALGO_TOKEN_BUCKET &&
		    r->algo != SL_ALGO_GCRA)
			sl_cfg_error_at(
				L, it,
				"rule '%s': 'burst' applies to token_bucket "
				"and gcra only",
				r->name);
		if (r->burst == 0)
			r->burst = r->limit.count;
		if ((r->methods & SL_M_GET) && r->head_as_get)
			r->methods |= SL_M_HEAD;
		else if (!r->head_as_get && !(r->methods & SL_M_GET))
			sl_cfg_error_at(L, it,
					"rule '%s': 'head: false' applies to "
					"rules whose methods name GET",
					r->name);
		check_rule_numbers(L, it, r);
		said(L, it, r);
		if (c->n_rules >= SL_MAX_RULES)
			sl_cfg_error_at(L, it, "rules: at most %d rules",
					SL_MAX_RULES);
		if (L->nerr == before)
			c->n_rules++;
	}
}

/* ---- overrides ---- */

struct ovr_ctx {
	struct sl_override *o;
	int has_id;
};

static void
f_orule(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	const char *s = sl_cfg_scalar(L, v, "rule");
	int r;

	if (s == NULL)
		return;
	r = find_rule(L->cfg, s);
	if (r < 0)
		sl_cfg_error_at(L, v, "rule: unknown rule '%s'", s);
	else
		x->o->rule = (uint32_t)r;
}

static void
ovr_id(struct loader *L, yaml_node_t *v, struct ovr_ctx *x, uint8_t kind,
       const char *what)
{
	if (x->has_id)
		sl_cfg_error_at(L, v,
				"%s: an override names one of key, user or ip",
				what);
	x->has_id = 1;
	x->o->kind = kind;
	sl_cfg_get_str(L, v, what, x->o->key, sizeof(x->o->key));
}

static void
f_okey(struct loader *L, yaml_node_t *v, void *o)
{
	ovr_id(L, v, o, SL_SCOPE_KEY, "key");
}
static void
f_ouser(struct loader *L, yaml_node_t *v, void *o)
{
	ovr_id(L, v, o, SL_SCOPE_USER, "user");
}

static void
f_oip(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	struct sl_cidr cidr;

	ovr_id(L, v, o, SL_SCOPE_IP, "ip");
	if (x->o->key[0] == '\0')
		return;
	if (sl_cidr_parse(x->o->key, &cidr) != 0)
		sl_cfg_error_at(L, v, "ip: '%s' is not an address", x->o->key);
	else if (cidr.prefix != (cidr.af == 4 ? 32 : 128))
		/* it was keyed on the range's first address alone */
		sl_cfg_error_at(L, v,
				"ip: '%s' is a range; an override names one "
				"address (an IPv6 one stands for its "
				"identity.ipv6_prefix, as its clients are "
				"counted)",
				x->o->key);
	else if (sl_ident_group_addr(&cidr.af, cidr.addr, 128) != 0)
		sl_cfg_error_at(L, v,
				"ip: '%s' is no client's address (its "
				"requests are refused, 400 client_address)",
				x->o->key);
}

static void
f_olimit(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;

	sl_cfg_get_rate(L, v, "limit", &x->o->limit);
}

static void
f_oburst(struct loader *L, yaml_node_t *v, void *o)
{
	GET_UINT(L, v, "burst", 1, 1000000000, ((struct ovr_ctx *)o)->o->burst);
}
static void
f_oreason(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	sl_cfg_get_str(L, v, "reason", x->o->reason, sizeof(x->o->reason));
}

static void
f_oexpires(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	const char *s = sl_cfg_scalar(L, v, "expires");
	struct tm tm;
	char *end;

	if (s == NULL)
		return;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0') {
		sl_cfg_error_at(L, v,
				"expires: expected a UTC time like "
				"2026-12-31T00:00:00Z, got '%s'",
				s);
		return;
	}
	x->o->expires = (int64_t)timegm(&tm);
}

static const struct field override_fields[] = {
	F_FN("rule", f_orule),
	F_FN("key", f_okey),
	F_FN("user", f_ouser),
	F_FN("ip", f_oip),
	F_FN("limit", f_olimit),
	F_FN("burst", f_oburst),
	F_FN("expires", f_oexpires),
	F_FN("reason", f_oreason),
	F_END,
};

void
sl_cfg_overrides(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "overrides"))
		return;
	free(c->overrides);
	c->n_overrides = 0;
	c->overrides = calloc(sl_cfg_seq_len(v) + 1, sizeof(*c->overrides));
	SEQ_FOREACH(L, v, it)
	{
		struct ovr_ctx x = {.o = &c->overrides[c->n_overrides]};
		int before = L->nerr;

		memset(x.o, 0, sizeof(*x.o));
		x.o->rule = UINT32_MAX;
		x.o->line = (uint32_t)it->start_mark.line + 1;
		sl_cfg_walk_map(L, it, "override", override_fields, &x);
		if (x.o->rule == UINT32_MAX && L->nerr == before)
			sl_cfg_error_at(L, it, "override: 'rule' is required");
		if (!x.has_id)
			sl_cfg_error_at(
				L, it,
				"override: one of 'key', 'user' or 'ip' is "
				"required");
		if (!sl_cfg_has_key(L, it, "expires"))
			sl_cfg_error_at(L, it,
					"override: 'expires' is required");
		if (!sl_cfg_has_key(L, it, "limit"))
			sl_cfg_error_at(L, it, "override: 'limit' is required");
		if (x.o->burst == 0)
			x.o->burst = x.o->limit.count;
		if (L->nerr == before)
			c->n_overrides++;
	}
}

void
sl_cfg_override_ids(struct sl_config *c)
{
	uint32_t i;

	for (i = 0; i < c->n_overrides; i++) {
		struct sl_override *o = &c->overrides[i];
		struct sl_cidr a;

		o->id_len = 0;
		if (o->kind != SL_SCOPE_IP || sl_cidr_parse(o->key, &a) != 0 ||
		    sl_ident_group_addr(&a.af, a.addr,
					c->identity.ipv6_prefix) != 0)
			continue;
		o->id_len = a.af == 4 ? 4 : 16;
		memcpy(o->id, a.addr, o->id_len);
	}
}

/* ---- blocklist ---- */

static void
f_bkeys(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "keys"))
		return;
	free(c->block_keys);
	c->n_block_keys = 0;
	c->block_keys = calloc(sl_cfg_seq_len(v) + 1, sizeof(*c->block_keys));
	SEQ_FOREACH(L, v, it)
	{
		if (sl_cfg_get_str(L, it, "keys",
				   c->block_keys[c->n_block_keys],
				   SL_KEY_MAX) == 0)
			c->n_block_keys++;
	}
}

/*
 * A mapped (::ffff:a.b.c.d) or compatible (::a.b.c.d) range is an IPv4
 * one: a client at such an address is counted and blocked as its IPv4
 * address (sl_ident), so the range as written would block nobody.
 */
static void
v4_range(struct sl_cidr *b)
{
	static const uint8_t zero[10];
	const uint8_t *a = b->addr;
	int mapped = a[10] == 0xff && a[11] == 0xff;
	int compat = a[10] == 0 && a[11] == 0 &&
		     (a[12] | a[13] | a[14] || a[15] > 1);

	if (b->af != 6 || b->prefix < 96 || memcmp(a, zero, 10) != 0 ||
	    !(mapped || compat))
		return;
	memmove(b->addr, b->addr + 12, 4);
	memset(b->addr + 4, 0, 12);
	b->af = 4;
	b->prefix = (uint8_t)(b->prefix - 96);
}

static void
f_bcidrs(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "cidrs"))
		return;
	free(c->block_cidrs);
	c->n_block_cidrs = 0;
	c->block_cidrs = calloc(sl_cfg_seq_len(v) + 1, sizeof(*c->block_cidrs));
	SEQ_FOREACH(L, v, it)
	{
		const char *s = sl_cfg_scalar(L, it, "cidrs");

		if (s == NULL)
			continue;
		if (sl_cidr_parse(s, &c->block_cidrs[c->n_block_cidrs]) != 0)
			sl_cfg_error_at(L, it,
					"cidrs: '%s' is not a valid CIDR "
					"(address/prefix, no host bits)",
					s);
		else
			v4_range(&c->block_cidrs[c->n_block_cidrs++]);
	}
}

static const struct field blocklist_fields[] = {
	F_FN("keys", f_bkeys),
	F_FN("cidrs", f_bcidrs),
	F_END,
};

SL_CFG_SECTION(sl_cfg_blocklist, "blocklist", blocklist_fields)

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The compiled rules: which rules a request matches, in which normal
 * form its path is compared, rule ids across edits, blocklists and
 * overrides.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rules_util.h"
#include "sl_rules.h"

static const char RS_YAML[] =
	"version: 1\n"
	"tiers: [free, pro]\n"
	"default_tier: free\n"
	"keys: {k-pro: pro}\n"
	"rules:\n"
	"  - {name: free-key, scope: key, tier: free, limit: 10/min}\n"
	"  - {name: pro-key, scope: key, tier: pro, limit: 100/min}\n"
	"  - {name: login, scope: ip, limit: 5/min, algorithm: sliding_log,\n"
	"     match: {methods: [POST], path_prefix: /v1/login}}\n"
	"  - {name: api-host, scope: global, limit: 1000/s,\n"
	"     match: {host: api.example.com}}\n"
	"  - {name: users, scope: user, limit: 50/min}\n"
	"overrides:\n"
	"  - {rule: free-key, key: k-big, limit: 1000/min, expires: "
	"2030-01-01T00:00:00Z}\n"
	"  - {rule: login, ip: 198.18.0.9, limit: 50/min, expires: "
	"2020-01-01T00:00:00Z}\n"
	"blocklist:\n"
	"  keys: [k-revoked]\n"
	"  cidrs: [203.0.113.0/24, 198.18.128.0/17, \"2001:db8:bad::/48\", "
	"10.1.2.3/32]\n";

static struct sl_ruleset *
ruleset_of(const char *yaml)
{
	char err[2048];
	struct sl_config *c = load(yaml, err, sizeof(err));
	struct sl_ruleset *rs;

	if (c == NULL)
		fail_msg("%s", err);
	rs = sl_ruleset_build(c);
	sl_config_free(c);
	assert_non_null(rs);
	return rs;
}

static struct sl_ruleset *
ruleset(void)
{
	return ruleset_of(RS_YAML);
}

static uint32_t
match(const struct sl_ruleset *rs, const char *method, const char *target,
      const char *host, const char *key, const char *user, uint16_t *out)
{
	struct sl_match_req m = {
		.method = sl_method_bit(method, strlen(method)),
		.path = target,
		.path_len = (uint32_t)strlen(target),
		.host = host,
		.host_len = (uint32_t)strlen(host),
		.has_key = key != NULL,
		.has_user = user != NULL,
		.tier = key ? (int16_t)sl_ruleset_tier(rs, key,
						       (uint32_t)strlen(key))
			    : -1};

	return sl_ruleset_match(rs, &m, out, 32);
}

/* A rule set that names a method: the others read no request's. */
static const struct sl_ruleset *
methods_named(void)
{
	static struct sl_ruleset *rs;

	if (rs == NULL)
		rs = ruleset();
	return rs;
}

/* The method bit the data path matches a request's method by. */
static uint32_t
request_method(const char *method)
{
	struct sl_http_req q = {.method = {method, (uint32_t)strlen(method)}};
	struct sl_http_norm n = {.path = {"/", 1}, .host = {"h", 1}};
	struct sl_match_req m;

	sl_match_req_init(&m, methods_named(), &q, &n);
	return m.method;
}

/* ... with a method override in a field, or in the query. */
static uint32_t
served_as(const char *method, const char *override, const char *target)
{
	struct sl_http_req q = {
		.method = {method, (uint32_t)strlen(method)},
		.target = {target, (uint32_t)strlen(target)},
		.method_override = {override, (uint32_t)strlen(override)}};
	struct sl_http_norm n = {.path = {"/", 1}, .host = {"h", 1}};
	struct sl_match_req m;

	sl_match_req_init(&m, methods_named(), &q, &n);
	return m.method;
}

/* The rules a POST to one path carrying a path override matches. */
static uint32_t
match_overridden(const struct sl_ruleset *rs, const char *path, const char *alt,
		 uint16_t *out)
{
	struct sl_http_req q = {.method = {"POST", 4}};
	struct sl_http_norm n = {.path = {path, (uint32_t)strlen(path)},
				 .alt_path = {alt, (uint32_t)strlen(alt)},
				 .host = {"h", 1}};
	struct sl_match_req m;

	sl_match_req_init(&m, rs, &q, &n);
	return sl_ruleset_match(rs, &m, out, 32);
}

/*
 * A rule set whose rules name no method reads none (the query's
 * "_method" scan skipped), and matches as it did; one rule naming a
 * method brings the reading back, overrides included.
 */
static void
methods_read_where_named(void **state)
{
	static const char *const yaml[] = {
		"version: 1\nrules:\n"
		"  - {name: all, scope: ip, limit: 5/min,\n"
		"     match: {path_prefix: /v1}}\n",
		"version: 1\nrules:\n"
		"  - {name: all, scope: ip, limit: 5/min,\n"
		"     match: {path_prefix: /v1}}\n"
		"  - {name: del, scope: ip, limit: 1/min,\n"
		"     match: {methods: [DELETE], path_prefix: /v1}}\n",
	};
	struct sl_http_req q = {.method = {"POST", 4},
				.target = {"/v1/x?_method=DELETE", 20}};
	struct sl_http_norm n = {.path = {"/v1/x", 5}, .host = {"h", 1}};
	struct sl_match_req m;
	uint16_t out[4];
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct sl_ruleset *rs = ruleset_of(yaml[i]);

		sl_match_req_init(&m, rs, &q, &n);
		assert_int_equal(m.method,
				 i == 0 ? 0 : SL_M_POST | SL_M_DELETE);
		assert_int_equal(sl_ruleset_match(rs, &m, out, 4),
				 (uint32_t)i + 1);
		sl_ruleset_free(rs);
	}
}

static void
ruleset_matching(void **state)
{
	struct sl_ruleset *rs = ruleset();
	uint16_t r[32];

	(void)state;
	assert_int_equal(sl_ruleset_count(rs), 5);
	/* an unknown key is in default_tier; a mapped one in its tier */
	assert_int_equal(match(rs, "GET", "/v1/x", "h", "k-any", NULL, r), 1);
	assert_string_equal(sl_ruleset_rule(rs, r[0])->name, "free-key");
	assert_int_equal(match(rs, "GET", "/v1/x", "h", "k-pro", NULL, r), 1);
	assert_string_equal(sl_ruleset_rule(rs, r[0])->name, "pro-key");
	/* no key: key rules do not apply; method and prefix must both match */
	assert_int_equal(match(rs, "GET", "/v1/login", "h", NULL, NULL, r), 0);
	assert_int_equal(match(rs, "POST", "/v1/login", "h", NULL, NULL, r), 1);
	assert_string_equal(sl_ruleset_rule(rs, r[0])->name, "login");
	assert_int_equal(match(rs, "POST", "/v1/logout", "h", NULL, NULL, r),
			 0);
	/* a request's method in any case: a server that upper-cases it
	 * serves POST; a config's is written exactly */
	assert_int_equal(request_method("post"), SL_M_POST);
	assert_int_equal(request_method("pOsT"), SL_M_POST);
	assert_int_equal(request_method("head"), SL_M_HEAD);
	assert_int_equal(request_method("POSTS"), 0);
	assert_int_equal(request_method("OPTIONSX"), 0);
	assert_int_equal(request_method("options"), SL_M_OPTIONS);
	assert_int_equal(request_method("DeLeTe"), SL_M_DELETE);
	assert_int_equal(request_method("G\xc5T"), 0); /* E | 0x80: no letter */
	assert_int_equal(request_method("G%T"), 0);
	assert_int_equal(request_method("GE"), 0);
	assert_int_equal(sl_method_bit("post", 4), 0);
	/* a method override: the request is held to both methods' rules */
	assert_int_equal(served_as("POST", "delete", "/x"),
			 SL_M_POST | SL_M_DELETE);
	assert_int_equal(served_as("POST", "", "/x?a=1&_method=PUT"),
			 SL_M_POST | SL_M_PUT);
	assert_int_equal(served_as("POST", "PATCH", "/x?.method=DELETE"),
			 SL_M_POST | SL_M_PATCH | SL_M_DELETE);
	assert_int_equal(served_as("POST", "FROB", "/x?_method"), SL_M_POST);
	/* a path override: the request is held to both paths' rules */
	assert_int_equal(match_overridden(rs, "/v1/x", "/v1/login/a", r), 1);
	assert_string_equal(sl_ruleset_rule(rs, r[0])->name, "login");
	assert_int_equal(match_overridden(rs, "/v1/login", "/v1/x", r), 1);
	assert_int_equal(match_overridden(rs, "/v1/x", "/v1/y", r), 0);
	assert_int_equal(match_overridden(rs, "/v1/x", "", r), 0);
	/* hosts arrive normalised (sl_http_normalize); a port is ignored */
	assert_int_equal(
		match(rs, "GET", "/", "api.example.com:8080", NULL, NULL, r),
		1);
	assert_int_equal(
		match(rs, "GET", "/", "api.example.com.evil", NULL, NULL, r),
		0);
	/* several at once, in file order */
	assert_int_equal(match(rs, "POST", "/v1/login", "api.example.com",
			       "k-1", "u", r),
			 4);
	assert_string_equal(sl_ruleset_rule(rs, r[3])->name, "users");
	/* rule ids follow names, not positions */
	assert_true(sl_ruleset_rule_id(rs, 0) != sl_ruleset_rule_id(rs, 1));
	sl_ruleset_free(rs);
}

/* The id of the rule called name in rs (every bucket and Redis key of the
 * rule derives from it). */
static uint64_t
id_of(const struct sl_ruleset *rs, const char *name)
{
	uint32_t i;

	for (i = 0; i < sl_ruleset_count(rs); i++)
		if (strcmp(sl_ruleset_rule(rs, i)->name, name) == 0)
			return sl_ruleset_rule_id(rs, i);
	fail_msg("no rule %s", name);
	return 0;
}

/*
 * A reload that reorders the rules, or adds one in front, moves nobody's
 * bucket: ids follow names. A rule renamed is a new rule (new buckets).
 */
static void
rule_ids_survive_reorder(void **state)
{
	static const char a[] = "version: 1\nrules:\n"
				"  - {name: x, scope: ip, limit: 1/s}\n"
				"  - {name: y, scope: ip, limit: 2/s}\n"
				"  - {name: z, scope: ip, limit: 3/s}\n";
	static const char b[] = "version: 1\nrules:\n"
				"  - {name: new, scope: ip, limit: 9/s}\n"
				"  - {name: z, scope: ip, limit: 3/s}\n"
				"  - {name: x, scope: ip, limit: 1/s}\n"
				"  - {name: y2, scope: ip, limit: 2/s}\n";
	struct sl_ruleset *ra = ruleset_of(a), *rb = ruleset_of(b);

	(void)state;
	assert_true(id_of(ra, "x") == id_of(rb, "x"));
	assert_true(id_of(ra, "z") == id_of(rb, "z"));
	assert_true(id_of(ra, "x") != id_of(ra, "y"));
	assert_true(id_of(ra, "y") != id_of(rb, "y2"));
	assert_true(id_of(rb, "new") != id_of(ra, "x") &&
		    id_of(rb, "new") != id_of(ra, "y") &&
		    id_of(rb, "new") != id_of(ra, "z"));
	sl_ruleset_free(ra);
	sl_ruleset_free(rb);
}

static void
ruleset_blocklist(void **state)
{
	struct sl_ruleset *rs = ruleset();
	uint8_t a[16] = {203, 0, 113, 77};
	uint8_t b[16] = {198, 18, 200, 1};
	uint8_t c[16] = {198, 18, 127, 255};
	uint8_t d[16] = {10, 1, 2, 3};
	uint8_t e[16] = {10, 1, 2, 4};
	uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0x0b, 0xad, 0, 1};
	uint8_t v6ok[16] = {0x20, 0x01, 0x0d, 0xb8, 0x0b, 0xae};
	int tier;

	(void)state;

	assert_true(sl_ruleset_key_blocked(rs, "k-revoked", 9));
	assert_false(sl_ruleset_key_blocked(rs, "k-revoke", 8));
	/* both lookups with one hash */
	assert_true(sl_ruleset_key_info(rs, "k-revoked", 9, &tier));
	assert_int_equal(tier, -1);
	assert_false(sl_ruleset_key_info(rs, "k-pro", 5, &tier));
	assert_int_equal(tier, sl_ruleset_tier_find(rs, "k-pro", 5));
	assert_int_equal(tier, 1);
	assert_false(sl_ruleset_key_info(rs, "k-nobody", 8, &tier));
	assert_int_equal(tier, -1);
	assert_true(sl_ruleset_ip_blocked(rs, 4, a));
	assert_true(sl_ruleset_ip_blocked(rs, 4, b));
	assert_false(sl_ruleset_ip_blocked(rs, 4, c));
	assert_true(sl_ruleset_ip_blocked(rs, 4, d));
	assert_false(sl_ruleset_ip_blocked(rs, 4, e));
	assert_true(sl_ruleset_ip_blocked(rs, 6, v6));
	assert_false(sl_ruleset_ip_blocked(rs, 6, v6ok));
	sl_ruleset_free(rs);
}

static void
ruleset_overrides_expire(void **state)
{
	struct sl_ruleset *rs = ruleset();
	const struct sl_override *o;
	uint8_t ip[4] = {198, 18, 0, 9};
	int64_t t2029 = 1861920000, t2031 = 1924992000;

	(void)state;
	o = sl_ruleset_override(rs, 0, SL_SCOPE_KEY, (const uint8_t *)"k-big",
				5, t2029);
	assert_non_null(o);
	assert_int_equal(o->limit.count, 1000);
	/* gone by itself after its expiry */
	assert_null(sl_ruleset_override(rs, 0, SL_SCOPE_KEY,
					(const uint8_t *)"k-big", 5, t2031));
	/* other keys, other rules and other kinds do not match */
	assert_null(sl_ruleset_override(rs, 0, SL_SCOPE_KEY,
					(const uint8_t *)"k-bi", 4, t2029));
	assert_null(sl_ruleset_override(rs, 1, SL_SCOPE_KEY,
					(const uint8_t *)"k-big", 5, t2029));
	assert_null(sl_ruleset_override(rs, 0, SL_SCOPE_USER,
					(const uint8_t *)"k-big", 5, t2029));
	/* an expired one is never active */
	assert_null(sl_ruleset_override(rs, 2, SL_SCOPE_IP, ip, 4, 1600000000));
	assert_non_null(
		sl_ruleset_override(rs, 2, SL_SCOPE_IP, ip, 4, 1500000000));
	sl_ruleset_free(rs);
}

static void
routes(void **state)
{
	(void)state;
	assert_true(sl_route_match("/v1/users/{id}/orders",
				   "/v1/users/42/orders", 19, 0));
	assert_false(sl_route_match("/v1/users/{id}/orders",
				    "/v1/users//orders", 17, 0));
	assert_false(sl_route_match("/v1/users/{id}/orders",
				    "/v1/users/42/orders/x", 21, 0));
	assert_false(
		sl_route_match("/v1/users/{id}/orders", "/v1/users/42", 12, 0));
	assert_true(sl_route_match("/v1/files/*", "/v1/files/a/b", 13, 0));
	assert_true(sl_route_match("/v1/files/*", "/v1/files/", 10, 0));
	assert_true(sl_route_match("/v1/files/*", "/v1/files", 9, 0));
	assert_false(sl_route_match("/v1/files/*", "/v1/filesx", 10, 0));
	assert_true(sl_route_match("/v1/search", "/v1/search", 10, 0));
	/* one trailing slash more: the same route to many frameworks */
	assert_true(sl_route_match("/v1/search", "/v1/search/", 11, 0));
	assert_false(sl_route_match("/v1/search", "/v1/search//", 12, 0));
	assert_false(sl_route_match("/v1/search", "/v1/search/x", 12, 0));
	assert_true(sl_route_match("/v1/users/{id}", "/v1/users/7/", 12, 0));
	assert_false(sl_route_match("/v1/search", "/V1/Search", 10, 0));
	assert_true(sl_route_match("/v1/search", "/V1/Search", 10, 1));
	assert_false(sl_route_match("/v1/search", "/v1/searcH", 9, 1));
	assert_true(sl_route_match("/", "/", 1, 0));
	assert_false(sl_route_match("/", "/a", 2, 0));
}

/*
 * An address override is keyed as a client at the address is counted:
 * a mapped IPv6 address is its IPv4 one, an IPv6 address its
 * identity.ipv6_prefix group; a range or no client's address is refused.
 */
static void
overrides_keyed_as_clients(void **state)
{
	static const char y[] =
		"identity: {ipv6_prefix: 48}\n"
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s}\n"
		"overrides:\n"
		"  - {rule: a, ip: '::ffff:198.18.0.7', limit: 7/s, expires: "
		"2030-01-01T00:00:00Z}\n"
		"  - {rule: a, ip: '2001:2:0:5::10', limit: 9/s, expires: "
		"2030-01-01T00:00:00Z}\n";
	static const char bad[] =
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s}\n"
		"overrides:\n"
		"  - {rule: a, ip: 198.18.1.0/24, limit: 7/s, expires: "
		"2030-01-01T00:00:00Z}\n"
		"  - {rule: a, ip: '::', limit: 7/s, expires: "
		"2030-01-01T00:00:00Z}\n";
	uint8_t v4[4] = {198, 18, 0, 7}, v6[16] = {0x20, 0x01, 0, 2};
	int64_t t2029 = 1861920000;
	char err[2048];
	struct sl_ruleset *rs = ruleset_of(y);
	const struct sl_override *o;

	(void)state;
	o = sl_ruleset_override(rs, 0, SL_SCOPE_IP, v4, 4, t2029);
	assert_non_null(o);
	assert_int_equal(o->limit.count, 7);
	o = sl_ruleset_override(rs, 0, SL_SCOPE_IP, v6, 16, t2029);
	assert_non_null(o);
	assert_int_equal(o->limit.count, 9);
	sl_ruleset_free(rs);
	assert_null(load(bad, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:4:19: ip: '198.18.1.0/24' is a "
				    "range"));
	assert_non_null(strstr(err, "t.yaml:5:19: ip: '::' is no client's"));
}

/* A tier learnt by name reads right under a rule set whose tiers were
 * reordered, and as none where the tier is gone. */
static void
tier_by_name_hash(void **state)
{
	static const char *const y[] = {
		"tiers: [free, pro]\nrules:\n  - {name: a, scope: ip, limit: "
		"1/s}\n",
		"tiers: [pro, free]\nrules:\n  - {name: a, scope: ip, limit: "
		"1/s}\n",
		"tiers: [free]\nrules:\n  - {name: a, scope: ip, limit: 1/s}\n",
	};
	const int want[] = {1, 0, -1};
	uint64_t pro = sl_tier_hash("pro", 3);
	uint32_t i;

	(void)state;
	assert_int_not_equal(pro, 0);
	assert_int_not_equal(pro, sl_tier_hash("free", 4));
	for (i = 0; i < 3; i++) {
		struct sl_ruleset *rs = ruleset_of(y[i]);

		assert_int_equal(sl_ruleset_tier_of_hash(rs, pro), want[i]);
		if (want[i] >= 0)
			assert_int_equal(sl_ruleset_tier_hash_of(rs, want[i]),
					 pro);
		assert_int_equal(sl_ruleset_tier_hash_of(rs, -1), 0);
		sl_ruleset_free(rs);
	}
}

/* A mapped or compatible range in the blocklist blocks the IPv4 clients
 * it names (they are counted as IPv4), not nobody. */
static void
blocklist_mapped_ranges(void **state)
{
	static const char y[] =
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s}\n"
		"blocklist:\n"
		"  cidrs: ['::ffff:198.18.0.7/128', '::ffff:198.18.1.0/120',\n"
		"          '::198.18.2.0/120', '::1/128', '2001:2::/64']\n";
	uint8_t a[4] = {198, 18, 0, 7}, b[4] = {198, 18, 1, 200},
		c4[4] = {198, 18, 2, 9}, d[4] = {198, 18, 3, 1},
		one[16] = {[15] = 1}, v6[16] = {0x20, 0x01, 0, 2, [15] = 5};
	char err[2048];
	struct sl_config *c = load(y, err, sizeof(err));
	struct sl_ruleset *rs;

	(void)state;
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->block_cidrs[0].af, 4);
	assert_int_equal(c->block_cidrs[0].prefix, 32);
	assert_int_equal(c->block_cidrs[1].prefix, 24);
	assert_int_equal(c->block_cidrs[3].af, 6); /* ::1 is no IPv4 */
	sl_config_free(c);
	rs = ruleset_of(y);
	assert_true(sl_ruleset_ip_blocked(rs, 4, a));
	assert_true(sl_ruleset_ip_blocked(rs, 4, b));
	assert_true(sl_ruleset_ip_blocked(rs, 4, c4));
	assert_false(sl_ruleset_ip_blocked(rs, 4, d));
	assert_true(sl_ruleset_ip_blocked(rs, 6, one));
	assert_true(sl_ruleset_ip_blocked(rs, 6, v6));
	sl_ruleset_free(rs);
}

static void
paths_in_normal_form(void **state)
{
	static const char y[] =
		"request: {merge_slashes: true, escaped_slashes: decode,\n"
		"          host_mismatch: allow}\n"
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s, match: {path: "
		"/v1//x}}\n"
		"  - {name: b, scope: ip, limit: 1/s, match: {path_prefix: "
		"/v1/%7Eu}}\n"
		"  - {name: c, scope: ip, limit: 1/s, match: {path: "
		"'/v1/{id/x'}}\n"
		"  - {name: d, scope: ip, limit: 1/s, match: {path: "
		"/v1/*/x}}\n"
		"  - {name: e, scope: ip, limit: 1/s, match: {path: /a/./b}}\n"
		"  - {name: f, scope: ip, limit: 1/s, match: {path: v1}}\n"
		"  - {name: g, scope: ip, limit: 1/s, match: {path: /a%zz}}\n"
		"  - {name: h, scope: ip, limit: 1/s, match: {path: "
		"'/v1/{id}/*', path_case: insensitive}}\n"
		"  - {name: i, scope: ip, limit: 1/s, match: {path: "
		"'/v1/a b'}}\n"
		"  - {name: j, scope: ip, limit: 1/s, match: {path_prefix: "
		"\"/caf\xc3\xa9\\t\"}}\n"
		"  - {name: k, scope: ip, limit: 1/s, match: {host: "
		"'*.api.test'}}\n"
		"  - {name: l, scope: ip, limit: 1/s, match: {host: "
		"'api test'}}\n";
	static const char ok[] =
		"rules:\n"
		"  - {name: r, scope: endpoint, limit: 1/s, match: {path: "
		"'/v1/users/{id}/orders', path_case: insensitive, host: "
		"API.Test.}}\n"
		"  - {name: s, scope: ip, limit: 1/s, match: {host: "
		"'API.test:80'}}\n"
		"  - {name: t, scope: ip, limit: 1/s, match: {host: "
		"'[2001:2::A]:8080'}}\n";
	char err[4096];
	struct sl_config *c = load(y, err, sizeof(err));

	(void)state;
	assert_null(c);
	assert_non_null(strstr(err,
			       "t.yaml:4:52: path: '/v1//x' is not in normal "
			       "form; requests for it resolve to '/v1/x'"));
	assert_non_null(strstr(err, "t.yaml:5:59: path_prefix: '/v1/%7Eu' "
				    "is not in normal form"));
	assert_non_null(strstr(err, "t.yaml:6:52: path: a '{name}' segment "
				    "is malformed"));
	assert_non_null(strstr(err, "t.yaml:7:52: path: '*' may only be"));
	assert_non_null(strstr(err, "t.yaml:8:52: path: '/a/./b' is not"));
	assert_non_null(strstr(err, "t.yaml:9:52: path: must start with"));
	assert_non_null(strstr(err, "t.yaml:10:52: path: '/a%zz' is refused "
				    "as a request would be "
				    "(bad_percent_encoding)"));
	assert_null(strstr(err, "t.yaml:11:"));
	/* a blank, a non-ASCII or a control byte: only the escape is sent */
	assert_non_null(strstr(err, "t.yaml:12:52: path: '/v1/a b' holds a "
				    "byte no request target carries raw"));
	assert_non_null(strstr(err, "requests for it are spelt '/v1/a%20b'"));
	assert_non_null(strstr(err,
			       "t.yaml:13:59: path_prefix: '/caf\xc3\xa9\t' "
			       "holds a byte no request target"));
	assert_non_null(strstr(err, "spelt '/caf%C3%A9%09'"));
	/* a host no request's Host can be: the rule would never match */
	assert_non_null(strstr(err, "t.yaml:14:52: host: '*.api.test' is "
				    "refused as a request's Host would be "
				    "(authority): a host is matched whole, "
				    "with no wildcard"));
	assert_non_null(strstr(err, "t.yaml:15:52: host: 'api test' is "
				    "refused"));
	c = load(ok, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->request.merge_slashes, 1);
	assert_int_equal(c->request.escaped_slashes, SL_ESC_REJECT);
	assert_int_equal(c->request.host_mismatch, SL_HOST_REJECT);
	assert_string_equal(c->rules[0].host, "api.test");
	/* the default port dropped, as a request's Host is: it matches */
	assert_string_equal(c->rules[1].host, "api.test");
	assert_string_equal(c->rules[2].host, "[2001:2::a]:8080");
	assert_int_equal(c->rules[0].path_icase, 1);
	sl_config_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ruleset_matching),
		cmocka_unit_test(methods_read_where_named),
		cmocka_unit_test(routes),
		cmocka_unit_test(paths_in_normal_form),
		cmocka_unit_test(rule_ids_survive_reorder),
		cmocka_unit_test(ruleset_blocklist),
		cmocka_unit_test(ruleset_overrides_expire),
		cmocka_unit_test(overrides_keyed_as_clients),
		cmocka_unit_test(blocklist_mapped_ranges),
		cmocka_unit_test(tier_by_name_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

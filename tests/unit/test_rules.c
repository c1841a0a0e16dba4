/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sl_rules.h"

static struct sl_config *
load(const char *text, char *err, size_t errlen)
{
	return sl_config_parse("t.yaml", text, strlen(text), err, errlen);
}

static void
full_example(void **state)
{
	static const char y[] =
		"version: 1\n"
		"dataplane:\n"
		"  downstream_port: 0\n"
		"  upstream_port: 1\n"
		"  service_ports: [80, 8080]\n"
		"  max_head_bytes: 4096\n"
		"identity:\n"
		"  api_key_header: X-Key\n"
		"  client_ip: x-forwarded-for\n"
		"  trusted_hops: 2\n"
		"  ipv6_prefix: 56\n"
		"tiers: [free, pro]\n"
		"default_tier: pro\n"
		"keys: {k-a: pro, k-b: free}\n"
		"rules:\n"
		"  - name: r1\n"
		"    scope: key\n"
		"    tier: pro\n"
		"    match: {methods: [GET, POST], path_prefix: /v1/, host: api}\n"
		"    algorithm: gcra\n"
		"    limit: 100/min\n"
		"    burst: 20\n"
		"    cost: 3\n"
		"    on_store_failure: fail_closed\n"
		"    accuracy: 0.05\n"
		"    shadow: true\n"
		"  - {name: r2, scope: ip, limit: 5/s, algorithm: sliding_log}\n"
		"overrides:\n"
		"  - {rule: r1, key: k-a, limit: 10/s, expires: 2030-01-02T03:04:05Z,"
		" reason: launch}\n"
		"blocklist:\n"
		"  keys: [bad]\n"
		"  cidrs: [203.0.113.0/24, \"2001:db8::/32\"]\n"
		"store:\n"
		"  redis: {endpoints: [\"127.0.0.1:6379\"], timeout_ms: 7}\n"
		"  expected_appliances: 3\n"
		"response: {retry_jitter: 0.5, headers: both, expose_rule: false}\n";
	char err[4096];
	struct sl_config *c = load(y, err, sizeof(err));

	(void)state;
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->dataplane.max_head_bytes, 4096);
	assert_string_equal(c->identity.api_key_header, "X-Key");
	assert_int_equal(c->identity.use_xff, 1);
	assert_int_equal(c->identity.trusted_hops, 2);
	assert_int_equal(c->n_tiers, 2);
	assert_int_equal(c->default_tier, 1);
	assert_int_equal(c->n_keys, 2);
	assert_int_equal(c->n_rules, 2);
	assert_string_equal(c->rules[0].name, "r1");
	assert_int_equal(c->rules[0].tier, 1);
	assert_int_equal(c->rules[0].methods, SL_M_GET | SL_M_POST);
	assert_int_equal(c->rules[0].algo, SL_ALGO_GCRA);
	assert_int_equal(c->rules[0].limit.count, 100);
	assert_int_equal(c->rules[0].limit.period_ms, 60000);
	assert_int_equal(c->rules[0].burst, 20);
	assert_int_equal(c->rules[0].cost, 3);
	assert_int_equal(c->rules[0].accuracy_ppm, 50000);
	assert_true(c->rules[0].shadow);
	assert_int_equal(c->rules[1].burst, 5);
	assert_int_equal(c->rules[1].tier, -1);
	assert_int_equal(c->n_overrides, 1);
	assert_int_equal(c->overrides[0].expires, 1893553445);
	assert_int_equal(c->n_block_cidrs, 2);
	assert_int_equal(c->block_cidrs[1].af, 6);
	assert_int_equal(c->block_cidrs[1].prefix, 32);
	assert_true(c->store.present);
	assert_int_equal(c->store.endpoints[0].port, 6379);
	assert_int_equal(c->store.timeout_ms, 7);
	assert_int_equal(c->response.retry_jitter_ppm, 500000);
	assert_int_equal(c->response.headers, SL_HDR_BOTH);
	assert_false(c->response.expose_rule);
	sl_config_free(c);
}

/* Every error is reported, each at its own line and column. */
static void
all_errors_with_positions(void **state)
{
	static const char y[] =
		"version: 1\n"				   /* 1 */
		"dataplane:\n"				   /* 2 */
		"  service_ports: [80, 70000]\n"	   /* 3 */
		"  colour: blue\n"			   /* 4 */
		"tiers: [free]\n"			   /* 5 */
		"rules:\n"				   /* 6 */
		"  - name: a\n"				   /* 7 */
		"    scope: key\n"			   /* 8 */
		"    limit: 10/fortnight\n"		   /* 9 */
		"  - name: b\n"				   /* 10 */
		"    scope: key\n"			   /* 11 */
		"    limit: 1/s\n"			   /* 12 */
		"    tier: gold\n"			   /* 13 */
		"  - name: c\n"				   /* 14 */
		"    scope: ip\n"			   /* 15 */
		"    limit: 1/s\n"			   /* 16 */
		"  - name: c\n"				   /* 17 */
		"    scope: ip\n"			   /* 18 */
		"    limit: 2/s\n"			   /* 19 */
		"overrides:\n"				   /* 20 */
		"  - rule: nope\n"			   /* 21 */
		"    key: x\n"				   /* 22 */
		"    limit: 1/s\n"			   /* 23 */
		"blocklist:\n"				   /* 24 */
		"  cidrs: [10.0.0.1/8]\n";		   /* 25 */
	char err[4096];

	(void)state;
	assert_null(load(y, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:3:23: service_ports: expected an integer from 1 to 65535, got '70000'\n"));
	assert_non_null(strstr(err, "t.yaml:4:3: dataplane: unknown key 'colour'\n"));
	assert_non_null(strstr(err, "t.yaml:9:12: limit: expected a rate"));
	assert_non_null(strstr(err, "t.yaml:13:11: tier: unknown tier 'gold'\n"));
	assert_non_null(strstr(err, "t.yaml:17:5: rule 'c': duplicate name\n"));
	assert_non_null(strstr(err, "t.yaml:21:5: override: 'expires' is required\n"));
	assert_non_null(strstr(err, "t.yaml:21:11: rule: unknown rule 'nope'\n"));
	assert_non_null(strstr(err, "t.yaml:25:11: cidrs: '10.0.0.1/8' is not a valid CIDR"));
	/* in file order */
	assert_true(strstr(err, ":3:23:") < strstr(err, ":4:3:"));
	assert_true(strstr(err, ":13:11:") < strstr(err, ":25:11:"));
}

static void
yaml_syntax_error(void **state)
{
	char err[1024];

	(void)state;
	assert_null(load("version: 1\nrules: [\n  - a: b\n", err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:"));
	assert_non_null(strstr(err, "YAML syntax"));
	assert_null(load("", err, sizeof(err)));
	assert_non_null(strstr(err, "empty configuration"));
	assert_null(load("- a\n- b\n", err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:1:1: the file must be a mapping"));
}

static void
values(void **state)
{
	struct sl_rate r;
	struct sl_cidr c;

	(void)state;
	assert_int_equal(sl_rate_parse("5/s", &r), 0);
	assert_int_equal(r.period_ms, 1000);
	assert_int_equal(sl_rate_parse("7/h", &r), 0);
	assert_int_equal(r.period_ms, 3600000);
	assert_int_equal(sl_rate_parse("0/s", &r), -1);
	assert_int_equal(sl_rate_parse("/s", &r), -1);
	assert_int_equal(sl_rate_parse("5", &r), -1);
	assert_int_equal(sl_rate_parse("-5/s", &r), -1);
	assert_int_equal(sl_cidr_parse("198.18.0.0/15", &c), 0);
	assert_int_equal(c.prefix, 15);
	assert_int_equal(sl_cidr_parse("198.19.0.0/15", &c), -1);
	assert_int_equal(sl_cidr_parse("2001:2::/48", &c), 0);
	assert_int_equal(sl_cidr_parse("2001:2::/129", &c), -1);
	assert_int_equal(sl_cidr_parse("1.2.3.4", &c), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(sl_cidr_parse("1.2.3.4/", &c), -1);
	assert_int_equal(sl_method_bit("PATCH", 5), SL_M_PATCH);
	assert_int_equal(sl_method_bit("get", 3), 0);
}

static void
shipped_configs_are_valid(void **state)
{
	const char *files[] = {SRCDIR "/conf/sluice.yaml",
			       SRCDIR "/conf/demo.yaml"};
	char err[4096];
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct sl_config *c = sl_config_load(files[i], err, sizeof(err));

		if (c == NULL)
			fail_msg("%s", err);
		assert_true(c->n_rules > 0);
		sl_config_free(c);
	}
	assert_null(sl_config_load("/nonexistent.yaml", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent.yaml:1:1: cannot open"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_example),
		cmocka_unit_test(all_errors_with_positions),
		cmocka_unit_test(yaml_syntax_error),
		cmocka_unit_test(values),
		cmocka_unit_test(shipped_configs_are_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

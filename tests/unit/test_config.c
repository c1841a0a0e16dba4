/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The config file: what it may say, the defaults, and every error at
 * its line and column with how to fix it.
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
		"  idle_sleep_us: 50\n"
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
		"    match: {methods: [GET, POST], path_prefix: /v1/, host: "
		"api}\n"
		"    algorithm: gcra\n"
		"    limit: 100/min\n"
		"    burst: 20\n"
		"    cost: 3\n"
		"    on_store_failure: fail_closed\n"
		"    accuracy: 0.05\n"
		"    shadow: true\n"
		"    sub_buckets: 4\n"
		"  - {name: r2, scope: ip, limit: 5/s, algorithm: "
		"sliding_log}\n"
		"overrides:\n"
		"  - {rule: r1, key: k-a, limit: 10/s, expires: "
		"2030-01-02T03:04:05Z,"
		" reason: launch}\n"
		"blocklist:\n"
		"  keys: [bad]\n"
		"  cidrs: [203.0.113.0/24, \"2001:db8::/32\"]\n"
		"store:\n"
		"  redis: {endpoints: [\"127.0.0.1:6379\"], timeout_ms: 7}\n"
		"  expected_appliances: 3\n"
		"response: {retry_jitter: 0.5, headers: both, expose_rule: "
		"false}\n";
	char err[4096];
	struct sl_config *c = load(y, err, sizeof(err));

	(void)state;
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->dataplane.max_head_bytes, 4096);
	assert_int_equal(c->dataplane.idle_sleep_us, 50);
	assert_string_equal(c->identity.api_key_header, "X-Key");
	assert_int_equal(c->identity.client_ip, SL_CIP_XFF);
	assert_int_equal(c->identity.trusted_hops, 2);
	assert_int_equal(c->n_tiers, 2);
	assert_int_equal(c->default_tier, 1);
	assert_int_equal(c->n_keys, 2);
	assert_int_equal(c->n_rules, 2);
	assert_string_equal(c->rules[0].name, "r1");
	assert_int_equal(c->rules[0].tier, 1);
	/* GET takes HEAD along */
	assert_int_equal(c->rules[0].methods, SL_M_GET | SL_M_HEAD | SL_M_POST);
	assert_int_equal(c->rules[0].algo, SL_ALGO_GCRA);
	assert_int_equal(c->rules[0].limit.count, 100);
	assert_int_equal(c->rules[0].limit.period_ms, 60000);
	assert_int_equal(c->rules[0].burst, 20);
	assert_int_equal(c->rules[0].cost, 3);
	assert_int_equal(c->rules[0].accuracy_ppm, 50000);
	assert_true(c->rules[0].shadow);
	assert_int_equal(c->rules[0].sub_buckets, 4);
	assert_int_equal(c->rules[1].sub_buckets, 1);
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
		"version: 1\n"                   /* 1 */
		"dataplane:\n"                   /* 2 */
		"  service_ports: [80, 70000]\n" /* 3 */
		"  colour: blue\n"               /* 4 */
		"tiers: [free]\n"                /* 5 */
		"rules:\n"                       /* 6 */
		"  - name: a\n"                  /* 7 */
		"    scope: key\n"               /* 8 */
		"    limit: 10/fortnight\n"      /* 9 */
		"  - name: b\n"                  /* 10 */
		"    scope: key\n"               /* 11 */
		"    limit: 1/s\n"               /* 12 */
		"    tier: gold\n"               /* 13 */
		"  - name: c\n"                  /* 14 */
		"    scope: ip\n"                /* 15 */
		"    limit: 1/s\n"               /* 16 */
		"  - name: c\n"                  /* 17 */
		"    scope: ip\n"                /* 18 */
		"    limit: 2/s\n"               /* 19 */
		"  - {name: d, scope: ip, limit: 20/s, burst: 5, "
		"sub_buckets: 8}\n"        /* 20 */
		"overrides:\n"             /* 21 */
		"  - rule: nope\n"         /* 22 */
		"    key: x\n"             /* 23 */
		"    limit: 1/s\n"         /* 24 */
		"blocklist:\n"             /* 25 */
		"  cidrs: [10.0.0.1/8]\n"; /* 26 */
	char err[4096];

	(void)state;
	assert_null(load(y, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:3:23: service_ports: expected an "
				    "integer from 1 to 65535, got '70000'\n"));
	assert_non_null(
		strstr(err, "t.yaml:4:3: dataplane: unknown key 'colour'\n"));
	assert_non_null(strstr(err, "t.yaml:9:12: limit: '"));
	assert_non_null(
		strstr(err, "t.yaml:13:11: tier: unknown tier 'gold'\n"));
	assert_non_null(strstr(err, "t.yaml:17:5: rule 'c': duplicate name "
				    "(the first is at line 14)\n"));
	assert_non_null(strstr(err, "t.yaml:20:5: rule 'd': sub_buckets 8 "
				    "leave each less than its cost 1"));
	assert_non_null(
		strstr(err, "t.yaml:22:5: override: 'expires' is required\n"));
	assert_non_null(
		strstr(err, "t.yaml:22:11: rule: unknown rule 'nope'\n"));
	assert_non_null(strstr(
		err, "t.yaml:26:11: cidrs: '10.0.0.1/8' is not a valid CIDR"));
	/* in file order */
	assert_true(strstr(err, ":3:23:") < strstr(err, ":4:3:"));
	assert_true(strstr(err, ":13:11:") < strstr(err, ":26:11:"));
}

/* A budget on allowed responses needs the translation keep_alive sets
 * up; a rule may keep its own budget out of them. A rule's cost from the
 * response names a field. */
static void
headers_on_allow(void **state)
{
	static const char bad[] = "version: 1\n"
				  "rules:\n"
				  "  - {name: a, scope: ip, limit: 1/s}\n"
				  "response:\n"
				  "  headers_on_allow: true\n"
				  "  keep_alive: false\n";
	static const char keep_off[] =
		"version: 1\n"
		"rules: [{name: a, scope: ip, limit: 1/s}]\n"
		"response: {keep_alive: false}\n";
	static const char good[] =
		"version: 1\n"
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s}\n"
		"  - {name: b, scope: ip, limit: 1/s, headers_on_allow: "
		"false,\n"
		"     cost_from_response: X-RateLimit-Cost}\n"
		"response: {keep_alive: true, headers_on_allow: true}\n";
	static const char badname[] =
		"version: 1\n"
		"rules:\n"
		"  - {name: a, scope: ip, limit: 1/s, cost_from_response: 'a "
		"b'}\n";
	char err[1024];
	struct sl_config *c;

	(void)state;
	assert_null(load(bad, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:5:3: response: headers_on_allow "
				    "needs keep_alive: true"));
	/* both on by default; keep_alive off takes the budget with it */
	c = load("version: 1\n", err, sizeof(err));
	assert_non_null(c);
	assert_true(c->response.keep_alive && c->response.headers_on_allow);
	sl_config_free(c);
	c = load(keep_off, err, sizeof(err));
	assert_non_null(c);
	assert_false(c->response.keep_alive || c->response.headers_on_allow);
	sl_config_free(c);
	c = load(good, err, sizeof(err));
	assert_non_null(c);
	assert_true(c->response.headers_on_allow);
	assert_int_equal(c->rules[0].headers_on_allow, 1);
	assert_int_equal(c->rules[1].headers_on_allow, 0);
	assert_string_equal(c->rules[0].cost_header, "");
	assert_string_equal(c->rules[1].cost_header, "X-RateLimit-Cost");
	sl_config_free(c);
	assert_null(load(badname, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:3:58: cost_from_response: 'a b' "
				    "is not a valid header name"));
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
	assert_null(load("version: 1\ndataplane: {idle_sleep_us: 100001}\n",
			 err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:2:28:"));
	assert_non_null(strstr(err, "idle_sleep_us"));
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
	assert_int_equal(sl_rate_parse("10/minute", &r), 0);
	assert_int_equal(r.period_ms, 60000);
	assert_int_equal(sl_rate_parse("10000/day", &r), 0);
	assert_int_equal(r.count, 10000);
	assert_int_equal(r.period_ms, 86400000);
	assert_int_equal(sl_rate_parse("1/d", &r), 0);
	assert_int_equal(sl_rate_parse("30/minutes", &r), 0);
	assert_int_equal(r.period_ms, 60000);
	assert_int_equal(sl_rate_parse("2/days", &r), 0);
	assert_int_equal(r.period_ms, 86400000);
	assert_int_equal(sl_rate_parse("9/seconds", &r), 0);
	assert_int_equal(sl_rate_parse("9/hours", &r), 0);
	assert_int_equal(r.period_ms, 3600000);
	assert_int_equal(sl_rate_parse("5/week", &r), -1);
	assert_int_equal(sl_rate_parse("5/mins", &r), -1);
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
		struct sl_config *c =
			sl_config_load(files[i], err, sizeof(err));

		if (c == NULL)
			fail_msg("%s", err);
		assert_true(c->n_rules > 0);
		sl_config_free(c);
	}
	assert_null(sl_config_load("/nonexistent.yaml", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent.yaml:1:1: cannot open"));
}

static void
rule_number_errors(void **state)
{
	char err[2048];

	(void)state;
	assert_null(load(
		"version: 1\nrules:\n"
		"  - {name: a, scope: ip, limit: 100/s, algorithm: "
		"sliding_log}\n"
		"  - {name: b, scope: ip, limit: 10/s, burst: 5, cost: 6}\n"
		"  - {name: c, scope: ip, limit: 10/s, algorithm: "
		"fixed_window, cost: 11}\n",
		err, sizeof(err)));
	assert_non_null(strstr(
		err, "t.yaml:3:5: rule 'a': sliding_log keeps every arrival"));
	assert_non_null(
		strstr(err, "t.yaml:4:5: rule 'b': cost 6 exceeds burst 5"));
	assert_non_null(
		strstr(err, "t.yaml:5:5: rule 'c': cost 11 exceeds the limit"));
}

/* The decision stream: rates, sinks and what cannot work together. */
static void
decisions_section(void **state)
{
	static const char ok[] = "decisions:\n"
				 "  sample: 0.01\n"
				 "  file: /tmp/d.jsonl\n";
	static const char both[] =
		"store:\n"
		"  redis: {endpoints: [\"127.0.0.1:6379\"]}\n"
		"decisions: {sample: 0, sample_rejected: 1,\n"
		"  stream: s:d, maxlen: 500, file: /tmp/x}\n";
	static const char bad[] = "decisions:\n"     /* 1 */
				  "  sample: 1.5\n"  /* 2 */
				  "  maxlen: 10\n"   /* 3 */
				  "  file: \"\"\n"   /* 4 */
				  "  colour: red\n"; /* 5 */
	static const char nostore[] = "decisions:\n"
				      "  sample: 0.5\n"
				      "  stream: s\n";
	static const char nosink[] = "decisions: {sample_rejected: 0.5}\n";
	char err[2048];
	struct sl_config *c;

	(void)state;
	c = load(ok, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->decisions.sample_ppm, 10000);
	assert_int_equal(c->decisions.rejected_ppm, 10000); /* as sample */
	assert_int_equal(c->decisions.maxlen, 100000);
	assert_string_equal(c->decisions.file, "/tmp/d.jsonl");
	sl_config_free(c);
	c = load(both, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	assert_int_equal(c->decisions.sample_ppm, 0);
	assert_int_equal(c->decisions.rejected_ppm, 1000000);
	assert_int_equal(c->decisions.maxlen, 500);
	assert_string_equal(c->decisions.stream, "s:d");
	sl_config_free(c);
	c = load("version: 1\n", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->decisions.sample_ppm + c->decisions.rejected_ppm,
			 0); /* off unless asked for */
	sl_config_free(c);
	assert_null(load(bad, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:2:11: sample: expected a number "
				    "from 0 to 1, got '1.5'\n"));
	assert_non_null(strstr(err, "t.yaml:3:11: maxlen: expected an integer "
				    "from 100 to 100000000, got '10'\n"));
	assert_non_null(strstr(err, "t.yaml:4:9: file: expected a path\n"));
	assert_non_null(
		strstr(err, "t.yaml:5:3: decisions: unknown key 'colour'\n"));
	assert_null(load(nostore, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:2:3: decisions: 'stream' needs a "
				    "store; give a file\n"));
	assert_null(load(nosink, err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:1:12: decisions: sampling needs a "
				    "'file'"));
}

/* Credentials: given inline, or the first line of a file kept out of the
 * rules; a file that cannot be read is an error at its place. */
static void
redis_credentials(void **state)
{
	char err[1024], path[] = "/tmp/sl_pw_XXXXXX", text[512];
	struct sl_config *c;
	FILE *f;
	int fd;

	(void)state;
	c = load(
		"version: 1\nstore:\n  redis: {endpoints: [\"127.0.0.1:6379\"],"
		" username: sluice, password: s3cret}\n",
		err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->store.username, "sluice");
	assert_string_equal(c->store.password, "s3cret");
	sl_config_free(c);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("from-file\r\nsecond line\n", f);
	fclose(f);
	snprintf(
		text, sizeof(text),
		"version: 1\nstore:\n  redis: {endpoints: [\"127.0.0.1:6379\"],"
		" password_file: %s}\n",
		path);
	c = load(text, err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->store.password, "from-file");
	assert_string_equal(c->store.username, "");
	sl_config_free(c);
	unlink(path);
	c = load(text, err, sizeof(err));
	assert_null(c);
	assert_non_null(strstr(err, "t.yaml:3:"));
	assert_non_null(strstr(err, "password_file: cannot read"));
}

/*
 * Regions: a global rule is enforced here at this region's weight over
 * the sum of the weights (rounded down, so that the regions together
 * never exceed the limit as written), its overrides likewise; a rule set
 * from another region is cut again to this one's slice; errors name the
 * place.
 */
static void
regions_slices(void **state)
{
	static const char y[] =
		"version: 1\n"
		"regions: {eu: 2, us: 1, ap: 1}\n"
		"rules:\n"
		"  - {name: g, scope: key, match: {path_prefix: /g}, limit: "
		"1001/min, burst: 50, global: true}\n"
		"  - {name: r, scope: key, match: {path_prefix: /r}, limit: "
		"1001/min, burst: 50}\n"
		"overrides:\n"
		"  - {rule: g, key: vip, limit: 4000/min, expires: "
		"'2099-01-01T00:00:00Z', reason: t}\n"
		"store: {region: eu, redis: {endpoints: ['127.0.0.1:6379']}}\n";
	char err[1024] = "";
	struct sl_config *c = load(y, err, sizeof(err));
	uint64_t sum = 0;
	const char *r;

	(void)state;
	assert_non_null(c);
	assert_true(c->rules[0].global);
	assert_int_equal(c->rules[0].global_count, 1001);
	assert_int_equal(c->rules[0].limit.count, 500); /* 1001 x 2/4 */
	assert_int_equal(c->rules[0].burst, 25);
	assert_int_equal(c->rules[0].slice_num, 2);
	assert_int_equal(c->rules[0].slice_den, 4);
	assert_int_equal(c->rules[1].limit.count, 1001); /* regional */
	assert_int_equal(c->overrides[0].limit.count, 2000);
	/* the slices of all regions never add up to more than the limit */
	for (r = "eu\0us\0ap\0"; *r; r += strlen(r) + 1) {
		assert_int_equal(sl_config_set_region(c, r), 0);
		sum += c->rules[0].limit.count;
	}
	assert_int_equal(sum, 500 + 250 + 250);
	assert_int_equal(c->rules[0].limit.count, 250); /* ap */
	assert_int_equal(c->rules[0].burst, 12);
	assert_int_equal(c->overrides[0].limit.count, 1000);
	assert_int_equal(sl_config_set_region(c, "mars"), -1);
	assert_int_equal(c->rules[0].limit.count, 250); /* unchanged */
	sl_config_free(c);
}

static void
regions_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"version: 1\nregions: {eu: 1}\nrules:\n"
		 "  - {name: g, scope: key, limit: 10/min, global: true}\n",
		 "t.yaml:4:5: rule 'g': across_regions slices the limit "
		 "between regions and needs regions and store.region; one "
		 "limit across appliances needs only the store: drop global"},
		{"version: 1\nrules:\n"
		 "  - {name: g, scope: key, limit: 10/min, across_regions: "
		 "true}\n",
		 "needs only the store: drop across_regions"},
		{"version: 1\nrules:\n"
		 "  - {name: g, scope: key, limit: 1/s, global: true, "
		 "across_regions: true}\n",
		 "t.yaml:3:5: rule 'g': 'global' and 'across_regions' are one "
		 "option; keep across_regions"},
		{"version: 1\nregions: {eu: 1}\nrules: []\n"
		 "store: {region: mars}\n",
		 "t.yaml:4:17: store: region 'mars' is not one of regions"},
		{"version: 1\nregions: {eu: 0}\nrules: []\n",
		 "t.yaml:2:15: regions: expected an integer from 1 to 1000000"},
		{"version: 1\nregions: [eu]\nrules: []\n",
		 "t.yaml:2:10: regions: expected a mapping"},
		{"version: 1\nregions: {eu: 1, us: 9}\nrules:\n"
		 "  - {name: g, scope: key, limit: 5/min, global: true}\n"
		 "store: {region: eu}\n",
		 "t.yaml:4:5: rule 'g': region eu's slice (1 of 10) leaves "
		 "less than its cost 1"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[1024] = "";
		struct sl_config *c = load(cases[i].text, err, sizeof(err));

		if (c != NULL || strstr(err, cases[i].want) == NULL)
			fail_msg("case %zu: want '%s', got '%s'", i,
				 cases[i].want, err);
	}
}

/*
 * A file that names its sha256 on its first line is refused unless the
 * rest hashes to it: cut after its first rule it still parses, and would
 * have gone live without its second.
 */
static void
checksum_line(void **state)
{
	static const char body[] = "version: 1\n"
				   "rules:\n"
				   "  - {name: a, scope: ip, limit: 5/min}\n"
				   "  - {name: b, scope: ip, limit: 7/min}\n";
	char text[512], err[512];
	struct sl_config *c;

	(void)state;
	snprintf(text, sizeof(text),
		 "# sha256: "
		 "baccf3bc020577c7f36b13770b917899ed8d5685071d8392ce1da8164669a"
		 "6fe\n%s",
		 body);
	c = load(text, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->n_rules, 2);
	sl_config_free(c);
	/* upper-case digits and no blank after the colon are the same sum */
	snprintf(text, sizeof(text),
		 "# "
		 "sha256:"
		 "BACCF3BC020577C7F36B13770B917899ED8D5685071D8392CE1DA8164669A"
		 "6FE\n%s",
		 body);
	c = load(text, err, sizeof(err));
	assert_non_null(c);
	sl_config_free(c);
	/* cut before the second rule: valid YAML, refused */
	snprintf(text, sizeof(text),
		 "# sha256: "
		 "baccf3bc020577c7f36b13770b917899ed8d5685071d8392ce1da8164669a"
		 "6fe\n%.*s",
		 (int)strlen(body) - 39, body);
	assert_null(load(text, err, sizeof(err)));
	assert_non_null(strstr(err,
			       "t.yaml:1:1: the file after its first line has "
			       "sha256 "
			       "eb789417fa0564b25bf461b80173142fb032726b7814c8b"
			       "20a44f7c5f6caa02c"));
	/* not 64 digits: refused, not read as a comment */
	assert_null(load("# sha256: abc\nversion: 1\n", err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:1:1:"));
	/* no such line: no check */
	c = load(body, err, sizeof(err));
	assert_non_null(c);
	sl_config_free(c);
}

/* A store's endpoints as written: host:port or [v6]:port; a URL, a
 * bare IPv6 address or a list written as one string refused with what
 * to write, once. */
static void
endpoints_strict(void **state)
{
	static const struct {
		const char *ep, *want;
	} bad[] = {
		{"\"redis://10.0.0.5:6379\"", "'redis://10.0.0.5:6379': a URL: "
					      "write host:port, without the "
					      "scheme"},
		{"\"rediss://r:6380\"", "TLS goes through a local stunnel"},
		{"\"::1:6379\"", "an IPv6 address goes in brackets"},
		{"\"[::1]\"", "expected [v6]:port"},
		{"\"r:0\"", "expected host:port"},
		{"\":6379\"", "expected host:port"},
	};
	char text[512], err[2048];
	struct sl_config *c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "version: 1\nstore:\n  redis: {endpoints: [%s]}\n",
			 bad[i].ep);
		if (load(text, err, sizeof(err)) != NULL ||
		    strstr(err, bad[i].want) == NULL)
			fail_msg("%s: want '%s', got '%s'", bad[i].ep,
				 bad[i].want, err);
	}
	c = load("version: 1\nstore:\n  redis: {endpoints: "
		 "[\"[2001:2::9]:6379\", "
		 "\"r.example:7000\"]}\n",
		 err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	assert_string_equal(c->store.endpoints[0].host, "2001:2::9");
	assert_int_equal(c->store.endpoints[0].port, 6379);
	assert_string_equal(c->store.endpoints[1].host, "r.example");
	sl_config_free(c);
	/* a string where the list goes: that error alone */
	assert_null(load("version: 1\nstore:\n  redis: {endpoints: \"r:1\"}\n",
			 err, sizeof(err)));
	assert_null(strstr(err, "is required"));
	assert_non_null(strstr(err, "t.yaml:3:22: endpoints: expected a list"));
}

/* An identity field the parser reads for itself, or a Cookie, refused;
 * Authorization taken. */
static void
identity_fields_of_their_own(void **state)
{
	static const struct {
		const char *field, *want;
	} bad[] = {
		{"api_key_header: Cookie", "t.yaml:2:28: api_key_header: "
					   "'Cookie' holds every cookie"},
		{"api_key_header: Content_Length",
		 "'Content_Length' is read for what it is"},
		{"user_header: transfer-encoding",
		 "user_header: 'transfer-encoding' is read"},
		{"user_header: Host", "'Host' is read"},
		{"api_key_header: X-Forwarded-For",
		 "'X-Forwarded-For' is read"},
		{"api_key_header: Connection", "'Connection' is read"},
	};
	char text[512], err[2048];
	struct sl_config *c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "version: 1\nidentity: {%s}\n",
			 bad[i].field);
		if (load(text, err, sizeof(err)) != NULL ||
		    strstr(err, bad[i].want) == NULL)
			fail_msg("%s: want '%s', got '%s'", bad[i].field,
				 bad[i].want, err);
	}
	c = load("version: 1\nidentity: {api_key_header: Authorization, "
		 "user_header: X-Cookie, api_key_param: api_key}\n",
		 err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	assert_string_equal(c->identity.api_key_param, "api_key");
	sl_config_free(c);
	/* a parameter name as a backend reads it, decoded */
	assert_null(load("version: 1\nidentity: {api_key_param: 'k%41'}\n", err,
			 sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:2:27: api_key_param: 'k%41' is "
				    "not a query parameter name"));
	assert_null(load("version: 1\nidentity: {api_key_param: 'a b'}\n", err,
			 sizeof(err)));
}

/* Errors that say how to fix them: an enum's values listed, a mistyped
 * key answered with the one it is near, a key near none named alone. */
static void
errors_suggest(void **state)
{
	char err[2048];

	(void)state;
	assert_null(load("version: 1\nrules:\n"
			 "  - {name: a, scope: api_key, algoritm: gcra, "
			 "limit: 5/min}\n"
			 "  - {name: b, scope: ip, algorithm: leaky_bucket, "
			 "limit: 5/min, zzz: 1}\n",
			 err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:3:22: scope: unknown value "
				    "'api_key' (one of: key, user, ip, "
				    "endpoint, global)"));
	assert_non_null(strstr(err, "unknown key 'algoritm' (did you mean "
				    "'algorithm'?)"));
	assert_non_null(strstr(err, "unknown value 'leaky_bucket' (one of: "
				    "token_bucket, gcra,"));
	assert_non_null(strstr(err, "unknown key 'zzz'\n"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(errors_suggest),
		cmocka_unit_test(endpoints_strict),
		cmocka_unit_test(identity_fields_of_their_own),
		cmocka_unit_test(checksum_line),
		cmocka_unit_test(full_example),
		cmocka_unit_test(all_errors_with_positions),
		cmocka_unit_test(headers_on_allow),
		cmocka_unit_test(yaml_syntax_error),
		cmocka_unit_test(values),
		cmocka_unit_test(shipped_configs_are_valid),
		cmocka_unit_test(rule_number_errors),
		cmocka_unit_test(decisions_section),
		cmocka_unit_test(redis_credentials),
		cmocka_unit_test(regions_slices),
		cmocka_unit_test(regions_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_RULES_H
#define SL_RULES_H

/*
 * The configuration file (conf/sluice.yaml, schema in CONFIG.md): loaded
 * with libyaml, validated whole, every error reported as FILE:LINE:COL.
 * A config that fails validation is never partially used.
 *
 * Pure C: no EAL. Loading allocates; the data path only reads the result.
 */

#include <stdint.h>
#include <stddef.h>

#include "sl_http.h"
#include "sl_ident.h"

#define SL_MAX_SERVICE_PORTS 16
#define SL_MAX_TIERS         16
#define SL_MAX_ENDPOINTS     8
#define SL_MAX_REGIONS       16
#define SL_NAME_MAX          64
#define SL_PATH_MAX          256
#define SL_SECRET_MAX        256
#define SL_TEXT_MAX          256
#define SL_KEY_MAX           96

enum sl_scope {
	SL_SCOPE_KEY,
	SL_SCOPE_USER,
	SL_SCOPE_IP,
	SL_SCOPE_ENDPOINT,
	SL_SCOPE_GLOBAL
};
enum sl_algo {
	SL_ALGO_TOKEN_BUCKET,
	SL_ALGO_GCRA,
	SL_ALGO_FIXED_WINDOW,
	SL_ALGO_SLIDING_WINDOW,
	SL_ALGO_SLIDING_LOG
};
enum sl_store_fail { SL_FAIL_OPEN, SL_LOCAL_STRICT, SL_FAIL_CLOSED };
enum sl_hdr_style { SL_HDR_DRAFT, SL_HDR_LEGACY, SL_HDR_BOTH };
enum sl_body_style { SL_BODY_JSON, SL_BODY_PROBLEM };

/* The methods a rule may name, as a bit mask. */
enum sl_method {
	SL_M_GET = 1 << 0,
	SL_M_HEAD = 1 << 1,
	SL_M_POST = 1 << 2,
	SL_M_PUT = 1 << 3,
	SL_M_DELETE = 1 << 4,
	SL_M_PATCH = 1 << 5,
	SL_M_OPTIONS = 1 << 6,
	SL_M_CONNECT = 1 << 7,
	SL_M_TRACE = 1 << 8,
};

struct sl_rate {
	uint64_t count;     /* units per period */
	uint64_t period_ms; /* a second, minute, hour or day */
};

struct sl_rule {
	char name[SL_NAME_MAX];
	uint8_t scope;
	uint8_t algo;
	uint8_t on_store_failure;
	uint8_t shadow;
	int16_t tier;     /* -1: every tier */
	uint32_t methods; /* 0: every method */
	/* methods naming GET take HEAD too (RFC 9110 9.3.2: a GET without
	 * the body, and a caching backend turns it into one); head: false
	 * for a rule that means GET alone */
	uint8_t head_as_get;
	char path_prefix[SL_TEXT_MAX];
	/* exact path, or a route: "{name}" is one segment, a last "*" the
	 * rest (none or more segments) */
	char path[SL_TEXT_MAX];
	uint8_t path_icase; /* path_case: insensitive */
	char host[SL_TEXT_MAX];
	struct sl_rate limit;
	uint64_t burst;
	uint32_t cost;
	uint32_t accuracy_ppm;
	/* the key's state spread over this many store keys (distinct
	 * Cluster slots), each holding limit / sub_buckets: a key one shard
	 * cannot carry */
	uint8_t sub_buckets;
	/* global: the limit (and burst) as written hold across every region;
	 * this region enforces its slice of them, slice_num / slice_den of
	 * the regions' weights, in limit and burst (rounded down: the
	 * regions together never exceed what was written) */
	uint8_t global;
	/* response.headers_on_allow applies to this rule's budget (false:
	 * its responses never carry it) */
	uint8_t headers_on_allow;
	/* false: its 429s carry no RateLimit fields (an endpoint keyed by a
	 * claimed identity before authentication: the budget would say
	 * whether the account exists) */
	uint8_t headers;
	/* cost_from_response: the response field (an integer the backend
	 * sets) that says what the request cost; the difference to cost is
	 * charged (or given back) once the response head passes. "": none */
	char cost_header[SL_NAME_MAX];
	uint64_t global_count, global_burst;
	uint32_t slice_num, slice_den;
	uint32_t line; /* where it was defined, for messages */
	uint8_t said;  /* SL_SAID_*: what the file wrote, for the checker */
};

/* Spellings and options a rule wrote that --check-config warns about. */
#define SL_SAID_ONFAIL       0x01 /* on_store_failure */
#define SL_SAID_GLOBAL       0x02 /* global: the old across_regions */
#define SL_SAID_SCOPE_GLOBAL 0x04 /* scope: global, endpoint's twin */

struct sl_key_tier {
	char key[SL_KEY_MAX];
	uint8_t tier;
};

struct sl_override {
	uint32_t rule; /* index into rules */
	uint8_t kind;  /* SL_SCOPE_KEY, SL_SCOPE_USER or SL_SCOPE_IP */
	/* ip: the address it is looked up by, as its clients are counted
	 * (a mapped address its IPv4 one, an IPv6 one its ipv6_prefix
	 * group), set at load; key and user are looked up by key */
	uint8_t id_len;
	uint8_t id[16];
	char key[SL_KEY_MAX];
	struct sl_rate limit;
	uint64_t burst;
	int64_t expires; /* Unix seconds */
	char reason[SL_TEXT_MAX];
	uint32_t line; /* where it was written, for messages */
	/* its rule global: the limit and burst as written (those above
	 * are this region's slice of them) */
	uint64_t global_count, global_burst;
};

struct sl_cidr {
	uint8_t af; /* 4 or 6 */
	uint8_t prefix;
	uint8_t addr[16];
};

struct sl_endpoint {
	char host[SL_TEXT_MAX];
	uint16_t port;
};

struct sl_config {
	char version[32]; /* rule set version: rules_version, or a digest */
	struct {
		uint16_t downstream_port;
		uint16_t upstream_port;
		uint16_t service_ports[SL_MAX_SERVICE_PORTS];
		uint32_t n_service_ports;
		uint32_t max_head_bytes;
		uint32_t flows_per_worker;
		uint32_t buckets_per_worker;
		uint32_t head_buffers_per_worker;
		uint32_t head_buffers_per_source; /* 0: no cap */
		uint32_t head_timeout_ms; /* an incomplete head's time */
		uint32_t flow_idle_ms;
		uint32_t mbufs;
		uint32_t coordinator_timeout_ms;
		uint32_t idle_sleep_us; /* 0: workers busy-poll */
		/* where the buckets live in files that outlive the process,
		 * so that a restart grants nothing ("": in memory only) */
		char state_dir[SL_PATH_MAX];
	} dataplane;
	/* how the backend resolves a target: what rules match */
	struct sl_norm_cfg request;
	struct {
		char api_key_header[SL_NAME_MAX];
		char user_header[SL_NAME_MAX];
		/* a query parameter that may carry the key ("" none) */
		char api_key_param[SL_NAME_MAX];
		uint8_t client_ip; /* enum sl_client_ip */
		uint8_t trusted_hops;
		uint8_t ipv6_prefix;
		uint8_t underscores; /* enum sl_underscores */
	} identity;
	char tiers[SL_MAX_TIERS][SL_NAME_MAX];
	uint32_t n_tiers;
	uint8_t default_tier;
	struct sl_key_tier *keys;
	uint32_t n_keys;
	struct sl_rule *rules;
	uint32_t n_rules;
	struct sl_override *overrides;
	uint32_t n_overrides;
	char (*block_keys)[SL_KEY_MAX];
	uint32_t n_block_keys;
	struct sl_cidr *block_cidrs;
	uint32_t n_block_cidrs;
	struct {
		uint8_t present;
		uint8_t cluster;
		struct sl_endpoint endpoints[SL_MAX_ENDPOINTS];
		uint32_t n_endpoints;
		uint32_t timeout_ms;
		uint32_t probe_interval_ms;
		uint32_t refresh_ms; /* cluster: the slot map read again */
		/* AUTH on every new connection: an ACL user (or none, the
		 * default user) and its password, given in the file or read
		 * from password_file (its first line) */
		char username[SL_NAME_MAX];
		char password[SL_SECRET_MAX];
		uint32_t expected_appliances;
		uint8_t expected_given; /* written, not the default */
		uint32_t line;          /* where the section is, for messages */
		uint32_t reconcile_ms;
		char rules_channel[SL_NAME_MAX];
		char keys_hash[SL_NAME_MAX]; /* key -> tier, beside the map */
		char region[SL_NAME_MAX];    /* this appliance's region */
	} store;
	/* the regions and their static weights: a global rule's slice here
	 * is this region's weight over their sum */
	struct {
		char name[SL_MAX_REGIONS][SL_NAME_MAX];
		uint32_t weight[SL_MAX_REGIONS];
		uint32_t n;
	} regions;
	struct {
		uint32_t retry_jitter_ppm;
		uint8_t headers; /* enum sl_hdr_style */
		uint8_t expose_rule;
		/* a 429 keeps the client's connection where its stream can
		 * be translated (docs/design/replies.md) */
		uint8_t keep_alive;
		/* allowed responses carry the budget of their request's
		 * strictest limit (RateLimit headers put into the server's
		 * response head); needs keep_alive's translation */
		uint8_t headers_on_allow;
		uint8_t body;                   /* enum sl_body_style */
		char problem_type[SL_PATH_MAX]; /* "": the draft's URI */
	} response;
	struct {
		/* the file read again when it changed (stable for a second);
		 * 0: only SIGHUP and /sluice/reload reload it */
		uint8_t watch;
	} reload;
	/* the sampled decision stream: off while both rates are 0 */
	struct {
		uint32_t sample_ppm; /* allowed decisions recorded, per 10^6 */
		uint32_t rejected_ppm;  /* rejected and blocked ones */
		uint32_t maxlen;        /* stream length cap (trimmed about) */
		char file[SL_PATH_MAX]; /* JSON lines, appended */
		char stream[SL_NAME_MAX]; /* Redis Stream key */
		/* API keys and users written as a digest (0) or as they are */
		uint8_t identity_clear;
		char identity_secret[SL_SECRET_MAX]; /* the digest's key */
	} decisions;
};

/*
 * Loads and validates path. On success returns a config to release with
 * sl_config_free(). On failure returns NULL and writes every error, one
 * "FILE:LINE:COL: message" per line, into err (truncated to errlen).
 */
struct sl_config *sl_config_load(const char *path, char *err, size_t errlen);

/* Same, from a buffer; name is used in messages. */
struct sl_config *sl_config_parse(const char *name, const char *text,
				  size_t len, char *err, size_t errlen);

void sl_config_free(struct sl_config *c);

/*
 * Cuts every global rule (and its overrides) to region's slice, from the
 * limits as written: a rule set published by an appliance of another
 * region is enforced here at this region's slice. Returns 0, or -1 when
 * region is not one of the config's regions (nothing changed).
 */
int sl_config_set_region(struct sl_config *c, const char *region);

/* The config with every field at its documented default. */
void sl_config_defaults(struct sl_config *c);
/*
 * What a valid config leaves unlimited without saying so: fn is called
 * once per warning with the line it is about. Returns the count.
 */
typedef void (*sl_config_warn_fn)(void *arg, uint32_t line, const char *msg);
uint32_t sl_config_lint(const struct sl_config *c, sl_config_warn_fn fn,
			void *arg);
/* The identity section as the head parser and the identity read it
 * (pointing into c: valid while c is). */
void sl_config_http_cfg(const struct sl_config *c, struct sl_http_cfg *out);
void sl_config_ident_cfg(const struct sl_config *c, struct sl_ident_cfg *out);

/* Parses "100/min" style rates; returns 0 or -1. */
int sl_rate_parse(const char *s, struct sl_rate *out);

/* Parses "198.18.0.0/15" or "2001:2::/48"; returns 0 or -1. */
int sl_cidr_parse(const char *s, struct sl_cidr *out);

/* Method name to its sl_method bit, 0 if not one we know. */
uint32_t sl_method_bit(const char *m, size_t len);
/* A request's method in any case: RFC 9110's are case-sensitive, but a
 * lenient server (Werkzeug upper-cases them) serves "post" as POST, so
 * every rule naming POST must see it. */
uint32_t sl_method_bit_any_case(const char *m, size_t len);

/* ---- the compiled rule set: what the data path reads ---- */

#define SL_MAX_RULES 256

#define SL_TIER_ANY (-2)

/* The parts of a request that rules look at: its normal form. */
struct sl_match_req {
	uint32_t method;  /* sl_method bits, 0 for a method no rule names */
	const char *path; /* sl_http_normalize's path and host */
	uint32_t path_len;
	/* the path a path override names; NULL: none */
	const char *alt_path;
	uint32_t alt_path_len;
	const char *host;
	uint32_t host_len;
	/* -1: the request carries no API key; SL_TIER_ANY: its tier is not
	 * known yet, and a rule of any tier matches (the caller keeps each
	 * rule's tier, to drop the others once it is) */
	int16_t tier;
	uint8_t has_key;
	uint8_t has_user;
};

struct sl_ruleset;

/*
 * The fields above from a parsed request and its normal form, for
 * matching against rs (method stays 0 where no rule of rs names one).
 */
void sl_match_req_init(struct sl_match_req *m, const struct sl_ruleset *rs,
		       const struct sl_http_req *req,
		       const struct sl_http_norm *n);

/*
 * Compiles a validated config into an immutable rule set. Returns NULL
 * only when out of memory. The config may be freed afterwards.
 */
struct sl_ruleset *sl_ruleset_build(const struct sl_config *c);
void sl_ruleset_free(struct sl_ruleset *rs);

const char *sl_ruleset_version(const struct sl_ruleset *rs);
uint32_t sl_ruleset_count(const struct sl_ruleset *rs);
const struct sl_rule *sl_ruleset_rule(const struct sl_ruleset *rs, uint32_t i);
/* Stable per rule name: buckets are keyed by it, so they survive reloads. */
uint64_t sl_ruleset_rule_id(const struct sl_ruleset *rs, uint32_t i);

/* Tier of an API key: the static map, else default_tier. */
int sl_ruleset_tier(const struct sl_ruleset *rs, const char *key, uint32_t len);
/* The static map only: -1 when the key is not in it. */
int sl_ruleset_tier_find(const struct sl_ruleset *rs, const char *key,
			 uint32_t len);
/*
 * A tier named by a hash of its name (never 0), so that what was learnt
 * of a key's tier under one rule set reads right under the next, whose
 * tiers may be reordered or gone: the index, or -1 if it has no such
 * tier.
 */
uint64_t sl_tier_hash(const char *name, uint32_t len);
int sl_ruleset_tier_of_hash(const struct sl_ruleset *rs, uint64_t h);
/* Tier t's hash; 0 for no tier (t < 0). */
uint64_t sl_ruleset_tier_hash_of(const struct sl_ruleset *rs, int t);
int sl_ruleset_default_tier(const struct sl_ruleset *rs);
uint32_t sl_ruleset_tier_count(const struct sl_ruleset *rs);
const char *sl_ruleset_tier_name(const struct sl_ruleset *rs, uint32_t i);

int sl_ruleset_key_blocked(const struct sl_ruleset *rs, const char *key,
			   uint32_t len);
/*
 * Both of the above with the key hashed once: returns whether it is
 * blocked, and its tier in the static map (-1: not in it) in *tier.
 */
int sl_ruleset_key_info(const struct sl_ruleset *rs, const char *key,
			uint32_t len, int *tier);
/* af 4 or 6, addr in network order. */
int sl_ruleset_ip_blocked(const struct sl_ruleset *rs, uint8_t af,
			  const uint8_t *addr);

/*
 * Whether a normal path matches a route: "{name}" segments match one
 * non-empty segment, a last "*" segment the rest (also nothing), other
 * segments themselves (icase: ASCII letters folded); one trailing '/'
 * more than the route is the same route (frameworks serve both).
 */
int sl_route_match(const char *route, const char *path, uint32_t len,
		   int icase);

/* Indexes of the rules that apply, in file order; returns how many. */
uint32_t sl_ruleset_match(const struct sl_ruleset *rs,
			  const struct sl_match_req *m, uint16_t *out,
			  uint32_t max);

/*
 * What a rule's scope counts by: the API key, the user, the (grouped)
 * client address; nothing for endpoint and global, which are one bucket
 * per rule however a client spells or varies the path or the Host (a
 * limit per host is a rule per host). kind: the override kind
 * (SL_SCOPE_KEY/USER/IP), 0xff for none.
 */
struct sl_scope_id {
	const uint8_t *b;
	uint32_t len;
	uint8_t kind;
	uint64_t h[2]; /* b hashed, the scope in the seeds */
};

void sl_scope_of(uint8_t scope, const struct sl_http_req *req,
		 const struct sl_identity *id, struct sl_scope_id *out);

/*
 * A bucket's two key words: the rule's stable id and the scope's hash.
 * They name shared state (Redis keys): they must not change between
 * releases.
 */
void sl_bucket_words(uint64_t rule_id, const struct sl_scope_id *s,
		     uint64_t out[2]);

/*
 * The override of rule i for an identity (kind SL_SCOPE_KEY/USER/IP, id
 * bytes as the identity module writes them), if one is active at now_s
 * (Unix seconds); NULL otherwise. Expired overrides stop by themselves.
 */
const struct sl_override *sl_ruleset_override(const struct sl_ruleset *rs,
					      uint32_t i, uint8_t kind,
					      const uint8_t *id, uint32_t len,
					      int64_t now_s);

/* Every field of a rule at the value the config gives it when the file
 * does not name it (the loader's, and what sluice-bench builds on). */
void sl_rule_defaults(struct sl_rule *r);

/* A rule's scope and algorithm as the config spells them. */
const char *sl_scope_name(uint8_t scope);
const char *sl_algo_name(uint8_t algo);

/* SHA-256 of data as 64 lower-case hex digits (the config's checksum,
 * the decision stream's identity digests). */
void sl_sha256_hex(const void *data, size_t len, char out[65]);

#endif /* SL_RULES_H */

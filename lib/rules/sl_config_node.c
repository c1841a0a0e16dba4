/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The appliance's own settings: dataplane, identity, store, request,
 * response, decisions. Mostly rows: where a value goes and its bounds.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_config_priv.h"

static const char *const client_ip_names[] = {"peer", "x-forwarded-for",
					      "forwarded", NULL};
static const char *const underscores_names[] = {"same", "ignore", NULL};
static const char *const hstyle_names[] = {"draft", "legacy", "both", NULL};
static const char *const escslash_names[] = {"reject", "decode", "keep", NULL};
static const char *const hostmis_names[] = {"reject", "allow", NULL};
static const char *const params_names[] = {"keep", "strip", "reject", NULL};
static const char *const ident_names[] = {"hash", "clear", NULL};
static const char *const body_names[] = {"json", "problem", NULL};

/* ---- dataplane ---- */

#define DP(L) (&(L)->cfg->dataplane)

static void
f_service_ports(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "service_ports"))
		return;
	DP(L)->n_service_ports = 0;
	if (sl_cfg_seq_len(v) == 0 || sl_cfg_seq_len(v) > SL_MAX_SERVICE_PORTS)
		sl_cfg_error_at(L, v, "service_ports: expected 1 to %d ports",
				SL_MAX_SERVICE_PORTS);
	SEQ_FOREACH(L, v, it)
	{
		uint64_t p;

		if (sl_cfg_get_u64(L, it, "service_ports", 1, 65535, &p) == 0 &&
		    DP(L)->n_service_ports < SL_MAX_SERVICE_PORTS)
			DP(L)->service_ports[DP(L)->n_service_ports++] =
				(uint16_t)p;
	}
}

static const struct field dataplane_fields[] = {
	F_UINT("idle_sleep_us", struct sl_config, dataplane.idle_sleep_us, 0,
	       100000),
	F_UINT("coordinator_timeout_ms", struct sl_config,
	       dataplane.coordinator_timeout_ms, 1, 10000),
	F_UINT("downstream_port", struct sl_config, dataplane.downstream_port,
	       0, 1023),
	F_UINT("upstream_port", struct sl_config, dataplane.upstream_port, 0,
	       1023),
	F_FN("service_ports", f_service_ports),
	F_UINT("max_head_bytes", struct sl_config, dataplane.max_head_bytes,
	       256, 65535),
	F_UINT("flows_per_worker", struct sl_config, dataplane.flows_per_worker,
	       64, 1u << 26),
	F_UINT("buckets_per_worker", struct sl_config,
	       dataplane.buckets_per_worker, 64, 1u << 26),
	F_UINT("head_buffers_per_worker", struct sl_config,
	       dataplane.head_buffers_per_worker, 1, 1u << 20),
	F_UINT("head_buffers_per_source", struct sl_config,
	       dataplane.head_buffers_per_source, 0, 1u << 20),
	F_UINT("head_timeout_ms", struct sl_config, dataplane.head_timeout_ms,
	       100, 3600000),
	F_UINT("flow_idle_ms", struct sl_config, dataplane.flow_idle_ms, 100,
	       86400000),
	F_UINT("mbufs", struct sl_config, dataplane.mbufs, 1023, 1u << 22),
	F_STR("state_dir", struct sl_config, dataplane.state_dir),
	F_END,
};

/* ---- identity ---- */

#define ID(L) (&(L)->cfg->identity)

int
sl_cfg_header_name(struct loader *L, yaml_node_t *v, const char *what,
		   char *dst)
{
	if (sl_cfg_get_str(L, v, what, dst, SL_NAME_MAX) != 0)
		return -1;
	if (dst[0] == '\0' || sl_cfg_is_token(dst, 1))
		return 0;
	sl_cfg_error_at(L, v, "%s: '%s' is not a valid header name", what, dst);
	return -1;
}

/*
 * A field the parser reads for itself (the framing, the host, the
 * client's address) taken as an identity would no longer be read for
 * what it is: a body unframed, every request without a Host. A Cookie
 * holds every cookie, which a client adds to and reorders at will: each
 * spelling would be a fresh bucket for one credential.
 */
static const char *
not_an_identity(const char *name)
{
	static const char *const taken[] = {
		"host",    "content-length", "transfer-encoding", "connection",
		"upgrade", "forwarded",      "x-forwarded-for",   "cookie",
	};
	char low[SL_NAME_MAX];
	size_t i;

	for (i = 0; name[i] && i + 1 < sizeof(low); i++)
		low[i] = name[i] == '_' ? '-'
					: (char)tolower((unsigned char)name[i]);
	low[i] = '\0';
	for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		if (strcmp(low, taken[i]) == 0)
			return taken[i];
	return NULL;
}

static void
identity_header(struct loader *L, yaml_node_t *v, const char *what, char *dst)
{
	const char *t;

	if (sl_cfg_header_name(L, v, what, dst) != 0 ||
	    (t = not_an_identity(dst)) == NULL)
		return;
	if (strcmp(t, "cookie") == 0)
		sl_cfg_error_at(L, v,
				"%s: '%s' holds every cookie, in any order "
				"and number: a key in it is spelt many ways; "
				"name a field that holds the key alone",
				what, dst);
	else
		sl_cfg_error_at(L, v,
				"%s: '%s' is read for what it is (framing, "
				"host, client address) and cannot name an "
				"identity",
				what, dst);
}

static void
f_keyhdr(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	identity_header(L, v, "api_key_header", ID(L)->api_key_header);
}
static void
f_userhdr(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	identity_header(L, v, "user_header", ID(L)->user_header);
}

/* Written as a backend reads it, decoded: an escape, or a byte that
 * ends or joins parameters, could never name it. */
static void
f_keyparam(struct loader *L, yaml_node_t *v, void *o)
{
	char *dst = ID(L)->api_key_param;
	size_t i;

	(void)o;
	if (sl_cfg_get_str(L, v, "api_key_param", dst, SL_NAME_MAX) != 0)
		return;
	for (i = 0; dst[i]; i++)
		if (dst[i] <= ' ' || dst[i] >= 0x7f || strchr("&=#?%+", dst[i]))
			break;
	if (dst[0] == '\0' || dst[i] != '\0')
		sl_cfg_error_at(L, v,
				"api_key_param: '%s' is not a query "
				"parameter name (printable ASCII, none of "
				"'&=#?%%+' or a blank; written decoded)",
				dst);
}

static const struct field identity_fields[] = {
	F_FN("api_key_header", f_keyhdr),
	F_FN("api_key_param", f_keyparam),
	F_FN("user_header", f_userhdr),
	F_ENUM("client_ip", struct sl_config, identity.client_ip,
	       client_ip_names),
	F_ENUM("underscores", struct sl_config, identity.underscores,
	       underscores_names),
	F_UINT("trusted_hops", struct sl_config, identity.trusted_hops, 0, 16),
	F_UINT("ipv6_prefix", struct sl_config, identity.ipv6_prefix, 1, 128),
	F_END,
};

/* ---- store ---- */

#define ST(L) (&(L)->cfg->store)

/*
 * "host:port" or "[v6]:port" into e; NULL, or why not. A URL is refused
 * with what to write instead: "redis://h:p" would otherwise have become
 * the host "redis://h", and rediss:// promises TLS sluice does not speak
 * (a local stunnel does).
 */
static const char *
endpoint_of(const char *s, struct sl_endpoint *e)
{
	const char *scheme = strstr(s, "://"), *colon, *host = s;
	size_t hlen;
	char *end;
	long port;

	if (scheme != NULL)
		return strncmp(s, "rediss://", 9) == 0
			       ? "TLS goes through a local stunnel "
				 "(docs/howto/across-appliances.md): write "
				 "its host:port"
			       : "a URL: write host:port, without the scheme";
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return "expected [v6]:port";
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon != NULL && memchr(s, ':', (size_t)(colon - s)))
			return "an IPv6 address goes in brackets: [v6]:port";
		hlen = colon != NULL ? (size_t)(colon - s) : 0;
	}
	port = colon != NULL ? strtol(colon + 1, &end, 10) : 0;
	if (colon == NULL || hlen == 0 || *end != '\0' || port < 1 ||
	    port > 65535 || hlen >= sizeof(e->host))
		return "expected host:port";
	memcpy(e->host, host, hlen);
	e->host[hlen] = '\0';
	e->port = (uint16_t)port;
	return NULL;
}

static void
f_endpoints(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;

	(void)o;
	if (!sl_cfg_is_seq(L, v, "endpoints"))
		return;
	if (sl_cfg_seq_len(v) == 0 || sl_cfg_seq_len(v) > SL_MAX_ENDPOINTS)
		sl_cfg_error_at(L, v, "endpoints: expected 1 to %d endpoints",
				SL_MAX_ENDPOINTS);
	SEQ_FOREACH(L, v, it)
	{
		const char *s = sl_cfg_scalar(L, it, "endpoints"), *why;

		if (s == NULL || ST(L)->n_endpoints >= SL_MAX_ENDPOINTS)
			continue;
		why = endpoint_of(s, &ST(L)->endpoints[ST(L)->n_endpoints]);
		if (why != NULL)
			sl_cfg_error_at(L, it, "endpoints: '%s': %s", s, why);
		else
			ST(L)->n_endpoints++;
	}
}

/* The password kept out of the rules file: the first line of a file
 * readable only by the appliance's user. */
static void
f_password_file(struct loader *L, yaml_node_t *v, void *o)
{
	const char *path = sl_cfg_scalar(L, v, "password_file");
	char *pw = ST(L)->password;
	FILE *f;
	size_t n;

	(void)o;
	if (path == NULL)
		return;
	f = fopen(path, "r");
	if (f == NULL || fgets(pw, SL_SECRET_MAX, f) == NULL) {
		sl_cfg_error_at(L, v, "password_file: cannot read '%s'", path);
		pw[0] = '\0';
	}
	if (f != NULL)
		fclose(f);
	n = strcspn(pw, "\r\n");
	if (pw[n] == '\0' && n == SL_SECRET_MAX - 1)
		sl_cfg_error_at(L, v, "password_file: longer than %d bytes",
				SL_SECRET_MAX - 2);
	pw[n] = '\0';
}

static const struct field redis_fields[] = {
	F_FN("endpoints", f_endpoints),
	F_STR("username", struct sl_config, store.username),
	F_STR("password", struct sl_config, store.password),
	F_FN("password_file", f_password_file),
	F_BOOL("cluster", struct sl_config, store.cluster),
	F_UINT("timeout_ms", struct sl_config, store.timeout_ms, 1, 10000),
	F_UINT("probe_interval_ms", struct sl_config, store.probe_interval_ms,
	       10, 600000),
	F_UINT("refresh_ms", struct sl_config, store.refresh_ms, 100, 3600000),
	F_END,
};

static void
f_redis(struct loader *L, yaml_node_t *v, void *o)
{
	sl_cfg_walk_map(L, v, "redis", redis_fields, o);
	/* (written but unreadable: its own error says why) */
	if (v->type == YAML_MAPPING_NODE && !sl_cfg_has_key(L, v, "endpoints"))
		sl_cfg_error_at(L, v, "redis: 'endpoints' is required");
}

static const struct field store_fields[] = {
	F_UINT("reconcile_ms", struct sl_config, store.reconcile_ms, 100,
	       3600000),
	F_STR("keys_hash", struct sl_config, store.keys_hash),
	F_FN("redis", f_redis),
	F_UINT("expected_appliances", struct sl_config,
	       store.expected_appliances, 1, 10000),
	F_STR("rules_channel", struct sl_config, store.rules_channel),
	F_STR("region", struct sl_config, store.region),
	F_END,
};

/* ---- request (how the backend resolves a target) and response ---- */

static const struct field request_fields[] = {
	F_BOOL("merge_slashes", struct sl_config, request.merge_slashes),
	F_ENUM("path_params", struct sl_config, request.path_params,
	       params_names),
	F_ENUM("escaped_slashes", struct sl_config, request.escaped_slashes,
	       escslash_names),
	F_ENUM("host_mismatch", struct sl_config, request.host_mismatch,
	       hostmis_names),
	F_END,
};

static const struct field response_fields[] = {
	F_PPM("retry_jitter", struct sl_config, response.retry_jitter_ppm, 0,
	      1000000),
	F_ENUM("headers", struct sl_config, response.headers, hstyle_names),
	F_BOOL("expose_rule", struct sl_config, response.expose_rule),
	F_BOOL("keep_alive", struct sl_config, response.keep_alive),
	F_BOOL("headers_on_allow", struct sl_config, response.headers_on_allow),
	F_ENUM("body", struct sl_config, response.body, body_names),
	F_STR("problem_type", struct sl_config, response.problem_type),
	F_END,
};

static const struct field reload_fields[] = {
	F_BOOL("watch", struct sl_config, reload.watch),
	F_END,
};

/* ---- decisions ---- */

#define DEC(L) (&(L)->cfg->decisions)

static void
f_dec_file(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	if (sl_cfg_get_str(L, v, "file", DEC(L)->file, SL_PATH_MAX) == 0 &&
	    DEC(L)->file[0] == '\0')
		sl_cfg_error_at(L, v, "file: expected a path");
}

static void
f_dec_stream(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	if (sl_cfg_get_str(L, v, "stream", DEC(L)->stream, SL_NAME_MAX) == 0 &&
	    DEC(L)->stream[0] == '\0')
		sl_cfg_error_at(L, v, "stream: expected a key name");
}

static const struct field decisions_fields[] = {
	F_PPM("sample", struct sl_config, decisions.sample_ppm, 0, 1000000),
	F_PPM("sample_rejected", struct sl_config, decisions.rejected_ppm, 0,
	      1000000),
	F_FN("file", f_dec_file),
	F_FN("stream", f_dec_stream),
	F_UINT("maxlen", struct sl_config, decisions.maxlen, 100, 100000000),
	F_ENUM("identity", struct sl_config, decisions.identity_clear,
	       ident_names),
	F_STR("identity_secret", struct sl_config, decisions.identity_secret),
	F_END,
};

SL_CFG_SECTION(sl_cfg_dataplane, "dataplane", dataplane_fields)
SL_CFG_SECTION(sl_cfg_identity, "identity", identity_fields)
SL_CFG_SECTION(sl_cfg_response, "response", response_fields)
SL_CFG_SECTION(sl_cfg_request, "request", request_fields)
SL_CFG_SECTION(sl_cfg_reload, "reload", reload_fields)
SL_CFG_SECTION(sl_cfg_decisions, "decisions", decisions_fields)

void
sl_cfg_store(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	ST(L)->present = 1;
	ST(L)->line = (uint32_t)v->start_mark.line + 1;
	sl_cfg_walk_map(L, v, "store", store_fields, L->cfg);
	ST(L)->expected_given = v->type == YAML_MAPPING_NODE &&
				sl_cfg_has_key(L, v, "expected_appliances");
}

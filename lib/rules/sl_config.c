/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "sl_config_priv.h"

/* ---- root ---- */

static void
f_version(struct loader *L, yaml_node_t *v, void *o)
{
	uint64_t ver;

	(void)o;
	if (sl_cfg_get_u64(L, v, "version", 0, UINT32_MAX, &ver) == 0 &&
	    ver != 1)
		sl_cfg_error_at(
			L, v,
			"version: this sluice reads version 1 files, not %llu",
			(unsigned long long)ver);
}

static void
f_rules_version(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	sl_cfg_get_str(L, v, "rules_version", L->cfg->version,
		       sizeof(L->cfg->version));
}

static void
f_skip(struct loader *L, yaml_node_t *v, void *o)
{
	(void)L;
	(void)v;
	(void)o;
}

/* Tiers and rules come first: other sections refer to them by name. */
static const struct field first_fields[] = {
	F_FN("tiers", sl_cfg_tiers),
	F_FN("request",
	     sl_cfg_request), /* rule paths are checked in its terms */
	F_END,
};

static const struct field second_fields[] = {
	F_FN("rules", sl_cfg_rules),
	F_END,
};

static const struct field root_fields[] = {
	F_FN("version", f_version),
	F_FN("rules_version", f_rules_version),
	F_FN("dataplane", sl_cfg_dataplane),
	F_FN("identity", sl_cfg_identity),
	F_FN("tiers", f_skip),
	F_FN("default_tier", sl_cfg_default_tier),
	F_FN("keys", sl_cfg_keys),
	F_FN("rules", f_skip),
	F_FN("overrides", sl_cfg_overrides),
	F_FN("blocklist", sl_cfg_blocklist),
	F_FN("store", sl_cfg_store),
	F_FN("response", sl_cfg_response),
	F_FN("reload", sl_cfg_reload),
	F_FN("decisions", sl_cfg_decisions),
	F_FN("regions", sl_cfg_regions),
	F_FN("request", f_skip),
	F_END,
};

/* Runs the handlers of table for the keys it names, ignoring others. */
static void
pick(struct loader *L, yaml_node_t *root, const struct field *table)
{
	yaml_node_pair_t *p;

	for (p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = sl_cfg_node(L, p->key);
		const struct field *f;

		if (k->type != YAML_SCALAR_NODE)
			continue;
		for (f = table; f->name != NULL; f++)
			if (strcmp(f->name,
				   (const char *)k->data.scalar.value) == 0)
				f->fn(L, sl_cfg_node(L, p->value), NULL);
	}
}

static void
load_root(struct loader *L, yaml_node_t *root)
{
	if (root->type != YAML_MAPPING_NODE) {
		sl_cfg_error_at(L, root,
				"the file must be a mapping of sections");
		return;
	}
	pick(L, root, first_fields);
	pick(L, root, second_fields);
	sl_cfg_walk_map(L, root, "config", root_fields, NULL);
}

/* Where sampled decisions go, once every section is known. */
/* headers_on_allow without keep_alive: an error where the file asks for
 * both, off by itself where it turned keep_alive off and left the
 * budget at its default (on). */
static void
allow_needs_keep(struct loader *L, yaml_node_t *root)
{
	yaml_node_t *rsp = sl_cfg_value_of(L, root, "response");

	if (rsp == NULL || rsp->type != YAML_MAPPING_NODE ||
	    !sl_cfg_has_key(L, rsp, "headers_on_allow")) {
		L->cfg->response.headers_on_allow = 0;
		return;
	}
	sl_cfg_error_at(
		L, rsp,
		"response: headers_on_allow needs keep_alive: true (the "
		"response grows: sequence numbers are translated as for "
		"a kept 429)");
}

static void
check_decisions(struct loader *L, yaml_node_t *root)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *d = sl_cfg_value_of(L, root, "decisions");

	if (c->decisions.rejected_ppm == UINT32_MAX)
		c->decisions.rejected_ppm = c->decisions.sample_ppm;
	if (d == NULL)
		return;
	if (c->decisions.stream[0] && !c->store.present)
		sl_cfg_error_at(
			L, d, "decisions: 'stream' needs a store; give a file");
	if ((c->decisions.sample_ppm || c->decisions.rejected_ppm) &&
	    !c->decisions.file[0] && !c->decisions.stream[0])
		sl_cfg_error_at(
			L, d,
			"decisions: sampling needs a 'file' (JSON lines) or, "
			"with a store, a 'stream'");
}

/* Checks that relate sections to each other. */
static void
check_whole(struct loader *L, yaml_node_t *root)
{
	struct sl_config *c = L->cfg;

	check_decisions(L, root);
	sl_cfg_apply_regions(L, root);
	sl_cfg_override_ids(c);

	if (c->dataplane.downstream_port == c->dataplane.upstream_port)
		sl_cfg_error_at(
			L, root,
			"dataplane: downstream_port and upstream_port must "
			"differ");
	if (c->response.headers_on_allow && !c->response.keep_alive)
		allow_needs_keep(L, root);
	if (c->identity.client_ip != SL_CIP_PEER &&
	    c->identity.trusted_hops == 0)
		sl_cfg_error_at(
			L, root,
			"identity: client_ip %s needs trusted_hops >= 1 "
			"(how many of the newest addresses your own "
			"proxies wrote)",
			c->identity.client_ip == SL_CIP_XFF ? "x-forwarded-for"
							    : "forwarded");
	if (c->dataplane.head_buffers_per_worker >
	    c->dataplane.flows_per_worker)
		c->dataplane.head_buffers_per_worker =
			c->dataplane.flows_per_worker;
}

void
sl_config_http_cfg(const struct sl_config *c, struct sl_http_cfg *out)
{
	memset(out, 0, sizeof(*out));
	out->api_key_header =
		(struct sl_str){c->identity.api_key_header,
				(uint32_t)strlen(c->identity.api_key_header)};
	out->user_header =
		(struct sl_str){c->identity.user_header,
				(uint32_t)strlen(c->identity.user_header)};
	out->api_key_param =
		(struct sl_str){c->identity.api_key_param,
				(uint32_t)strlen(c->identity.api_key_param)};
	out->underscores = c->identity.underscores;
	out->forwarded = c->identity.client_ip == SL_CIP_FORWARDED;
}

void
sl_config_ident_cfg(const struct sl_config *c, struct sl_ident_cfg *out)
{
	memset(out, 0, sizeof(*out));
	out->client_ip = c->identity.client_ip;
	out->trusted_hops = c->identity.trusted_hops;
	out->ipv6_prefix = c->identity.ipv6_prefix;
}

void
sl_config_defaults(struct sl_config *c)
{
	memset(c, 0, sizeof(*c));
	c->dataplane.downstream_port = 0;
	c->dataplane.upstream_port = 1;
	c->dataplane.service_ports[0] = 80;
	c->dataplane.service_ports[1] = 8080;
	c->dataplane.n_service_ports = 2;
	c->dataplane.max_head_bytes = 8192;
	c->dataplane.flows_per_worker = 262144;
	c->dataplane.buckets_per_worker = 262144;
	c->dataplane.head_buffers_per_worker = 4096;
	c->dataplane.head_buffers_per_source = 32;
	c->dataplane.head_timeout_ms =
		10000; /* nginx's client_header_timeout */
	c->dataplane.flow_idle_ms = 300000;
	c->dataplane.mbufs = 16383;
	c->dataplane.coordinator_timeout_ms = 50;
	strcpy(c->identity.api_key_header, "X-API-Key");
	c->identity.ipv6_prefix = 64;
	c->request.merge_slashes = 1;
	c->request.escaped_slashes = SL_ESC_REJECT;
	c->request.host_mismatch = SL_HOST_REJECT;
	strcpy(c->tiers[0], "free");
	c->n_tiers = 1;
	c->store.timeout_ms = 5;
	c->store.probe_interval_ms = 5000;
	c->store.refresh_ms = 10000;
	c->store.expected_appliances = 1;
	c->store.reconcile_ms = 30000;
	strcpy(c->store.rules_channel, "sluice:rules");
	strcpy(c->store.keys_hash, "sluice:keys");
	c->response.retry_jitter_ppm = 200000;
	c->response.headers = SL_HDR_DRAFT;
	c->response.expose_rule = 1;
	/* as nginx and HAProxy do: a 429 keeps its connection, and every
	 * response says its budget (docs/reference/responses.md) */
	c->response.keep_alive = 1;
	c->response.headers_on_allow = 1;
	c->reload.watch = 1;
	c->decisions.rejected_ppm = UINT32_MAX; /* unset: as sample */
	c->decisions.maxlen = 100000;
}

void
sl_config_free(struct sl_config *c)
{
	if (c == NULL)
		return;
	free(c->keys);
	free(c->rules);
	free(c->overrides);
	free(c->block_keys);
	free(c->block_cidrs);
	free(c);
}

static void
digest_version(struct sl_config *c, const char *text, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)text[i]) * 0x100000001b3ULL;
	snprintf(c->version, sizeof(c->version), "%08x",
		 (uint32_t)(h ^ (h >> 32)));
}

static int
cmp_pos(const void *a, const void *b)
{
	const unsigned long *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	if (x[1] != y[1])
		return x[1] < y[1] ? -1 : 1;
	return x[2] < y[2] ? -1 : (x[2] > y[2]);
}

/*
 * Sections are checked in dependency order (tiers, rules, the rest), so
 * messages are put back in file order for the operator.
 */
static void
sort_errors(struct loader *L)
{
	enum { MAXE = 256 };
	unsigned long pos[MAXE][4]; /* line, column, start, length */
	size_t n = 0, flen = strlen(L->file), off = 0, i;
	char *copy;

	/* A truncated report is left as it is: its last line is partial. */
	if (L->err == NULL || L->errpos == 0 || L->truncated)
		return;
	while (off < L->errpos && n < MAXE) {
		char *nl = memchr(L->err + off, '\n', L->errpos - off);
		size_t len =
			nl ? (size_t)(nl - L->err - off) + 1 : L->errpos - off;
		char *p = L->err + off + flen + 1;

		pos[n][0] = pos[n][1] = 0;
		if (len > flen + 1) {
			pos[n][0] = strtoul(p, &p, 10);
			if (*p == ':')
				pos[n][1] = strtoul(p + 1, NULL, 10);
		}
		pos[n][2] = off;
		pos[n][3] = len;
		n++;
		off += len;
	}
	if (off < L->errpos || (copy = malloc(L->errpos + 1)) == NULL)
		return;
	memcpy(copy, L->err, L->errpos);
	qsort(pos, n, sizeof(pos[0]), cmp_pos);
	for (off = 0, i = 0; i < n; i++) {
		memcpy(L->err + off, copy + pos[i][2], pos[i][3]);
		off += pos[i][3];
	}
	free(copy);
}

static int
load_doc(struct loader *L, const char *text, size_t len)
{
	yaml_parser_t parser;
	yaml_node_t *root;
	int ok;

	if (!yaml_parser_initialize(&parser))
		return -1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ok = yaml_parser_load(&parser, L->doc);
	if (!ok) {
		yaml_node_t at = {.start_mark = parser.problem_mark};

		sl_cfg_error_at(L, &at, "YAML syntax: %s",
				parser.problem ? parser.problem : "unreadable");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_parser_delete(&parser);
	root = yaml_document_get_root_node(L->doc);
	if (root == NULL) {
		sl_cfg_error_at(L, NULL, "empty configuration");
		return -1;
	}
	load_root(L, root);
	if (L->nerr == 0)
		check_whole(L, root);
	return 0;
}

struct sl_config *
sl_config_parse(const char *name, const char *text, size_t len, char *err,
		size_t errlen)
{
	yaml_document_t doc;
	struct loader L = {
		.file = name, .doc = &doc, .err = err, .errlen = errlen};
	struct sl_config *c = malloc(sizeof(*c));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (c == NULL)
		return NULL;
	if (sl_config_sum_check(name, text, len, err, errlen) != 0) {
		free(c);
		return NULL;
	}
	sl_config_defaults(c);
	L.cfg = c;
	memset(&doc, 0, sizeof(doc));
	load_doc(&L, text, len);
	/* Safe on a zeroed or already released document: it only frees. */
	yaml_document_delete(&doc);
	if (L.nerr > 0) {
		sort_errors(&L);
		sl_config_free(c);
		return NULL;
	}
	if (c->version[0] == '\0')
		digest_version(c, text, len);
	return c;
}

struct sl_config *
sl_config_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long n;
	struct sl_config *c;

	if (f == NULL) {
		snprintf(err, errlen, "%s:1:1: cannot open: %s\n", path,
			 strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || n > (16 << 20)) {
		fclose(f);
		snprintf(err, errlen, "%s:1:1: cannot read (or over 16 MiB)\n",
			 path);
		return NULL;
	}
	text = malloc((size_t)n + 1);
	if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
		free(text);
		fclose(f);
		snprintf(err, errlen, "%s:1:1: cannot read\n", path);
		return NULL;
	}
	fclose(f);
	text[n] = '\0';
	c = sl_config_parse(path, text, (size_t)n, err, errlen);
	free(text);
	return c;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "sl_rules.h"

/*
 * The loader walks libyaml's document tree. Every check reports and goes
 * on, so one run shows the operator every mistake in the file; the result
 * is used only when there were none.
 */
struct loader {
	const char *file;
	yaml_document_t *doc;
	struct sl_config *cfg;
	char *err;
	size_t errlen;
	size_t errpos;
	int nerr;
	int truncated;
};

typedef void (*field_fn)(struct loader *L, yaml_node_t *v, void *obj);

struct field {
	const char *name;
	field_fn fn;
};

/* Appends to the error buffer; a full buffer marks the report truncated. */
static void
err_append(struct loader *L, const char *fmt, va_list ap)
{
	int w;

	if (L->truncated)
		return;
	w = vsnprintf(L->err + L->errpos, L->errlen - L->errpos, fmt, ap);
	if (w < 0 || (size_t)w >= L->errlen - L->errpos) {
		L->truncated = 1;
		L->errpos = L->errlen - 1;
		L->err[L->errpos] = '\0';
		return;
	}
	L->errpos += (size_t)w;
}

static void
err_printf(struct loader *L, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_append(L, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 3, 4)))
error_at(struct loader *L, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	L->nerr++;
	if (L->err == NULL || L->errlen < 2)
		return;
	err_printf(L, "%s:%zu:%zu: ", L->file, n ? n->start_mark.line + 1 : 1,
		   n ? n->start_mark.column + 1 : 1);
	va_start(ap, fmt);
	err_append(L, fmt, ap);
	va_end(ap);
	err_printf(L, "\n");
}

static yaml_node_t *
node(struct loader *L, int id)
{
	return yaml_document_get_node(L->doc, id);
}

/* The scalar's text, or NULL (with an error) for a mapping or sequence. */
static const char *
scalar(struct loader *L, yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE) {
		error_at(L, n, "%s: expected a single value", what);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

static int
get_u64(struct loader *L, yaml_node_t *n, const char *what, uint64_t min,
	uint64_t max, uint64_t *out)
{
	const char *s = scalar(L, n, what);
	char *end;
	unsigned long long v;

	if (s == NULL)
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		error_at(L, n,
			 "%s: expected an integer from %llu to %llu, got '%s'",
			 what, (unsigned long long)min, (unsigned long long)max,
			 s);
		return -1;
	}
	*out = v;
	return 0;
}

#define GET_UINT(L, n, what, min, max, dst)                                    \
	do {                                                                   \
		uint64_t v_;                                                   \
		if (get_u64(L, n, what, min, max, &v_) == 0)                   \
			(dst) = (__typeof__(dst))v_;                           \
	} while (0)

static int
get_bool(struct loader *L, yaml_node_t *n, const char *what, uint8_t *out)
{
	const char *s = scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0) {
		*out = 1;
	} else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0) {
		*out = 0;
	} else {
		error_at(L, n, "%s: expected true or false, got '%s'", what, s);
		return -1;
	}
	return 0;
}

static int
get_str(struct loader *L, yaml_node_t *n, const char *what, char *dst,
	size_t size)
{
	const char *s = scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (strlen(s) >= size) {
		error_at(L, n, "%s: longer than %zu bytes", what, size - 1);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

static int
get_enum(struct loader *L, yaml_node_t *n, const char *what,
	 const char *const *names, uint8_t *out)
{
	const char *s = scalar(L, n, what);
	uint8_t i;

	if (s == NULL)
		return -1;
	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	error_at(L, n, "%s: unknown value '%s'", what, s);
	return -1;
}

static int
get_rate(struct loader *L, yaml_node_t *n, const char *what,
	 struct sl_rate *out)
{
	const char *s = scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (sl_rate_parse(s, out) != 0) {
		error_at(L, n,
			 "%s: expected a rate like 100/s, 100/min or 100/h, "
			 "got '%s'",
			 what, s);
		return -1;
	}
	return 0;
}

static int
is_seq(struct loader *L, yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return 1;
	error_at(L, n, "%s: expected a list", what);
	return 0;
}

#define SEQ_FOREACH(L, seqnode, item)                                          \
	for (yaml_node_item_t *it_ = (seqnode)->data.sequence.items.start;     \
	     it_ < (seqnode)->data.sequence.items.top &&                       \
	     ((item) = node(L, *it_)) != NULL;                                 \
	     it_++)

static uint32_t
seq_len(yaml_node_t *n)
{
	return (uint32_t)(n->data.sequence.items.top -
			  n->data.sequence.items.start);
}

/* Walks a mapping, dispatching known keys and reporting unknown ones. */
static void
walk_map(struct loader *L, yaml_node_t *n, const char *section,
	 const struct field *fields, void *obj)
{
	yaml_node_pair_t *p;

	if (n->type != YAML_MAPPING_NODE) {
		error_at(L, n, "%s: expected a mapping", section);
		return;
	}
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
		const struct field *f;
		const yaml_node_pair_t *q;
		const char *ks;

		if (k->type != YAML_SCALAR_NODE) {
			error_at(L, k, "%s: keys must be plain names", section);
			continue;
		}
		ks = (const char *)k->data.scalar.value;
		for (q = n->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *k2 = node(L, q->key);

			if (k2->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)k2->data.scalar.value, ks) ==
				    0)
				error_at(L, k, "%s: duplicate key '%s'",
					 section, ks);
		}
		for (f = fields; f->name != NULL; f++)
			if (strcmp(f->name, ks) == 0)
				break;
		if (f->name == NULL)
			error_at(L, k, "%s: unknown key '%s'", section, ks);
		else
			f->fn(L, v, obj);
	}
}

#include "sl_config_sections.h"

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
	c->store.expected_appliances = 1;
	c->store.reconcile_ms = 30000;
	strcpy(c->store.rules_channel, "sluice:rules");
	strcpy(c->store.keys_hash, "sluice:keys");
	c->response.retry_jitter_ppm = 200000;
	c->response.headers = SL_HDR_DRAFT;
	c->response.expose_rule = 1;
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

		error_at(L, &at, "YAML syntax: %s",
			 parser.problem ? parser.problem : "unreadable");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_parser_delete(&parser);
	root = yaml_document_get_root_node(L->doc);
	if (root == NULL) {
		error_at(L, NULL, "empty configuration");
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

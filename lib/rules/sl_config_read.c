/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The walker's toolkit: scalars, numbers, names and lists read from
 * libyaml's tree, every mistake reported at its file:line:col, and the
 * walk of a section's mapping by its table (handlers and rows).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_config_priv.h"

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

void
sl_cfg_err_printf(struct loader *L, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_append(L, fmt, ap);
	va_end(ap);
}

void
sl_cfg_error_at(struct loader *L, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	L->nerr++;
	if (L->err == NULL || L->errlen < 2)
		return;
	sl_cfg_err_printf(L, "%s:%zu:%zu: ", L->file,
			  n ? n->start_mark.line + 1 : 1,
			  n ? n->start_mark.column + 1 : 1);
	va_start(ap, fmt);
	err_append(L, fmt, ap);
	va_end(ap);
	sl_cfg_err_printf(L, "\n");
}

yaml_node_t *
sl_cfg_node(struct loader *L, int id)
{
	return yaml_document_get_node(L->doc, id);
}

/* The scalar's text, or NULL (with an error) for a mapping or sequence. */
const char *
sl_cfg_scalar(struct loader *L, yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE) {
		sl_cfg_error_at(L, n, "%s: expected a single value", what);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

int
sl_cfg_get_u64(struct loader *L, yaml_node_t *n, const char *what, uint64_t min,
	       uint64_t max, uint64_t *out)
{
	const char *s = sl_cfg_scalar(L, n, what);
	char *end;
	unsigned long long v;

	if (s == NULL)
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		sl_cfg_error_at(
			L, n,
			"%s: expected an integer from %llu to %llu, got '%s'",
			what, (unsigned long long)min, (unsigned long long)max,
			s);
		return -1;
	}
	*out = v;
	return 0;
}

int
sl_cfg_get_bool(struct loader *L, yaml_node_t *n, const char *what,
		uint8_t *out)
{
	const char *s = sl_cfg_scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0) {
		*out = 1;
	} else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0) {
		*out = 0;
	} else {
		sl_cfg_error_at(L, n, "%s: expected true or false, got '%s'",
				what, s);
		return -1;
	}
	return 0;
}

int
sl_cfg_get_str(struct loader *L, yaml_node_t *n, const char *what, char *dst,
	       size_t size)
{
	const char *s = sl_cfg_scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (strlen(s) >= size) {
		sl_cfg_error_at(L, n, "%s: longer than %zu bytes", what,
				size - 1);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

int
sl_cfg_get_enum(struct loader *L, yaml_node_t *n, const char *what,
		const char *const *names, uint8_t *out)
{
	const char *s = sl_cfg_scalar(L, n, what);
	uint8_t i;

	if (s == NULL)
		return -1;
	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	{
		char all[256];
		size_t len = 0;

		all[0] = '\0';
		for (i = 0; names[i] != NULL && len + 1 < sizeof(all); i++)
			len += (size_t)snprintf(all + len, sizeof(all) - len,
						"%s%s", i ? ", " : "",
						names[i]);
		sl_cfg_error_at(L, n, "%s: unknown value '%s' (one of: %s)",
				what, s, all);
	}
	return -1;
}

/* Edits (insert, delete, change one byte) from a to b, at most 64 bytes
 * of each: how far a mistyped key is from each it could have meant. */
static unsigned int
distance(const char *a, const char *b)
{
	unsigned int row[65], i, j;
	size_t na = strnlen(a, 64), nb = strnlen(b, 64);

	for (j = 0; j <= nb; j++)
		row[j] = j;
	for (i = 1; i <= na; i++) {
		unsigned int diag = row[0], up;

		row[0] = i;
		for (j = 1; j <= nb; j++) {
			unsigned int best = diag + (a[i - 1] != b[j - 1]);

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[nb];
}

/* The section's key nearest to ks, if it is near enough to be the one
 * meant (a third of its length in edits, at least one); NULL if none. */
static const char *
nearest_key(const struct field *fields, const char *ks)
{
	const char *best = NULL;
	unsigned int bd = UINT32_MAX;
	const struct field *f;

	for (f = fields; f->name != NULL; f++) {
		unsigned int d = distance(ks, f->name);

		if (d < bd) {
			bd = d;
			best = f->name;
		}
	}
	return best != NULL && bd <= (strlen(best) / 3 > 1 ? strlen(best) / 3
							   : 1)
		       ? best
		       : NULL;
}

int
sl_cfg_get_rate(struct loader *L, yaml_node_t *n, const char *what,
		struct sl_rate *out)
{
	const char *s = sl_cfg_scalar(L, n, what);

	if (s == NULL)
		return -1;
	if (sl_rate_parse(s, out) != 0) {
		sl_cfg_error_at(L, n,
				"%s: '%s' is not COUNT/PERIOD (100/min, "
				"10000/day; PERIOD s|sec|second|seconds, "
				"m|min|minute|minutes, h|hour|hours, "
				"d|day|days)",
				what, s);
		return -1;
	}
	return 0;
}

int
sl_cfg_is_seq(struct loader *L, yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return 1;
	sl_cfg_error_at(L, n, "%s: expected a list", what);
	return 0;
}

uint32_t
sl_cfg_seq_len(yaml_node_t *n)
{
	return (uint32_t)(n->data.sequence.items.top -
			  n->data.sequence.items.start);
}

/* Walks a mapping, dispatching known keys and reporting unknown ones. */
/* A row's value, checked and stored at dst (a member of f->size bytes). */
static void
read_row(struct loader *L, yaml_node_t *v, const struct field *f, void *dst)
{
	uint64_t u;
	uint32_t ppm;

	switch (f->kind) {
	case FK_UINT:
		if (sl_cfg_get_u64(L, v, f->name, f->min, f->max, &u) != 0)
			return;
		if (f->size == 1)
			*(uint8_t *)dst = (uint8_t)u;
		else if (f->size == 2)
			*(uint16_t *)dst = (uint16_t)u;
		else if (f->size == 4)
			*(uint32_t *)dst = (uint32_t)u;
		else
			*(uint64_t *)dst = u;
		break;
	case FK_BOOL:
		sl_cfg_get_bool(L, v, f->name, dst);
		break;
	case FK_ENUM:
		sl_cfg_get_enum(L, v, f->name, f->names, dst);
		break;
	case FK_PPM:
		if (sl_cfg_get_fraction(L, v, f->name, (double)f->min / 1e6,
					(double)f->max / 1e6, &ppm) == 0)
			*(uint32_t *)dst = ppm;
		break;
	case FK_STR:
		sl_cfg_get_str(L, v, f->name, dst, f->size);
		break;
	}
}

void
sl_cfg_walk_map(struct loader *L, yaml_node_t *n, const char *section,
		const struct field *fields, void *obj)
{
	yaml_node_pair_t *p;

	if (n->type != YAML_MAPPING_NODE) {
		sl_cfg_error_at(L, n, "%s: expected a mapping", section);
		return;
	}
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = sl_cfg_node(L, p->key),
			    *v = sl_cfg_node(L, p->value);
		const struct field *f;
		const yaml_node_pair_t *q;
		const char *ks;

		if (k->type != YAML_SCALAR_NODE) {
			sl_cfg_error_at(L, k, "%s: keys must be plain names",
					section);
			continue;
		}
		ks = (const char *)k->data.scalar.value;
		for (q = n->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *k2 = sl_cfg_node(L, q->key);

			if (k2->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)k2->data.scalar.value, ks) ==
				    0)
				sl_cfg_error_at(L, k,
						"%s: duplicate key '%s' (the "
						"first is at line %zu)",
						section, ks,
						k2->start_mark.line + 1);
		}
		for (f = fields; f->name != NULL; f++)
			if (strcmp(f->name, ks) == 0)
				break;
		if (f->name == NULL && nearest_key(fields, ks) != NULL)
			sl_cfg_error_at(L, k,
					"%s: unknown key '%s' (did you mean "
					"'%s'?)",
					section, ks, nearest_key(fields, ks));
		else if (f->name == NULL)
			sl_cfg_error_at(L, k, "%s: unknown key '%s'", section,
					ks);
		else if (f->kind == FK_FN)
			f->fn(L, v, obj);
		else
			read_row(L, v, f, (char *)obj + f->off);
	}
}

int
sl_cfg_is_token(const char *s, int allow_dot)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      (allow_dot && c == '.')))
			return 0;
	}
	return 1;
}

/* The value of key name in a mapping; NULL when it has none. */
yaml_node_t *
sl_cfg_value_of(struct loader *L, yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = sl_cfg_node(L, p->key);

		if (k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, name) == 0)
			return sl_cfg_node(L, p->value);
	}
	return NULL;
}

int
sl_cfg_has_key(struct loader *L, yaml_node_t *map, const char *name)
{
	if (map->type != YAML_MAPPING_NODE)
		return 1; /* already reported as not a mapping */
	return sl_cfg_value_of(L, map, name) != NULL;
}

int
sl_cfg_find_tier(const struct sl_config *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->n_tiers; i++)
		if (strcmp(c->tiers[i], name) == 0)
			return (int)i;
	return -1;
}

int
sl_cfg_get_tier(struct loader *L, yaml_node_t *n, const char *what)
{
	const char *s = sl_cfg_scalar(L, n, what);
	int t;

	if (s == NULL)
		return -1;
	t = sl_cfg_find_tier(L->cfg, s);
	if (t < 0)
		sl_cfg_error_at(L, n, "%s: unknown tier '%s'", what, s);
	return t;
}

int
sl_cfg_get_fraction(struct loader *L, yaml_node_t *n, const char *what,
		    double min, double max, uint32_t *ppm)
{
	const char *s = sl_cfg_scalar(L, n, what);
	char *end;
	double d;

	if (s == NULL)
		return -1;
	d = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || !(d >= min && d <= max)) {
		sl_cfg_error_at(L, n,
				"%s: expected a number from %g to %g, got '%s'",
				what, min, max, s);
		return -1;
	}
	*ppm = (uint32_t)(d * 1e6 + 0.5);
	return 0;
}

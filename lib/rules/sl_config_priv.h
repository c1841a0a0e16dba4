/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_CONFIG_PRIV_H
#define SL_CONFIG_PRIV_H

/*
 * Inside the config loader (lib/rules): the walker's toolkit
 * (sl_config_read.c), the sections (sl_config_node.c: the appliance's
 * own settings; sl_config_rules.c: tiers, keys, rules, overrides,
 * blocklist) and the document's root (sl_config.c). Not a public header.
 */

#include <stddef.h>
#include <stdint.h>
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

/*
 * One key of a section: a handler, or a row that says where its value
 * goes in the object walked (the config, or a rule) and its bounds, the
 * shape of nginx's ngx_command_t. Rows are read by walk_map itself.
 */
enum field_kind { FK_FN = 0, FK_UINT, FK_BOOL, FK_ENUM, FK_PPM, FK_STR };

struct field {
	const char *name;
	field_fn fn; /* FK_FN */
	uint8_t kind;
	uint16_t size; /* of the member */
	size_t off;    /* of the member in the object walked */
	uint64_t min, max;
	const char *const *names; /* FK_ENUM */
};

/* A member's size, or a compile error when cond does not hold of it. */
#define F_SIZE_IF(T, m, cond)                                                  \
	(sizeof(((T *)0)->m) * sizeof(char[(cond) ? 1 : -1]))
#define F_BITS(T, m) (8 * sizeof(((T *)0)->m))
/* an unsigned member that holds every value up to hi */
#define F_UINT_SIZE(T, m, hi)                                                  \
	F_SIZE_IF(T, m,                                                        \
		  F_BITS(T, m) == 64 || (uint64_t)(hi) >> F_BITS(T, m) == 0)

#define F_FN(n, f)                                                             \
	{                                                                      \
		n, f, FK_FN, 0, 0, 0, 0, NULL                                  \
	}
#define F_UINT(n, T, m, lo, hi)                                                \
	{                                                                      \
		n, NULL, FK_UINT, F_UINT_SIZE(T, m, hi), offsetof(T, m), lo,   \
			hi, NULL                                               \
	}
#define F_BOOL(n, T, m)                                                        \
	{                                                                      \
		n, NULL, FK_BOOL, F_SIZE_IF(T, m, sizeof(((T *)0)->m) == 1),   \
			offsetof(T, m), 0, 1, NULL                             \
	}
#define F_ENUM(n, T, m, names)                                                 \
	{                                                                      \
		n, NULL, FK_ENUM, F_SIZE_IF(T, m, sizeof(((T *)0)->m) == 1),   \
			offsetof(T, m), 0, 0, names                            \
	}
/* a fraction, held in parts per million; the bounds in ppm */
#define F_PPM(n, T, m, lo, hi)                                                 \
	{                                                                      \
		n, NULL, FK_PPM, F_SIZE_IF(T, m, sizeof(((T *)0)->m) == 4),    \
			offsetof(T, m), lo, hi, NULL                           \
	}
#define F_STR(n, T, m)                                                         \
	{                                                                      \
		n, NULL, FK_STR, sizeof(((T *)0)->m), offsetof(T, m), 0, 0,    \
			NULL                                                   \
	}
#define F_END                                                                  \
	{                                                                      \
		NULL, NULL, 0, 0, 0, 0, 0, NULL                                \
	}

#define GET_UINT(L, n, what, min, max, dst)                                    \
	do {                                                                   \
		uint64_t v_;                                                   \
		if (sl_cfg_get_u64(L, n, what, min, max, &v_) == 0)            \
			(dst) = (__typeof__(dst))v_;                           \
	} while (0)

#define SEQ_FOREACH(L, seqnode, item)                                          \
	for (yaml_node_item_t *it_ = (seqnode)->data.sequence.items.start;     \
	     it_ < (seqnode)->data.sequence.items.top &&                       \
	     ((item) = sl_cfg_node(L, *it_)) != NULL;                          \
	     it_++)

#define SL_CFG_SECTION(fn, title, table)                                       \
	void fn(struct loader *L, yaml_node_t *v, void *o)                     \
	{                                                                      \
		(void)o;                                                       \
		sl_cfg_walk_map(L, v, title, table, L->cfg);                   \
	}

/* sl_config_read.c: reading values, reporting errors at file:line:col */
void sl_cfg_err_printf(struct loader *L, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sl_cfg_error_at(struct loader *L, const yaml_node_t *n, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));
yaml_node_t *sl_cfg_node(struct loader *L, int id);
const char *sl_cfg_scalar(struct loader *L, yaml_node_t *n, const char *what);
int sl_cfg_get_u64(struct loader *L, yaml_node_t *n, const char *what,
		   uint64_t min, uint64_t max, uint64_t *out);
int sl_cfg_get_bool(struct loader *L, yaml_node_t *n, const char *what,
		    uint8_t *out);
int sl_cfg_get_str(struct loader *L, yaml_node_t *n, const char *what,
		   char *dst, size_t size);
int sl_cfg_get_enum(struct loader *L, yaml_node_t *n, const char *what,
		    const char *const *names, uint8_t *out);
int sl_cfg_get_rate(struct loader *L, yaml_node_t *n, const char *what,
		    struct sl_rate *out);
int sl_cfg_is_seq(struct loader *L, yaml_node_t *n, const char *what);
uint32_t sl_cfg_seq_len(yaml_node_t *n);
void sl_cfg_walk_map(struct loader *L, yaml_node_t *n, const char *section,
		     const struct field *fields, void *obj);
int sl_cfg_is_token(const char *s, int allow_dot);
/* A header name (SL_NAME_MAX) into dst, said where it is no token
 * (-1); "" stays "" (none). */
int sl_cfg_header_name(struct loader *L, yaml_node_t *v, const char *what,
		       char *dst);
yaml_node_t *sl_cfg_value_of(struct loader *L, yaml_node_t *map,
			     const char *name);
int sl_cfg_has_key(struct loader *L, yaml_node_t *map, const char *name);
int sl_cfg_find_tier(const struct sl_config *c, const char *name);
int sl_cfg_get_tier(struct loader *L, yaml_node_t *n, const char *what);
int sl_cfg_get_fraction(struct loader *L, yaml_node_t *n, const char *what,
			double min, double max, uint32_t *ppm);

/* The sections' handlers, for the root's tables. */
void sl_cfg_tiers(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_default_tier(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_keys(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_rules(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_overrides(struct loader *L, yaml_node_t *v, void *o);
/* Each ip override's id, once identity.ipv6_prefix is read. */
void sl_cfg_override_ids(struct sl_config *c);
void sl_cfg_blocklist(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_dataplane(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_identity(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_response(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_request(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_reload(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_decisions(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_store(struct loader *L, yaml_node_t *v, void *o);
void sl_cfg_regions(struct loader *L, yaml_node_t *v, void *o);
/* Global rules (and their overrides) cut to this region's slice. */
void sl_cfg_apply_regions(struct loader *L, yaml_node_t *root);

/*
 * A file whose first line is "# sha256: HEX" must hash to HEX after that
 * line: 0 when it does or names none; -1 with FILE:1:1 in err when not.
 */
int sl_config_sum_check(const char *file, const char *text, size_t len,
			char *err, size_t errlen);

/* Rules that can never refuse: an earlier rule meets every request they
 * match, counts it as they do, and is as strict or stricter (one warning
 * each; sl_config_cover.c). */
uint32_t sl_config_lint_covered(const struct sl_config *c, sl_config_warn_fn fn,
				void *arg);

#endif /* SL_CONFIG_PRIV_H */

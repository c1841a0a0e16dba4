/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rules that can never refuse. Every matching limit is charged and the
 * strictest decides, so a rule b whose every request an earlier rule a
 * also matches, under the same scope and cost, is charged no more than
 * a; if a's limit is no looser than b's, a refuses first, every time,
 * and b only counts. Decided from the match fields alone: a route or a
 * path pattern is compared as written, and a rule with overrides (which
 * may loosen a for some identities) is left out.
 */
#include <stdio.h>
#include <string.h>

#include "sl_config_priv.h"

static int
literal(const char *path)
{
	return strpbrk(path, "{*") == NULL;
}

/* Every path b can match starts with a's prefix p. */
static int
within_prefix(const struct sl_rule *a, const struct sl_rule *b)
{
	size_t n = strlen(a->path_prefix);

	if (b->path_icase && !a->path_icase)
		return 0; /* b also matches spellings a does not */
	if (strncmp(b->path_prefix, a->path_prefix, n) == 0)
		return 1;
	return b->path[0] && literal(b->path) &&
	       strncmp(b->path, a->path_prefix, n) == 0;
}

/* Whether every request rule b matches, rule a matches too. */
static int
matches_all_of(const struct sl_rule *a, const struct sl_rule *b)
{
	if (a->host[0] && strcmp(a->host, b->host) != 0)
		return 0;
	if (a->methods != 0 && (b->methods == 0 || (b->methods & ~a->methods)))
		return 0;
	if (a->tier >= 0 && a->tier != b->tier)
		return 0;
	if (a->path[0] &&
	    (strcmp(a->path, b->path) != 0 || a->path_icase != b->path_icase))
		return 0;
	return a->path_prefix[0] == '\0' || within_prefix(a, b);
}

/* a's limit refuses whenever b's would, on the same charges. */
static int
as_strict(const struct sl_rule *a, const struct sl_rule *b)
{
	/* a / a.period <= b / b.period, without dividing */
	unsigned __int128 ra = (unsigned __int128)a->limit.count *
			       b->limit.period_ms,
			  rb = (unsigned __int128)b->limit.count *
			       a->limit.period_ms;

	if (a->algo != b->algo)
		return 0;
	if (a->algo == SL_ALGO_TOKEN_BUCKET || a->algo == SL_ALGO_GCRA)
		return ra <= rb && a->burst <= b->burst;
	return a->limit.period_ms == b->limit.period_ms &&
	       a->limit.count <= b->limit.count;
}

static int
has_overrides(const struct sl_config *c, uint32_t rule)
{
	uint32_t i;

	for (i = 0; i < c->n_overrides; i++)
		if (c->overrides[i].rule == rule)
			return 1;
	return 0;
}

static int
comparable(const struct sl_config *c, uint32_t i)
{
	const struct sl_rule *r = &c->rules[i];

	return !r->shadow && !r->global && !r->cost_header[0] &&
	       !has_overrides(c, i);
}

uint32_t
sl_config_lint_covered(const struct sl_config *c, sl_config_warn_fn fn,
		       void *arg)
{
	char msg[512];
	uint32_t i, j, n = 0;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *b = &c->rules[i];

		if (!comparable(c, i))
			continue;
		for (j = 0; j < c->n_rules; j++) {
			const struct sl_rule *a = &c->rules[j];

			if (j == i || !comparable(c, j) ||
			    a->scope != b->scope || a->cost != b->cost ||
			    !matches_all_of(a, b) || !as_strict(a, b))
				continue;
			/* two that cover each other: the later is told */
			if (j > i && matches_all_of(b, a) && as_strict(b, a))
				continue;
			snprintf(msg, sizeof(msg),
				 "rule '%s' never refuses: every request it "
				 "matches also meets rule '%s' (line %u), "
				 "counted the same way and limited as strictly "
				 "or more; loosen '%s', narrow '%s' or drop it",
				 b->name, a->name, a->line, a->name, b->name);
			fn(arg, b->line, msg);
			n++;
			break;
		}
	}
	return n;
}

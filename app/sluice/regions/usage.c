/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>

#include "usage.h"

static struct sl_usage_rule *
rule_of(struct sl_usage *u, uint64_t rid)
{
	uint32_t i;

	for (i = 0; i < u->n; i++)
		if (u->r[i].rid == rid)
			return &u->r[i];
	if (u->n == SL_USAGE_RULES)
		return NULL;
	u->r[u->n].rid = rid;
	u->r[u->n].total = 0;
	u->r[u->n].n = 0;
	return &u->r[u->n++];
}

static void
set_lim(struct sl_usage_rule *r, uint32_t i, struct sl_usage_lim lim)
{
	if (lim.count == 0)
		return; /* a demand report alone: the last ask's stands */
	r->top[i].count = lim.count;
	r->top[i].period_ms = lim.period_ms;
}

void
sl_usage_note(struct sl_usage *u, uint64_t rid, uint64_t k1, uint64_t k2,
	      uint64_t units, struct sl_usage_lim lim)
{
	struct sl_usage_rule *r = rule_of(u, rid);
	uint32_t i, least = 0;

	if (r == NULL) {
		u->unsent += units;
		return;
	}
	r->total += units;
	for (i = 0; i < r->n; i++) {
		if (r->top[i].k1 == k1 && r->top[i].k2 == k2) {
			r->top[i].units += units;
			set_lim(r, i, lim);
			return;
		}
		if (r->top[i].units < r->top[least].units)
			least = i;
	}
	if (r->n < SL_USAGE_TOP)
		least = r->n++;
	else /* space-saving: the newcomer inherits the least one's count */
		units += r->top[least].units;
	r->top[least].k1 = k1;
	r->top[least].k2 = k2;
	r->top[least].units = units;
	r->top[least].count = 0;
	set_lim(r, least, lim);
}

/* The identities' limits, where known: ,"lim":{...}. Returns the new
 * offset, or 0 when it does not fit. */
static size_t
json_lims(const struct sl_usage_rule *r, char *buf, size_t size, size_t off)
{
	uint32_t i, k = 0;
	int n;

	for (i = 0; i < r->n; i++) {
		if (r->top[i].count == 0)
			continue;
		n = snprintf(buf + off, size - off,
			     "%s\"%016llx%016llx\":[%llu,%u]",
			     k++ ? "," : ",\"lim\":{",
			     (unsigned long long)r->top[i].k1,
			     (unsigned long long)r->top[i].k2,
			     (unsigned long long)r->top[i].count,
			     r->top[i].period_ms);
		if (n < 0 || (size_t)n >= size - off)
			return 0;
		off += (size_t)n;
	}
	if (k == 0)
		return off;
	n = snprintf(buf + off, size - off, "}");
	if (n < 0 || (size_t)n >= size - off)
		return 0;
	return off + (size_t)n;
}

int
sl_usage_json(const struct sl_usage_rule *r, uint64_t wall_ms, uint64_t span_ms,
	      char *buf, size_t size)
{
	size_t off;
	uint32_t i;
	int n;

	n = snprintf(buf, size,
		     "{\"t\":%llu,\"i\":%llu,\"total\":%llu,\"top\":{",
		     (unsigned long long)wall_ms, (unsigned long long)span_ms,
		     (unsigned long long)r->total);
	if (n < 0 || (size_t)n >= size)
		return -1;
	off = (size_t)n;
	for (i = 0; i < r->n; i++) {
		n = snprintf(buf + off, size - off, "%s\"%016llx%016llx\":%llu",
			     i ? "," : "", (unsigned long long)r->top[i].k1,
			     (unsigned long long)r->top[i].k2,
			     (unsigned long long)r->top[i].units);
		if (n < 0 || (size_t)n >= size - off)
			return -1;
		off += (size_t)n;
	}
	n = snprintf(buf + off, size - off, "}");
	if (n < 0 || (size_t)n >= size - off)
		return -1;
	off = json_lims(r, buf, size, off + (size_t)n);
	if (off == 0)
		return -1;
	n = snprintf(buf + off, size - off, "}");
	if (n < 0 || (size_t)n >= size - off)
		return -1;
	return (int)(off + (size_t)n);
}

void
sl_usage_reset(struct sl_usage *u, uint64_t now_ns)
{
	u->n = 0;
	u->since_ns = now_ns;
}

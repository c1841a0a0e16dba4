/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a valid config means that its author may not have meant: rules
 * that leave traffic unlimited without saying so, and rules that can
 * never match. Told, never refused (a config that parses is applied as
 * written; --check-config --strict makes a warning fail the check).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_config_priv.h"

/*
 * Rules that match hosts by name, and none that matches any host: a
 * request for another Host (or none, in HTTP/1.0) matches no rule, and
 * the backend's default server answers it anyway, unlimited.
 */
/* Whether a rule before rule i matches host h too: named once. */
static int
named_before(const struct sl_config *c, uint32_t i, const char *h)
{
	uint32_t j;

	for (j = 0; j < i; j++)
		if (!c->rules[j].shadow && strcmp(c->rules[j].host, h) == 0)
			return 1;
	return 0;
}

static uint32_t
lint_hosts(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	char names[256] = "", msg[512];
	uint32_t i, first = 0, n = 0;
	size_t len = 0;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];

		if (r->shadow)
			continue;
		if (r->host[0] == '\0')
			return 0; /* some rule covers every host */
		if (n++ == 0)
			first = r->line;
		if (!named_before(c, i, r->host) &&
		    len + strlen(r->host) + 3 < sizeof(names))
			len += (size_t)snprintf(names + len,
						sizeof(names) - len, "%s%s",
						len ? ", " : "", r->host);
	}
	if (n == 0)
		return 0;
	snprintf(msg, sizeof(msg),
		 "every rule matches a host (%s): requests for any other Host "
		 "match no rule and go unlimited to the backend's default "
		 "server; add a rule without host to cover them",
		 names);
	fn(arg, first, msg);
	return 1;
}

/* Whether any key can be of tier t: the default's, the static map's,
 * or, with a store, whatever its keys hash names. */
static int
tier_reachable(const struct sl_config *c, int t)
{
	uint32_t i;

	if (t == c->default_tier || c->store.present)
		return 1;
	for (i = 0; i < c->n_keys; i++)
		if (c->keys[i].tier == t)
			return 1;
	return 0;
}

/* Rules whose match no request can meet: a query in a path field (the
 * path matched is the target's path, never its query), an exact path
 * outside the rule's own path_prefix (a request must meet both), a user
 * rule with no header to read users from, a tier no key can be of, and
 * CONNECT alone (refused, 400 connect, before any rule). */
static uint32_t
lint_never(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	char msg[1024];
	uint32_t i, n = 0;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];
		const char *q = strchr(r->path, '?')          ? r->path
				: strchr(r->path_prefix, '?') ? r->path_prefix
							      : NULL;

		if (r->scope == SL_SCOPE_USER &&
		    c->identity.user_header[0] == '\0')
			snprintf(msg, sizeof(msg),
				 "rule '%s' can never match: scope: user keys "
				 "on the header identity.user_header names, "
				 "and none is set; set it, or key the rule "
				 "another way",
				 r->name);
		else if (r->tier >= 0 && !tier_reachable(c, r->tier))
			snprintf(msg, sizeof(msg),
				 "rule '%s' can never match: no key is of "
				 "tier '%s' (it is not default_tier, no "
				 "entry of keys names it, and there is no "
				 "store whose keys_hash could); name it in "
				 "keys, or add a store",
				 r->name, c->tiers[r->tier]);
		else if (r->methods == SL_M_CONNECT)
			snprintf(msg, sizeof(msg),
				 "rule '%s' can never match: CONNECT is "
				 "refused (400 connect) before any rule is "
				 "matched; drop the rule",
				 r->name);
		else if (q != NULL)
			snprintf(msg, sizeof(msg),
				 "rule '%s' can never match: '%.200s' holds a "
				 "query ('?'), and a rule matches the target's "
				 "path alone; drop what follows the '?'",
				 r->name, q);
		else if (r->path[0] && r->path_prefix[0] &&
			 strncmp(r->path, r->path_prefix,
				 strlen(r->path_prefix)) != 0)
			snprintf(msg, sizeof(msg),
				 "rule '%s' can never match: a request must "
				 "meet both path '%.200s' and path_prefix "
				 "'%.200s', and none can; keep one of them",
				 r->name, r->path, r->path_prefix);
		else
			continue;
		fn(arg, r->line, msg);
		n++;
	}
	return n;
}

/* What no enforcing rule binds: nothing at all, or, when every rule is
 * keyed on a claimed identity, every request that claims none. */
static uint32_t
lint_unbound(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	uint32_t i, enforcing = 0, first = 0;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];

		if (r->shadow)
			continue;
		if (enforcing++ == 0)
			first = r->line;
		if (r->scope != SL_SCOPE_KEY && r->scope != SL_SCOPE_USER)
			return 0;
	}
	if (enforcing == 0) {
		fn(arg, 1,
		   "no enforcing rule: every request goes to the backend "
		   "unlimited");
		return 1;
	}
	fn(arg, first,
	   "every rule is keyed on an API key or a user: a request that "
	   "sends neither matches no rule and goes unlimited to the "
	   "backend; add a rule with scope: ip to bound them");
	return 1;
}

/* Options that do nothing where they are written, and the spellings
 * kept for old files. */
static uint32_t
lint_options(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	char msg[512];
	uint32_t i, n = 0;

	for (i = 0; i < c->n_rules; i++) {
		const struct sl_rule *r = &c->rules[i];

		msg[0] = '\0';
		if ((r->said & SL_SAID_ONFAIL) && !c->store.present)
			snprintf(
				msg, sizeof(msg),
				"rule '%s': on_store_failure does nothing "
				"without a store (the node's authority decides "
				"every limit); drop it",
				r->name);
		else if (r->tier >= 0 && r->scope == SL_SCOPE_IP)
			snprintf(msg, sizeof(msg),
				 "rule '%s': scope: ip with a tier binds only "
				 "requests whose API key is of tier '%s', "
				 "counted per address, and never one without a "
				 "key; for a limit per key of the tier write "
				 "scope: key",
				 r->name, c->tiers[r->tier]);
		else if (r->said & SL_SAID_GLOBAL)
			snprintf(
				msg, sizeof(msg),
				"rule '%s': 'global' is spelled across_regions "
				"now: it slices the limit between regions (a "
				"store alone shares it across appliances)",
				r->name);
		else if (r->said & SL_SAID_SCOPE_GLOBAL)
			snprintf(msg, sizeof(msg),
				 "rule '%s': scope: global is one bucket for "
				 "the rule, as scope: endpoint is; write "
				 "endpoint",
				 r->name);
		if (msg[0] != '\0') {
			fn(arg, r->line, msg);
			n++;
		}
	}
	return n;
}

static const char *const names_a[] = {
	[SL_SCOPE_KEY] = "an API key (key:)",
	[SL_SCOPE_USER] = "a user (user:)",
	[SL_SCOPE_IP] = "an address (ip:)",
};
static const char *const counts_per[] = {
	[SL_SCOPE_KEY] = "per API key",
	[SL_SCOPE_USER] = "per user",
	[SL_SCOPE_IP] = "per client address",
	[SL_SCOPE_ENDPOINT] = "every client in one bucket",
	[SL_SCOPE_GLOBAL] = "every client in one bucket",
};

/* Where an IPv6 override's address has bits beyond the group its
 * clients are counted in, the group it stands for, into buf. */
static int
v6_group(const struct sl_override *o, char *buf, size_t size)
{
	struct sl_cidr a;

	if (o->kind != SL_SCOPE_IP || o->id_len != 16 ||
	    sl_cidr_parse(o->key, &a) != 0 || memcmp(a.addr, o->id, 16) == 0)
		return 0;
	inet_ntop(AF_INET6, o->id, buf, (socklen_t)size);
	return 1;
}

/* An override's identity as the data path looks it up. */
struct ovr_id {
	uint32_t rule, idx, len;
	uint8_t kind;
	uint8_t b[SL_KEY_MAX];
};

static int
cmp_ovr_id(const void *pa, const void *pb)
{
	const struct ovr_id *a = pa, *b = pb;
	int d;

	if (a->rule != b->rule)
		return a->rule < b->rule ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	d = memcmp(a->b, b->b, a->len);
	return d != 0 ? d : a->idx < b->idx ? -1 : 1;
}

static int
same_id(const struct ovr_id *a, const struct ovr_id *b)
{
	return a->rule == b->rule && a->kind == b->kind && a->len == b->len &&
	       memcmp(a->b, b->b, a->len) == 0;
}

static void
ovr_id_of(const struct sl_config *c, uint32_t i, struct ovr_id *out)
{
	const struct sl_override *o = &c->overrides[i];

	out->rule = o->rule;
	out->kind = o->kind;
	out->idx = i;
	out->len =
		o->kind == SL_SCOPE_IP ? o->id_len : (uint32_t)strlen(o->key);
	memcpy(out->b, o->kind == SL_SCOPE_IP ? (const char *)o->id : o->key,
	       out->len);
}

/* Two overrides of one rule for one identity (an IPv6 group counts as
 * one): the later is the one looked up, the earlier never applies, even
 * once the later has expired. */
static uint32_t
lint_repeated(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	struct ovr_id *ids;
	char msg[512];
	uint32_t i, won = 0, n = 0;

	if (c->n_overrides < 2)
		return 0;
	ids = malloc(c->n_overrides * sizeof(*ids));
	if (ids == NULL)
		return 0;
	for (i = 0; i < c->n_overrides; i++)
		ovr_id_of(c, i, &ids[i]);
	qsort(ids, c->n_overrides, sizeof(*ids), cmp_ovr_id);
	/* backwards: the last of each run is the one looked up */
	for (i = c->n_overrides; i-- > 0;) {
		const struct sl_override *o = &c->overrides[ids[i].idx];

		if (i + 1 == c->n_overrides || !same_id(&ids[i], &ids[i + 1])) {
			won = o->line;
			continue;
		}
		snprintf(msg, sizeof(msg),
			 "override of rule '%s' never applies: the one on "
			 "line %u names the same %s and is the one looked "
			 "up, even once it has expired; keep one of them",
			 c->rules[o->rule].name, won,
			 o->kind == SL_SCOPE_IP ? "client" : "identity");
		fn(arg, o->line, msg);
		n++;
	}
	free(ids);
	return n;
}

/* Overrides that do not do what they seem to: one naming another kind
 * of identity than its rule counts by never applies; an IPv6 address
 * applies to every client of its group. */
static uint32_t
lint_overrides(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	char msg[768], grp[INET6_ADDRSTRLEN];
	uint32_t i, n = 0;

	for (i = 0; i < c->n_overrides; i++) {
		const struct sl_override *o = &c->overrides[i];
		const struct sl_rule *r = &c->rules[o->rule];

		if (r->scope != o->kind)
			snprintf(msg, sizeof(msg),
				 "override of rule '%s' never applies: it "
				 "names %s, and the rule counts %s; name "
				 "what the rule counts by, or override "
				 "another rule",
				 r->name, names_a[o->kind],
				 counts_per[r->scope]);
		else if (v6_group(o, grp, sizeof(grp)))
			snprintf(msg, sizeof(msg),
				 "override of rule '%s': '%.60s' stands for "
				 "%s/%u, every client in it, as IPv6 clients "
				 "are counted (identity.ipv6_prefix); write "
				 "that prefix's address to say so",
				 r->name, o->key, grp,
				 (unsigned)c->identity.ipv6_prefix);
		else
			continue;
		fn(arg, o->line, msg);
		n++;
	}
	return n;
}

/* A store shared by several appliances without saying how many: while
 * it is out, fail_open divides each limit by expected_appliances (1). */
static uint32_t
lint_store(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	uint32_t i;

	if (!c->store.present || c->store.expected_given)
		return 0;
	for (i = 0; i < c->n_rules; i++)
		if (!c->rules[i].shadow &&
		    c->rules[i].on_store_failure == SL_FAIL_OPEN) {
			fn(arg, c->store.line,
			   "store: expected_appliances is not set (1): while "
			   "the store is out, each appliance admits a "
			   "fail_open rule's whole limit; set it to the "
			   "number of appliances that share the store");
			return 1;
		}
	return 0;
}

uint32_t
sl_config_lint(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	return lint_hosts(c, fn, arg) + lint_never(c, fn, arg) +
	       lint_unbound(c, fn, arg) + lint_options(c, fn, arg) +
	       lint_store(c, fn, arg) + lint_overrides(c, fn, arg) +
	       lint_repeated(c, fn, arg) + sl_config_lint_covered(c, fn, arg);
}

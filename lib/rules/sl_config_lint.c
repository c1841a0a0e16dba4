/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a valid config means that its author may not have meant: rules
 * that leave traffic unlimited without saying so. Told, never refused
 * (a config that parses is applied as written).
 */
#include <stdio.h>
#include <string.h>

#include "sl_rules.h"

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

uint32_t
sl_config_lint(const struct sl_config *c, sl_config_warn_fn fn, void *arg)
{
	return lint_hosts(c, fn, arg);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sl_rules.h"

int
sl_rate_parse(const char *s, struct sl_rate *out)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {{"s", 1000},       {"sec", 1000},      {"second", 1000},
		     {"seconds", 1000}, {"m", 60000},       {"min", 60000},
		     {"minute", 60000}, {"minutes", 60000}, {"h", 3600000},
		     {"hour", 3600000}, {"hours", 3600000}, {"d", 86400000},
		     {"day", 86400000}, {"days", 86400000}};
	const char *slash = strchr(s, '/');
	uint64_t n = 0;
	const char *p;
	size_t i;

	if (slash == NULL || slash == s)
		return -1;
	for (p = s; p < slash; p++) {
		if (*p < '0' || *p > '9' || n > 1000000000000ULL)
			return -1;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (n == 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(slash + 1, units[i].unit) == 0) {
			out->count = n;
			out->period_ms = units[i].ms;
			return 0;
		}
	}
	return -1;
}

int
sl_cidr_parse(const char *s, struct sl_cidr *out)
{
	char tmp[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	long pfx;
	char *end;
	uint32_t i, max;

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, tmp, out->addr) == 1) {
		out->af = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, tmp, out->addr) == 1) {
		out->af = 6;
		max = 128;
	} else {
		return -1;
	}
	pfx = max;
	if (slash != NULL) {
		pfx = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || pfx < 0 ||
		    pfx > (long)max)
			return -1;
	}
	out->prefix = (uint8_t)pfx;
	/* Host bits set usually mean a typo in the prefix: refuse them. */
	for (i = 0; i < max / 8; i++) {
		uint32_t bit = i * 8;
		uint8_t mask = bit >= (uint32_t)pfx ? 0xff
			       : bit + 8 > (uint32_t)pfx
				       ? (uint8_t)(0xff >> (pfx - bit))
				       : 0;

		if (out->addr[i] & mask)
			return -1;
	}
	return 0;
}

/* Clients send capitals: those are found as a config's are, and only a
 * method that is not one is folded and looked up again. */
uint32_t
sl_method_bit_any_case(const char *m, size_t len)
{
	uint32_t b = sl_method_bit(m, len);
	char up[8];
	size_t i;

	if (b != 0 || len > sizeof(up))
		return b;
	for (i = 0; i < len; i++)
		up[i] = m[i] >= 'a' && m[i] <= 'z' ? (char)(m[i] - 'a' + 'A')
						   : m[i];
	return sl_method_bit(up, len);
}

uint32_t
sl_method_bit(const char *m, size_t len)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} ms[] = {{"GET", SL_M_GET},         {"HEAD", SL_M_HEAD},
		  {"POST", SL_M_POST},       {"PUT", SL_M_PUT},
		  {"DELETE", SL_M_DELETE},   {"PATCH", SL_M_PATCH},
		  {"OPTIONS", SL_M_OPTIONS}, {"CONNECT", SL_M_CONNECT},
		  {"TRACE", SL_M_TRACE}};
	size_t i;

	for (i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		if (strlen(ms[i].name) == len &&
		    memcmp(ms[i].name, m, len) == 0)
			return ms[i].bit;
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "sl_redis.h"

uint16_t
sl_redis_crc16(const char *b, size_t n)
{
	uint16_t crc = 0;
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		crc ^= (uint16_t)((uint8_t)b[i] << 8);
		for (k = 0; k < 8; k++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021
						      : crc << 1);
	}
	return crc;
}

uint16_t
sl_redis_slot(const char *key, size_t n)
{
	const char *l = memchr(key, '{', n);
	const char *r = l != NULL
				? memchr(l + 1, '}', n - (size_t)(l + 1 - key))
				: NULL;

	if (l != NULL && r != NULL && r > l + 1)
		return sl_redis_crc16(l + 1, (size_t)(r - l - 1)) %
		       SL_REDIS_SLOTS;
	return sl_redis_crc16(key, n) % SL_REDIS_SLOTS;
}

/* A decimal number that is all of [p, e), at most max. */
static int
number(const char *p, const char *e, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (p == e)
		return -1;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > max)
			return -1;
	}
	*out = v;
	return 0;
}

/* "<slot> <host>:<port>": the host is all before the last colon, so an
 * IPv6 address is read whole. */
int
sl_redis_redirect(const char *err, struct sl_redirect *r)
{
	const char *p, *sp, *colon, *end;
	unsigned long slot, port;

	r->moved = strncmp(err, "MOVED ", 6) == 0;
	if (!r->moved && strncmp(err, "ASK ", 4) != 0)
		return 0;
	p = err + (r->moved ? 6 : 4);
	end = p + strlen(p);
	sp = strchr(p, ' ');
	colon = sp != NULL ? strrchr(sp, ':') : NULL;
	if (colon == NULL || number(p, sp, SL_REDIS_SLOTS - 1, &slot) != 0 ||
	    number(colon + 1, end, 65535, &port) != 0 || port == 0 ||
	    colon == sp + 1 || (size_t)(colon - sp - 1) >= sizeof(r->host))
		return 0;
	memcpy(r->host, sp + 1, (size_t)(colon - sp - 1));
	r->host[colon - sp - 1] = '\0';
	r->slot = (unsigned int)slot;
	r->port = (uint16_t)port;
	return 1;
}

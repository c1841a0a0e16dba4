/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_HTTP_PRIV_H
#define SL_HTTP_PRIV_H

/* Helpers shared by the http module's files; not part of its API. */

#include <stdint.h>

/* A hex digit's value in either case, or -1. */
static inline int
sl_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* p[0..n) percent-decoded ('+' a blank) into out (cap bytes): its
 * length, -1 for a malformed escape, -2 where it does not fit. */
int sl_form_decode(const char *p, uint32_t n, char *out, uint32_t cap);

/* fn with the raw value of each parameter of target's query whose name
 * reads as want (sl_http_query.c). */
void sl_query_each(struct sl_str target, const char *want, uint32_t wl,
		   void (*fn)(void *ctx, const char *v, uint32_t len),
		   void *ctx);

#endif /* SL_HTTP_PRIV_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_HTTP_PRIV_H
#define SL_HTTP_PRIV_H

/* Helpers shared by the http module's files; not part of its API. */

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

#endif /* SL_HTTP_PRIV_H */

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_NET_PRIV_H
#define SL_NET_PRIV_H

#include <stdint.h>
#include <string.h>

/* Two folds take any 32-bit sum to 16 bits, as a loop would, without
 * its branch (below 2^17 after one, at most 0xffff after two). */
static inline uint32_t
sl_fold16(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	return (s & 0xffff) + (s >> 16);
}

/* Folded a fixed number of times: a loop's trip count was another
 * mispredicted branch; from below 2^64 two folds reach 32 bits,
 * congruent and non-zero as the loop's result was. */
static inline uint16_t
sl_fold_raw(uint64_t s)
{
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return (uint16_t)sl_fold16((uint32_t)s);
}

/* A segment's two addresses of n bytes (4 or 16) as 32-bit words loaded
 * in the host's order, summed unfolded, as sl_fold_raw takes them. */
static inline uint64_t
sl_sum_addrs(const uint8_t *src, const uint8_t *dst, uint32_t n)
{
	uint64_t s = 0;
	uint32_t i, a, b;

	for (i = 0; i < n; i += 4) {
		memcpy(&a, src + i, 4);
		memcpy(&b, dst + i, 4);
		s += (uint64_t)a + b;
	}
	return s;
}

/* A 16-bit value between network order and a sum of words loaded in
 * the host's order: one swap on a little-endian host, its own inverse
 * (RFC 1071's sums do not depend on the byte order they are taken in). */
static inline uint16_t
sl_raw16(uint16_t v)
{
	return *(const uint8_t *)&(uint16_t){1} == 1 ? __builtin_bswap16(v) : v;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_NET_PRIV_H
#define SL_NET_PRIV_H

#include <stdint.h>

/* Two folds take any 32-bit sum to 16 bits, as a loop would, without
 * its branch (below 2^17 after one, at most 0xffff after two). */
static inline uint32_t
sl_fold16(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	return (s & 0xffff) + (s >> 16);
}

#endif

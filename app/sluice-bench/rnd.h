/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_RND_H
#define SLUICE_BENCH_RND_H

#include <stdint.h>

/* xorshift64: a repeatable corpus from a seed, not for anything secret. */
static inline uint64_t
bench_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif

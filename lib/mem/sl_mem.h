/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_MEM_H
#define SL_MEM_H

/*
 * Memory for the big per-worker tables (flows, buckets). A table of 2 MiB
 * or more is mapped 2 MiB aligned and advised for transparent huge pages:
 * the tables are read at random, and with 4 KiB pages nearly every lookup
 * in a million-entry table would also miss the TLB. Such a table is not
 * touched here: the worker that uses it faults it in (sl_mem_prefault)
 * before its loop, so on a multi-socket machine it lands on that worker's
 * node.
 */

#include <stddef.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/*
 * n bytes zeroed in 16-byte stores, for an n the compiler sees (a
 * struct's size, at most 512): as a memset of that size gcc writes
 * `rep stosq`, whose start-up costs more than the stores on Intel cores
 * (the head parser alone 492 -> 462 cycles on the 2.3 GHz host). The
 * loop is unrolled: as a loop it is read back into the memset.
 */
static inline void
sl_mem_zero(void *p, size_t n)
{
#ifdef __SSE2__
	unsigned char *b = p;
	size_t o;

#pragma GCC unroll 32
	for (o = 0; o + 16 <= n; o += 16)
		_mm_storeu_si128((__m128i *)(b + o), _mm_setzero_si128());
	if (n % 16 != 0)
		memset(b + n - n % 16, 0, n % 16);
#else
	memset(p, 0, n);
#endif
}

/* Zeroed, cache-line aligned; NULL when out of memory. */
void *sl_mem_table(size_t size);
/* size: what was asked of sl_mem_table. */
void sl_mem_table_free(void *p, size_t size);

/*
 * Faults every page of a table in, on the calling thread (its node): run
 * by the thread that will use the table, before traffic, so that a huge
 * page's zeroing never lands on a request.
 */
void sl_mem_prefault(void *p, size_t size);

/*
 * Memory that outlives the process (a mapped file) for tables that keep
 * their contents across a restart: they are carved from it in one fixed
 * order, so that the same tables find the same bytes again. fresh: the
 * block is new (zeroed), and the tables in it are set up; else they are
 * found as they were left.
 */
struct sl_mem_arena {
	unsigned char *base;
	size_t size, off;
	int fresh;
};

/* The next size bytes, 64-byte aligned; NULL when they do not fit. */
void *sl_mem_carve(struct sl_mem_arena *a, size_t size);

#endif /* SL_MEM_H */

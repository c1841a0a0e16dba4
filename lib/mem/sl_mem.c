/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sl_mem.h"

#define HUGE_PAGE ((size_t)2 << 20)

static size_t
round_up(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

/* Anonymous memory is zero until written: nothing to clear. */
static void *
map_aligned(size_t n)
{
	uint8_t *raw = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (uint8_t *)round_up((uintptr_t)raw, HUGE_PAGE);
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + n + HUGE_PAGE > p + n)
		munmap(p + n, (size_t)(raw + n + HUGE_PAGE - (p + n)));
	/* a hint: where THP is off or unsupported, 4 KiB pages still work */
	(void)madvise(p, n, MADV_HUGEPAGE);
	return p;
}

void *
sl_mem_table(size_t size)
{
	void *p;

	if (size >= HUGE_PAGE)
		return map_aligned(round_up(size, HUGE_PAGE));
	p = aligned_alloc(64, round_up(size ? size : 1, 64));
	if (p != NULL)
		memset(p, 0, round_up(size ? size : 1, 64));
	return p;
}

void
sl_mem_prefault(void *p, size_t size)
{
	volatile uint8_t *b = p;
	size_t o;

	if (p == NULL || size < HUGE_PAGE)
		return; /* small tables were cleared when allocated */
	/* a write: a read would map the shared zero page instead (the
	 * value read back: a table found again keeps its bytes) */
	for (o = 0; o < size; o += 4096)
		b[o] = b[o];
}

void *
sl_mem_carve(struct sl_mem_arena *a, size_t size)
{
	size_t at = (a->off + 63) & ~(size_t)63;

	if (at > a->size || size > a->size - at)
		return NULL;
	a->off = at + size;
	return a->base + at;
}

void
sl_mem_table_free(void *p, size_t size)
{
	if (p == NULL)
		return;
	if (size >= HUGE_PAGE)
		munmap(p, round_up(size, HUGE_PAGE));
	else
		free(p);
}

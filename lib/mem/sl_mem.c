/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sl_mem.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *
sl_mem_table(size_t size)
{
	size_t align = size >= HUGE_PAGE ? HUGE_PAGE : 64;
	size_t n = (size + align - 1) & ~(align - 1);
	void *p;

	if (n == 0)
		n = align;
	p = aligned_alloc(align, n);
	if (p == NULL)
		return NULL;
	/* a hint: where THP is off or unsupported, 4 KiB pages still work */
	if (align == HUGE_PAGE)
		(void)madvise(p, n, MADV_HUGEPAGE);
	memset(p, 0, n);
	return p;
}

void
sl_mem_table_free(void *p)
{
	free(p);
}

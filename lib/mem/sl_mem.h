/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_MEM_H
#define SL_MEM_H

/*
 * Memory for the big per-worker tables (flows, buckets). A table of 2 MiB
 * or more is aligned to 2 MiB and advised for transparent huge pages: the
 * tables are read at random, and with 4 KiB pages nearly every lookup in
 * a million-entry table would also miss the TLB. Zeroed and touched here,
 * so the pages are resident from the start and the process never grows.
 */

#include <stddef.h>

/* Zeroed, cache-line aligned; NULL when out of memory. */
void *sl_mem_table(size_t size);
void sl_mem_table_free(void *p);

#endif /* SL_MEM_H */

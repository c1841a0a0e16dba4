/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_HASHCMP_H
#define SLUICE_BENCH_HASHCMP_H

/* sluice-bench --hashcmp: lib/table against rte_hash (needs EAL); small:
 * 10 000 keys only (the test suite's run). */
int sl_bench_hashcmp(int json, int small);

#endif

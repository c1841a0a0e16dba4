/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_BLOCKLIST_H
#define SLUICE_BENCH_BLOCKLIST_H

/* sluice-bench --blocklist: hash probes against rte_fib, 10 000 CIDRs. */
int sl_bench_blocklist(int json);

#endif

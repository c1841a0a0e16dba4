/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_NORM_H
#define SLUICE_BENCH_NORM_H

#include <stdint.h>

/* sluice-bench --norm: the normaliser's cost on clean and dirty heads. */
int sl_bench_norm(uint32_t rounds, int json);

#endif

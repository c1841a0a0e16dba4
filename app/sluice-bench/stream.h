/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_STREAM_H
#define SLUICE_BENCH_STREAM_H

#include <stdint.h>

/* sluice-bench --stream: the stream normaliser's cost on clean traffic. */
int sl_bench_stream(uint32_t rounds, int json);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BENCH_MICRO_H
#define SLUICE_BENCH_MICRO_H

/* sluice-bench --micro: parser, reply fill, the refusal's frames, checksum,
 * flow hash alone. */
int sl_bench_micro(int json);

#endif

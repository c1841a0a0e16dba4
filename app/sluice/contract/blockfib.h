/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_BLOCKFIB_H
#define SLUICE_BLOCKFIB_H

/*
 * The blocklist's CIDRs compiled into DPDK's rte_fib (IPv4, DIR-24-8)
 * and rte_fib6 (IPv6, trie): one lookup per address whatever the prefix
 * lengths, where the rule set's own table probes once per length
 * present (BENCHMARKS.md has both measured on 10 000 mixed CIDRs).
 * Built on the control path with the policy, read by every worker.
 */

#include <stdint.h>

#include "sl_rules.h"

struct sl_blockfib;

/* NULL with *err 0: no CIDR to block; NULL with *err < 0: no memory. */
struct sl_blockfib *sl_blockfib_build(const struct sl_config *c, int *err);
void sl_blockfib_free(struct sl_blockfib *b);

/* af 4 or 6, addr in network order. */
int sl_blockfib_blocked(const struct sl_blockfib *b, uint8_t af,
			const uint8_t *addr);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>

#include <rte_memzone.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_malloc.h>

#include "blockfib.h"

/* rte_fib takes IPv4 addresses in host order. */
static uint32_t
v4_host(const uint8_t *a)
{
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
	       (uint32_t)a[2] << 8 | a[3];
}

struct sl_blockfib {
	struct rte_fib *v4;  /* NULL: no IPv4 CIDR */
	struct rte_fib6 *v6; /* NULL: no IPv6 CIDR */
};

/* Names must be unique while an old policy waits for its grace period. */
static uint32_t
next_id(void)
{
	static uint32_t id;

	return __atomic_fetch_add(&id, 1, __ATOMIC_RELAXED);
}

/*
 * tbl8 groups the prefixes longer than /24 may need (an upper bound):
 * one per 8 bits past the 24-bit level.
 */
static uint32_t
tbl8_bound(const struct sl_config *c, uint8_t af)
{
	uint32_t i, n = 1;

	for (i = 0; i < c->n_block_cidrs; i++)
		if (c->block_cidrs[i].af == af && c->block_cidrs[i].prefix > 24)
			n += (c->block_cidrs[i].prefix - 24 + 7) / 8;
	return n;
}

/* A next hop must be able to index every tbl8: the smallest that can. */
static int
nh_bytes(uint32_t tbl8, int min_log2)
{
	int lg;

	for (lg = min_log2; lg < 3; lg++)
		if (tbl8 < (1u << ((8u << lg) - 1)) - 1)
			break;
	return lg; /* 0: 1 byte, 1: 2, 2: 4, 3: 8 */
}

static struct rte_fib *
build_v4(const struct sl_config *c, uint32_t n)
{
	uint32_t tbl8 = tbl8_bound(c, 4);
	struct rte_fib_conf conf = {
		.type = RTE_FIB_DIR24_8,
		.default_nh = 0,
		.max_routes = (int)n,
		.dir24_8 = {.nh_sz = (enum rte_fib_dir24_8_nh_sz)nh_bytes(tbl8,
									  0),
			    .num_tbl8 = tbl8},
	};
	char name[RTE_MEMZONE_NAMESIZE];
	struct rte_fib *f;
	uint32_t i;

	snprintf(name, sizeof(name), "slbl4_%u", next_id());
	f = rte_fib_create(name, SOCKET_ID_ANY, &conf);
	for (i = 0; f != NULL && i < c->n_block_cidrs; i++) {
		const struct sl_cidr *b = &c->block_cidrs[i];

		if (b->af == 4 &&
		    rte_fib_add(f, v4_host(b->addr), b->prefix, 1) != 0) {
			rte_fib_free(f);
			f = NULL;
		}
	}
	return f;
}

static struct rte_fib6 *
build_v6(const struct sl_config *c, uint32_t n)
{
	uint32_t tbl8 = tbl8_bound(c, 6);
	struct rte_fib6_conf conf = {
		.type = RTE_FIB6_TRIE,
		.default_nh = 0,
		.max_routes = (int)n,
		/* the trie's next hops are 2 bytes at least */
		.trie = {.nh_sz = (enum rte_fib_trie_nh_sz)nh_bytes(tbl8, 1),
			 .num_tbl8 = tbl8},
	};
	char name[RTE_MEMZONE_NAMESIZE];
	struct rte_fib6 *f;
	uint32_t i;

	snprintf(name, sizeof(name), "slbl6_%u", next_id());
	f = rte_fib6_create(name, SOCKET_ID_ANY, &conf);
	for (i = 0; f != NULL && i < c->n_block_cidrs; i++) {
		const struct sl_cidr *b = &c->block_cidrs[i];

		if (b->af == 6 && rte_fib6_add(f, b->addr, b->prefix, 1) != 0) {
			rte_fib6_free(f);
			f = NULL;
		}
	}
	return f;
}

struct sl_blockfib *
sl_blockfib_build(const struct sl_config *c, int *err)
{
	struct sl_blockfib *b;
	uint32_t n4 = 0, n6 = 0, i;

	*err = 0;
	for (i = 0; i < c->n_block_cidrs; i++) {
		n4 += c->block_cidrs[i].af == 4;
		n6 += c->block_cidrs[i].af == 6;
	}
	if (n4 + n6 == 0)
		return NULL;
	b = rte_zmalloc("sl_blockfib", sizeof(*b), 0);
	if (b == NULL)
		goto nomem;
	if (n4 > 0 && (b->v4 = build_v4(c, n4)) == NULL)
		goto nomem;
	if (n6 > 0 && (b->v6 = build_v6(c, n6)) == NULL)
		goto nomem;
	return b;
nomem:
	sl_blockfib_free(b);
	*err = -1;
	return NULL;
}

void
sl_blockfib_free(struct sl_blockfib *b)
{
	if (b == NULL)
		return;
	rte_fib_free(b->v4);
	rte_fib6_free(b->v6);
	rte_free(b);
}

int
sl_blockfib_blocked(const struct sl_blockfib *b, uint8_t af,
		    const uint8_t *addr)
{
	uint64_t nh = 0;

	if (af == 4) {
		uint32_t ip = v4_host(addr);

		if (b->v4 != NULL)
			rte_fib_lookup_bulk(b->v4, &ip, &nh, 1);
	} else if (b->v6 != NULL) {
		uint8_t ip[1][RTE_FIB6_IPV6_ADDR_SIZE];

		memcpy(ip[0], addr, 16);
		rte_fib6_lookup_bulk(b->v6, ip, &nh, 1);
	}
	return nh != 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_TABLE_H
#define SL_TABLE_H

/*
 * The hash index the flow table (lib/flow) and the bucket tables
 * (lib/limit) are built on: buckets of one cache line, eight 32-bit
 * signatures then eight entry numbers, two candidate buckets per key, a
 * stack of free entry numbers. The entries are the caller's own array
 * (their keys, states and where each is linked); the index holds no key,
 * so a miss reads one line per bucket and nothing else. When both
 * buckets are full, an entry of one moves to its other bucket where it
 * can (sl_table_shift); when the table is full, or none can move, the
 * caller's victim policy picks what goes, through a clock hand over the
 * entries or over the sixteen entries of the two buckets.
 *
 * Pure C: no EAL, no allocation after init, time is the caller's.
 */

#include <stddef.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define SL_TABLE_SLOTS 8
#define SL_TABLE_NONE  UINT32_MAX

struct sl_table_bkt {
	uint32_t sig[SL_TABLE_SLOTS];
	uint32_t idx[SL_TABLE_SLOTS]; /* entry number + 1; 0: empty */
} __attribute__((aligned(64)));

struct sl_table {
	struct sl_table_bkt *bkts;
	uint32_t mask; /* buckets - 1 */
	uint32_t capacity;
	uint32_t *free; /* stack of free entry numbers */
	uint32_t n_free;
	uint32_t clock; /* the eviction hand */
};

/* Twice as many slots as entries, so buckets seldom fill. 0 or -1. */
int sl_table_init(struct sl_table *t, uint32_t capacity);
/* The same, its arrays carved from a (sl_mem.h); where a is not fresh,
 * t and the arrays are as a table of this capacity left them. t must not
 * be freed with sl_table_fini. 0, or -1 (a too small, or t not such a
 * table). */
struct sl_mem_arena;
int sl_table_init_in(struct sl_table *t, uint32_t capacity,
		     struct sl_mem_arena *a);
/* What sl_table_init_in carves, with its alignment; 0: no such table. */
size_t sl_table_arena_bytes(uint32_t capacity);
void sl_table_fini(struct sl_table *t);
void sl_table_prefault(struct sl_table *t);
uint64_t sl_table_bytes(const struct sl_table *t);

/* A signature is never 0, so an empty slot never matches one. */
static inline uint32_t
sl_table_sig(uint64_t h)
{
	return (uint32_t)(h >> 32) | 1u;
}

/* Which of a bucket's eight words are x, as a mask (bit s: word s). */
static inline uint32_t
sl_table_eq8(const uint32_t v[SL_TABLE_SLOTS], uint32_t x)
{
#ifdef __SSE2__
	__m128i k = _mm_set1_epi32((int)x);
	__m128i a = _mm_cmpeq_epi32(
		_mm_load_si128((const __m128i *)(const void *)v), k);
	__m128i b = _mm_cmpeq_epi32(
		_mm_load_si128((const __m128i *)(const void *)(v + 4)), k);

	return (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(a)) |
	       (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(b)) << 4;
#else
	uint32_t m = 0;
	int i;

	for (i = 0; i < SL_TABLE_SLOTS; i++)
		m |= (uint32_t)(v[i] == x) << i;
	return m;
#endif
}

/*
 * The slots of bucket bk whose signature is sig, as a mask. Compared all
 * at once: a loop over the slots branched on each, and where the match
 * sits is the data's (a miss read all eight).
 */
static inline uint32_t
sl_table_match(const struct sl_table_bkt *bk, uint32_t sig)
{
	return sl_table_eq8(bk->sig, sig);
}

static inline struct sl_table_bkt *
sl_table_bkt(const struct sl_table *t, uint64_t h)
{
	return &t->bkts[(uint32_t)h & t->mask];
}

/* The first empty slot of bucket b, or -1. */
static inline int
sl_table_free_slot(const struct sl_table *t, uint32_t b)
{
	uint32_t m = sl_table_eq8(t->bkts[b].idx, 0);

	return m != 0 ? __builtin_ctz(m) : -1;
}

/* Takes a free entry number and links it at slot s of bucket b. */
static inline uint32_t
sl_table_link(struct sl_table *t, uint32_t b, int s, uint32_t sig)
{
	uint32_t i = t->free[--t->n_free];

	t->bkts[b].sig[s] = sig;
	t->bkts[b].idx[s] = i + 1;
	return i;
}

/* Unlinks slot s of bucket b; its entry number is free again. */
static inline void
sl_table_unlink(struct sl_table *t, uint32_t b, int s)
{
	uint32_t i = t->bkts[b].idx[s] - 1;

	t->bkts[b].sig[s] = 0;
	t->bkts[b].idx[s] = 0;
	t->free[t->n_free++] = i;
}

/*
 * The caller's victim policy: whether entry a should go before entry b
 * (b is SL_TABLE_NONE when none is chosen yet); an entry that must not
 * go (free, pinned) is never before anything.
 */
typedef int (*sl_table_before_fn)(void *arg, uint32_t a, uint32_t b);

/*
 * The clock hand moves over scan entries, and on while none was usable
 * (at most twice round): the one first in the policy's order among
 * them, or SL_TABLE_NONE.
 */
uint32_t sl_table_clock(struct sl_table *t, uint32_t scan,
			sl_table_before_fn before, void *arg);

/* The one first in the policy's order among the entries of buckets b1
 * and b2 (both full), or SL_TABLE_NONE. */
uint32_t sl_table_pair(const struct sl_table *t, uint32_t b1, uint32_t b2,
		       sl_table_before_fn before, void *arg);

/* The other candidate bucket of entry e, linked in bucket b (b itself
 * where its two are one), from the caller's key. */
typedef uint32_t (*sl_table_other_fn)(void *arg, uint32_t e, uint32_t b);

/* An entry moved between buckets: where it is linked now. */
struct sl_table_move {
	uint32_t entry; /* SL_TABLE_NONE: none moved */
	uint32_t bucket;
	uint32_t slot;
};

/*
 * Bucket b (and the other bucket of the key to be linked) is full, while
 * the table need not be: one of b's entries moves to a free slot of its
 * own other bucket (mv says which, for the caller to note where it is
 * linked now), and the slot it left in b is returned; -1 where none of
 * them can move. A key then goes in without an eviction: with first-fit
 * in two buckets of eight, a table at 80 % of its capacity otherwise
 * evicted live entries (9 in 262 144 at 80 %, 82 at 100 %, simulated).
 */
int sl_table_shift(struct sl_table *t, uint32_t b, sl_table_other_fn other,
		   void *arg, struct sl_table_move *mv);

#endif /* SL_TABLE_H */

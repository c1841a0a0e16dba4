/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sl_limit.h"
#include "sl_mem.h"
#include "sl_table.h"

#define CLOCK_SCAN 64

/* 32 bytes, so that no entry straddles two lines (at 40, half did, and
 * in_use was on the line not prefetched). */
struct entry {
	uint64_t k1, k2;
	uint64_t full_at; /* when the bucket is full again: free to drop */
	uint32_t pin;     /* request generation that uses it */
	uint32_t bucket : 28;
	uint32_t bslot : 3;
	uint32_t in_use : 1;
};

_Static_assert(sizeof(struct entry) == 32, "an entry is half a line");

struct sl_bucket_table {
	struct sl_table tab; /* the index (lib/table) */
	size_t stride;
	struct entry *ents;
	uint8_t *states;
	uint32_t sweep;
	uint32_t gen;
	struct sl_bucket_stats st;
	uint8_t in_arena; /* carved from an arena: not ours to free */
	/* a state's index from its offset without a division (set_stride):
	 * stride is 2^shift x an odd number whose inverse mod 2^32 is inv.
	 * Both sit in what was the struct's tail padding: its size, and so
	 * the state file's layout, are as they were. */
	uint8_t shift;
	uint32_t inv;
};

/* A hinted state's bytes asked for ahead: a lease, not a log's tail. */
#define SL_HINT_BYTES 256

static size_t
value_bytes(int log_capable)
{
	return sizeof(struct sl_limit_state) +
	       (log_capable ? SL_LOG_MAX * sizeof(uint32_t) : 0);
}

/* A value's room in the states array: 8-byte aligned. */
static size_t
stride_of(size_t value_size)
{
	return (value_size + 7) & ~(size_t)7;
}

static void
set_stride(struct sl_bucket_table *t, size_t stride)
{
	uint32_t d, x;
	int k;

	t->stride = stride;
	t->shift = (uint8_t)__builtin_ctzll(stride);
	d = (uint32_t)(stride >> t->shift);
	/* Newton's iteration: each step doubles the bits of d x x that
	 * are 1 mod 2^32 (d x d is 1 mod 8 for any odd d) */
	x = d;
	for (k = 0; k < 4; k++)
		x *= 2 - d * x;
	t->inv = x;
}

/* The index of the state at byte offset off: an exact multiple of the
 * stride, so a shift and a multiply by the odd part's inverse give the
 * quotient (a division on every touch before, 20-odd cycles). */
static inline uint32_t
index_at(const struct sl_bucket_table *t, size_t off)
{
	return (uint32_t)(off >> t->shift) * t->inv;
}

struct sl_bucket_table *
sl_bucket_table_create(uint32_t capacity, int log_capable)
{
	return sl_bucket_table_create_sized(capacity, value_bytes(log_capable));
}

static size_t
ents_bytes(const struct sl_bucket_table *t)
{
	return (size_t)t->tab.capacity * sizeof(struct entry);
}

static size_t
states_bytes(const struct sl_bucket_table *t)
{
	return (size_t)t->tab.capacity * t->stride;
}

struct sl_bucket_table *
sl_bucket_table_create_sized(uint32_t capacity, size_t value_size)
{
	struct sl_bucket_table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	if (sl_table_init(&t->tab, capacity) != 0) {
		free(t);
		return NULL;
	}
	set_stride(t, stride_of(value_size));
	t->ents = sl_mem_table(ents_bytes(t));
	t->states = sl_mem_table(states_bytes(t));
	if (t->ents == NULL || t->states == NULL) {
		sl_bucket_table_free(t);
		return NULL;
	}
	return t;
}

size_t
sl_bucket_table_arena_bytes(uint32_t capacity, int log_capable)
{
	struct sl_bucket_table t = {
		.stride = stride_of(value_bytes(log_capable))};
	size_t idx = sl_table_arena_bytes(capacity);

	if (idx == 0)
		return 0;
	t.tab.capacity = capacity;
	return sizeof(t) + 64 + idx + ents_bytes(&t) + 64 + states_bytes(&t) +
	       64;
}

struct sl_bucket_table *
sl_bucket_table_create_in(uint32_t capacity, int log_capable,
			  struct sl_mem_arena *a)
{
	struct sl_bucket_table *t = sl_mem_carve(a, sizeof(*t));
	size_t stride = stride_of(value_bytes(log_capable));

	if (t == NULL || (!a->fresh && (!t->in_arena || t->stride != stride ||
					t->sweep >= capacity)))
		return NULL;
	set_stride(t, stride);
	t->in_arena = 1;
	if (sl_table_init_in(&t->tab, capacity, a) != 0)
		return NULL;
	t->ents = sl_mem_carve(a, ents_bytes(t));
	t->states = sl_mem_carve(a, states_bytes(t));
	if (t->ents == NULL || t->states == NULL)
		return NULL;
	return t;
}

void
sl_bucket_table_prefault(struct sl_bucket_table *t)
{
	if (t == NULL)
		return;
	sl_table_prefault(&t->tab);
	sl_mem_prefault(t->ents, ents_bytes(t));
	sl_mem_prefault(t->states, states_bytes(t));
}

void
sl_bucket_table_free(struct sl_bucket_table *t)
{
	if (t == NULL || t->in_arena)
		return;
	if (t->ents != NULL)
		sl_mem_table_free(t->ents, ents_bytes(t));
	if (t->states != NULL)
		sl_mem_table_free(t->states, states_bytes(t));
	sl_table_fini(&t->tab);
	free(t);
}

static inline struct sl_limit_state *
state_of(struct sl_bucket_table *t, uint32_t i)
{
	return (struct sl_limit_state *)(t->states + (size_t)i * t->stride);
}

static void
remove_entry(struct sl_bucket_table *t, uint32_t i)
{
	struct entry *e = &t->ents[i];

	sl_table_unlink(&t->tab, e->bucket, (int)e->bslot);
	e->in_use = 0;
	t->st.active--;
}

/* Evict e, counting it as expired if its bucket was full anyway. */
static void
drop(struct sl_bucket_table *t, uint32_t i, uint64_t now)
{
	if (t->ents[i].full_at <= now)
		t->st.expired++;
	else
		t->st.evicted++;
	remove_entry(t, i);
}

/* The victim policy: an entry no request of this generation uses, the
 * closest to full first (dropping it gives away the least). */
static int
before(void *arg, uint32_t a, uint32_t b)
{
	const struct sl_bucket_table *t = arg;
	const struct entry *e = &t->ents[a];

	return e->in_use && e->pin != t->gen &&
	       (b == SL_TABLE_NONE || e->full_at < t->ents[b].full_at);
}

static void
evict_one(struct sl_bucket_table *t, uint64_t now)
{
	uint32_t v = sl_table_clock(&t->tab, CLOCK_SCAN, before, t);

	if (v != SL_TABLE_NONE)
		drop(t, v, now);
}

static uint32_t
alt_of(const struct sl_bucket_table *t, const struct sl_bucket_key *k)
{
	return (uint32_t)(k->k2 ^ (k->k2 >> 29)) & t->tab.mask;
}

static int32_t
find(struct sl_bucket_table *t, uint32_t b, uint32_t sig,
     const struct sl_bucket_key *k)
{
	const struct sl_table_bkt *bk = &t->tab.bkts[b];
	int s;

	for (s = 0; s < SL_TABLE_SLOTS; s++) {
		struct entry *e;

		if (bk->sig[s] != sig)
			continue;
		e = &t->ents[bk->idx[s] - 1];
		/* the state's line is on its way while the key is compared */
		__builtin_prefetch(t->states +
				   (size_t)(bk->idx[s] - 1) * t->stride);
		if (e->k1 == k->k1 && e->k2 == k->k2)
			return (int32_t)(bk->idx[s] - 1);
	}
	return -1;
}

struct sl_limit_state *
sl_bucket_find(struct sl_bucket_table *t, const struct sl_bucket_key *k)
{
	uint32_t sig = (uint32_t)(k->k1 >> 32) | 1u;
	int32_t i = find(t, (uint32_t)k->k1 & t->tab.mask, sig, k);

	if (i < 0)
		i = find(t, alt_of(t, k), sig, k);
	return i < 0 ? NULL : state_of(t, (uint32_t)i);
}

/* The other bucket of entry e, linked in b: from its key. */
static uint32_t
other_bucket(void *arg, uint32_t e, uint32_t b)
{
	struct sl_bucket_table *t = arg;
	struct sl_bucket_key k = {t->ents[e].k1, t->ents[e].k2};
	uint32_t p = (uint32_t)k.k1 & t->tab.mask;

	return p == b ? alt_of(t, &k) : p;
}

/* Room in b by moving an entry of it to its own other bucket. */
static int
shift(struct sl_bucket_table *t, uint32_t b)
{
	struct sl_table_move mv;
	int s = sl_table_shift(&t->tab, b, other_bucket, t, &mv);

	if (s >= 0 && mv.entry != SL_TABLE_NONE) {
		t->ents[mv.entry].bucket = mv.bucket;
		t->ents[mv.entry].bslot = mv.slot;
		t->st.shifted++;
	}
	return s;
}

/*
 * Both candidate buckets are full: free a slot in one of them, by a
 * move where one can be made (an entry dropped before it is full again
 * is a bucket restarted full), else by dropping the first to go.
 */
static void
make_room(struct sl_bucket_table *t, uint32_t b1, uint32_t b2, uint64_t now)
{
	uint32_t v;

	if (shift(t, b1) >= 0 || shift(t, b2) >= 0)
		return;
	v = sl_table_pair(&t->tab, b1, b2, before, t);
	if (v != SL_TABLE_NONE)
		drop(t, v, now);
}

void
sl_bucket_begin(struct sl_bucket_table *t)
{
	t->gen++;
}

struct sl_limit_state *
sl_bucket_get(struct sl_bucket_table *t, const struct sl_bucket_key *k,
	      uint64_t now)
{
	uint32_t hint = 0;

	return sl_bucket_get_hinted(t, k, now, &hint);
}

#define NO_ENTRY UINT32_MAX

/* The entry of key, found or made; NO_ENTRY when none can be had. */
static uint32_t
get_index(struct sl_bucket_table *t, const struct sl_bucket_key *k,
	  uint64_t now)
{
	uint32_t sig = (uint32_t)(k->k1 >> 32) | 1u;
	uint32_t b1 = (uint32_t)k->k1 & t->tab.mask, b2 = alt_of(t, k), b, i;
	int32_t found = find(t, b1, sig, k);
	int s;

	if (found < 0)
		found = find(t, b2, sig, k);
	if (found >= 0) {
		t->ents[found].pin = t->gen;
		return (uint32_t)found;
	}
	if (t->tab.n_free == 0)
		evict_one(t, now);
	b = b1;
	s = sl_table_free_slot(&t->tab, b1);
	if (s < 0) {
		b = b2;
		s = sl_table_free_slot(&t->tab, b2);
	}
	if (s < 0) {
		make_room(t, b1, b2, now);
		b = b1;
		s = sl_table_free_slot(&t->tab, b1);
		if (s < 0) {
			b = b2;
			s = sl_table_free_slot(&t->tab, b2);
		}
	}
	if (s < 0 || t->tab.n_free == 0)
		return NO_ENTRY;
	i = sl_table_link(&t->tab, b, s, sig);
	t->ents[i] = (struct entry){.k1 = k->k1,
				    .k2 = k->k2,
				    .full_at = now,
				    .pin = t->gen,
				    .bucket = b,
				    .bslot = (uint32_t)s,
				    .in_use = 1};
	memset(state_of(t, i), 0, t->stride);
	t->st.active++;
	t->st.created++;
	return i;
}

void
sl_bucket_prefetch_hint(const struct sl_bucket_table *t, uint32_t hint)
{
	if (hint == 0 || hint > t->tab.capacity)
		return;
	const uint8_t *st = t->states + (size_t)(hint - 1) * t->stride;
	size_t end = t->stride < SL_HINT_BYTES ? t->stride : SL_HINT_BYTES, o;

	__builtin_prefetch(&t->ents[hint - 1]);
	/* every line of it: a lease's 224 bytes span four or five, and a
	 * spend reads each (one line alone left the rest to be waited on,
	 * one after another: DRAM-sized leased 1 570 cycles against 1 465) */
	for (o = 0; o < end; o += 64)
		__builtin_prefetch(st + o);
	__builtin_prefetch(st + end - 1);
}

struct sl_limit_state *
sl_bucket_get_hinted(struct sl_bucket_table *t, const struct sl_bucket_key *k,
		     uint64_t now, uint32_t *hint)
{
	uint32_t i;

	if (*hint != 0 && *hint <= t->tab.capacity) {
		struct entry *e = &t->ents[*hint - 1];

		if (e->in_use && e->k1 == k->k1 && e->k2 == k->k2) {
			e->pin = t->gen;
			return state_of(t, *hint - 1);
		}
	}
	i = get_index(t, k, now);
	if (i == NO_ENTRY) {
		/* all sixteen pinned by this request: use a scratch state */
		static __thread uint8_t scratch[sizeof(struct sl_limit_state) +
						SL_LOG_MAX * sizeof(uint32_t)];

		memset(scratch, 0, sizeof(scratch));
		*hint = 0;
		return (struct sl_limit_state *)scratch;
	}
	*hint = i + 1;
	return state_of(t, i);
}

void
sl_bucket_touch(struct sl_bucket_table *t, struct sl_limit_state *s,
		uint64_t full_at)
{
	uint8_t *p = (uint8_t *)s;
	size_t i;

	if (p < t->states || p >= t->states + states_bytes(t))
		return; /* the scratch state */
	i = index_at(t, (size_t)(p - t->states));
	t->ents[i].full_at = full_at;
}

uint32_t
sl_bucket_expire(struct sl_bucket_table *t, uint64_t now, uint32_t budget)
{
	return sl_bucket_sweep(t, now, budget, NULL, NULL);
}

uint32_t
sl_bucket_sweep(struct sl_bucket_table *t, uint64_t now, uint32_t budget,
		void (*fn)(void *arg, const struct sl_bucket_key *k,
			   void *value),
		void *arg)
{
	uint32_t n = 0;

	while (budget--) {
		uint32_t i = t->sweep;

		t->sweep = t->sweep + 1 == t->tab.capacity ? 0 : t->sweep + 1;
		if (t->ents[i].in_use && t->ents[i].pin != t->gen &&
		    t->ents[i].full_at <= now) {
			struct sl_bucket_key k = {t->ents[i].k1, t->ents[i].k2};

			if (fn != NULL)
				fn(arg, &k, state_of(t, i));
			drop(t, i, now);
			n++;
		}
	}
	return n;
}

uint32_t
sl_bucket_copy(struct sl_bucket_table *dst, struct sl_bucket_table *src,
	       uint64_t now)
{
	uint32_t i, n = 0;

	if (dst->stride != src->stride)
		return 0;
	for (i = 0; i < src->tab.capacity; i++) {
		const struct entry *e = &src->ents[i];
		struct sl_bucket_key k = {e->k1, e->k2};
		struct sl_limit_state *s;

		if (!e->in_use || e->full_at <= now)
			continue; /* absent reads as full: nothing to carry */
		sl_bucket_begin(dst);
		s = sl_bucket_get(dst, &k, now);
		memcpy(s, state_of(src, i), dst->stride);
		sl_bucket_touch(dst, s, e->full_at);
		n++;
	}
	return n;
}

const struct sl_bucket_stats *
sl_bucket_stats(const struct sl_bucket_table *t)
{
	return &t->st;
}

uint64_t
sl_bucket_table_bytes(const struct sl_bucket_table *t)
{
	return sizeof(*t) + sl_table_bytes(&t->tab) + ents_bytes(t) +
	       states_bytes(t);
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sl_limit.h"
#include "sl_mem.h"

#define SLOTS      8
#define CLOCK_SCAN 64

struct bkt {
	uint32_t sig[SLOTS];
	uint32_t idx[SLOTS]; /* entry + 1; 0 = empty */
} __attribute__((aligned(64)));

#define MAX_BKTS (1u << 28)

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
	uint32_t capacity;
	uint32_t mask;
	size_t stride;
	struct bkt *bkts;
	struct entry *ents;
	uint8_t *states;
	uint32_t *free_ents;
	uint32_t n_free;
	uint32_t clock;
	uint32_t sweep;
	uint32_t gen;
	struct sl_bucket_stats st;
};

struct sl_bucket_table *
sl_bucket_table_create(uint32_t capacity, int log_capable)
{
	return sl_bucket_table_create_sized(
		capacity,
		sizeof(struct sl_limit_state) +
			(log_capable ? SL_LOG_MAX * sizeof(uint32_t) : 0));
}

/* The three big arrays, sized once for create, prefault, free and bytes. */
static size_t
bkts_bytes(const struct sl_bucket_table *t)
{
	return ((size_t)t->mask + 1) * sizeof(struct bkt);
}

static size_t
ents_bytes(const struct sl_bucket_table *t)
{
	return (size_t)t->capacity * sizeof(struct entry);
}

static size_t
states_bytes(const struct sl_bucket_table *t)
{
	return (size_t)t->capacity * t->stride;
}

struct sl_bucket_table *
sl_bucket_table_create_sized(uint32_t capacity, size_t value_size)
{
	struct sl_bucket_table *t = calloc(1, sizeof(*t));
	uint32_t nb = 1, i;

	if (t == NULL || capacity == 0 || capacity > MAX_BKTS * (SLOTS / 2)) {
		free(t);
		return NULL;
	}
	while (nb * SLOTS < capacity * 2)
		nb <<= 1;
	t->capacity = capacity;
	t->mask = nb - 1;
	t->stride = (value_size + 7) & ~(size_t)7;
	t->bkts = sl_mem_table(bkts_bytes(t));
	t->ents = sl_mem_table(ents_bytes(t));
	t->states = sl_mem_table(states_bytes(t));
	t->free_ents = malloc((size_t)capacity * sizeof(uint32_t));
	if (t->bkts == NULL || t->ents == NULL || t->states == NULL ||
	    t->free_ents == NULL) {
		sl_bucket_table_free(t);
		return NULL;
	}
	for (i = 0; i < capacity; i++)
		t->free_ents[i] = capacity - 1 - i;
	t->n_free = capacity;
	return t;
}

void
sl_bucket_table_prefault(struct sl_bucket_table *t)
{
	if (t == NULL)
		return;
	sl_mem_prefault(t->bkts, bkts_bytes(t));
	sl_mem_prefault(t->ents, ents_bytes(t));
	sl_mem_prefault(t->states, states_bytes(t));
}

void
sl_bucket_table_free(struct sl_bucket_table *t)
{
	if (t == NULL)
		return;
	sl_mem_table_free(t->bkts, bkts_bytes(t));
	sl_mem_table_free(t->ents, ents_bytes(t));
	sl_mem_table_free(t->states, states_bytes(t));
	free(t->free_ents);
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

	t->bkts[e->bucket].sig[e->bslot] = 0;
	t->bkts[e->bucket].idx[e->bslot] = 0;
	e->in_use = 0;
	t->free_ents[t->n_free++] = i;
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

/* Prefer the entry closest to full: dropping it gives away the least. */
static int
better_victim(const struct entry *e, const struct entry *best, uint32_t gen)
{
	return e->in_use && e->pin != gen &&
	       (best == NULL || e->full_at < best->full_at);
}

static void
evict_one(struct sl_bucket_table *t, uint64_t now)
{
	struct entry *best = NULL;
	uint32_t i;

	for (i = 0; i < CLOCK_SCAN || (best == NULL && i < 2 * t->capacity);
	     i++) {
		struct entry *e = &t->ents[t->clock];

		t->clock = t->clock + 1 == t->capacity ? 0 : t->clock + 1;
		if (better_victim(e, best, t->gen))
			best = e;
	}
	if (best != NULL)
		drop(t, (uint32_t)(best - t->ents), now);
}

static uint32_t
alt_of(const struct sl_bucket_table *t, const struct sl_bucket_key *k)
{
	return (uint32_t)(k->k2 ^ (k->k2 >> 29)) & t->mask;
}

static int32_t
find(struct sl_bucket_table *t, uint32_t b, uint32_t sig,
     const struct sl_bucket_key *k)
{
	struct bkt *bk = &t->bkts[b];
	int s;

	for (s = 0; s < SLOTS; s++) {
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

static int
slot_free(const struct bkt *bk)
{
	int s;

	for (s = 0; s < SLOTS; s++)
		if (bk->idx[s] == 0)
			return s;
	return -1;
}

/* Both candidate buckets are full: free a slot in one of them. */
static void
make_room(struct sl_bucket_table *t, uint32_t b1, uint32_t b2, uint64_t now)
{
	struct entry *best = NULL;
	uint32_t bs[2] = {b1, b2};
	int i, s;

	for (i = 0; i < 2; i++)
		for (s = 0; s < SLOTS; s++) {
			struct entry *e = &t->ents[t->bkts[bs[i]].idx[s] - 1];

			if (better_victim(e, best, t->gen))
				best = e;
		}
	if (best != NULL)
		drop(t, (uint32_t)(best - t->ents), now);
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
	uint32_t b1 = (uint32_t)k->k1 & t->mask, b2 = alt_of(t, k), b, i;
	int32_t found = find(t, b1, sig, k);
	int s;

	if (found < 0)
		found = find(t, b2, sig, k);
	if (found >= 0) {
		t->ents[found].pin = t->gen;
		return (uint32_t)found;
	}
	if (t->n_free == 0)
		evict_one(t, now);
	b = b1;
	s = slot_free(&t->bkts[b1]);
	if (s < 0) {
		b = b2;
		s = slot_free(&t->bkts[b2]);
	}
	if (s < 0) {
		make_room(t, b1, b2, now);
		b = b1;
		s = slot_free(&t->bkts[b1]);
		if (s < 0) {
			b = b2;
			s = slot_free(&t->bkts[b2]);
		}
	}
	if (s < 0 || t->n_free == 0)
		return NO_ENTRY;
	i = t->free_ents[--t->n_free];
	t->ents[i] = (struct entry){.k1 = k->k1,
				    .k2 = k->k2,
				    .full_at = now,
				    .pin = t->gen,
				    .bucket = b,
				    .bslot = (uint32_t)s,
				    .in_use = 1};
	memset(state_of(t, i), 0, t->stride);
	t->bkts[b].sig[s] = sig;
	t->bkts[b].idx[s] = i + 1;
	t->st.active++;
	t->st.created++;
	return i;
}

void
sl_bucket_prefetch_hint(const struct sl_bucket_table *t, uint32_t hint)
{
	if (hint == 0 || hint > t->capacity)
		return;
	__builtin_prefetch(&t->ents[hint - 1]);
	__builtin_prefetch(t->states + (size_t)(hint - 1) * t->stride);
}

struct sl_limit_state *
sl_bucket_get_hinted(struct sl_bucket_table *t, const struct sl_bucket_key *k,
		     uint64_t now, uint32_t *hint)
{
	uint32_t i;

	if (*hint != 0 && *hint <= t->capacity) {
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
	i = (size_t)(p - t->states) / t->stride;
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

		t->sweep = t->sweep + 1 == t->capacity ? 0 : t->sweep + 1;
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

const struct sl_bucket_stats *
sl_bucket_stats(const struct sl_bucket_table *t)
{
	return &t->st;
}

uint64_t
sl_bucket_table_bytes(const struct sl_bucket_table *t)
{
	return sizeof(*t) + bkts_bytes(t) + ents_bytes(t) + states_bytes(t) +
	       (uint64_t)t->capacity * sizeof(uint32_t);
}

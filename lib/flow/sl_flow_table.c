/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sl_flow_priv.h"
#include "sl_mem.h"

/* estab[]: the handshake was seen; and the caller translates the
 * connection's sequence numbers (sl_flow_set_kept) */
#define ESTAB      0x01
#define KEPT       0x02
#define CLOCK_SCAN 64

static uint32_t
pow2_at_least(uint32_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

/* The big arrays, sized once for create, prefault, free and bytes. */
static size_t
flows_bytes(const struct sl_flow_table *t)
{
	return (size_t)t->p.capacity * sizeof(struct sl_flow);
}

static size_t
seen_bytes(const struct sl_flow_table *t)
{
	return (size_t)t->p.capacity * sizeof(uint64_t);
}

static size_t
src_cells(const struct sl_flow_params *p)
{
	return pow2_at_least(p->head_slots * 4 < 64 ? 64 : p->head_slots * 4);
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
set_hash_key(struct sl_flow_table *t)
{
	uint64_t x = t->p.hash_seed != 0 ? t->p.hash_seed : 0x51u;
	size_t i;

	for (i = 0; i < sizeof(t->hkey) / sizeof(t->hkey[0]); i++)
		t->hkey[i] = splitmix64(&x);
	t->dkey = (splitmix64(&x) >> 4) | 2; /* in [2, 2^60) */
	sl_flow_digest_init(t);
}

/* 64 x 64 -> 128 bit product, halves folded: every input bit reaches
 * most output bits in one multiply. */
static inline uint64_t
fold_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 r = (unsigned __int128)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/*
 * Keyed and short: the three products are independent, so a burst's
 * keys hash in about 10 cycles each where a chain of five mixes took
 * 40 (this runs on every frame of an inspected port). A product with
 * a zero factor loses its partner word; with the key secret, a sender
 * cannot choose words that do so.
 */
uint64_t
sl_flow_key_hash(const struct sl_flow_table *t, const struct sl_flow_key *k)
{
	uint64_t w[5];
	uint64_t h;

	_Static_assert(sizeof(*k) == sizeof(w), "flow key is five words");
	memcpy(w, k, sizeof(w));
	h = fold_mul(w[0] ^ t->hkey[0], w[1] ^ t->hkey[1]) ^
	    fold_mul(w[2] ^ t->hkey[2], w[3] ^ t->hkey[3]) ^
	    fold_mul(w[4] ^ t->hkey[4], t->hkey[5]);
	return fold_mul(h ^ t->hkey[0], t->hkey[5] | 1);
}

_Static_assert(offsetof(struct sl_flow, nflags) < 128 &&
		       offsetof(struct sl_flow, rec_sum) == 128 &&
		       sizeof(struct sl_flow) == 192,
	       "every frame reads two lines of an entry; the ranges a third");

struct sl_flow_table *
sl_flow_table_create(const struct sl_flow_params *p)
{
	struct sl_flow_table *t;
	uint32_t i;

	if (p->capacity == 0 || p->max_head_bytes == 0 ||
	    p->max_head_bytes > UINT16_MAX)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->p = *p;
	set_hash_key(t);
	if (sl_table_init(&t->tab, p->capacity) != 0) {
		free(t);
		return NULL;
	}
	t->flows = sl_mem_table(flows_bytes(t));
	t->seen = sl_mem_table(seen_bytes(t));
	t->estab = calloc(p->capacity, 1);
	t->young_mask = pow2_at_least(p->capacity) - 1;
	t->young = calloc((size_t)t->young_mask + 1, sizeof(uint64_t));
	t->gen = calloc(p->capacity, sizeof(uint32_t));
	t->heads = malloc((size_t)p->head_slots * p->max_head_bytes + 1);
	t->free_heads = malloc(((size_t)p->head_slots + 1) * sizeof(uint32_t));
	t->slot_owner = calloc((size_t)p->head_slots + 1, sizeof(uint32_t));
	t->slot_since = calloc((size_t)p->head_slots + 1, sizeof(uint64_t));
	t->src_mask = (uint32_t)src_cells(p) - 1;
	t->src_heads = calloc(src_cells(p), sizeof(uint16_t));
	if (t->flows == NULL || t->heads == NULL || t->free_heads == NULL ||
	    t->seen == NULL || t->estab == NULL || t->young == NULL ||
	    t->gen == NULL || t->slot_owner == NULL || t->slot_since == NULL ||
	    t->src_heads == NULL) {
		sl_flow_table_free(t);
		return NULL;
	}
	for (i = 0; i < p->head_slots; i++)
		t->free_heads[i] = p->head_slots - 1 - i;
	t->n_free_heads = p->head_slots;
	return t;
}

void
sl_flow_table_free(struct sl_flow_table *t)
{
	uint32_t i;

	if (t == NULL)
		return;
	/* the caller's holds given back */
	for (i = 0; t->flows != NULL && i < t->p.capacity; i++)
		if (t->flows[i].in_use)
			sl_flow_rec_drop(t, &t->flows[i], 0);
	sl_table_fini(&t->tab);
	if (t->flows != NULL)
		sl_mem_table_free(t->flows, flows_bytes(t));
	sl_mem_table_free(t->seen, seen_bytes(t));
	free(t->estab);
	free(t->young);
	free(t->gen);
	free(t->heads);
	free(t->free_heads);
	free(t->slot_owner);
	free(t->slot_since);
	free(t->src_heads);
	free(t);
}

static inline uint32_t
sig_of(uint64_t h)
{
	return sl_table_sig(h);
}

static inline uint32_t
alt_bucket(const struct sl_flow_table *t, uint64_t h)
{
	return (uint32_t)((h >> 20) ^ (h >> 44)) & t->tab.mask;
}

static struct sl_flow *
find_in(struct sl_flow_table *t, uint32_t b, uint32_t sig,
	const struct sl_flow_key *k)
{
	struct sl_table_bkt *bk = &t->tab.bkts[b];
	uint32_t m;

	for (m = sl_table_match(bk, sig); m != 0; m &= m - 1) {
		struct sl_flow *f = &t->flows[bk->idx[__builtin_ctz(m)] - 1];

		if (memcmp(&f->key, k, sizeof(*k)) == 0)
			return f;
	}
	return NULL;
}

struct sl_flow *
sl_flow_find(struct sl_flow_table *t, const struct sl_flow_key *k, uint64_t h)
{
	uint32_t sig = sig_of(h);
	struct sl_flow *f = find_in(t, (uint32_t)h & t->tab.mask, sig, k);

	return f != NULL ? f : find_in(t, alt_bucket(t, h), sig, k);
}

void
sl_flow_table_prefault(struct sl_flow_table *t)
{
	size_t hb = (size_t)t->p.head_slots * t->p.max_head_bytes, o;

	sl_table_prefault(&t->tab);
	sl_mem_prefault(t->flows, flows_bytes(t));
	sl_mem_prefault(t->seen, seen_bytes(t));
	/* the rest is malloc'ed: a flood must not be what first touches
	 * it (page faults on the worker, and resident memory that grows
	 * while it lasts) */
	for (o = 0; o < hb; o += 4096)
		((volatile uint8_t *)t->heads)[o] = 0;
	memset(t->estab, 0, t->p.capacity);
	memset(t->gen, 0, (size_t)t->p.capacity * sizeof(uint32_t));
	memset(t->young, 0, ((size_t)t->young_mask + 1) * sizeof(uint64_t));
	memset(t->slot_since, 0, (size_t)t->p.head_slots * sizeof(uint64_t));
	memset(t->src_heads, 0, ((size_t)t->src_mask + 1) * sizeof(uint16_t));
}

uint64_t
sl_flow_hash(const struct sl_flow_table *t, const struct sl_flow_key *k)
{
	return sl_flow_key_hash(t, k);
}

void
sl_flow_prefetch_buckets(const struct sl_flow_table *t, uint64_t h)
{
	__builtin_prefetch(&t->tab.bkts[(uint32_t)h & t->tab.mask]);
	__builtin_prefetch(&t->tab.bkts[alt_bucket(t, h)]);
}

static void
prefetch_sig(const struct sl_flow_table *t, uint32_t b, uint32_t sig)
{
	const struct sl_table_bkt *bk = &t->tab.bkts[b];
	uint32_t m;

	for (m = sl_table_match(bk, sig); m != 0; m &= m - 1) {
		const struct sl_flow *f =
			&t->flows[bk->idx[__builtin_ctz(m)] - 1];

		__builtin_prefetch(f);
		__builtin_prefetch((const char *)f + 64);
		/* the decided ranges, written once the head is read */
		__builtin_prefetch((const char *)f + 128, 1);
	}
}

void
sl_flow_prefetch_entry(const struct sl_flow_table *t, uint64_t h)
{
	prefetch_sig(t, (uint32_t)h & t->tab.mask, sig_of(h));
}

uint32_t
sl_flow_peek_hint(const struct sl_flow_table *t, uint64_t h)
{
	const struct sl_table_bkt *bk = &t->tab.bkts[(uint32_t)h & t->tab.mask];
	uint32_t m;

	for (m = sl_table_match(bk, sig_of(h)); m != 0; m &= m - 1)
		if (bk->idx[__builtin_ctz(m)] != 0)
			return t->flows[bk->idx[__builtin_ctz(m)] - 1]
				.bucket_hint;
	return 0;
}

struct sl_flow *
sl_flow_lookup(struct sl_flow_table *t, const struct sl_flow_key *k)
{
	return sl_flow_find(t, k, sl_flow_key_hash(t, k));
}

/* The cell counting a client's head buffers: its address, v6 its /64. */
static uint16_t *
src_cell(const struct sl_flow_table *t, const struct sl_flow *f)
{
	uint64_t a = 0;

	memcpy(&a, f->key.caddr, f->key.af == 6 ? 8 : 4);
	return &t->src_heads[fold_mul(a ^ t->hkey[2], t->hkey[3] | 1) &
			     t->src_mask];
}

void
sl_flow_release_head(struct sl_flow_table *t, struct sl_flow *f)
{
	if (f->slot >= 0) {
		uint16_t *c = src_cell(t, f);

		if (*c > 0)
			(*c)--;
		t->slot_since[f->slot] = 0;
		t->free_heads[t->n_free_heads++] = (uint32_t)f->slot;
	}
	f->slot = -1;
	f->head_used = 0;
	f->scan_from = 0;
}

/* The head buffer's owner loses it: its next segment is answered 408. */
static void
revoke_head(struct sl_flow_table *t, uint32_t slot)
{
	struct sl_flow *v = &t->flows[t->slot_owner[slot]];

	sl_flow_release_head(t, v);
	v->nflags |= SL_NF_TIMEDOUT;
}

/*
 * A full pool gives up its oldest incomplete head (of a window, as the
 * flow table's clock does): a slow or stalled sender loses its place,
 * never a new request that came later.
 */
static void
evict_head(struct sl_flow_table *t)
{
	uint64_t oldest = UINT64_MAX;
	uint32_t i, best = 0;

	for (i = 0; i < CLOCK_SCAN && i < t->p.head_slots; i++) {
		uint32_t s = t->slot_clock;

		t->slot_clock = s + 1 == t->p.head_slots ? 0 : s + 1;
		if (t->slot_since[s] != 0 && t->slot_since[s] < oldest) {
			oldest = t->slot_since[s];
			best = s;
		}
	}
	if (oldest == UINT64_MAX)
		return;
	revoke_head(t, best);
	t->st.head_evictions++;
}

int32_t
sl_flow_take_head(struct sl_flow_table *t, struct sl_flow *f, uint64_t now)
{
	uint16_t *c = src_cell(t, f);
	uint32_t s;

	if (t->p.heads_per_source != 0 && *c >= t->p.heads_per_source) {
		t->st.norm[SL_NR_SOURCE]++;
		return -1;
	}
	if (t->n_free_heads == 0)
		evict_head(t);
	if (t->n_free_heads == 0) {
		t->st.head_slot_exhausted++;
		return -1;
	}
	s = t->free_heads[--t->n_free_heads];
	t->slot_owner[s] = (uint32_t)(f - t->flows);
	t->slot_since[s] = now + 1;
	(*c)++;
	f->slot = (int32_t)s;
	return (int32_t)s;
}

void
sl_flow_set_estab(struct sl_flow_table *t, const struct sl_flow *f)
{
	t->estab[f - t->flows] |= ESTAB;
}

void
sl_flow_set_kept(struct sl_flow_table *t, const struct sl_flow *f)
{
	t->estab[f - t->flows] |= KEPT;
}

void
sl_flow_remove(struct sl_flow_table *t, struct sl_flow *f)
{
	sl_flow_gone(t, f);
	sl_flow_release_head(t, f);
	sl_flow_rec_drop(t, f, 0);
	if (t->last == f)
		t->last = NULL;
	sl_table_unlink(&t->tab, f->bucket, f->bslot);
	f->in_use = 0;
	t->seen[f - t->flows] = 0;
	t->estab[f - t->flows] = 0;
	t->st.active--;
}

/* Not established, and had its young_grace to become so. */
static inline int
expendable(const struct sl_flow_table *t, uint32_t e, uint64_t now)
{
	return !t->estab[e] && now > t->seen[e] - 1 &&
	       now - (t->seen[e] - 1) >= t->p.young_grace;
}

/* Eviction order: expendable entries first, kept ones last, then least
 * recently seen. */
static inline int
evicts_before(const struct sl_flow_table *t, uint32_t a, uint32_t b,
	      uint64_t now)
{
	int xa = expendable(t, a, now), xb = expendable(t, b, now);

	if (xa != xb)
		return xa;
	if ((t->estab[a] & KEPT) != (t->estab[b] & KEPT))
		return !(t->estab[a] & KEPT);
	return t->seen[a] < t->seen[b];
}

/* The victim policy, for the index's hands (b: none yet). */
static int
before(void *arg, uint32_t a, uint32_t b)
{
	struct sl_flow_table *t = arg;

	if (t->seen[a] == 0)
		return 0;
	return b == SL_TABLE_NONE || evicts_before(t, a, b, t->now);
}

/* The least recently seen of the clock's window, a kept entry only where
 * every other is kept too (its connection breaks once it goes). */
static int
older(void *arg, uint32_t a, uint32_t b)
{
	const struct sl_flow_table *t = arg;

	if (t->seen[a] == 0)
		return 0;
	if (b == SL_TABLE_NONE)
		return 1;
	if ((t->estab[a] & KEPT) != (t->estab[b] & KEPT))
		return !(t->estab[a] & KEPT);
	return t->seen[a] < t->seen[b];
}

/*
 * The oldest entry made that is still not established, if it has had
 * young_grace to become so; or none. Entries are queued as they are
 * made; those since established, removed or remade are skipped as they
 * come up (each once).
 */
static int32_t
oldest_young(struct sl_flow_table *t, uint64_t now)
{
	while (t->young_head != t->young_tail) {
		uint64_t v = t->young[t->young_head & t->young_mask];
		uint32_t e = (uint32_t)v;

		if (t->gen[e] != (uint32_t)(v >> 32) || t->seen[e] == 0 ||
		    t->estab[e]) {
			t->young_head++;
			continue;
		}
		if (expendable(t, e, now)) {
			t->young_head++;
			return (int32_t)e;
		}
		return -1; /* the rest are younger still */
	}
	return -1;
}

static void
queue_young(struct sl_flow_table *t, uint32_t e)
{
	if (t->young_tail - t->young_head > t->young_mask)
		t->young_head++; /* full: the oldest made goes unqueued */
	t->young[t->young_tail++ & t->young_mask] =
		(uint64_t)(++t->gen[e]) << 32 | e;
}

/*
 * The table is full. An entry that did not become established within
 * young_grace goes first, the oldest made: a flood of spoofed flows,
 * which never do, pushes out its own kind before any live connection.
 * Otherwise the least recently seen of a window goes: an idle
 * connection, picked up again (and placed) when it speaks, or a spoofed
 * entry too young to judge. New connections are never evicted for
 * each other while they handshake.
 */
static void
evict_one(struct sl_flow_table *t, uint64_t now)
{
	int32_t y = oldest_young(t, now);
	uint32_t best;

	if (y >= 0) {
		sl_flow_remove(t, &t->flows[y]);
		t->st.evicted++;
		return;
	}
	/* a full table has no free (0) entry to skip for long */
	best = sl_table_clock(&t->tab, CLOCK_SCAN, older, t);
	if (best == SL_TABLE_NONE)
		return;
	sl_flow_remove(t, &t->flows[best]);
	t->st.evicted++;
}

/* The other bucket of entry e, linked in b: from its key's hash. */
static uint32_t
other_bucket(void *arg, uint32_t e, uint32_t b)
{
	struct sl_flow_table *t = arg;
	uint64_t h = sl_flow_hash(t, &t->flows[e].key);
	uint32_t p = (uint32_t)h & t->tab.mask;

	return p == b ? alt_bucket(t, h) : p;
}

/* Both of a key's buckets full: room in one of them by moving an entry
 * of it to its own other bucket; -1 where none can move. */
static int
shift(struct sl_flow_table *t, uint32_t *b, uint32_t b2)
{
	struct sl_table_move mv;
	int s = sl_table_shift(&t->tab, *b, other_bucket, t, &mv);

	if (s < 0) {
		*b = b2;
		s = sl_table_shift(&t->tab, b2, other_bucket, t, &mv);
	}
	if (s >= 0 && mv.entry != SL_TABLE_NONE) {
		t->flows[mv.entry].bucket = mv.bucket;
		t->flows[mv.entry].bslot = (uint8_t)mv.slot;
		t->st.shifted++;
	}
	return s;
}

struct sl_flow *
sl_flow_insert(struct sl_flow_table *t, const struct sl_flow_key *k, uint64_t h,
	       uint64_t now)
{
	uint32_t b = (uint32_t)h & t->tab.mask;
	int s;
	uint32_t idx;
	struct sl_flow *f;

	if (t->tab.n_free == 0)
		evict_one(t, now);
	s = sl_table_free_slot(&t->tab, b);
	if (s < 0) {
		b = alt_bucket(t, h);
		s = sl_table_free_slot(&t->tab, b);
	}
	if (s < 0) {
		b = (uint32_t)h & t->tab.mask;
		s = shift(t, &b, alt_bucket(t, h));
	}
	if (s < 0) {
		/* Both buckets full: the first to go of their sixteen goes. */
		struct sl_flow *victim;

		t->now = now;
		victim = &t->flows[sl_table_pair(
			&t->tab, b, (uint32_t)h & t->tab.mask, before, t)];
		b = victim->bucket;
		s = victim->bslot;
		sl_flow_remove(t, victim);
		t->st.evicted++;
	}
	idx = sl_table_link(&t->tab, b, s, sig_of(h));
	f = &t->flows[idx];
	sl_mem_zero(f, sizeof(*f));
	f->key = *k;
	f->slot = -1;
	sl_flow_touch(t, f, now);
	f->bucket = b;
	f->bslot = (uint8_t)s;
	f->in_use = 1;
	queue_young(t, idx);
	t->st.active++;
	t->st.created++;
	return f;
}

/* Incomplete heads past head_timeout lose their buffers (408 next). */
static void
expire_heads(struct sl_flow_table *t, uint64_t now, uint32_t budget)
{
	if (t->p.head_timeout == 0 || t->p.head_slots == 0)
		return;
	while (budget--) {
		uint32_t s = t->slot_sweep;
		uint64_t since = t->slot_since[s];

		t->slot_sweep = s + 1 == t->p.head_slots ? 0 : s + 1;
		if (since != 0 && now > since - 1 &&
		    now - (since - 1) > t->p.head_timeout) {
			revoke_head(t, s);
			t->st.head_timeouts++;
		}
	}
}

uint32_t
sl_flow_expire(struct sl_flow_table *t, uint64_t now, uint32_t budget)
{
	uint32_t n = 0;

	expire_heads(t, now, budget);
	while (budget--) {
		uint32_t i = t->sweep;
		struct sl_flow *f = &t->flows[i];
		uint64_t ttl, last;

		t->sweep = i + 1 == t->p.capacity ? 0 : i + 1;
		if (t->seen[i] == 0)
			continue; /* free */
		last = t->seen[i] - 1;
		ttl = (f->c_fin && f->s_fin) ? t->p.closed_timeout
					     : t->p.idle_timeout;
		if (now - last > ttl && now > last) {
			if (f->c_fin && f->s_fin)
				t->st.closed++;
			else
				t->st.expired++;
			sl_flow_remove(t, f);
			n++;
		}
	}
	return n;
}

const struct sl_flow_stats *
sl_flow_stats(const struct sl_flow_table *t)
{
	return &t->st;
}

uint64_t
sl_flow_head_pool_bytes(const struct sl_flow_table *t)
{
	return (uint64_t)t->p.head_slots * (t->p.max_head_bytes + 4 + 4 + 8) +
	       src_cells(&t->p) * sizeof(uint16_t);
}

uint64_t
sl_flow_table_bytes(const struct sl_flow_table *t)
{
	return sizeof(*t) + sl_table_bytes(&t->tab) + flows_bytes(t) +
	       seen_bytes(t) +
	       (uint64_t)t->p.capacity * (sizeof(uint32_t) + 1) +
	       ((uint64_t)t->young_mask + 1) * sizeof(uint64_t) +
	       sl_flow_head_pool_bytes(t);
}

uint32_t
sl_flow_index(const struct sl_flow_table *t, const struct sl_flow *f)
{
	return (uint32_t)(f - t->flows);
}

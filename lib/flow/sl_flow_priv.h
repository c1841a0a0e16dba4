/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_FLOW_PRIV_H
#define SL_FLOW_PRIV_H

#include "sl_flow.h"
#include "sl_table.h"

#define SL_FL_FIN 0x01
#define SL_FL_SYN 0x02
#define SL_FL_RST 0x04
#define SL_FL_ACK 0x10
#define SL_FL_URG 0x20

struct sl_flow_table {
	struct sl_flow_params p;
	uint64_t hkey[6];    /* the flow hash's key, from p.hash_seed */
	struct sl_table tab; /* the index (lib/table) */
	struct sl_flow *flows;
	/* when each entry was last seen, + 1; 0 when free. Kept apart from
	 * the entries so the eviction and expiry scans read 8 bytes an entry
	 * instead of an entry's cache lines */
	uint64_t *seen;
	uint32_t sweep; /* expiry hand */
	/* 1 for entries the normaliser calls established (placed, server
	 * seen): a full table evicts the others first */
	uint8_t *estab;
	/* entries in the order they were made, for evicting the oldest not
	 * established first: (generation << 32 | index), stale ones skipped */
	uint64_t *young;
	uint32_t *gen; /* per entry, bumped when it is made */
	uint32_t young_mask, young_head, young_tail;
	uint8_t *heads; /* head_slots * max_head_bytes */
	uint32_t *free_heads;
	uint32_t n_free_heads;
	uint32_t *slot_owner; /* entry index holding each head buffer */
	uint64_t *slot_since; /* when it was taken, + 1; 0 when free */
	uint32_t slot_clock;  /* eviction hand over head buffers */
	uint32_t slot_sweep;  /* head timeout hand */
	uint16_t *src_heads;  /* head buffers held, per source cell */
	uint32_t src_mask;
	uint64_t dkey;    /* the digest's secret point, < 2^61 - 1 */
	uint64_t dpow[8]; /* dkey^1..8 mod 2^61 - 1 */
	uint32_t cut;     /* payload bytes to forward after PREFIX */
	struct sl_flow_stats st;
	struct sl_flow *last;
	uint64_t now; /* of the segment being handled */
};

struct sl_flow *sl_flow_find(struct sl_flow_table *t,
			     const struct sl_flow_key *k, uint64_t h);
struct sl_flow *sl_flow_insert(struct sl_flow_table *t,
			       const struct sl_flow_key *k, uint64_t h,
			       uint64_t now);
void sl_flow_remove(struct sl_flow_table *t, struct sl_flow *f);
void sl_flow_release_head(struct sl_flow_table *t, struct sl_flow *f);
/* The entry as a new connection's, its SYN's ISN and options seen. */
void sl_flow_begin(struct sl_flow_table *t, struct sl_flow *f, uint32_t isn,
		   int has_ts, uint32_t tsval, uint16_t mss);
/* A head buffer for f at time now: -1 none (counted), else the slot. */
int32_t sl_flow_take_head(struct sl_flow_table *t, struct sl_flow *f,
			  uint64_t now);
void sl_flow_set_estab(struct sl_flow_table *t, const struct sl_flow *f);

/* sl_flow_body.c: a Content-Length body as the next request */
uint8_t sl_body_line_start(void);
/* Reads p[0, n) on from *st, the body's last bytes where ends: the
 * offset just past the byte at which the line reads as a request (n
 * where the body ends inside its target), 0 while it does not (yet). */
uint32_t sl_body_line(uint8_t *st, const uint8_t *p, uint32_t n, int ends);
/* Whether a body that ended in state st (the first letters of a method)
 * and the next head's method m make one method a server would read. */
int sl_body_glued(uint8_t st, const char *m, uint32_t len);

/* sl_flow_norm.c */
void sl_flow_digest_init(struct sl_flow_table *t);
uint64_t sl_flow_digest(const struct sl_flow_table *t, const uint8_t *p,
			uint32_t n);
enum sl_norm_reason sl_flow_rec_check(const struct sl_flow_table *t,
				      const struct sl_flow *f, uint32_t seq,
				      const uint8_t *p, uint32_t n);
void sl_flow_rec_add(const struct sl_flow_table *t, struct sl_flow *f,
		     uint32_t seq, const uint8_t *p, uint32_t n, int hold);
void sl_flow_rec_release(const struct sl_flow_table *t, struct sl_flow *f,
			 uint32_t ack);
/* Ranges from..rec_n dropped, their holds released. */
void sl_flow_rec_drop(const struct sl_flow_table *t, struct sl_flow *f,
		      uint8_t from);
enum sl_norm_reason sl_flow_seg_check(const struct sl_flow *f,
				      const struct sl_seg *s);
uint64_t sl_flow_key_hash(const struct sl_flow_table *t,
			  const struct sl_flow_key *k);

/* The caller is told a connection it marked ends, before it is gone. */
static inline void
sl_flow_gone(struct sl_flow_table *t, struct sl_flow *f)
{
	if (f->xflags != 0 && t->p.gone != NULL)
		t->p.gone(t->p.gone_arg, f);
	f->xflags = 0;
}

static inline void
sl_flow_touch(struct sl_flow_table *t, struct sl_flow *f, uint64_t now)
{
	t->seen[f - t->flows] = now + 1;
}

#endif

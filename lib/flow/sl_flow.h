/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_FLOW_H
#define SL_FLOW_H

/*
 * Per-worker TCP flow table and request-head reassembly.
 *
 * One table per worker, written only by that worker: no locks, no atomics.
 * Capacity is fixed at creation; a full table evicts its least recently
 * seen entries, so a flood of new connections costs old idle ones, never
 * memory. Head bytes are parsed straight out of the segment; only a head
 * that spans segments is copied, into one of a fixed pool of buffers.
 *
 * Pure C: the caller passes time (any monotonic unit) and payload bytes.
 */

#include <stdint.h>

#include "sl_http.h"

struct sl_flow_key {
	uint8_t caddr[16]; /* client (downstream) address */
	uint8_t saddr[16]; /* server (upstream) address */
	uint16_t cport;
	uint16_t sport;
	uint8_t af;
	uint8_t pad[3];
};

enum sl_flow_state {
	SL_FLOW_HEAD = 0,     /* expecting (more of) a request head */
	SL_FLOW_BODY_CL,      /* skipping a Content-Length body */
	SL_FLOW_BODY_CHUNKED, /* skipping a chunked body */
	SL_FLOW_RESYNC,       /* picked up mid-stream, not at a request yet */
	SL_FLOW_PASS,         /* no longer HTTP (upgrade, CONNECT, error) */
	SL_FLOW_ABSORB,       /* answered by us: client bytes are swallowed */
};

struct sl_flow {
	struct sl_flow_key key;
	uint64_t body_remaining;
	struct sl_chunked chunk;
	uint32_t c_next;   /* next client sequence number we expect */
	uint32_t s_next;   /* next server sequence number seen */
	uint32_t s_ack;    /* highest ack the server sent */
	uint32_t requests; /* request heads completed on this flow */
	uint32_t seg_new;  /* sequence of the first new byte of the last segment
			    */
	uint32_t r_next; /* our next sequence towards the client, once answered
			  */
	int32_t slot;    /* head buffer index, -1 when none */
	uint16_t head_used;
	uint16_t scan_from;
	uint32_t bucket;
	uint8_t bslot;
	uint8_t state;
	uint8_t c_fin;
	uint8_t s_fin;
	uint8_t s_seen;
	uint8_t in_use;
	uint8_t parked;    /* a request on it waits for a decision */
	uint16_t park_idx; /* the caller's, while parked */
	uint32_t
		bucket_hint; /* the caller's: its last decision's limit state */
	/* two whole lines: at 120 bytes most entries straddled three, and
	 * the third (state, hint) was not among the two prefetched */
} __attribute__((aligned(64)));

struct sl_flow_params {
	uint32_t capacity;
	uint32_t head_slots;     /* heads being reassembled at once */
	uint32_t max_head_bytes; /* longer heads are reported too large */
	uint64_t idle_timeout;   /* in the caller's time unit */
	uint64_t closed_timeout; /* after FIN from both sides */
	const struct sl_http_cfg *http;
	uint8_t track_only; /* follow connections, read no HTTP (benchmarks) */
	/* keys the flow hash; 0 takes a fixed key. Random per process, it
	 * keeps senders who know the code from aiming their 4-tuples at one
	 * bucket */
	uint64_t hash_seed;
};

/* Why a request event fired; the request is valid only for SL_EV_REQUEST. */
enum sl_flow_event_kind {
	SL_EV_REQUEST = 0,
	SL_EV_PARSE_ERROR, /* req.error says which */
	SL_EV_HEAD_TOO_LARGE,
	SL_EV_CHUNK_ERROR,
};

struct sl_flow_event {
	uint8_t kind;
	uint32_t head_len; /* bytes of the head (SL_EV_REQUEST) */
	uint32_t seg_end;  /* payload offset in this segment just after it */
	const struct sl_http_req *req;
};

enum sl_req_action {
	SL_REQ_CONTINUE = 0,
	SL_REQ_STOP, /* the caller answered: absorb the rest of the flow */
	SL_REQ_PARK, /* undecided yet: stop here, resume with sl_flow_resume */
};

typedef enum sl_req_action (*sl_flow_event_fn)(void *arg, struct sl_flow *f,
					       const struct sl_flow_event *ev);

enum sl_seg_verdict {
	SL_SEG_FORWARD = 0,
	SL_SEG_DROP, /* ahead of a gap, or absorbed: the client retransmits */
	SL_SEG_STOPPED,  /* a callback returned SL_REQ_STOP */
	SL_SEG_ABSORBED, /* data or FIN after our answer: acknowledge, drop */
	SL_SEG_PARKED,   /* a callback returned SL_REQ_PARK */
	SL_SEG_HOLD,     /* data behind a parked request: the caller keeps it */
};

struct sl_flow_stats {
	uint64_t active;
	uint64_t created;
	uint64_t midstream;
	uint64_t evicted; /* pushed out by a full table */
	uint64_t expired; /* idle past their timeout */
	uint64_t closed;  /* RST, or FIN from both sides */
	uint64_t ooo_dropped;
	uint64_t retransmits;
	uint64_t head_slot_exhausted;
	uint64_t reassembled; /* heads that spanned segments */
};

struct sl_flow_table;

struct sl_flow_table *sl_flow_table_create(const struct sl_flow_params *p);
/* Faults the table's memory in, on the thread that will use it. */
void sl_flow_table_prefault(struct sl_flow_table *t);
void sl_flow_table_free(struct sl_flow_table *t);

/*
 * A client-to-server segment on a service port. Runs fn for every request
 * head completed (or failed) by these bytes, in stream order.
 */
enum sl_seg_verdict sl_flow_client_segment(struct sl_flow_table *t,
					   const struct sl_flow_key *k,
					   uint32_t seq, uint8_t tcp_flags,
					   const uint8_t *payload, uint32_t len,
					   uint64_t now, sl_flow_event_fn fn,
					   void *arg);
/* The same with the key's sl_flow_hash() already computed (bursts). */
enum sl_seg_verdict
sl_flow_client_segment_h(struct sl_flow_table *t, const struct sl_flow_key *k,
			 uint64_t h, uint32_t seq, uint8_t tcp_flags,
			 const uint8_t *payload, uint32_t len, uint64_t now,
			 sl_flow_event_fn fn, void *arg);

/*
 * Goes on after a parked request was allowed: rest is what followed its
 * head in the parked segment (events may fire for it as usual).
 */
enum sl_seg_verdict sl_flow_resume(struct sl_flow_table *t, struct sl_flow *f,
				   const uint8_t *rest, uint32_t len,
				   sl_flow_event_fn fn, void *arg);

/* A server-to-client segment; k is in client/server orientation. */
void sl_flow_server_segment(struct sl_flow_table *t,
			    const struct sl_flow_key *k, uint32_t seq,
			    uint32_t ack, uint8_t tcp_flags, uint32_t len,
			    uint64_t now);

/*
 * Prefetching for a burst: the hash of a key, the two bucket lines its
 * lookup reads, then (once those arrived) the entries whose signature
 * matches. Hints only: nothing is read that a lookup would not read.
 */
uint64_t sl_flow_hash(const struct sl_flow_table *t,
		      const struct sl_flow_key *k);
void sl_flow_prefetch_buckets(const struct sl_flow_table *t, uint64_t h);
void sl_flow_prefetch_entry(const struct sl_flow_table *t, uint64_t h);
/*
 * The bucket_hint of the flow with hash h, if its entry is found by
 * signature alone (no key compare: the hint is only prefetched with, and
 * checked where it is used); 0 otherwise. For after sl_flow_prefetch_entry.
 */
uint32_t sl_flow_peek_hint(const struct sl_flow_table *t, uint64_t h);

struct sl_flow *sl_flow_lookup(struct sl_flow_table *t,
			       const struct sl_flow_key *k);
/* The flow of the last client segment (NULL if it had none). */
struct sl_flow *sl_flow_last(const struct sl_flow_table *t);

/* Evicts up to budget idle entries; call once per worker loop. */
uint32_t sl_flow_expire(struct sl_flow_table *t, uint64_t now, uint32_t budget);

const struct sl_flow_stats *sl_flow_stats(const struct sl_flow_table *t);

/* Bytes of memory the table holds, for the memory benchmark. */
uint64_t sl_flow_table_bytes(const struct sl_flow_table *t);

#endif /* SL_FLOW_H */

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
	SL_FLOW_UPGRADE,      /* Upgrade or CONNECT asked: awaits the server */
};

/* Decided ranges kept per flow until the server acknowledges them. */
#define SL_REC_MAX 3

/* nflags: what the normaliser knows of a connection. */
#define SL_NF_SYN    0x01 /* the client's SYN was seen */
#define SL_NF_SYNACK 0x02 /* the server's SYN-ACK was seen (s_isn set) */
#define SL_NF_PLACED                                                           \
	0x04                /* our stream offset is the server's: handshake    \
			     * completed, or a request start the server's      \
			     * ACK confirms */
#define SL_NF_CTS      0x08 /* the client's SYN carried timestamps */
#define SL_NF_TS       0x10 /* timestamps negotiated: PAWS applies */
#define SL_NF_LINE     0x20 /* the buffered head's request line ended */
#define SL_NF_TIMEDOUT 0x40 /* its incomplete head lost its buffer */
#define SL_NF_XLATE    0x80 /* the caller translates its sequence numbers */

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
	uint8_t parked; /* a request on it waits for a decision */
	/* the client's MSS (its SYN's), in 256-byte units rounded down;
	 * 0: not seen */
	uint8_t mss_k;
	uint16_t park_idx; /* the caller's, while parked */
	/* a Content-Length body's first line read so far, as a server
	 * that ignores the length would read it (sl_flow_body.c) */
	uint8_t body_line;
	uint32_t
		bucket_hint; /* the caller's: its last decision's limit state */
	/* the normaliser's checks, read on every segment: in line two */
	uint32_t ts_recent; /* newest TSval accepted in order */
	uint32_t s_isn;     /* server ISN + 1: oldest valid ack */
	uint8_t rec_n;      /* decided ranges kept (line three) */
	uint8_t nflags;     /* SL_NF_* */
	uint8_t xflags;     /* the caller's, cleared with a new connection */
	/* line three, the decided ranges: written once per head, read on
	 * resent bytes and the server's ACKs while rec_n says there are
	 * some. Lines one and two are what every frame reads; at 120 bytes
	 * most entries straddled three, and the third (state, hint) was
	 * not among the two prefetched */
	uint64_t rec_sum[SL_REC_MAX]; /* keyed digest of each range */
	uint32_t rec_seq[SL_REC_MAX]; /* decided, unacknowledged ranges */
	uint16_t rec_len[SL_REC_MAX];
	uint8_t rec_held; /* bit i: rec_sum[i] is the caller's hold */
	/* the server's responses, framed as the client reads them: a
	 * refusal answered in a response's place waits for those due */
	struct sl_resp resp;
} __attribute__((aligned(64)));

/*
 * Decided bytes kept by reference instead of by digest: a caller whose
 * segments live in buffers it can hold on to (an mbuf's reference
 * count) keeps a decided segment's bytes until the server acknowledges
 * them, and a resent copy is compared with them byte for byte. keep
 * returns a handle, 0 where it cannot (then the digest is kept); every
 * handle is released exactly once, whichever way its range goes.
 */
struct sl_flow_hold {
	uint64_t (*keep)(void *arg, const uint8_t *p, uint32_t n);
	const uint8_t *(*bytes)(void *arg, uint64_t h);
	void (*release)(void *arg, uint64_t h);
	void *arg;
};

struct sl_flow_params {
	uint32_t capacity;
	uint32_t head_slots;     /* heads being reassembled at once */
	uint32_t max_head_bytes; /* longer heads are reported too large */
	uint64_t idle_timeout;   /* in the caller's time unit */
	uint64_t closed_timeout; /* after FIN from both sides */
	uint64_t head_timeout;   /* an incomplete head keeps its buffer */
	/* a connection not yet established is evicted before established
	 * ones once it is this old: time for its handshake to complete */
	uint64_t young_grace;
	uint32_t heads_per_source; /* buffers one client address (v6: /64)
				    * may hold; 0: no cap */
	const struct sl_http_cfg *http;
	uint8_t track_only; /* follow connections, read no HTTP (benchmarks) */
	/* benchmarks only: no segment checks and no decided ranges, to
	 * price the normaliser against the same table without it */
	uint8_t no_normalise;
	/* keys the flow hash; 0 takes a fixed key. Random per process, it
	 * keeps senders who know the code from aiming their 4-tuples at one
	 * bucket */
	uint64_t hash_seed;
	/* called as a connection whose xflags the caller set ends: reset,
	 * closed, expired, evicted, or its 4-tuple taken by a new SYN */
	void (*gone)(void *arg, struct sl_flow *f);
	void *gone_arg;
	/* keep set: only segments forwarded whole are held */
	struct sl_flow_hold hold;
};

/* Why a request event fired; the request is valid only for SL_EV_REQUEST. */
enum sl_flow_event_kind {
	SL_EV_REQUEST = 0,
	SL_EV_PARSE_ERROR, /* req.error says which */
	SL_EV_HEAD_TOO_LARGE,
	SL_EV_CHUNK_ERROR,
	SL_EV_HEAD_TIMEOUT, /* its head was not complete in time (408) */
};

struct sl_flow_event {
	uint8_t kind;
	uint8_t first;     /* the head starts its segment's new bytes */
	uint32_t head_len; /* bytes of the head (SL_EV_REQUEST) */
	uint32_t seg_end;  /* payload offset in this segment just after it */
	uint8_t buffered; /* the head spanned segments (copied from a buffer) */
	const struct sl_http_req *req;
};

enum sl_req_action {
	SL_REQ_CONTINUE = 0,
	SL_REQ_STOP, /* the caller answered: absorb the rest of the flow */
	SL_REQ_PARK, /* undecided yet: stop here, resume with sl_flow_resume */
	/* the caller answers in the request's place and the connection goes
	 * on: the head is taken out of the stream (the caller translates
	 * sequence numbers from then on); STOP where order forbids it */
	SL_REQ_KEEP,
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
	/* refused, behind requests of the same segment that were let
	 * through: forward only the first sl_flow_cut() payload bytes; the
	 * rest is decided again when the client sends it again */
	SL_SEG_PREFIX,
	/* picked up mid-stream: drop it, and send the server an empty
	 * segment at seq - 1 so that its ACK says where its stream is */
	SL_SEG_PROBE,
	/* a callback returned SL_REQ_KEEP: the segment was that head alone;
	 * answer it, forward nothing, the connection goes on */
	SL_SEG_KEPT,
	/* request bytes after the server's FIN (it cannot answer them, nor
	 * may it act on them), or bytes of a connection picked up
	 * mid-stream: reset both sides, forward nothing */
	SL_SEG_RESET,
};

/*
 * Why the normaliser kept a client segment out of the stream: each is a
 * segment the backend's stack would discard or read differently, so
 * parsing it would decide on bytes the backend never sees.
 */
enum sl_norm_reason {
	SL_NR_NONE = 0,
	SL_NR_NO_ACK,      /* data or FIN without ACK */
	SL_NR_ACK_UNSENT,  /* acknowledges what the server never sent */
	SL_NR_PAWS,        /* timestamp older than the newest accepted */
	SL_NR_NO_TS,       /* no timestamp where they were negotiated */
	SL_NR_URGENT,      /* URG: the urgent byte leaves the stream */
	SL_NR_TCP_SIG,     /* MD5 or AO signature: none was negotiated */
	SL_NR_IP_OPTIONS,  /* IPv4 options (source route and others) */
	SL_NR_L2_GROUP,    /* multicast or broadcast destination MAC */
	SL_NR_REPLAY_DIFF, /* resent bytes differ from the decided copy */
	SL_NR_REPLAY_PART, /* resent bytes cover part of a decided range */
	SL_NR_REPLAY_FULL, /* more undecided ranges than a flow keeps */
	SL_NR_MIDSTREAM,   /* not at a place the server's ACK confirms */
	SL_NR_UPGRADE,     /* behind an upgrade the server did not answer */
	SL_NR_ORDER,       /* a refusal waiting for earlier answers */
	SL_NR_UNPLACED,    /* a head before the handshake completed */
	SL_NR_SOURCE,      /* its source holds its share of head buffers */
	SL_NR__COUNT
};

const char *sl_norm_reason_name(enum sl_norm_reason r);

/* What the caller read of a segment's headers. */
struct sl_seg {
	uint32_t seq;
	uint32_t ack;
	uint32_t tsval; /* valid when has_ts */
	uint32_t tsecr; /* a SYN-ACK's, valid when has_ts */
	uint8_t flags;  /* TCP flags, URG included */
	uint8_t has_ts;
	uint16_t mss; /* a SYN's MSS option; 0: none */
	const uint8_t *payload;
	uint32_t len;
};

struct sl_flow_stats {
	uint64_t active;
	uint64_t created;
	uint64_t midstream;
	uint64_t evicted; /* pushed out by a full table */
	uint64_t shifted; /* moved to their other bucket to make room */
	uint64_t expired; /* idle past their timeout */
	uint64_t closed;  /* RST, or FIN from both sides */
	uint64_t ooo_dropped;
	uint64_t retransmits;
	uint64_t head_slot_exhausted;
	uint64_t reassembled;     /* heads that spanned segments */
	uint64_t rst_ignored;     /* RST not at the next sequence: state kept */
	uint64_t syn_ignored;     /* SYN on an open connection: state kept */
	uint64_t reopened;        /* begun anew by the backend's SYN-ACK */
	uint64_t syn_data;        /* SYN payload, never taken as stream data */
	uint64_t probes;          /* mid-stream pickups asked the server */
	uint64_t midstream_reset; /* and then reset, both sides */
	uint64_t head_timeouts;   /* incomplete heads past head_timeout */
	uint64_t head_evictions;  /* oldest incomplete head, pool full */
	uint64_t upgrades;        /* upgrades the server accepted */
	uint64_t upgrades_refused; /* answered otherwise: inspection goes on */
	uint64_t responses;        /* server responses framed to their end */
	/* connections whose responses could not be framed from some point
	 * on (close-delimited, a gap, ...): refusals fall back to waiting
	 * for the server's ACK of the requests before */
	uint64_t resp_unframed;
	uint64_t after_close; /* requests sent after the server's FIN: reset */
	uint64_t norm[SL_NR__COUNT]; /* client segments kept out, per reason */
};

struct sl_flow_table;

struct sl_flow_table *sl_flow_table_create(const struct sl_flow_params *p);
/* Faults the table's memory in, on the thread that will use it. */
void sl_flow_table_prefault(struct sl_flow_table *t);
void sl_flow_table_free(struct sl_flow_table *t);

/*
 * A client-to-server segment on a service port, h the key's
 * sl_flow_hash(). Runs fn for every request head completed (or failed)
 * by these bytes, in stream order. A segment the normaliser keeps out
 * is SL_SEG_DROP, counted in norm[] by reason.
 */
enum sl_seg_verdict sl_flow_client_segment(struct sl_flow_table *t,
					   const struct sl_flow_key *k,
					   uint64_t h, const struct sl_seg *s,
					   uint64_t now, sl_flow_event_fn fn,
					   void *arg);

/*
 * The same in two steps, for a caller that reads the flow first: its
 * entry (NULL: none), then the segment with it.
 */
struct sl_flow *sl_flow_get(struct sl_flow_table *t,
			    const struct sl_flow_key *k, uint64_t h);
enum sl_seg_verdict
sl_flow_client_segment_of(struct sl_flow_table *t, struct sl_flow *f,
			  const struct sl_flow_key *k, uint64_t h,
			  const struct sl_seg *s, uint64_t now,
			  sl_flow_event_fn fn, void *arg);

/* Payload bytes to forward after SL_SEG_PREFIX. */
uint32_t sl_flow_cut(const struct sl_flow_table *t);

/*
 * A parked segment is forwarded only up to cut, where a refused head
 * begins (the parked one, refused behind requests of its segment that
 * went on, or one behind it, sl_flow_resume's SL_SEG_PREFIX), and the
 * stream resumes there; that request is decided again when the client
 * sends it again. counted: the refused head was counted as a response
 * due (the parked one was; one refused on resuming was not).
 */
void sl_flow_cut_back(struct sl_flow_table *t, struct sl_flow *f, uint32_t seq,
		      const uint8_t *payload, uint32_t cut, int counted);

/* Counts a segment the caller kept out before it reached the table. */
void sl_flow_norm_drop(struct sl_flow_table *t, enum sl_norm_reason r);

/*
 * Goes on after a parked request was allowed: payload[from, len) is what
 * followed its head in the parked segment of len payload bytes. Events
 * fire for it as usual, at payload offsets, heads pipelined behind
 * included: a refusal there is SL_SEG_PREFIX (the granted bytes before
 * it go on, sl_flow_cut() of them). Without fn, an error in it (a body
 * refused) absorbs the flow from there on (SL_SEG_STOPPED) rather than
 * leave the stream unread; a head there would pass undecided, so a
 * caller without fn must know that none follows.
 */
enum sl_seg_verdict sl_flow_resume(struct sl_flow_table *t, struct sl_flow *f,
				   const uint8_t *payload, uint32_t from,
				   uint32_t len, sl_flow_event_fn fn,
				   void *arg);

/*
 * A server-to-client segment; k is in client/server orientation. Its
 * ACKs release decided ranges; its first payload bytes answer a pending
 * upgrade; a SYN-ACK's timestamps say whether PAWS applies.
 */
void sl_flow_server_segment(struct sl_flow_table *t,
			    const struct sl_flow_key *k, const struct sl_seg *s,
			    uint64_t now);
/* The same, and *mk: where a final response's status line ended in the
 * segment's payload (mk->off UINT32_MAX: none, or bytes sent again), and
 * whether it closed a stream framed to its FIN (mk->closed). */
void sl_flow_server_segment_mark(struct sl_flow_table *t,
				 const struct sl_flow_key *k,
				 const struct sl_seg *s, uint64_t now,
				 struct sl_resp_mark *mk);
/*
 * Whether a server segment is a SYN-ACK beginning a new connection on a
 * flow past its handshake (the backend no longer holds the old one):
 * sl_flow_server_segment_of then starts the flow anew, in the backend's
 * numbers, so a caller that translates them leaves this one as it is.
 */
int sl_flow_server_reopens(const struct sl_flow *f, const struct sl_seg *s);
/* The same for the flow f the caller looked up (sl_flow_lookup; NULL:
 * none), so that it can read the entry too without a second lookup. */
void sl_flow_server_segment_of(struct sl_flow_table *t, struct sl_flow *f,
			       const struct sl_seg *s, uint64_t now,
			       struct sl_resp_mark *mk);

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

/*
 * Whether the first n bytes of a Content-Length body (cl bytes in all)
 * are already refused as a request to a backend that ignores the length
 * (400 body_request, see sl_flow_client_segment): for a caller that must
 * know before it lets the flow read them without it (sl_flow_resume).
 */
int sl_flow_body_request(const uint8_t *p, uint32_t n, uint64_t cl);

/*
 * The caller translates f's sequence numbers from now on (SL_NF_XLATE):
 * its connection breaks if the entry goes, so it is evicted last, only
 * where every candidate is one too.
 */
void sl_flow_set_kept(struct sl_flow_table *t, const struct sl_flow *f);

struct sl_flow *sl_flow_lookup(struct sl_flow_table *t,
			       const struct sl_flow_key *k);
/*
 * The caller answered the client's bytes up to ack in the server's place
 * (a head taken out of the stream): they count as the server's ACK of
 * them would, for the order of answers and the decided ranges.
 */
void sl_flow_answered_to(struct sl_flow_table *t, struct sl_flow *f,
			 uint32_t ack);

/* An entry's place in its table: 0 .. capacity - 1, for side tables. */
uint32_t sl_flow_index(const struct sl_flow_table *t, const struct sl_flow *f);
/* The flow of the last client segment (NULL if it had none). */
struct sl_flow *sl_flow_last(const struct sl_flow_table *t);

/* Evicts up to budget idle entries; call once per worker loop. */
uint32_t sl_flow_expire(struct sl_flow_table *t, uint64_t now, uint32_t budget);

const struct sl_flow_stats *sl_flow_stats(const struct sl_flow_table *t);

/* Bytes of memory the table holds, for the memory benchmark. */
uint64_t sl_flow_table_bytes(const struct sl_flow_table *t);
/* Of those, the head buffers: head_slots x max_head_bytes, whatever the
 * capacity, so not a cost per flow. */
uint64_t sl_flow_head_pool_bytes(const struct sl_flow_table *t);

#endif /* SL_FLOW_H */

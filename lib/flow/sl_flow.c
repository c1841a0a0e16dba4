/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "sl_flow_priv.h"

#define STOP    (-1)
#define NO_SLOT (-2)
#define PARKED  (-3)

struct seg_ctx {
	struct sl_flow_table *t;
	struct sl_flow *f;
	sl_flow_event_fn fn;
	void *arg;
};

/*
 * Where a flow is picked up mid-stream (after a restart, or after its
 * entry was evicted) the bytes may be the middle of a body. Only a segment
 * that starts with a request line is taken as a request boundary.
 */
static int
looks_like_request(const uint8_t *p, uint32_t n)
{
	static const char *const m[] = {"GET ",     "POST ",    "PUT ",
					"DELETE ",  "HEAD ",    "PATCH ",
					"OPTIONS ", "CONNECT ", "TRACE "};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		size_t l = strlen(m[i]);

		if (n >= l && memcmp(p, m[i], l) == 0)
			return 1;
	}
	return 0;
}

static enum sl_req_action
emit(struct seg_ctx *c, uint8_t kind, const struct sl_http_req *req,
     uint32_t head_len, uint32_t seg_end)
{
	struct sl_flow_event ev = {.kind = kind,
				   .head_len = head_len,
				   .seg_end = seg_end,
				   .req = req};
	enum sl_req_action a =
		c->fn != NULL ? c->fn(c->arg, c->f, &ev) : SL_REQ_CONTINUE;

	if (a == SL_REQ_STOP) {
		sl_flow_release_head(c->t, c->f);
		c->f->state = SL_FLOW_ABSORB;
	}
	return a;
}

/* An error leaves the stream's framing unknown: stop reading it as HTTP. */
static int
give_up(struct seg_ctx *c, uint8_t kind, const struct sl_http_req *req,
	uint32_t seg_end)
{
	if (emit(c, kind, req, 0, seg_end) == SL_REQ_CONTINUE) {
		sl_flow_release_head(c->t, c->f);
		c->f->state = SL_FLOW_PASS;
	}
	return STOP;
}

/* Sets up body skipping after a head (RFC 9112 6.3, requests only). */
static void
after_request(struct sl_flow *f, const struct sl_http_req *req)
{
	f->requests++;
	if (req->upgrade) {
		f->state = SL_FLOW_PASS;
	} else if (req->chunked) {
		f->state = SL_FLOW_BODY_CHUNKED;
		sl_chunked_init(&f->chunk);
	} else if (req->has_cl && req->content_length > 0) {
		f->state = SL_FLOW_BODY_CL;
		f->body_remaining = req->content_length;
	} else {
		f->state = SL_FLOW_HEAD;
	}
}

static int
complete(struct seg_ctx *c, const struct sl_http_req *req, uint32_t head_len,
	 uint32_t seg_end)
{
	enum sl_req_action a = emit(c, SL_EV_REQUEST, req, head_len, seg_end);

	if (a == SL_REQ_STOP)
		return STOP;
	after_request(c->f, req);
	if (a == SL_REQ_PARK) {
		c->f->parked = 1;
		return PARKED;
	}
	return 0;
}

/*
 * A head can only be complete, or be taken as complete by a lenient
 * backend, once a line ends in an empty line ("\n\n" or "\n\r\n").
 * Until then there is nothing to decide and no reason to parse again,
 * which keeps a head sent a byte at a time linear instead of quadratic.
 */
static int
may_end(const uint8_t *b, uint32_t from, uint32_t to)
{
	uint32_t i;

	for (i = from; i + 1 < to; i++) {
		if (b[i] != '\n')
			continue;
		if (b[i + 1] == '\n' ||
		    (b[i + 1] == '\r' && i + 2 < to && b[i + 2] == '\n'))
			return 1;
	}
	return 0;
}

static int
head_unbuffered(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow_table *t = c->t;
	struct sl_flow *f = c->f;
	struct sl_http_req req;
	int rc = sl_http_parse_request((const char *)p, n, t->p.http, &req);

	if (rc > 0) {
		int r = complete(c, &req, (uint32_t)rc, off + (uint32_t)rc);

		return r == 0 ? rc : r;
	}
	if (rc == SL_HTTP_ERROR)
		return give_up(c, SL_EV_PARSE_ERROR, &req, off + n);
	if (n >= t->p.max_head_bytes)
		return give_up(c, SL_EV_HEAD_TOO_LARGE, NULL, off + n);
	if (t->n_free_heads == 0) {
		t->st.head_slot_exhausted++;
		return NO_SLOT;
	}
	f->slot = (int32_t)t->free_heads[--t->n_free_heads];
	memcpy(t->heads + (size_t)f->slot * t->p.max_head_bytes, p, n);
	f->head_used = (uint16_t)n;
	return (int)n;
}

static int
head_buffered(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow_table *t = c->t;
	struct sl_flow *f = c->f;
	uint8_t *buf = t->heads + (size_t)f->slot * t->p.max_head_bytes;
	uint32_t old = f->head_used;
	uint32_t take = t->p.max_head_bytes - old;
	struct sl_http_req req;
	int rc;

	if (take > n)
		take = n;
	memcpy(buf + old, p, take);
	f->head_used = (uint16_t)(old + take);
	if (f->head_used < t->p.max_head_bytes &&
	    !may_end(buf, old >= 2 ? old - 2 : 0, f->head_used))
		return (int)take;
	rc = sl_http_parse_request((const char *)buf, f->head_used, t->p.http,
				   &req);
	if (rc > 0) {
		uint32_t here = (uint32_t)rc - old;

		t->st.reassembled++;
		/* The request points into buf: release only after the event. */
		rc = complete(c, &req, (uint32_t)rc, off + here);
		sl_flow_release_head(t, f);
		return rc == 0 ? (int)here : rc;
	}
	if (rc == SL_HTTP_ERROR)
		return give_up(c, SL_EV_PARSE_ERROR, &req, off + take);
	if (f->head_used >= t->p.max_head_bytes)
		return give_up(c, SL_EV_HEAD_TOO_LARGE, NULL, off + take);
	return (int)take;
}

static int
body_bytes(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow *f = c->f;
	long r;
	int done;

	if (f->state == SL_FLOW_BODY_CL) {
		uint64_t take = n < f->body_remaining ? n : f->body_remaining;

		f->body_remaining -= take;
		if (f->body_remaining == 0)
			f->state = SL_FLOW_HEAD;
		return (int)take;
	}
	r = sl_chunked_consume(&f->chunk, (const char *)p, n, &done);
	if (r < 0) {
		struct sl_http_req req = {.error = SL_HTTP_E_CHUNK};

		return give_up(c, SL_EV_CHUNK_ERROR, &req, off + n);
	}
	if (done)
		f->state = SL_FLOW_HEAD;
	return (int)r;
}

/* Feeds in-order new bytes through the flow's state machine. */
static enum sl_seg_verdict
process(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow *f = c->f;

	if (f->state == SL_FLOW_RESYNC && looks_like_request(p, n))
		f->state = SL_FLOW_HEAD;
	while (n > 0) {
		int r;

		switch (f->state) {
		case SL_FLOW_HEAD:
			r = f->slot < 0 ? head_unbuffered(c, p, n, off)
					: head_buffered(c, p, n, off);
			break;
		case SL_FLOW_BODY_CL:
		case SL_FLOW_BODY_CHUNKED:
			r = body_bytes(c, p, n, off);
			break;
		case SL_FLOW_ABSORB:
			return SL_SEG_DROP;
		default: /* RESYNC, PASS: forwarded as they are */
			return SL_SEG_FORWARD;
		}
		if (r == NO_SLOT)
			return SL_SEG_DROP;
		if (r == PARKED)
			return SL_SEG_PARKED;
		if (r == STOP)
			return f->state == SL_FLOW_ABSORB ? SL_SEG_STOPPED
							  : SL_SEG_FORWARD;
		p += r;
		n -= (uint32_t)r;
		off += (uint32_t)r;
	}
	return SL_SEG_FORWARD;
}

static struct sl_flow *
on_syn(struct sl_flow_table *t, struct sl_flow *f, const struct sl_flow_key *k,
       uint64_t h, uint32_t seq, uint64_t now)
{
	if (f == NULL) {
		f = sl_flow_insert(t, k, h, now);
	} else {
		/* A new connection on a reused 4-tuple, or a retransmitted SYN.
		 */
		sl_flow_release_head(t, f);
		f->c_fin = f->s_fin = 0;
		f->requests = 0;
	}
	f->state = t->p.track_only ? SL_FLOW_PASS : SL_FLOW_HEAD;
	f->c_next = seq + 1;
	return f;
}

static enum sl_seg_verdict
data(struct seg_ctx *c, uint32_t seq, const uint8_t *payload, uint32_t len)
{
	struct sl_flow *f = c->f;
	int32_t d = (int32_t)(seq - f->c_next);
	uint32_t skip;
	enum sl_seg_verdict v;

	if (d > 0) {
		if (f->state == SL_FLOW_PASS)
			return SL_SEG_FORWARD;
		/* Ahead of a gap: never forward past undecided bytes. */
		c->t->st.ooo_dropped++;
		return SL_SEG_DROP;
	}
	if ((int64_t)d + len <= 0) {
		/* Already seen and decided: the backend may need it again. */
		c->t->st.retransmits++;
		return f->state == SL_FLOW_ABSORB ? SL_SEG_DROP
						  : SL_SEG_FORWARD;
	}
	skip = (uint32_t)-d;
	if (skip)
		c->t->st.retransmits++;
	f->seg_new = f->c_next;
	v = process(c, payload + skip, len - skip, skip);
	if (v != SL_SEG_DROP || f->state == SL_FLOW_ABSORB)
		f->c_next += len - skip;
	return v;
}

/*
 * After we answered the client ourselves: whatever it still sends is
 * swallowed, and data or FIN is acknowledged so that its stack closes
 * cleanly instead of retransmitting into the void.
 */
static enum sl_seg_verdict
absorb(struct sl_flow *f, uint32_t seq, uint8_t flags, uint32_t len)
{
	uint32_t end = seq + len + (flags & 0x01);

	if (len == 0 && !(flags & 0x01))
		return SL_SEG_DROP;
	if ((int32_t)(end - f->c_next) > 0)
		f->c_next = end;
	if (flags & 0x01)
		f->c_fin = f->s_fin = 1; /* both ends done: expires soon */
	return SL_SEG_ABSORBED;
}

enum sl_seg_verdict
sl_flow_client_segment(struct sl_flow_table *t, const struct sl_flow_key *k,
		       uint32_t seq, uint8_t tcp_flags, const uint8_t *payload,
		       uint32_t len, uint64_t now, sl_flow_event_fn fn,
		       void *arg)
{
	return sl_flow_client_segment_h(t, k, sl_flow_key_hash(t, k), seq,
					tcp_flags, payload, len, now, fn, arg);
}

enum sl_seg_verdict
sl_flow_client_segment_h(struct sl_flow_table *t, const struct sl_flow_key *k,
			 uint64_t h, uint32_t seq, uint8_t tcp_flags,
			 const uint8_t *payload, uint32_t len, uint64_t now,
			 sl_flow_event_fn fn, void *arg)
{
	struct seg_ctx c = {
		.t = t, .f = sl_flow_find(t, k, h), .fn = fn, .arg = arg};
	enum sl_seg_verdict v = SL_SEG_FORWARD;

	t->last = NULL;
	if (tcp_flags & 0x04) { /* RST */
		if (c.f != NULL) {
			sl_flow_remove(t, c.f);
			t->st.closed++;
		}
		return SL_SEG_FORWARD;
	}
	if (tcp_flags & 0x02) { /* SYN */
		c.f = on_syn(t, c.f, k, h, seq, now);
		seq++;
	} else if (c.f == NULL) {
		if (len == 0)
			return SL_SEG_FORWARD;
		c.f = sl_flow_insert(t, k, h, now);
		t->st.midstream++;
		c.f->c_next = seq;
		c.f->state = t->p.track_only ? SL_FLOW_PASS
			     : looks_like_request(payload, len)
				     ? SL_FLOW_HEAD
				     : SL_FLOW_RESYNC;
	}
	sl_flow_touch(t, c.f, now);
	t->last = c.f;
	if (c.f->parked && (len > 0 || (tcp_flags & 0x01)))
		return SL_SEG_HOLD;
	if (c.f->state == SL_FLOW_ABSORB)
		return absorb(c.f, seq, tcp_flags, len);
	if (len > 0)
		v = data(&c, seq, payload, len);
	if ((tcp_flags & 0x01) && v != SL_SEG_DROP &&
	    seq + len == c.f->c_next) {
		c.f->c_fin = 1;
		c.f->c_next++;
	}
	return v;
}

struct sl_flow *
sl_flow_last(const struct sl_flow_table *t)
{
	return t->last;
}

enum sl_seg_verdict
sl_flow_resume(struct sl_flow_table *t, struct sl_flow *f, const uint8_t *rest,
	       uint32_t len, sl_flow_event_fn fn, void *arg)
{
	struct seg_ctx c = {.t = t, .f = f, .fn = fn, .arg = arg};

	f->parked = 0;
	if (len == 0 || f->state == SL_FLOW_ABSORB)
		return SL_SEG_FORWARD;
	return process(&c, rest, len, 0);
}

void
sl_flow_server_segment(struct sl_flow_table *t, const struct sl_flow_key *k,
		       uint32_t seq, uint32_t ack, uint8_t tcp_flags,
		       uint32_t len, uint64_t now)
{
	struct sl_flow *f = sl_flow_lookup(t, k);
	uint32_t end;

	if (f == NULL)
		return;
	if (tcp_flags & 0x04) {
		sl_flow_remove(t, f);
		t->st.closed++;
		return;
	}
	sl_flow_touch(t, f, now);
	end = seq + len + ((tcp_flags & 0x03) ? 1 : 0);
	if (!f->s_seen || (int32_t)(end - f->s_next) > 0)
		f->s_next = end;
	if ((tcp_flags & 0x10) && (!f->s_seen || (int32_t)(ack - f->s_ack) > 0))
		f->s_ack = ack;
	f->s_seen = 1;
	if (tcp_flags & 0x01)
		f->s_fin = 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "sl_flow_priv.h"

#define STOP    (-1)
#define NO_SLOT (-2)
#define PARKED  (-3)
#define CUT     (-4) /* refused behind requests let through: t->cut */
#define DEFER   (-5) /* refused before earlier answers: decide again */
#define KEPT    (-6) /* answered, the connection kept: the head taken out */

struct seg_ctx {
	struct sl_flow_table *t;
	struct sl_flow *f;
	sl_flow_event_fn fn;
	void *arg;
	uint32_t seq0;    /* sequence of payload offset 0 */
	uint16_t allowed; /* requests let through in this segment */
	uint8_t buffered; /* the head being completed spans segments */
	uint32_t first;   /* payload offset of the first new byte */
};

static enum sl_req_action
emit(struct seg_ctx *c, uint8_t kind, const struct sl_http_req *req,
     uint32_t head_len, uint32_t seg_end)
{
	/* a head completed from its buffer ends where the segment's new
	 * bytes start: nothing went on before it */
	struct sl_flow_event ev = {.kind = kind,
				   .first = c->buffered ||
					    seg_end - head_len == c->first,
				   .head_len = head_len,
				   .seg_end = seg_end,
				   .buffered = c->buffered,
				   .req = req};
	enum sl_req_action a =
		c->fn != NULL ? c->fn(c->arg, c->f, &ev) : SL_REQ_CONTINUE;

	if (a == SL_REQ_STOP || a == SL_REQ_KEEP) {
		sl_flow_release_head(c->t, c->f);
		c->f->state = a == SL_REQ_STOP ? SL_FLOW_ABSORB : SL_FLOW_HEAD;
	}
	return a;
}

/*
 * An error no one answered (a resume without a callback) or a caller
 * let through: the stream is no longer read as HTTP. With no one to
 * answer it, it is absorbed, never passed: what follows would reach
 * the backend unread.
 */
static int
unanswered(struct seg_ctx *c)
{
	sl_flow_release_head(c->t, c->f);
	c->f->state = c->fn == NULL ? SL_FLOW_ABSORB : SL_FLOW_PASS;
	return STOP;
}

/* An error leaves the stream's framing unknown: stop reading it as HTTP. */
static int
give_up(struct seg_ctx *c, uint8_t kind, const struct sl_http_req *req,
	uint32_t seg_end)
{
	if (c->fn == NULL || emit(c, kind, req, 0, seg_end) == SL_REQ_CONTINUE)
		return unanswered(c);
	return STOP;
}

/*
 * Sets up body skipping after a head (RFC 9112 6.3, requests only). An
 * upgrade leaves HTTP only once the server agrees (sl_flow_server_segment).
 */
static void
after_request(struct sl_flow *f, const struct sl_http_req *req)
{
	f->requests++;
	f->body_line = 0; /* the body before it, read to its end */
	/* in any case, as a server that upper-cases methods frames its
	 * answer (sl_method_bit_any_case) */
	sl_resp_expect(&f->resp,
		       req->method.len == 4 &&
			       strncasecmp(req->method.p, "HEAD", 4) == 0);
	if (req->upgrade && !req->chunked &&
	    !(req->has_cl && req->content_length > 0)) {
		f->state = SL_FLOW_UPGRADE;
		sl_resp_expect_tunnel(
			&f->resp,
			req->method.len == 7 &&
				memcmp(req->method.p, "CONNECT", 7) == 0);
	} else if (req->chunked) {
		f->state = SL_FLOW_BODY_CHUNKED;
		sl_chunked_init(&f->chunk);
	} else if (req->has_cl && req->content_length > 0) {
		f->state = SL_FLOW_BODY_CL;
		f->body_remaining = req->content_length;
		f->body_line = sl_body_line_start();
	} else {
		f->state = SL_FLOW_HEAD;
	}
}

/*
 * A refusal is answered in the place of the request's response, so it
 * must not overtake responses still due: behind requests this segment
 * let through, only those are forwarded (the client sends the rest
 * again); behind responses still to come (or, where they cannot be
 * framed, requests the server has not yet acknowledged), nothing is,
 * and the refusal waits for the client's retransmission.
 */
static int
refusal_order(struct seg_ctx *c, uint32_t start)
{
	struct sl_flow *f = c->f;

	if (c->allowed > 0) {
		c->t->cut = start;
		return CUT;
	}
	/* acknowledged is not answered: a refusal sent while a response
	 * is still coming would land inside it */
	if (sl_resp_due(&f->resp) > 0)
		return DEFER;
	if (f->requests > 0 && f->s_seen &&
	    (int32_t)(f->s_ack - (c->seq0 + start)) < 0)
		return DEFER;
	return STOP;
}

/*
 * Whether the body before this head ended in the first letters of a
 * method that its method completes (sl_flow_body.c): a server ignoring
 * the body's length reads the two as one, and acts on the head under a
 * method sluice would not have decided it by.
 */
static int
glued_method(const struct sl_flow *f, const struct sl_http_req *req)
{
	return sl_body_glued(f->body_line, req->method.p,
			     (uint32_t)req->method.len);
}

/*
 * Why a head that parsed is refused before it is decided, if it is: a
 * method glued to the body before it, or an upgrade whose answer could
 * be another's. A 101 switches the connection to bytes sluice passes
 * unread, so it must be the answer to the upgrade and nothing else;
 * behind a HEAD, a 204 or a 304 that is so only by framing, which a
 * backend that sends those a body anyway (a handler that serves HEAD
 * as GET) breaks: a 101 in that body would switch the connection while
 * the backend still reads requests. No client pipelines an upgrade; one
 * that did is answered in order (refusal_order): sent again once the
 * responses ahead of it came, the upgrade goes on, unless one of them
 * declared a body it was framed without: that body may still be on its
 * way (held by a window the client keeps shut), and nothing tells its
 * bytes from the upgrade's answer.
 */
static enum sl_http_err
refused_head(const struct sl_flow *f, const struct sl_http_req *req)
{
	if (__builtin_expect(f->body_line != 0, 0) && glued_method(f, req))
		return SL_HTTP_E_BODY_REQUEST;
	if (req->upgrade && sl_resp_due(&f->resp) > 0)
		return SL_HTTP_E_UPGRADE_PIPELINED;
	if (req->upgrade && sl_resp_unsure(&f->resp))
		return SL_HTTP_E_UPGRADE_FRAMING;
	return SL_HTTP_E_NONE;
}

/* A head answered (STOP) or taken out (KEEP), in the order of answers:
 * what complete() returns for it. */
static int
answered_in_order(struct seg_ctx *c, enum sl_req_action a, uint32_t head_len,
		  uint32_t seg_end)
{
	int r = !c->buffered && seg_end >= head_len
			? refusal_order(c, seg_end - head_len)
			: STOP;

	if (r != STOP)
		c->f->state = SL_FLOW_HEAD; /* not answered after all */
	else if (a == SL_REQ_KEEP)
		r = KEPT; /* the stream goes on after the head */
	return r;
}

/* A head refused for err before it is decided (refused_head). Apart, so
 * that the error's request, a large struct, is made only here. */
static __attribute__((noinline)) int
refused(struct seg_ctx *c, enum sl_http_err err, uint32_t head_len,
	uint32_t seg_end)
{
	struct sl_http_req e = {.error = (uint8_t)err};
	enum sl_req_action a;

	if (c->fn == NULL)
		return unanswered(c);
	a = emit(c, SL_EV_PARSE_ERROR, &e, head_len, seg_end);
	if (a == SL_REQ_CONTINUE)
		return unanswered(c);
	return answered_in_order(c, a, head_len, seg_end);
}

static int
complete(struct seg_ctx *c, const struct sl_http_req *req, uint32_t head_len,
	 uint32_t seg_end)
{
	enum sl_http_err err = refused_head(c->f, req);
	enum sl_req_action a;

	if (__builtin_expect(err != SL_HTTP_E_NONE, 0))
		return refused(c, err, head_len, seg_end);
	a = emit(c, SL_EV_REQUEST, req, head_len, seg_end);
	if (a == SL_REQ_STOP || a == SL_REQ_KEEP)
		return answered_in_order(c, a, head_len, seg_end);
	c->allowed++;
	after_request(c->f, req);
	if (a == SL_REQ_PARK) {
		c->f->parked = 1;
		return PARKED;
	}
	return 0;
}

/*
 * Whether a lenient server could act on the head so far, and so whether
 * it must be decided before these bytes go on: at the end of the request
 * line, where an HTTP/0.9 server serves "GET /p" (nginx does, and sluice
 * refuses such a line), and at a line that ends in an empty one ("\n\n"
 * or "\n\r\n"), where every HTTP/1.x server takes the head as whole.
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

/*
 * Whether b[from, to) ends a line that is not empty: the request line
 * (empty lines before it are passed over, RFC 9112 2.2).
 */
static int
line_ends(const uint8_t *b, uint32_t from, uint32_t to)
{
	const uint8_t *lf = memchr(b + from, '\n', to - from);

	for (; lf != NULL;
	     lf = memchr(lf + 1, '\n', (size_t)(b + to - (lf + 1)))) {
		uint32_t i = (uint32_t)(lf - b);

		if (i > 0 && b[i - 1] != '\n' &&
		    !(b[i - 1] == '\r' && (i == 1 || b[i - 2] == '\n')))
			return 1;
	}
	return 0;
}

/* The buffered head, old bytes of it before these: parse it now? */
static int
worth_parsing(const struct sl_flow_table *t, struct sl_flow *f,
	      const uint8_t *buf, uint32_t old)
{
	if (f->head_used >= t->p.max_head_bytes)
		return 1;
	if (!(f->nflags & SL_NF_LINE) && line_ends(buf, old, f->head_used)) {
		f->nflags |= SL_NF_LINE;
		return 1;
	}
	return may_end(buf, old >= 2 ? old - 2 : 0, f->head_used);
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
	if (sl_flow_take_head(t, f, t->now) < 0)
		return NO_SLOT;
	memcpy(t->heads + (size_t)f->slot * t->p.max_head_bytes, p, n);
	f->head_used = (uint16_t)n;
	/* parsed whole above: a request line that ended in it was valid */
	if (line_ends(p, 0, n))
		f->nflags |= SL_NF_LINE;
	else
		f->nflags &= (uint8_t)~SL_NF_LINE;
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
	if (!worth_parsing(t, f, buf, old))
		return (int)take;
	rc = sl_http_parse_request((const char *)buf, f->head_used, t->p.http,
				   &req);
	if (rc > 0) {
		uint32_t here = (uint32_t)rc - old;

		t->st.reassembled++;
		/* The request points into buf: release only after the event. */
		c->buffered = 1;
		rc = complete(c, &req, (uint32_t)rc, off + here);
		c->buffered = 0;
		sl_flow_release_head(t, f);
		return rc == 0 ? (int)here : rc;
	}
	if (rc == SL_HTTP_ERROR)
		return give_up(c, SL_EV_PARSE_ERROR, &req, off + take);
	if (f->head_used >= t->p.max_head_bytes)
		return give_up(c, SL_EV_HEAD_TOO_LARGE, NULL, off + take);
	return (int)take;
}

/* Where a Content-Length body's first line, read on in p[0, take), is
 * one a server ignoring the length could act on as a request (400); 0
 * nowhere, and at once once the line is told apart. */
static uint32_t
body_request_at(struct sl_flow *f, const uint8_t *p, uint32_t take)
{
	if (__builtin_expect(f->body_line == 0, 1))
		return 0;
	return sl_body_line(&f->body_line, p, take, take == f->body_remaining);
}

static int
body_bytes(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow *f = c->f;
	long r;
	int done;

	if (f->state == SL_FLOW_BODY_CL) {
		uint64_t take = n < f->body_remaining ? n : f->body_remaining;
		uint32_t at = body_request_at(f, p, (uint32_t)take);

		if (at != 0) {
			struct sl_http_req req = {
				.error = SL_HTTP_E_BODY_REQUEST};

			return give_up(c, SL_EV_PARSE_ERROR, &req, off + at);
		}
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
/*
 * The bytes from payload offset off on wait (counted as r): what came
 * before them in this segment goes on alone, if anything did.
 */
static enum sl_seg_verdict
hold_back(struct seg_ctx *c, enum sl_norm_reason r, uint32_t off)
{
	c->t->st.norm[r]++;
	c->t->cut = off;
	return off > c->first ? SL_SEG_PREFIX : SL_SEG_DROP;
}

/* Feeds in-order new bytes through the flow's state machine. */
static enum sl_seg_verdict
process(struct seg_ctx *c, const uint8_t *p, uint32_t n, uint32_t off)
{
	struct sl_flow *f = c->f;

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
		case SL_FLOW_UPGRADE:
			/* pipelined behind an upgrade: its fate is the
			 * server's answer; until then it is not sent */
			return hold_back(c, SL_NR_UPGRADE, off);
		default: /* PASS: forwarded as it is */
			return SL_SEG_FORWARD;
		}
		if (r == NO_SLOT) {
			/* no buffer for the head: what went before it goes
			 * on alone, the client sends the head again */
			c->t->cut = off;
			return off > c->first ? SL_SEG_PREFIX : SL_SEG_DROP;
		}
		if (r == PARKED)
			return SL_SEG_PARKED;
		if (r == CUT)
			return SL_SEG_PREFIX;
		if (r == DEFER)
			return hold_back(c, SL_NR_ORDER, off);
		if (r == KEPT)
			return SL_SEG_KEPT;
		if (r == STOP)
			return f->state == SL_FLOW_ABSORB ? SL_SEG_STOPPED
							  : SL_SEG_FORWARD;
		p += r;
		n -= (uint32_t)r;
		off += (uint32_t)r;
	}
	return SL_SEG_FORWARD;
}

void
sl_flow_begin(struct sl_flow_table *t, struct sl_flow *f, uint32_t isn,
	      int has_ts, uint32_t tsval, uint16_t mss)
{
	/* whatever the entry held was another connection's */
	sl_flow_gone(t, f);
	sl_flow_release_head(t, f);
	memset(&f->body_remaining, 0,
	       offsetof(struct sl_flow, bucket) -
		       offsetof(struct sl_flow, body_remaining));
	f->slot = -1;
	sl_flow_rec_drop(t, f, 0);
	f->c_fin = f->s_fin = f->s_seen = 0;
	f->parked = 0;
	f->park_idx = UINT16_MAX; /* a head parked on it is no longer ours */
	sl_resp_init(&f->resp);
	t->estab[f - t->flows] = 0;
	f->state = t->p.track_only ? SL_FLOW_PASS : SL_FLOW_HEAD;
	f->c_next = isn + 1;
	f->nflags = SL_NF_SYN | (has_ts ? SL_NF_CTS : 0);
	f->xflags = 0;
	f->mss_k = (uint8_t)(mss >> 8);
	f->ts_recent = tsval;
}

/*
 * A SYN. A new connection (no entry, or one both sides closed) starts
 * here; on an open one it changes nothing: the backend answers such a
 * SYN with a challenge ACK and keeps its state (RFC 5961 4), so must we
 * (unless the backend answers it with a SYN-ACK: sl_flow_server.c).
 * Its payload is never stream data: the caller forwards the SYN without
 * it (SL_SEG_PREFIX, nothing kept), so that the backend acknowledges
 * ISN + 1 only, with Fast Open or without.
 */
static struct sl_flow *
on_syn(struct sl_flow_table *t, struct sl_flow *f, const struct sl_flow_key *k,
       uint64_t h, const struct sl_seg *s, uint64_t now)
{
	if (s->len > 0)
		t->st.syn_data++;
	if (f != NULL && !(f->c_fin && f->s_fin) &&
	    ((f->nflags & SL_NF_PLACED) || f->s_seen)) {
		t->st.syn_ignored++;
		return f;
	}
	if (f == NULL)
		f = sl_flow_insert(t, k, h, now);
	sl_flow_begin(t, f, s->seq, s->has_ts, s->tsval, s->mss);
	return f;
}

/*
 * A client segment overlapping bytes already decided: what it repeats
 * of them must be what was decided. Returns the count of old bytes, or
 * -1 once counted as dropped.
 */
static int64_t
overlap(struct seg_ctx *c, const struct sl_seg *s)
{
	struct sl_flow *f = c->f;
	int32_t d = (int32_t)(s->seq - f->c_next);
	uint32_t old;
	enum sl_norm_reason r;

	if (d >= 0)
		return 0;
	old = (uint32_t)-d < s->len ? (uint32_t)-d : s->len;
	r = c->t->p.no_normalise
		    ? SL_NR_NONE
		    : sl_flow_rec_check(c->t, f, s->seq, s->payload, old);
	if (r != SL_NR_NONE) {
		c->t->st.norm[r]++;
		return -1;
	}
	c->t->st.retransmits++;
	return old;
}

/* Whether the next n bytes are all opaque body: nothing to keep. */
static int
opaque(const struct sl_flow *f, uint32_t n)
{
	/* a body's first line is read (sl_flow_body.c): decided bytes */
	if (f->state == SL_FLOW_BODY_CL)
		return f->body_line == 0 && f->body_remaining >= n;
	if (f->state == SL_FLOW_BODY_CHUNKED)
		return sl_chunked_opaque(&f->chunk) >= n;
	return f->state == SL_FLOW_PASS;
}

static enum sl_seg_verdict
data(struct seg_ctx *c, const struct sl_seg *s)
{
	struct sl_flow *f = c->f;
	int32_t d = (int32_t)(s->seq - f->c_next);
	int64_t old;
	uint32_t n, taken;
	int keep;
	enum sl_seg_verdict v;

	if (d > 0) {
		if (f->state == SL_FLOW_PASS)
			return SL_SEG_FORWARD;
		/* Ahead of a gap: never forward past undecided bytes. */
		c->t->st.ooo_dropped++;
		return SL_SEG_DROP;
	}
	old = overlap(c, s);
	if (old < 0)
		return SL_SEG_DROP;
	if (old == s->len) /* already decided: the backend may need it */
		return f->state == SL_FLOW_ABSORB ? SL_SEG_DROP
						  : SL_SEG_FORWARD;
	n = s->len - (uint32_t)old;
	keep = !opaque(f, n) && !c->t->p.no_normalise;
	if (keep && f->rec_n == SL_REC_MAX) {
		c->t->st.norm[SL_NR_REPLAY_FULL]++;
		return SL_SEG_DROP;
	}
	f->seg_new = f->c_next;
	c->seq0 = s->seq;
	c->first = (uint32_t)old;
	v = process(c, s->payload + old, n, (uint32_t)old);
	switch (v) {
	case SL_SEG_DROP:
		return f->state == SL_FLOW_ABSORB ? v : SL_SEG_DROP;
	case SL_SEG_PREFIX:
		taken = c->t->cut - (uint32_t)old;
		break;
	default:
		taken = n;
	}
	/* answered heads are never the server's: nothing to compare later
	 * copies with (a copy of a kept one is the caller's to answer) */
	if (keep && v != SL_SEG_STOPPED && v != SL_SEG_KEPT)
		sl_flow_rec_add(c->t, f, f->c_next, s->payload + old, taken,
				v == SL_SEG_FORWARD);
	f->c_next += taken;
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
	uint32_t end = seq + len + (flags & SL_FL_FIN);

	if (len == 0 && !(flags & SL_FL_FIN))
		return SL_SEG_DROP;
	if ((int32_t)(end - f->c_next) > 0)
		f->c_next = end;
	if (flags & SL_FL_FIN)
		f->c_fin = f->s_fin = 1; /* both ends done: expires soon */
	return SL_SEG_ABSORBED;
}

/*
 * A flow past its handshake is placed by the client's ACK of the
 * server's SYN. One picked up mid-stream (after a restart, an eviction,
 * an idle timeout, or an RST the backend did not take) is never placed:
 * the server's ACK says where the backend's stream is, not what the
 * backend makes of the bytes there. Bytes that read as a head here may
 * be inside a body or a head it is still reading, and what it reads as
 * a request after them would reach it undecided. Once the server has
 * said where it is (the caller asks it: SL_SEG_PROBE), both sides are
 * reset, the backend's at that place; the client's next connection is
 * read from its SYN.
 */
static enum sl_seg_verdict
place(struct seg_ctx *c)
{
	struct sl_flow *f = c->f;

	if (f->nflags & SL_NF_SYNACK) {
		/* the handshake completes with a valid ACK (checked) */
		f->nflags |= SL_NF_PLACED;
		sl_flow_set_estab(c->t, f);
		return SL_SEG_FORWARD;
	}
	if (f->nflags & SL_NF_SYN) {
		c->t->st.norm[SL_NR_UNPLACED]++;
		return SL_SEG_DROP;
	}
	if (!f->s_seen) {
		c->t->st.norm[SL_NR_MIDSTREAM]++;
		c->t->st.probes++;
		return SL_SEG_PROBE;
	}
	c->t->st.midstream_reset++;
	f->c_next = f->s_ack;
	sl_flow_release_head(c->t, f);
	f->state = SL_FLOW_ABSORB;
	return SL_SEG_RESET;
}

static struct sl_flow *
pick_up(struct sl_flow_table *t, const struct sl_flow_key *k, uint64_t h,
	const struct sl_seg *s, uint64_t now)
{
	struct sl_flow *f = sl_flow_insert(t, k, h, now);

	t->st.midstream++;
	f->c_next = s->seq;
	sl_resp_lost(&f->resp); /* where the server's responses are: unknown */
	f->state = t->p.track_only ? SL_FLOW_PASS : SL_FLOW_RESYNC;
	return f;
}

/*
 * RFC 5961 3: only an RST at exactly the next sequence ends the flow. A
 * pickup not yet placed has no sequence of its own to defend.
 */
static enum sl_seg_verdict
on_rst(struct sl_flow_table *t, struct sl_flow *f, const struct sl_seg *s)
{
	if (f == NULL)
		return SL_SEG_FORWARD;
	if (s->seq == f->c_next || t->p.track_only ||
	    !(f->nflags & (SL_NF_PLACED | SL_NF_SYN))) {
		sl_flow_remove(t, f);
		t->st.closed++;
	} else {
		t->st.rst_ignored++;
	}
	return SL_SEG_FORWARD;
}

static void
note_ts(struct sl_flow *f, const struct sl_seg *s)
{
	if (s->has_ts && (int32_t)(s->tsval - f->ts_recent) > 0 &&
	    (int32_t)(s->seq - f->c_next) <= 0)
		f->ts_recent = s->tsval;
}

/*
 * New bytes where a request would start, on a connection whose server has
 * sent its FIN: it cannot answer them, and must not act on them (RFC 9112
 * 9.6). Mostly a client that sent its next request on a connection it
 * thought kept, just as the server closed it (the keep-alive race): the
 * client retries on a new connection. Decided here, the request would be
 * charged twice (and, where its cost is read from the response, the most
 * it could cost, for a response that cannot come); forwarded undecided, a
 * backend that read on after its FIN would act on it unlimited. So it is
 * neither: both sides are reset, as the backend's own stack would do.
 */
static enum sl_seg_verdict
after_close(struct seg_ctx *c)
{
	c->t->st.after_close++;
	sl_flow_release_head(c->t, c->f);
	c->f->state = SL_FLOW_ABSORB;
	return SL_SEG_RESET;
}

/* Data or FIN on a flow past its SYN, in the normaliser's terms. */
static enum sl_seg_verdict
stream(struct seg_ctx *c, const struct sl_seg *s)
{
	struct sl_flow *f = c->f;
	enum sl_norm_reason r =
		c->t->p.no_normalise ? SL_NR_NONE : sl_flow_seg_check(f, s);
	enum sl_seg_verdict v = SL_SEG_FORWARD;

	if (r != SL_NR_NONE) {
		c->t->st.norm[r]++;
		return SL_SEG_DROP;
	}
	if (!(f->nflags & SL_NF_PLACED)) {
		v = place(c);
		if (v != SL_SEG_FORWARD)
			return v;
	}
	if (f->nflags & SL_NF_TIMEDOUT) {
		/* its head lost its buffer: 408, and the backend's half of
		 * the head is reset from where it stands */
		f->nflags &= (uint8_t)~SL_NF_TIMEDOUT;
		f->seg_new = f->c_next;
		emit(c, SL_EV_HEAD_TIMEOUT, NULL, 0, s->len);
		sl_flow_release_head(c->t, f);
		f->state = SL_FLOW_ABSORB;
		return SL_SEG_STOPPED;
	}
	if (f->s_fin && f->state == SL_FLOW_HEAD && s->len > 0 &&
	    (int32_t)(s->seq + s->len - f->c_next) > 0)
		return after_close(c);
	if (s->len > 0)
		v = data(c, s);
	note_ts(f, s);
	if ((s->flags & SL_FL_FIN) && v == SL_SEG_FORWARD &&
	    s->seq + s->len == f->c_next) {
		f->c_fin = 1;
		f->c_next++;
	}
	return v;
}

enum sl_seg_verdict
sl_flow_client_segment(struct sl_flow_table *t, const struct sl_flow_key *k,
		       uint64_t h, const struct sl_seg *s, uint64_t now,
		       sl_flow_event_fn fn, void *arg)
{
	return sl_flow_client_segment_of(t, sl_flow_find(t, k, h), k, h, s, now,
					 fn, arg);
}

struct sl_flow *
sl_flow_get(struct sl_flow_table *t, const struct sl_flow_key *k, uint64_t h)
{
	return sl_flow_find(t, k, h);
}

enum sl_seg_verdict
sl_flow_client_segment_of(struct sl_flow_table *t, struct sl_flow *f,
			  const struct sl_flow_key *k, uint64_t h,
			  const struct sl_seg *s, uint64_t now,
			  sl_flow_event_fn fn, void *arg)
{
	struct seg_ctx c = {.t = t, .f = f, .fn = fn, .arg = arg};

	t->last = NULL;
	t->now = now;
	if (s->flags & SL_FL_RST)
		return on_rst(t, c.f, s);
	if ((s->flags & SL_FL_URG) && !t->p.track_only) {
		/* the backend takes the urgent byte out of the stream */
		t->st.norm[SL_NR_URGENT]++;
		return SL_SEG_DROP;
	}
	if (s->flags & SL_FL_SYN) {
		c.f = on_syn(t, c.f, k, h, s, now);
		sl_flow_touch(t, c.f, now);
		/* a backend with TCP Fast Open would act on its payload
		 * before anything is decided: it goes without it, and the
		 * client sends those bytes again after the handshake */
		t->cut = 0;
		return s->len > 0 ? SL_SEG_PREFIX : SL_SEG_FORWARD;
	}
	if (c.f == NULL) {
		if (s->len == 0)
			return SL_SEG_FORWARD;
		c.f = pick_up(t, k, h, s, now);
	}
	sl_flow_touch(t, c.f, now);
	t->last = c.f;
	if (c.f->parked && (s->len > 0 || (s->flags & SL_FL_FIN)))
		return SL_SEG_HOLD;
	if (c.f->state == SL_FLOW_ABSORB)
		return absorb(c.f, s->seq, s->flags, s->len);
	if (s->len == 0 && !(s->flags & SL_FL_FIN)) {
		/* an ACK: it changes no byte, but may end the handshake */
		if ((c.f->nflags & (SL_NF_SYNACK | SL_NF_PLACED)) ==
			    SL_NF_SYNACK &&
		    sl_flow_seg_check(c.f, s) == SL_NR_NONE)
			place(&c);
		return SL_SEG_FORWARD;
	}
	if (t->p.track_only) {
		if ((int32_t)(s->seq + s->len - c.f->c_next) > 0)
			c.f->c_next = s->seq + s->len;
		return SL_SEG_FORWARD;
	}
	return stream(&c, s);
}

uint32_t
sl_flow_cut(const struct sl_flow_table *t)
{
	return t->cut;
}

void
sl_flow_cut_back(struct sl_flow_table *t, struct sl_flow *f, uint32_t seq,
		 const uint8_t *payload, uint32_t cut, int counted)
{
	uint32_t end = seq + cut;
	uint8_t i;

	for (i = 0; i < f->rec_n; i++) {
		int32_t from = (int32_t)(f->rec_seq[i] - seq);

		if ((int32_t)(f->rec_seq[i] - end) >= 0)
			break; /* this one and the rest begin past the cut */
		if ((int32_t)(f->rec_seq[i] + f->rec_len[i] - end) > 0 &&
		    from >= 0) {
			f->rec_len[i] = (uint16_t)(end - f->rec_seq[i]);
			/* a held range's bytes stay where they were */
			if (!(f->rec_held & (1u << i)))
				f->rec_sum[i] = sl_flow_digest(
					t, payload + from, f->rec_len[i]);
		}
	}
	sl_flow_rec_drop(t, f, i);
	f->c_next = end;
	f->parked = 0;
	if (counted)
		sl_resp_unexpect(&f->resp); /* the refused one did not go */
	f->state = SL_FLOW_HEAD;
	f->body_remaining = 0;
	f->c_fin = 0;
}

struct sl_flow *
sl_flow_last(const struct sl_flow_table *t)
{
	return t->last;
}

enum sl_seg_verdict
sl_flow_resume(struct sl_flow_table *t, struct sl_flow *f,
	       const uint8_t *payload, uint32_t from, uint32_t len,
	       sl_flow_event_fn fn, void *arg)
{
	/* the granted head before from went through: a refusal behind it
	 * cuts there (refusal_order), and no head after it is the first
	 * (offset 0 is never one: the parked head lies before from) */
	struct seg_ctx c = {
		.t = t, .f = f, .fn = fn, .arg = arg, .allowed = 1, .first = 0};

	f->parked = 0;
	if (from >= len || f->state == SL_FLOW_ABSORB)
		return SL_SEG_FORWARD;
	return process(&c, payload + from, len - from, from);
}

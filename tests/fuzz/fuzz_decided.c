/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the undecided-bytes invariant as a property of lib/flow.
 *
 * Client segments (cut, resent and flagged as the input says) go
 * through the flow table, a head with a target "/w..." waiting for its
 * lease as the appliance parks one (and granted at once, the rest of
 * its segment read after with no one to answer); whatever it lets
 * through is delivered, in
 * order, to a model of the most lenient HTTP/1.x server, which acts on
 * a request at the request line's LF when the line has no version
 * (HTTP/0.9) and otherwise at the first line that ends in an empty one
 * ("\n\n" or "\n\r\n"). The property: every request that server acts on
 * was decided first (an event for a head that starts where the server's
 * request starts), and the stream leaves HTTP only after the server
 * answered the upgrade request itself with a 101, never to h2c: the
 * model server reads an Upgrade field naming h2c anywhere in its value
 * as a request for HTTP/2, whose streams sluice could not decide, and
 * must never be asked to CONNECT (a proxy's tunnel to anywhere). Read
 * as a server that ignores Content-Length reads it (CL.0), a body must
 * not be a request whose target it holds (cl0_acts), nor the first
 * letters of the next head's method (cl0_glued). It
 * answers requests in order, some of them with a body whose second
 * segment begins with a 101 status line, sent at once or only at its
 * next answer (after the client read the head and sent on, a backend
 * serving HEAD as GET holding it back). Decided bytes are kept as the
 * appliance keeps them: held (here a copy, at most two at once) or by
 * digest past that, and every hold is given back exactly once.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_flow.h"

static const struct sl_http_cfg cfg = {.api_key_header = {"X-API-Key", 9}};

#define MAXREC 256
#define SRVMAX 65536
#define ISN    1000u

/* Heads decided, in stream order: where each starts and its framing. */
static struct rec {
	uint32_t start, head_len;
	uint64_t cl;
	uint8_t chunked, upgrade, refused;
} recs[MAXREC];
static uint32_t n_recs;
static uint32_t cur_seq; /* the client segment being fed */
static const uint8_t *cur_p;
static uint32_t cur_len;
/* a head that waits for the coordinator, as the appliance parks one:
 * where the rest of its segment begins; UINT32_MAX: none */
static uint32_t park_rest = UINT32_MAX;

/* The server: what reached it, what it has read, what it answered. */
static uint8_t srv[SRVMAX];
static uint32_t srv_len, srv_pos, srv_rec, answered, s_next, s_isn;
static uint8_t tunnel_ok, in_body, chunked;
static uint8_t body_late; /* the last response's body is still to come */
static uint64_t body_left;
static struct sl_chunked chunk;
/* Content-Length bodies the server read: where each starts, its length */
static uint32_t cl_at[32], cl_len[32], n_cl;

/* the heads behind a granted one, read on its resumption: decided then,
 * none of them waits (worker.c resume) */
static int resuming;

static enum sl_req_action
on_ev(void *arg, struct sl_flow *f, const struct sl_flow_event *ev)
{
	const struct sl_http_req *q = ev->req;
	struct rec *r;
	uint32_t start = cur_seq + ev->seg_end - ev->head_len - ISN;

	(void)arg;
	(void)f;
	if (ev->kind != SL_EV_REQUEST)
		return SL_REQ_STOP; /* as the appliance: 400, 408, 431 */
	/* a head decided again (its refusal had to wait, and the client
	 * sent other bytes there): the earlier decision did not stand */
	while (n_recs > srv_rec && recs[n_recs - 1].start >= start)
		n_recs--;
	r = &recs[n_recs < MAXREC ? n_recs : MAXREC - 1];
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->head_len = ev->head_len;
	r->cl = q->has_cl ? q->content_length : 0;
	r->chunked = q->chunked;
	r->upgrade = q->upgrade;
	/* a refusal, as a limit or the blocklist would answer */
	r->refused = q->target.len >= 2 && q->target.p[1] == 'x';
	if (n_recs < MAXREC)
		n_recs++;
	if (r->refused)
		return SL_REQ_STOP;
	if (q->target.len >= 2 && q->target.p[1] == 'w' && !resuming) {
		park_rest = ev->seg_end;
		return SL_REQ_PARK;
	}
	return SL_REQ_CONTINUE;
}

/* Holds, as the appliance's mbuf references: the bytes never change. */
static uint32_t holds;

static uint64_t
hold_keep(void *arg, const uint8_t *p, uint32_t n)
{
	uint8_t *c;

	(void)arg;
	if (holds >= 2 || (c = malloc(n ? n : 1)) == NULL)
		return 0; /* the share used up: a digest */
	memcpy(c, p, n);
	holds++;
	return (uint64_t)(uintptr_t)c;
}

static const uint8_t *
hold_bytes(void *arg, uint64_t h)
{
	(void)arg;
	return (const uint8_t *)(uintptr_t)h;
}

static void
hold_release(void *arg, uint64_t h)
{
	(void)arg;
	if (holds == 0)
		abort(); /* given back twice */
	holds--;
	free((void *)(uintptr_t)h);
}

/* Every hold is one of the connection's ranges, and no more. */
static void
holds_accounted(struct sl_flow_table *t, const struct sl_flow_key *k)
{
	const struct sl_flow *f = sl_flow_lookup(t, k);
	uint32_t mask = f != NULL ? f->rec_held : 0;

	if (f != NULL && (mask >> f->rec_n) != 0) {
		fprintf(stderr, "held bits past the ranges: %x of %u\n", mask,
			f->rec_n);
		abort();
	}
	if ((uint32_t)__builtin_popcount(mask) != holds) {
		fprintf(stderr, "holds %u, ranges held %d\n", holds,
			__builtin_popcount(mask));
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The property failed: what the server got, and what was decided. */
static void
broken(const char *why)
{
	uint32_t i;

	fprintf(stderr, "undecided: %s at %u of %u\n", why, srv_pos, srv_len);
	for (i = 0; i < n_recs; i++)
		fprintf(stderr, "  head %u: at %u, %u bytes%s\n", i,
			recs[i].start, recs[i].head_len,
			recs[i].refused ? ", refused" : "");
	fprintf(stderr, "  server got: \"");
	for (i = 0; i < srv_len; i++)
		fprintf(stderr, srv[i] >= 32 && srv[i] < 127 ? "%c" : "\\x%02x",
			srv[i]);
	fprintf(stderr, "\"\n");
	abort();
}

/* Where a head ends from p[i] on: just past a line's LF followed by an
 * empty line ("\n\n" or "\n\r\n"); -1 not yet. */
static int64_t
empty_line(const uint8_t *p, uint32_t n, uint32_t i)
{
	for (; i + 1 < n; i++)
		if (p[i] == '\n' &&
		    (p[i + 1] == '\n' ||
		     (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')))
			return i + 1;
	return -1;
}

/* Where the lenient server acts on the request at p[0, n): -1 not yet. */
static int64_t
acts_at(const uint8_t *p, uint32_t n)
{
	uint32_t i = 0, sp = 0;

	while (i < n && (p[i] == '\r' || p[i] == '\n'))
		i++;
	for (; i < n && p[i] != '\n'; i++)
		sp += p[i] == ' ' && i > 0 && p[i - 1] != ' ';
	if (i == n)
		return -1;
	if (sp < 2)
		return i; /* "GET /p": served at its LF */
	return empty_line(p, n, i);
}

static int
ieq_at(const uint8_t *p, uint32_t n, const char *lit)
{
	uint32_t i, k = (uint32_t)strlen(lit);

	if (n < k)
		return 0;
	for (i = 0; i < k; i++)
		if (tolower(p[i]) != lit[i])
			return 0;
	return 1;
}

/* Whether a head asks, as the most lenient server reads it, for h2c: a
 * line "upgrade", blanks, ':', and "h2c" anywhere after. */
static int
asks_h2c(const uint8_t *p, uint32_t n)
{
	uint32_t i = 0, j;

	while (i < n) {
		uint32_t end = i;

		while (end < n && p[end] != '\n')
			end++;
		if (ieq_at(p + i, end - i, "upgrade")) {
			for (j = i + 7;
			     j < end && (p[j] == ' ' || p[j] == '\t');)
				j++;
			if (j < end && p[j] == ':')
				for (; j < end; j++)
					if (ieq_at(p + j, end - j, "h2c"))
						return 1;
		}
		i = end + 1;
	}
	return 0;
}

/* A CONNECT, in any case: a 2xx would open a tunnel of undecided bytes. */
static int
is_connect(const uint8_t *p, uint32_t n)
{
	uint32_t i = 0;

	while (i < n && (p[i] == '\r' || p[i] == '\n'))
		i++;
	return ieq_at(p + i, n - i, "connect ");
}

static int
blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static int
token_char(uint8_t c)
{
	return c > ' ' && c < 127 && strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
}

/*
 * Where a server that ignores Content-Length acts on the bytes from a
 * body's start (len of them the body's) as a request whose target the
 * body holds: -1 not, or not yet. One line of a method (at most 31
 * bytes: no server dispatches longer ones), blanks and a
 * target of a form it routes ('/', '*', or absolute, "h..."), taking
 * blanks inside the target as the most lenient do: served at its LF
 * (HTTP/0.9), or, with blanks then "HTTP/" in it, at the empty line
 * that ends its head. A target that starts past the body is a decided
 * head's: cl0_glued reads a method glued to its own.
 */
static int64_t
cl0_acts(const uint8_t *p, uint32_t n, uint32_t len)
{
	uint32_t i = 0, m, t, e, j;

	while (i < n && (blank(p[i]) || p[i] == '\r' || p[i] == '\n'))
		i++;
	for (m = i; i < n && token_char(p[i]); i++)
		;
	if (i == m || i - m > 31 || i == n || !blank(p[i]))
		return -1;
	while (i < n && blank(p[i]))
		i++;
	t = i;
	if (t >= len || t == n ||
	    !(p[t] == '/' || p[t] == '*' || tolower(p[t]) == 'h'))
		return -1;
	for (e = t; e < n && p[e] != '\n'; e++)
		;
	if (e == n)
		return -1;
	for (j = t + 1; j < e; j++)
		if (blank(p[j - 1]) && ieq_at(p + j, e - j, "http/"))
			break;
	if (j == e)
		return e;
	return empty_line(p, n, e);
}

/*
 * Whether such a server reads a body that is only letters (after blank
 * lines and blanks) and the method of the head after it as one method
 * a rule can name, and acts on that head (its empty line is here): the
 * head sluice decided under its own method, the server acts on it
 * under another.
 */
static int
cl0_glued(const uint8_t *p, uint32_t n, uint32_t len)
{
	static const char *const ms[] = {"get",   "head",   "post",    "put",
					 "patch", "delete", "options", "trace"};
	uint32_t i = 0, m, e, k;
	char w[16];

	while (i < len && (blank(p[i]) || p[i] == '\r' || p[i] == '\n'))
		i++;
	for (m = i; i < len && token_char(p[i]); i++)
		;
	if (i == m || i != len)
		return 0;
	for (e = len; e < n && token_char(p[e]); e++)
		;
	if (e == len || e == n || !blank(p[e]) || e - m >= sizeof(w) ||
	    empty_line(p, n, e) < 0)
		return 0;
	for (k = 0; k < e - m; k++)
		w[k] = (char)tolower(p[m + k]);
	w[k] = 0;
	for (k = 0; k < sizeof(ms) / sizeof(ms[0]); k++)
		if (strcmp(w, ms[k]) == 0)
			return 1;
	return 0;
}

static void
cl0_check(void)
{
	uint32_t i;

	for (i = 0; i < n_cl; i++) {
		if (cl0_acts(srv + cl_at[i], srv_len - cl_at[i], cl_len[i]) >=
		    0)
			broken("a body read as a request");
		if (cl0_glued(srv + cl_at[i], srv_len - cl_at[i], cl_len[i]))
			broken("a body glued to the next head's method");
	}
}

/* The server reads what it got: bodies skipped as decided, heads acted
 * on only where decided. */
static void
read_requests(void)
{
	for (;;) {
		uint32_t avail = srv_len - srv_pos;

		if (in_body && !chunked) {
			uint64_t k = avail < body_left ? avail : body_left;

			srv_pos += (uint32_t)k;
			body_left -= k;
			if (body_left > 0)
				return;
			in_body = 0;
			continue;
		}
		if (in_body) {
			int done = 0;
			long k = sl_chunked_consume(&chunk,
						    (const char *)srv + srv_pos,
						    avail, &done);

			if (k < 0)
				broken("framing");
			srv_pos += (uint32_t)k;
			if (!done)
				return;
			in_body = 0;
			continue;
		}
		if (avail == 0)
			return;
		if (srv_rec < n_recs && recs[srv_rec].start == srv_pos) {
			const struct rec *r = &recs[srv_rec];

			if (avail < r->head_len)
				return;
			if (r->refused)
				broken("a refused head");
			if (asks_h2c(srv + srv_pos, r->head_len))
				broken("an upgrade to h2c");
			if (is_connect(srv + srv_pos, r->head_len))
				broken("a CONNECT");
			srv_rec++;
			srv_pos += r->head_len;
			in_body = r->cl > 0 || r->chunked;
			chunked = r->chunked;
			body_left = r->cl;
			if (r->cl > 0 && !r->chunked && n_cl < 32) {
				cl_at[n_cl] = srv_pos;
				cl_len[n_cl++] = (uint32_t)r->cl;
			}
			sl_chunked_init(&chunk);
			continue;
		}
		if (acts_at(srv + srv_pos, avail) >= 0)
			broken("acted on");
		return;
	}
}

static void
server_reads(void)
{
	read_requests();
	cl0_check();
}

static void
server_seg(struct sl_flow_table *t, const struct sl_flow_key *k, uint8_t fl,
	   const char *p, uint32_t n)
{
	struct sl_seg s = {.seq = s_next,
			   .ack = ISN + srv_len,
			   .flags = fl,
			   .payload = (const uint8_t *)p,
			   .len = n};

	sl_flow_server_segment(t, k, &s, 0);
	s_next += n;
}

/* The server answers its oldest request it read: a 101 where that asked
 * to upgrade and how says so, else a response whose body's second
 * segment begins with a 101 status line (an echo), to HEAD too, as a
 * backend that serves HEAD as GET does: where sluice frames no body, a
 * 101 that must not answer an upgrade behind it. Where how says so, that
 * body's segment comes only at the next answer, on its own (held back
 * by a window the client keeps shut, while the client reads the head
 * and sends on). It is never asked to CONNECT (server_reads). */
static void
server_answers(struct sl_flow_table *t, const struct sl_flow_key *k,
	       uint8_t how)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 36\r\n"
				   "\r\n";
	static const char s101[] = "HTTP/1.1 101 Switching Protocols\r\n\r\n";

	if (body_late) {
		server_seg(t, k, 0x18, s101, 36);
		body_late = 0;
		return;
	}
	if (answered >= srv_rec)
		return;
	if (recs[answered].upgrade && (how & 1)) {
		server_seg(t, k, 0x18, s101, 36);
		tunnel_ok = 1;
		answered = srv_rec; /* no more requests: a tunnel */
		return;
	}
	server_seg(t, k, 0x18, head, sizeof(head) - 1);
	if (how & 2)
		body_late = 1;
	else
		server_seg(t, k, 0x18, s101, 36);
	answered++;
}

static enum sl_seg_verdict
client(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
       uint8_t flags, const uint8_t *p, uint32_t len)
{
	struct sl_seg s = {.seq = seq,
			   .ack = s_next,
			   .flags = flags,
			   .payload = p,
			   .len = len};

	enum sl_seg_verdict v;

	cur_seq = seq;
	cur_p = p;
	cur_len = len;
	park_rest = UINT32_MAX;
	v = sl_flow_client_segment(t, k, sl_flow_hash(t, k), &s, 0, on_ev,
				   NULL);
	if (v == SL_SEG_PARKED) {
		/* granted at once: the rest of its segment read, its heads
		 * decided, as the appliance resumes it; the segment sent on
		 * whole, up to a head refused behind it, or refused whole */
		struct sl_flow *f = sl_flow_lookup(t, k);

		if (f == NULL || park_rest > len)
			broken("a parked head lost");
		resuming = 1;
		v = sl_flow_resume(t, f, p, park_rest, len, on_ev, NULL);
		resuming = 0;
		if (v == SL_SEG_PREFIX)
			sl_flow_cut_back(t, f, seq, p, sl_flow_cut(t), 0);
		else if (v != SL_SEG_FORWARD)
			v = SL_SEG_STOPPED;
	}
	return v;
}

/* The server's stack takes in-order bytes (a resent copy: the first). */
static void
deliver(uint32_t seq, const uint8_t *p, uint32_t n)
{
	uint32_t off = seq - ISN;

	if (off > srv_len)
		broken("past a gap");
	if (off + n <= srv_len)
		return;
	n -= srv_len - off;
	p += srv_len - off;
	if (srv_len + n > SRVMAX)
		n = SRVMAX - srv_len;
	memcpy(srv + srv_len, p, n);
	srv_len += n;
}

static void
reset(void)
{
	n_recs = srv_len = srv_pos = srv_rec = answered = n_cl = 0;
	tunnel_ok = in_body = body_late = 0;
	s_next = s_isn;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_flow_table *t;
	static uint32_t conn;
	struct sl_flow_key k = {.af = 4, .sport = 80};
	uint32_t seq = ISN;
	size_t off = 0;

	if (t == NULL) {
		struct sl_flow_params p = {
			.capacity = 64,
			.head_slots = 8,
			.max_head_bytes = 512,
			.idle_timeout = 1000,
			.closed_timeout = 1,
			.head_timeout = 1000,
			.http = &cfg,
			.hold = {hold_keep, hold_bytes, hold_release, NULL}};
		t = sl_flow_table_create(&p);
	}
	/*
	 * A new connection each input, all on one 4-tuple: an input may
	 * leave its connection open (its last RST out of window, ignored by
	 * sluice as by the backend, or none), and this model's server, new
	 * each input, begins a new one with a new ISN, as a backend that no
	 * longer holds a connection answers a SYN on its tuple. sluice must
	 * take that SYN-ACK's word for it, or pass the new connection's
	 * bytes as the old one's.
	 */
	conn++;
	s_isn = 5000u + conn * 2654435761u;
	reset();
	client(t, &k, ISN - 1, 0x02, NULL, 0);
	server_seg(t, &k, 0x12, NULL, 0);
	s_next = s_isn + 1;
	client(t, &k, ISN, 0x10, NULL, 0);
	while (off + 2 <= size) {
		uint32_t len = data[off] % 48;
		uint8_t ctl = data[off + 1];
		uint32_t back = (ctl >> 5) % 4 * 3; /* resend a little */
		uint32_t from = seq - back;
		enum sl_seg_verdict v;
		struct sl_flow *f;

		off += 2;
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (ctl & 0x01)
			server_seg(t, &k, 0x10, NULL, 0); /* ACK all it got */
		if (ctl & 0x02)
			server_answers(t, &k, ctl >> 2);
		if (back > seq - ISN || back > off - 2)
			from = seq, back = 0;
		v = client(t, &k, from, 0x18, data + off - back, len + back);
		/* a refusal that had to wait for earlier answers did not
		 * stand: the client sends those bytes again, or others */
		while (v != SL_SEG_STOPPED && n_recs > srv_rec &&
		       recs[n_recs - 1].refused)
			n_recs--;
		if (v == SL_SEG_FORWARD)
			deliver(from, data + off - back, len + back);
		else if (v == SL_SEG_PREFIX)
			deliver(from, data + off - back, sl_flow_cut(t));
		f = sl_flow_lookup(t, &k);
		if (f != NULL && f->state == SL_FLOW_PASS) {
			if (!tunnel_ok)
				broken("tunnel without its 101");
			break;
		}
		server_reads();
		if (v == SL_SEG_FORWARD || v == SL_SEG_PREFIX)
			seq = from + (v == SL_SEG_PREFIX ? sl_flow_cut(t)
							 : len + back);
		else if (v != SL_SEG_DROP && v != SL_SEG_HOLD)
			break; /* answered, reset: the connection is over */
		off += len;
	}
	/* or the client goes away, and the backend times the connection
	 * out while sluice holds it: the next input opens it again */
	if (size == 0 || !(data[size - 1] & 0x80))
		client(t, &k, seq, 0x04, NULL, 0);
	holds_accounted(t, &k);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the server's responses end, read as the client reads them (RFC
 * 9112 6.3): a status line, fields of which only Content-Length and
 * Transfer-Encoding matter, then no body (HEAD, 1xx, 204, 304), a length,
 * or chunks. Bytes arrive in order, any number at a time; nothing is
 * buffered. What it cannot follow for certain (a close-delimited body,
 * a coding other than chunked alone, two lengths, a length over 4 GiB)
 * ends the tracking for the connection: "unknown" is an answer its
 * callers handle, a wrong count would not be.
 */
#include <string.h>

#include "sl_http.h"

enum {
	R_LINE = 0, /* at a status line (or between responses) */
	R_STATUS,   /* in the status line, idx bytes read */
	R_FIELD,    /* at the start of a field line */
	R_NAME,     /* in a field name, idx bytes matched */
	R_VALUE,    /* in the value of a field that matters */
	R_SKIP,     /* to the end of the line */
	R_EOH,      /* the empty line's CR seen */
	R_BODY_CL,  /* left bytes of body to come */
	R_BODY_CHUNKED,
	R_LOST,   /* framing it cannot follow: unknown from here on */
	R_TUNNEL, /* the tunnel asked for was granted: no longer HTTP */
};

/* flags */
#define F_CL       0x01 /* a Content-Length was read */
#define F_CHUNKED  0x02 /* Transfer-Encoding: chunked */
#define F_IS_CL    0x04 /* the field being read is Content-Length */
#define F_IS_TE    0x08
#define F_DIGITS   0x10 /* its value has begun */
#define F_VAL_DONE 0x20 /* whitespace after it: only more may follow */
#define F_CR       0x40 /* a CR ended the line: LF next */
#define F_STATUS   0x80 /* in the status line (its reason phrase too) */

/* tunnel */
#define T_ASKED  0x03 /* 1 upgrade, 2 CONNECT */
#define T_UNSURE 0x80 /* sl_resp_unsure */

static const char CL[] = "content-length";
static const char TE[] = "transfer-encoding";
static const char CHUNKED[] = "chunked";

void
sl_resp_init(struct sl_resp *r)
{
	memset(r, 0, sizeof(*r));
}

void
sl_resp_lost(struct sl_resp *r)
{
	r->state = R_LOST;
}

int
sl_resp_due(const struct sl_resp *r)
{
	return r->state == R_LOST || r->state == R_TUNNEL ? -1 : r->due;
}

int
sl_resp_unsure(const struct sl_resp *r)
{
	return (r->tunnel & T_UNSURE) != 0;
}

int
sl_resp_ord_last(const struct sl_resp *r, int expected)
{
	int due = sl_resp_due(r);

	if (due < 0)
		return -1;
	return (uint16_t)(r->served + due + (expected ? 0 : 1));
}

void
sl_resp_expect(struct sl_resp *r, int head)
{
	if (r->due >= 32) { /* more in flight than it follows */
		sl_resp_lost(r);
		return;
	}
	if (head)
		r->heads |= 1u << r->due;
	r->due++;
	r->tunnel &= T_UNSURE;
}

void
sl_resp_expect_tunnel(struct sl_resp *r, int connect)
{
	if (r->due > 0)
		r->tunnel =
			(uint8_t)((r->tunnel & T_UNSURE) | (connect ? 2 : 1));
}

int
sl_resp_tunnel(const struct sl_resp *r)
{
	if (r->state == R_TUNNEL)
		return 1;
	if (r->state == R_LOST || sl_resp_unsure(r))
		return -1;
	return (r->tunnel & T_ASKED) == 0 ? -1 : 0;
}

void
sl_resp_unexpect(struct sl_resp *r)
{
	if (r->due == 0)
		return;
	r->due--;
	r->heads &= ~(1u << r->due);
	r->tunnel &= T_UNSURE;
}

static void
message_done(struct sl_resp *r)
{
	if (r->due > 0) {
		r->due--;
		r->heads >>= 1;
	}
	r->done++;
	r->served++;
	r->state = R_LINE;
}

/* The empty line ended a head: what follows it. */
static void
head_done(struct sl_resp *r)
{
	uint32_t status = r->status;

	if (status < 200) { /* interim: the final response still comes */
		r->state = R_LINE;
		return;
	}
	if ((r->heads & 1) || status == 204 || status == 304) {
		if ((r->flags & F_CHUNKED) ||
		    ((r->flags & F_CL) && r->left > 0))
			r->tunnel |= T_UNSURE;
		message_done(r);
		return;
	}
	if (r->flags & F_CHUNKED) {
		struct sl_chunked c;

		sl_chunked_init(&c);
		r->left = (uint32_t)c.remaining;
		r->sub = c.state;
		r->ndigits = c.ndigits;
		r->state = R_BODY_CHUNKED;
		return;
	}
	if (!(r->flags & F_CL)) { /* delimited by the close */
		sl_resp_lost(r);
		return;
	}
	if (r->left == 0)
		message_done(r);
	else
		r->state = R_BODY_CL;
}

/* "HTTP/1.x NNN": anything else is not a response it can follow. */
static void
status_byte(struct sl_resp *r, uint8_t b)
{
	static const char pre[] = "HTTP/1.";

	if (r->idx < 7) {
		if (b != (uint8_t)pre[r->idx])
			sl_resp_lost(r);
	} else if (r->idx == 7) {
		if (b < '0' || b > '9')
			sl_resp_lost(r);
	} else if (r->idx == 8) {
		if (b != ' ')
			sl_resp_lost(r);
	} else if (r->idx < 12) {
		if (b < '0' || b > '9')
			sl_resp_lost(r);
		r->status = (uint16_t)(r->status * 10 + (b - '0'));
	} else {
		r->state = R_SKIP;
		return;
	}
	r->idx++;
}

static uint8_t
lower(uint8_t b)
{
	return b >= 'A' && b <= 'Z' ? (uint8_t)(b | 0x20) : b;
}

/* Matches the field name against the two that matter, a byte at a time. */
static void
name_byte(struct sl_resp *r, uint8_t b)
{
	uint8_t l = lower(b);

	if (b == ':') {
		if ((r->flags & F_IS_CL) && r->idx == sizeof(CL) - 1) {
			if (r->flags & F_CL) { /* a second length */
				sl_resp_lost(r);
				return;
			}
			r->flags |= F_CL;
			r->left = 0;
		} else if ((r->flags & F_IS_TE) && r->idx == sizeof(TE) - 1) {
			if (r->flags & F_CHUNKED) { /* codings twice */
				sl_resp_lost(r);
				return;
			}
		} else {
			r->state = R_SKIP;
			return;
		}
		r->flags &= (uint8_t) ~(F_DIGITS | F_VAL_DONE);
		r->state = R_VALUE;
		r->idx = 0;
		return;
	}
	if ((r->flags & F_IS_CL) &&
	    (r->idx >= sizeof(CL) - 1 || l != (uint8_t)CL[r->idx]))
		r->flags &= (uint8_t)~F_IS_CL;
	if ((r->flags & F_IS_TE) &&
	    (r->idx >= sizeof(TE) - 1 || l != (uint8_t)TE[r->idx]))
		r->flags &= (uint8_t)~F_IS_TE;
	if (!(r->flags & (F_IS_CL | F_IS_TE)))
		r->state = R_SKIP;
	r->idx++;
}

/* Content-Length digits, or "chunked" and nothing else. */
static void
value_byte(struct sl_resp *r, uint8_t b)
{
	if (b == ' ' || b == '\t') {
		if (r->flags & F_DIGITS)
			r->flags |= F_VAL_DONE;
		return;
	}
	if (r->flags & F_VAL_DONE) {
		sl_resp_lost(r);
		return;
	}
	r->flags |= F_DIGITS;
	if (r->flags & F_IS_CL) {
		if (b < '0' || b > '9' || r->left > (UINT32_MAX - 9) / 10) {
			sl_resp_lost(r);
			return;
		}
		r->left = r->left * 10 + (uint32_t)(b - '0');
		return;
	}
	if (r->idx >= sizeof(CHUNKED) - 1 ||
	    lower(b) != (uint8_t)CHUNKED[r->idx])
		sl_resp_lost(r);
	r->idx++;
}

static void
value_end(struct sl_resp *r)
{
	if (!(r->flags & F_DIGITS))
		sl_resp_lost(r); /* an empty value */
	else if ((r->flags & F_IS_TE) && r->idx == sizeof(CHUNKED) - 1)
		r->flags |= F_CHUNKED;
	else if (r->flags & F_IS_TE)
		sl_resp_lost(r);
	r->flags &= (uint8_t) ~(F_IS_CL | F_IS_TE);
}

/* One byte of a head. */
static void
head_byte(struct sl_resp *r, uint8_t b)
{
	if (r->flags & F_CR) { /* CR must be followed by LF */
		r->flags &= (uint8_t)~F_CR;
		if (b != '\n') {
			sl_resp_lost(r);
			return;
		}
		b = '\n';
	} else if (b == '\r' && r->state != R_LINE) {
		r->flags |= F_CR;
		return;
	}
	switch (r->state) {
	case R_LINE:
		if (b == '\r' || b == '\n') /* empty lines between: tolerated */
			return;
		r->status = 0;
		r->idx = 0;
		r->flags = F_STATUS;
		r->state = R_STATUS;
		status_byte(r, b);
		return;
	case R_STATUS:
		if (b != '\n')
			status_byte(r, b);
		else if (r->idx < 12) /* no status code */
			sl_resp_lost(r);
		else
			r->state = R_FIELD;
		return;
	case R_SKIP:
		if (b == '\n')
			r->state = R_FIELD;
		return;
	case R_FIELD:
		if (b == '\n') {
			head_done(r);
			return;
		}
		if (b == ' ' || b == '\t') { /* obs-fold: no field we read */
			r->state = R_SKIP;
			return;
		}
		r->idx = 0;
		r->flags |= F_IS_CL | F_IS_TE;
		r->state = R_NAME;
		name_byte(r, b);
		return;
	case R_NAME:
		if (b == '\n') {
			r->state = R_FIELD;
			return;
		}
		name_byte(r, b);
		return;
	case R_VALUE:
		if (b == '\n') {
			value_end(r);
			if (r->state != R_LOST)
				r->state = R_FIELD;
			return;
		}
		value_byte(r, b);
		return;
	default:
		return;
	}
}

static int
same_name(const uint8_t *p, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (lower(p[i]) != lower((uint8_t)name[i]))
			return 0;
	return 1;
}

static int
is_digit(uint8_t b)
{
	return b >= '0' && b <= '9';
}

/* Whole-line status: "HTTP/1.x NNN", then anything up to the end. */
static void
status_line(struct sl_resp *r, const uint8_t *p, size_t len)
{
	r->flags = 0;
	if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 || !is_digit(p[7]) ||
	    p[8] != ' ' || !is_digit(p[9]) || !is_digit(p[10]) ||
	    !is_digit(p[11])) {
		sl_resp_lost(r);
		return;
	}
	r->status = (uint16_t)((p[9] - '0') * 100 + (p[10] - '0') * 10 +
			       (p[11] - '0'));
	r->flags = F_STATUS;
	r->state = R_FIELD;
}

/* [p, end) without optional whitespace either side. */
static void
trim(const uint8_t **p, const uint8_t **end)
{
	while (*p < *end && (**p == ' ' || **p == '\t'))
		(*p)++;
	while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
		(*end)--;
}

static void
length_value(struct sl_resp *r, const uint8_t *v, const uint8_t *end)
{
	uint32_t n = 0;

	trim(&v, &end);
	if (v == end || (r->flags & F_CL)) {
		sl_resp_lost(r);
		return;
	}
	for (; v < end; v++) {
		if (!is_digit(*v) || n > (UINT32_MAX - 9) / 10) {
			sl_resp_lost(r);
			return;
		}
		n = n * 10 + (uint32_t)(*v - '0');
	}
	r->flags |= F_CL;
	r->left = n;
}

static void
coding_value(struct sl_resp *r, const uint8_t *v, const uint8_t *end)
{
	trim(&v, &end);
	if ((r->flags & F_CHUNKED) ||
	    (size_t)(end - v) != sizeof(CHUNKED) - 1 ||
	    !same_name(v, CHUNKED, sizeof(CHUNKED) - 1))
		sl_resp_lost(r);
	else
		r->flags |= F_CHUNKED;
}

/* Whole-line field: only Content-Length and Transfer-Encoding read. */
static void
field_line(struct sl_resp *r, const uint8_t *p, size_t len)
{
	const uint8_t *colon;
	size_t nl;

	if (len == 0) {
		head_done(r);
		return;
	}
	if (p[0] == ' ' || p[0] == '\t') /* obs-fold: no field we read */
		return;
	colon = memchr(p, ':', len);
	nl = colon != NULL ? (size_t)(colon - p) : 0;
	if (nl == sizeof(CL) - 1 && same_name(p, CL, nl))
		length_value(r, colon + 1, p + len);
	else if (nl == sizeof(TE) - 1 && same_name(p, TE, nl))
		coding_value(r, colon + 1, p + len);
}

/*
 * A line whole in p (the usual case): read at once, as the byte-at-a-
 * time path below would read it a byte at a time. Returns the bytes
 * taken, 0 when the line goes on past p.
 */
static uint32_t
whole_line(struct sl_resp *r, const uint8_t *p, uint32_t n)
{
	const uint8_t *lf = memchr(p, '\n', n);
	size_t len;

	if (lf == NULL)
		return 0;
	len = (size_t)(lf - p);
	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (memchr(p, '\r', len) != NULL)
		return 0; /* a bare CR: the careful path decides */
	if (r->state == R_LINE)
		status_line(r, p, len);
	else
		field_line(r, p, len);
	return (uint32_t)(lf - p) + 1;
}

static uint32_t
chunked_bytes(struct sl_resp *r, const uint8_t *p, uint32_t n)
{
	struct sl_chunked c = {
		.remaining = r->left, .state = r->sub, .ndigits = r->ndigits};
	int done;
	long used = sl_chunked_consume(&c, (const char *)p, n, &done);

	if (used < 0 || c.remaining > UINT32_MAX) {
		sl_resp_lost(r);
		return n;
	}
	r->left = (uint32_t)c.remaining;
	r->sub = c.state;
	r->ndigits = c.ndigits;
	if (done)
		message_done(r);
	return (uint32_t)used;
}

/*
 * Only the answer to the request that asked for a tunnel opens one: a
 * status line read anywhere else (inside an earlier response's body, or
 * a 101 that no request asked for) changes nothing the client reads.
 */
static void
tunnel_answer(struct sl_resp *r)
{
	uint32_t st = r->status;
	int asked =
		(r->tunnel & T_ASKED) != 0 && r->due == 1 && !sl_resp_unsure(r);

	if (asked && ((r->tunnel & T_ASKED) == 2 ? st / 100 == 2 : st == 101))
		r->state = R_TUNNEL;
	else if (st == 101) /* a switch no request here asked for */
		sl_resp_lost(r);
	else if (asked && st >= 200)
		r->tunnel &= T_UNSURE; /* refused: HTTP goes on */
}

/* A status line just ended at i: the first final one is marked. */
static void
mark(struct sl_resp *r, uint32_t i, struct sl_resp_mark *mk)
{
	r->flags &= (uint8_t)~F_STATUS;
	tunnel_answer(r);
	if (mk == NULL || r->status < 200 || r->state == R_LOST)
		return;
	if (mk->all && mk->n_ends < SL_RESP_ENDS) {
		mk->end[mk->n_ends].off = i;
		mk->end[mk->n_ends].status = r->status;
		mk->end[mk->n_ends++].ord = (uint16_t)(r->served + 1);
	}
	if (mk->off != UINT32_MAX ||
	    (mk->ord != 0 && mk->ord != (uint16_t)(r->served + 1)))
		return;
	mk->off = i;
	mk->status = r->status;
	mk->ord = (uint16_t)(r->served + 1);
}

unsigned int
sl_resp_consume(struct sl_resp *r, const uint8_t *p, uint32_t n)
{
	return sl_resp_consume_mark(r, p, n, NULL);
}

unsigned int
sl_resp_consume_mark(struct sl_resp *r, const uint8_t *p, uint32_t n,
		     struct sl_resp_mark *mk)
{
	uint32_t i = 0, k;

	r->done = 0;
	if (mk != NULL) {
		mk->off = UINT32_MAX;
		mk->n_ends = 0;
		mk->from = 0;
	}
	while (i < n) {
		switch (r->state) {
		case R_LOST:
		case R_TUNNEL:
			return r->done;
		case R_BODY_CL: {
			uint32_t k = n - i < r->left ? n - i : r->left;

			r->left -= k;
			i += k;
			if (r->left == 0)
				message_done(r);
			break;
		}
		case R_BODY_CHUNKED:
			i += chunked_bytes(r, p + i, n - i);
			break;
		case R_LINE:
			/* empty lines between responses are passed over */
			while (i < n && (p[i] == '\r' || p[i] == '\n'))
				i++;
			if (i == n)
				break;
			k = whole_line(r, p + i, n - i);
			if (k == 0)
				head_byte(r, p[i++]);
			i += k;
			break;
		case R_FIELD:
			k = (r->flags & F_CR) ? 0 : whole_line(r, p + i, n - i);
			if (k == 0)
				head_byte(r, p[i++]);
			i += k;
			break;
		case R_SKIP: { /* most of a head: values no one reads here */
			const uint8_t *lf;

			if (r->flags & F_CR) {
				head_byte(r, p[i++]);
				break;
			}
			lf = memchr(p + i, '\n', n - i);
			if (lf == NULL)
				return r->done; /* (a CR at the end: kept) */
			i = (uint32_t)(lf - p) + 1;
			r->state = R_FIELD;
			break;
		}
		default:
			head_byte(r, p[i++]);
		}
		if ((r->flags & F_STATUS) && r->state == R_FIELD)
			mark(r, i, mk);
	}
	return r->done;
}

/*
 * The field's value read a byte at a time, so that a head cut across
 * segments is read on from where the last one ended: the meaning is the
 * whole-line reading's (a name in any case, then ':', optional
 * whitespace, a whole number, optional whitespace, CR LF or LF).
 */
enum {
	FS_START,
	FS_CR0,
	FS_NAME,
	FS_OTHER,
	FS_LEAD,
	FS_DIGIT,
	FS_TRAIL,
	FS_CR
};

void
sl_resp_field_init(struct sl_resp_field *s)
{
	memset(s, 0, sizeof(*s));
}

/* A copy's value ended: it must agree with any before it. */
static int
fs_copy(struct sl_resp_field *s)
{
	if (s->found && s->x != s->v)
		return -1;
	s->v = s->x;
	s->found = 1;
	s->st = FS_START;
	s->k = 0;
	return 2;
}

/* One byte of a value (after the ':'): 2 to go on, else the answer. */
static int
fs_value_byte(struct sl_resp_field *s, uint8_t b, uint64_t max)
{
	int ows = b == ' ' || b == '\t';

	if (is_digit(b) && (s->st == FS_LEAD || s->st == FS_DIGIT)) {
		s->x = s->x * 10 + (uint64_t)(b - '0');
		s->st = FS_DIGIT;
		return s->x > max ? -1 : 2;
	}
	if (ows && s->st != FS_CR)
		s->st = s->st == FS_LEAD ? FS_LEAD : FS_TRAIL;
	else if (b == '\r' && (s->st == FS_DIGIT || s->st == FS_TRAIL))
		s->st = FS_CR;
	else if (b == '\n' && s->st != FS_LEAD)
		return fs_copy(s);
	else
		return -1; /* (empty, or not a whole number) */
	return 2;
}

/* One byte of a field line's start: 2 to go on, else the answer. */
static int
fs_name_byte(struct sl_resp_field *s, uint8_t b, const char *name, size_t nl)
{
	if (b == '\n' && (s->st == FS_START || s->st == FS_CR0))
		return s->found; /* the empty line: the head ends */
	if (b == '\n') {
		s->st = FS_START;
	} else if (s->st == FS_START && b == '\r') {
		s->st = FS_CR0;
	} else if (s->st == FS_CR0) {
		s->st = FS_OTHER;
	} else if (s->k == nl) {
		s->st = b == ':' ? FS_LEAD : FS_OTHER;
		s->x = 0;
	} else if (lower(b) == lower((uint8_t)name[s->k])) {
		s->st = FS_NAME;
		s->k++;
	} else {
		s->st = FS_OTHER;
	}
	if (s->st == FS_START || s->st == FS_OTHER)
		s->k = 0;
	return 2;
}

int
sl_resp_field_feed(struct sl_resp_field *s, const uint8_t *p, uint32_t n,
		   const char *name, uint64_t max, uint64_t *v)
{
	size_t nl = strlen(name);
	const uint8_t *end = p + n;
	int got = 2;

	while (p < end && got == 2) {
		if (s->st == FS_OTHER) {
			const uint8_t *lf = memchr(p, '\n', (size_t)(end - p));

			if (lf == NULL)
				return 2;
			s->st = FS_START;
			p = lf + 1;
			continue;
		}
		got = s->st >= FS_LEAD ? fs_value_byte(s, *p, max)
				       : fs_name_byte(s, *p, name, nl);
		p++;
	}
	if (got == 1)
		*v = s->v;
	return got;
}

int
sl_resp_field_u64(const uint8_t *p, uint32_t n, const char *name, uint64_t max,
		  uint64_t *v)
{
	struct sl_resp_field s;
	int got;

	sl_resp_field_init(&s);
	got = sl_resp_field_feed(&s, p, n, name, max, v);
	return got == 2 ? -1 : got;
}

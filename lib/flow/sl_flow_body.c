/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A Content-Length body read as a server that ignores Content-Length
 * reads it (CL.0: some servers do for endpoints that take no body): as
 * the next request. sluice forwards a body undecided, so a body whose
 * first line such a server could act on as a request is refused: one
 * line of a method token (at most 31 bytes), blanks and a target, that
 * either goes on, after blanks, to "HTTP/" (a versioned line; blanks
 * inside the target too, as the most lenient servers take them), or
 * ends (LF) with a target of a form servers act on (HTTP/0.9, "GET
 * /p"). A body that ends inside such a target is refused as well: the
 * bytes after it would go on with the line. Leading blank lines and
 * blanks are passed over, as servers do before a request line.
 *
 * A body that is only the first letters of a method ("PO") is glued by
 * such a server to the next head's method ("ST /v1/orders" read as
 * "POST /v1/orders"): sluice would decide that head under another
 * method than the server acts on. The reader keeps where in the method
 * names the body ended (sl_body_glued); the next head is refused where
 * the two make one.
 */
#include <string.h>

#include "sl_flow_priv.h"

enum {
	BL_DONE = 0,
	BL_LEAD,
	BL_METHOD,
	BL_SP1,
	BL_TARGET,
	BL_SP2,
	BL_VER,
	BL_MPRE, /* bits 3-7: the method prefix read so far, one of prefixes */
};

#define BL_STATE(s) ((s)&7)
#define BL_FORM     0x08 /* the target may be one a server acts on */
#define BL_K(s)     ((uint32_t)(s) >> 4)
/* in BL_METHOD, bits 3-7 count the token's bytes */
#define BL_METHOD_MAX 31

static int
tchar(uint8_t c)
{
	/* RFC 9110 5.6.2 */
	static const uint8_t bits[32] = {
		0x00, 0x00, 0x00, 0x00, 0xfa, 0x6c, 0xff, 0x03,
		0xfe, 0xff, 0xff, 0xc7, 0xff, 0xff, 0xff, 0x57,
	};

	return (bits[c >> 3] >> (c & 7)) & 1;
}

static int
blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static uint8_t
lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* The first byte of a target a server acts on: origin form ('/'),
 * asterisk form, or absolute form ("http:" or "https:"); no server
 * routes a target that begins otherwise. */
static int
form_start(uint8_t c)
{
	return c == '/' || c == '*' || lower(c) == 'h';
}

/*
 * Every proper prefix of a method a rule can name, or that frames the
 * response (HEAD). CONNECT is left out (its six would not fit the five
 * bits): glued, its head's target is an authority, which sluice refuses
 * under any other method, or one no backend tunnels to.
 */
static const char *const prefixes[] = {
	"g",  "ge",  "h",    "he",    "hea",    "p",   "po",   "pos",   "pu",
	"pa", "pat", "patc", "d",     "de",     "del", "dele", "delet", "o",
	"op", "opt", "opti", "optio", "option", "t",   "tr",   "tra",   "trac",
};

static const char *const methods[] = {
	"get", "head", "post", "put", "patch", "delete", "options", "trace",
};

_Static_assert(sizeof(prefixes) / sizeof(prefixes[0]) < 32,
	       "a prefix's index fits in bits 3-7");

/* The prefix that is prefixes[node - 1] (node 0: none) and c, or 0. */
static uint8_t
prefix_next(uint8_t node, uint8_t c)
{
	const char *p = node != 0 ? prefixes[node - 1] : "";
	size_t n = strlen(p), i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strlen(prefixes[i]) == n + 1 &&
		    memcmp(prefixes[i], p, n) == 0 &&
		    (uint8_t)prefixes[i][n] == lower(c))
			return (uint8_t)(i + 1);
	return 0;
}

int
sl_body_glued(uint8_t st, const char *m, uint32_t len)
{
	const char *p;
	size_t n, i, j;

	if ((st & 7) != BL_MPRE)
		return 0;
	p = prefixes[(st >> 3) - 1];
	n = strlen(p);
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strlen(methods[i]) != n + len ||
		    memcmp(methods[i], p, n) != 0)
			continue;
		for (j = 0; j < len; j++)
			if ((uint8_t)methods[i][n + j] != lower((uint8_t)m[j]))
				break;
		if (j == len)
			return 1;
	}
	return 0;
}

uint8_t
sl_body_line_start(void)
{
	return BL_LEAD;
}

/* A method token's byte c after the prefix node (BL_MPRE). */
static uint8_t
prefix_byte(uint8_t node, uint8_t c)
{
	uint8_t next;

	if (blank(c))
		return BL_SP1;
	if (!tchar(c))
		return BL_DONE;
	next = prefix_next(node, c);
	if (next != 0)
		return (uint8_t)(BL_MPRE | next << 3);
	return (uint8_t)(BL_METHOD | (strlen(prefixes[node - 1]) + 1) << 3);
}

/* One byte of the target, or what ends it. */
static uint8_t
target_byte(uint8_t st, uint8_t c, int *req)
{
	if (c == '\n') {
		*req = (st & BL_FORM) != 0;
		return BL_DONE;
	}
	if (blank(c))
		return BL_SP2 | (st & BL_FORM);
	return BL_TARGET | (st & BL_FORM);
}

static uint8_t
step(uint8_t st, uint8_t c, int *req)
{
	static const char ver[] = "http/";
	uint8_t next;

	switch (BL_STATE(st)) {
	case BL_LEAD:
		if (blank(c) || c == '\r' || c == '\n')
			return st;
		if ((next = prefix_next(0, c)) != 0)
			return (uint8_t)(BL_MPRE | next << 3);
		return tchar(c) ? BL_METHOD | 1 << 3 : BL_DONE;
	case BL_MPRE:
		return prefix_byte((uint8_t)(st >> 3), c);
	case BL_METHOD:
		if (blank(c))
			return BL_SP1;
		/* no server dispatches a longer method (the longest
		 * registered has 17 letters): the body's token runs on
		 * unread, and its segments are no longer kept */
		if (!tchar(c) || st >> 3 == BL_METHOD_MAX)
			return BL_DONE;
		return (uint8_t)(st + (1 << 3));
	case BL_SP1:
		if (blank(c))
			return st;
		if (c == '\r' || c == '\n')
			return BL_DONE;
		return BL_TARGET | (form_start(c) ? BL_FORM : 0);
	case BL_SP2:
		if (blank(c))
			return st;
		if (lower(c) == 'h')
			return (uint8_t)(BL_VER | (st & BL_FORM) | 1 << 4);
		return target_byte(st, c, req);
	case BL_VER:
		if (lower(c) == (uint8_t)ver[BL_K(st)]) {
			if (BL_K(st) + 1 == sizeof(ver) - 1) {
				*req = 1;
				return BL_DONE;
			}
			return (uint8_t)(st + (1 << 4));
		}
		return target_byte(st, c, req);
	case BL_TARGET:
		return target_byte(st, c, req);
	}
	return BL_DONE;
}

/* A body that ends here leaves such a target open: the next bytes
 * would go on with its line. */
static int
open_at_end(uint8_t st)
{
	uint8_t s = BL_STATE(st);

	return (st & BL_FORM) && (s == BL_TARGET || s == BL_SP2 || s == BL_VER);
}

uint32_t
sl_body_line(uint8_t *st, const uint8_t *p, uint32_t n, int ends)
{
	uint8_t s = *st;
	uint32_t i;
	int req = 0;

	for (i = 0; i < n && s != BL_DONE; i++) {
		s = step(s, p[i], &req);
		if (req) {
			*st = BL_DONE;
			return i + 1;
		}
	}
	*st = s;
	return ends && open_at_end(s) ? n : 0;
}

int
sl_flow_body_request(const uint8_t *p, uint32_t n, uint64_t cl)
{
	uint8_t st = sl_body_line_start();
	uint32_t take = cl < n ? (uint32_t)cl : n;

	return sl_body_line(&st, p, take, take == cl) != 0;
}

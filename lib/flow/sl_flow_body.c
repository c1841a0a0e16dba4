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
 */
#include "sl_flow_priv.h"

enum { BL_DONE = 0, BL_LEAD, BL_METHOD, BL_SP1, BL_TARGET, BL_SP2, BL_VER };

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

uint8_t
sl_body_line_start(void)
{
	return BL_LEAD;
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

	switch (BL_STATE(st)) {
	case BL_LEAD:
		if (blank(c) || c == '\r' || c == '\n')
			return st;
		return tchar(c) ? BL_METHOD | 1 << 3 : BL_DONE;
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

/* SPDX-License-Identifier: BSD-3-Clause */
#include "sl_http.h"
#include "sl_http_priv.h"

/* RFC 9112 7.1: chunk-size [chunk-ext] CRLF data CRLF ... 0 CRLF trailers CRLF
 */
enum {
	C_SIZE_START,
	C_SIZE,
	C_EXT,
	C_SIZE_LF,
	C_DATA,
	C_DATA_CR,
	C_DATA_LF,
	C_TRAILER_START,
	C_TRAILER,
	C_TRAILER_LF,
	C_FINAL_LF,
	C_DONE,
};

void
sl_chunked_init(struct sl_chunked *c)
{
	c->remaining = 0;
	c->state = C_SIZE_START;
	c->ndigits = 0;
}

/* One byte of the size line; returns 0 or SL_HTTP_ERROR. */
static int
size_byte(struct sl_chunked *c, unsigned char ch)
{
	int h = sl_hexval(ch);

	if (h >= 0 && (c->state == C_SIZE_START || c->state == C_SIZE)) {
		/* 15 hex digits keep the size well inside 64 bits. */
		if (++c->ndigits > 15)
			return SL_HTTP_ERROR;
		c->remaining = c->remaining << 4 | (uint64_t)h;
		c->state = C_SIZE;
		return 0;
	}
	if (c->state == C_SIZE_START)
		return SL_HTTP_ERROR;
	if (c->state == C_SIZE && (ch == ';' || ch == ' ' || ch == '\t')) {
		c->state = C_EXT;
		return 0;
	}
	if (ch == '\r') {
		c->state = C_SIZE_LF;
		return 0;
	}
	if (c->state == C_EXT && (ch >= 0x20 || ch == '\t') && ch != 0x7f)
		return 0;
	return SL_HTTP_ERROR;
}

static int
crlf_byte(struct sl_chunked *c, unsigned char ch)
{
	switch (c->state) {
	case C_SIZE_LF:
		if (ch != '\n')
			return SL_HTTP_ERROR;
		c->ndigits = 0;
		c->state = c->remaining ? C_DATA : C_TRAILER_START;
		return 0;
	case C_DATA_CR:
		if (ch != '\r')
			return SL_HTTP_ERROR;
		c->state = C_DATA_LF;
		return 0;
	case C_DATA_LF:
		if (ch != '\n')
			return SL_HTTP_ERROR;
		c->state = C_SIZE_START;
		return 0;
	case C_TRAILER_START:
		if (ch == '\r')
			c->state = C_FINAL_LF;
		else if (ch == '\n' || ch == ' ' || ch == '\t' || ch < 0x20)
			return SL_HTTP_ERROR;
		else
			c->state = C_TRAILER;
		return 0;
	case C_TRAILER:
		if (ch == '\r')
			c->state = C_TRAILER_LF;
		else if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return SL_HTTP_ERROR;
		return 0;
	case C_TRAILER_LF:
		if (ch != '\n')
			return SL_HTTP_ERROR;
		c->state = C_TRAILER_START;
		return 0;
	case C_FINAL_LF:
		if (ch != '\n')
			return SL_HTTP_ERROR;
		c->state = C_DONE;
		return 0;
	}
	return SL_HTTP_ERROR;
}

long
sl_chunked_consume(struct sl_chunked *c, const char *buf, size_t len, int *done)
{
	size_t i = 0;

	*done = 0;
	while (i < len && c->state != C_DONE) {
		int rc;

		if (c->state == C_DATA) {
			uint64_t n = len - i;

			if (n > c->remaining)
				n = c->remaining;
			c->remaining -= n;
			i += (size_t)n;
			if (c->remaining == 0)
				c->state = C_DATA_CR;
			continue;
		}
		if (c->state <= C_EXT)
			rc = size_byte(c, (unsigned char)buf[i]);
		else
			rc = crlf_byte(c, (unsigned char)buf[i]);
		if (rc != 0)
			return SL_HTTP_ERROR;
		i++;
	}
	*done = c->state == C_DONE;
	return (long)i;
}

uint64_t
sl_chunked_opaque(const struct sl_chunked *c)
{
	return c->state == C_DATA ? c->remaining : 0;
}

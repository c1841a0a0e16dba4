/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_HTTP_H
#define SL_HTTP_H

/*
 * HTTP/1.1 request-head parser and body framing (RFC 9112), in the manner
 * of picohttpparser: results point into the caller's buffer, nothing is
 * copied or allocated, and a call reports bytes consumed, an error, or that
 * more bytes are needed.
 *
 * It is strict on purpose: every shape on which two HTTP implementations
 * may disagree about where a request ends (the root of request smuggling)
 * is an error here, so that what the appliance decides is what the backend
 * will execute.
 */

#include <stdint.h>
#include <stddef.h>

#define SL_HTTP_INCOMPLETE (-2)
#define SL_HTTP_ERROR      (-1)

#define SL_HTTP_MAX_XFF     4
#define SL_HTTP_MAX_HEADERS 100

enum sl_http_err {
	SL_HTTP_E_NONE = 0,
	SL_HTTP_E_METHOD,         /* empty or non-token method */
	SL_HTTP_E_TARGET,         /* empty target or a byte not allowed in it */
	SL_HTTP_E_VERSION,        /* not HTTP/1.0 or HTTP/1.1 */
	SL_HTTP_E_CTL,            /* NUL, DEL or another control byte */
	SL_HTTP_E_BARE_CR,        /* CR not followed by LF */
	SL_HTTP_E_BARE_LF,        /* LF not preceded by CR */
	SL_HTTP_E_OBS_FOLD,       /* header line continued with SP/HTAB */
	SL_HTTP_E_HDR_NAME,       /* empty or non-token field name */
	SL_HTTP_E_WS_COLON,       /* whitespace between name and colon */
	SL_HTTP_E_CL_TE,          /* Content-Length and Transfer-Encoding */
	SL_HTTP_E_CL_DIFF,        /* Content-Length values that differ */
	SL_HTTP_E_CL_BAD,         /* Content-Length not a decimal number */
	SL_HTTP_E_TE_NOT_CHUNKED, /* final transfer coding is not chunked */
	SL_HTTP_E_TE_HTTP10,      /* Transfer-Encoding in an HTTP/1.0 request */
	SL_HTTP_E_HOST,           /* missing (1.1), repeated or empty Host */
	SL_HTTP_E_TOO_MANY,       /* more than SL_HTTP_MAX_HEADERS fields */
	SL_HTTP_E_DUP_IDENT,      /* API key, user or Bearer header repeated */
	SL_HTTP_E_CHUNK,          /* malformed chunked body */
	SL_HTTP_E__COUNT
};

struct sl_str {
	const char *p;
	uint32_t len;
};

/* Which request header carries what; names compared case-insensitively. */
struct sl_http_cfg {
	struct sl_str api_key_header; /* e.g. X-API-Key */
	struct sl_str user_header;    /* e.g. X-User-Id; len 0 disables */
};

struct sl_http_req {
	struct sl_str method;
	struct sl_str target;
	struct sl_str host;
	struct sl_str
		api_key; /* configured header, else Authorization: Bearer */
	struct sl_str user;
	uint64_t content_length;
	uint16_t n_headers;
	uint8_t n_xff;
	uint8_t xff_overflow; /* more X-Forwarded-For fields than kept */
	uint8_t minor_version;
	uint8_t has_cl;
	uint8_t chunked;
	uint8_t conn_close;
	uint8_t upgrade; /* Upgrade requested or CONNECT: stream leaves HTTP */
	uint8_t error;   /* enum sl_http_err */
	/* X-Forwarded-For fields, in order; the first n_xff are set (last:
	 * a parse clears only what precedes it) */
	struct sl_str xff[SL_HTTP_MAX_XFF];
};

/*
 * Parses one request head at buf[0..len). Returns the head's length in
 * bytes (through the blank line), SL_HTTP_ERROR with req->error set, or
 * SL_HTTP_INCOMPLETE when the bytes so far are a valid prefix.
 * Leading empty lines are skipped and counted in the returned length.
 */
int sl_http_parse_request(const char *buf, size_t len,
			  const struct sl_http_cfg *cfg,
			  struct sl_http_req *req);

/*
 * Incremental decoder that skips a chunked body, including trailers.
 * State lives in the flow; bytes may arrive one at a time.
 */
struct sl_chunked {
	uint64_t remaining; /* data bytes left in the current chunk */
	uint8_t state;
	uint8_t ndigits;
};

void sl_chunked_init(struct sl_chunked *c);

/*
 * Consumes body bytes from buf[0..len). Returns the number of bytes that
 * belong to the body (the rest starts the next message) and sets *done
 * once the last chunk and trailers are consumed. Returns SL_HTTP_ERROR on
 * malformed framing.
 */
long sl_chunked_consume(struct sl_chunked *c, const char *buf, size_t len,
			int *done);

const char *sl_http_err_name(enum sl_http_err e);

#endif /* SL_HTTP_H */

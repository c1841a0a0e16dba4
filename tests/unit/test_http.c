/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sl_http.h"

static const struct sl_http_cfg CFG = {
	.api_key_header = {"X-API-Key", 9},
	.user_header = {"X-User-Id", 9},
};

static const char REQ[] = "POST /v1/orders?id=7 HTTP/1.1\r\n"
			  "Host: api.example.com\r\n"
			  "User-Agent: curl/7.88\r\n"
			  "X-Forwarded-For: 203.0.113.9, 198.18.0.7\r\n"
			  "x-api-key:   k-123  \r\n"
			  "X-User-Id: u-9\r\n"
			  "Content-Length: 12\r\n"
			  "\r\n";

/* Parses from an exact-size heap copy so ASan sees any overread. */
static int
parse(const char *s, size_t n, struct sl_http_req *r)
{
	char *b = malloc(n ? n : 1);
	int rc;

	memcpy(b, s, n);
	rc = sl_http_parse_request(b, n, &CFG, r);
	/* Results point into b: re-point them at s for the caller. */
#define FIX(f)                                                                 \
	if (r->f.p)                                                            \
	r->f.p = s + (r->f.p - b)
	FIX(method);
	FIX(target);
	FIX(host);
	FIX(api_key);
	FIX(user);
	FIX(bearer);
	for (int i = 0; i < r->n_xff && i < SL_HTTP_MAX_XFF; i++)
		FIX(xff[i]);
#undef FIX
	free(b);
	return rc;
}

static int
parse_str(const char *s, struct sl_http_req *r)
{
	return parse(s, strlen(s), r);
}

static void
assert_str(struct sl_str s, const char *want)
{
	assert_int_equal(s.len, strlen(want));
	assert_memory_equal(s.p, want, s.len);
}

static void
full_request(void **state)
{
	struct sl_http_req r;

	(void)state;
	assert_int_equal(parse_str(REQ, &r), (int)strlen(REQ));
	assert_str(r.method, "POST");
	assert_str(r.target, "/v1/orders?id=7");
	assert_str(r.host, "api.example.com");
	assert_str(r.api_key, "k-123");
	assert_str(r.user, "u-9");
	assert_int_equal(r.n_xff, 1);
	assert_str(r.xff[0], "203.0.113.9, 198.18.0.7");
	assert_true(r.has_cl);
	assert_int_equal(r.content_length, 12);
	assert_false(r.chunked);
	assert_int_equal(r.minor_version, 1);
	assert_int_equal(r.n_headers, 6);
}

static void
every_truncation_is_incomplete(void **state)
{
	struct sl_http_req r;
	size_t n;

	(void)state;
	for (n = 0; n < strlen(REQ); n++)
		assert_int_equal(parse(REQ, n, &r), SL_HTTP_INCOMPLETE);
}

/* Inserting NUL, DEL or a bare CR anywhere in the head is an error. */
static void
injected_bytes_are_errors(void **state)
{
	const char bad[] = {'\0', 0x7f, '\r', 0x01, 0x1b};
	size_t len = strlen(REQ), at, k;
	char buf[sizeof(REQ) + 1];

	(void)state;
	for (k = 0; k < sizeof(bad); k++) {
		for (at = 0; at < len; at++) {
			struct sl_http_req r;
			int rc;

			memcpy(buf, REQ, at);
			buf[at] = bad[k];
			memcpy(buf + at + 1, REQ + at, len - at);
			rc = parse(buf, len + 1, &r);
			/* A CR right before an existing CR-LF is "\r\r\n". */
			if (rc != SL_HTTP_ERROR)
				fail_msg("byte 0x%02x at %zu: rc %d", bad[k],
					 at, rc);
		}
	}
}

struct bad_case {
	const char *req;
	enum sl_http_err err;
};

/* Each request must fail with exactly its error. */
static void
expect_errors(const struct bad_case *cases, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct sl_http_req r;
		int rc = parse(cases[i].req, strlen(cases[i].req), &r);

		if (rc != SL_HTTP_ERROR || r.error != cases[i].err)
			fail_msg("case %zu: rc %d error %s, want %s", i, rc,
				 sl_http_err_name(r.error),
				 sl_http_err_name(cases[i].err));
	}
}

static void
strictness(void **state)
{
	static const struct bad_case cases[] = {
		{"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		 SL_HTTP_E_OBS_FOLD},
		{"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\n\r\n",
		 SL_HTTP_E_OBS_FOLD},
		{"GET / HTTP/1.1\r\nHost : a\r\n\r\n", SL_HTTP_E_WS_COLON},
		{"GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", SL_HTTP_E_WS_COLON},
		{"GET / HTTP/1.1\r\nHo(st: a\r\n\r\n", SL_HTTP_E_HDR_NAME},
		{"GET / HTTP/1.1\r\n: a\r\n\r\n", SL_HTTP_E_HDR_NAME},
		{"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", SL_HTTP_E_METHOD},
		{" GET / HTTP/1.1\r\nHost: a\r\n\r\n", SL_HTTP_E_METHOD},
		{"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", SL_HTTP_E_TARGET},
		{"GET /a\x80 HTTP/1.1\r\nHost: a\r\n\r\n", SL_HTTP_E_TARGET},
		{"GET / HTTP/2.0\r\nHost: a\r\n\r\n", SL_HTTP_E_VERSION},
		{"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", SL_HTTP_E_VERSION},
		{"GET / HTTP/1.1\nHost: a\r\n\r\n", SL_HTTP_E_BARE_LF},
		{"GET / HTTP/1.1\r\nHost: a\n\n", SL_HTTP_E_BARE_LF},
		{"GET / HTTP/1.1\r\nHost: a\r\n\n", SL_HTTP_E_BARE_LF},
		{"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", SL_HTTP_E_BARE_CR},
		{"GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", SL_HTTP_E_CTL},
		{"GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n", SL_HTTP_E_CTL},
		{"GET / HTTP/1.1\r\n\r\n", SL_HTTP_E_HOST},
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		 SL_HTTP_E_HOST},
		{"GET / HTTP/1.1\r\nHost:\r\n\r\n", SL_HTTP_E_HOST},
		{"GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: 1\r\nX-API-Key: "
		 "2\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n"
		 "Authorization: Bearer y\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		/* a Bearer beside another scheme, either first, or beside an
		 * empty one: a backend may serve the one sluice did not key */
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n"
		 "Authorization: Basic eDp5\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic eDp5\r\n"
		 "Authorization: Bearer x\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer  \r\n"
		 "Authorization: Bearer x\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		/* two tokens in one Bearer field: the first to a backend that
		 * splits it at its blanks */
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x y\r\n"
		 "\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer  x\ty\r\n"
		 "\r\n",
		 SL_HTTP_E_DUP_IDENT},
		/* the same two, joined as a server joins a field sent twice */
		{"GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: 1, 2\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: 1,\r\n\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x,y\r\n"
		 "\r\n",
		 SL_HTTP_E_DUP_IDENT},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: "
		 "99999999999999999999\r\n\r\n",
		 SL_HTTP_E_CL_BAD},
		{"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		 SL_HTTP_E_TE_HTTP10},
	};

	(void)state;
	expect_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

/* The classic request smuggling shapes (Linhart et al., Kettle). */
/*
 * Upgrade names websocket or nothing: after a 101 to h2c the backend
 * reads HTTP/2 requests, after one to TLS requests sluice cannot see;
 * after a 2xx to CONNECT it relays whatever follows.
 */
static void
upgrade_protocols(void **state)
{
	static const struct bad_case cases[] = {
		/* curl --http2 on an http:// URL */
		{"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, "
		 "HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: "
		 "AAMAAABkAAQAAP__\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		/* without the Connection option a lenient backend may still
		 * take it */
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: H2C\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: TLS/1.2\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		/* one protocol of several, in a second field */
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
		 "Upgrade: h2c\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket, "
		 "h2c\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		/* spellings a field list would cut back to websocket */
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket;h2c\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket h2c\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocketh2c\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket/\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket/1/h2c"
		 "\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		{"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: web\r\n\r\n",
		 SL_HTTP_E_UPGRADE},
		/* a tunnel through a backend that proxies: to anywhere */
		{"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		 SL_HTTP_E_CONNECT},
		{"connect a:80 HTTP/1.1\r\nHost: a:80\r\n\r\n",
		 SL_HTTP_E_CONNECT},
	};
	static const char *const good[] = {
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
		"Upgrade: WebSocket\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
		"Upgrade: websocket/13 , websocket\r\n\r\n",
		/* an empty field asks for nothing */
		"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: \r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nUpgrade-Insecure-Requests: 1"
		"\r\n\r\n",
	};
	struct sl_http_req r;
	size_t i;

	(void)state;
	expect_errors(cases, sizeof(cases) / sizeof(cases[0]));
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(parse_str(good[i], &r), (int)strlen(good[i]));
	assert_true(r.upgrade == 0);
	assert_int_equal(parse_str(good[0], &r), (int)strlen(good[0]));
	assert_true(r.upgrade);
}

static void
smuggling_shapes(void **state)
{
	static const struct bad_case cases[] = {
		/* CL.TE and TE.CL: both framings present */
		{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 13\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n",
		 SL_HTTP_E_CL_TE},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		 "Content-Length: 4\r\n\r\n",
		 SL_HTTP_E_CL_TE},
		/* TE.TE: obfuscated or doubled codings */
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		 "Transfer-Encoding: identity\r\n\r\n",
		 SL_HTTP_E_TE_NOT_CHUNKED},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
		 "xchunked\r\n\r\n",
		 SL_HTTP_E_TE_NOT_CHUNKED},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, "
		 "chunked\r\n\r\n",
		 SL_HTTP_E_TE_NOT_CHUNKED},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, "
		 "gzip\r\n\r\n",
		 SL_HTTP_E_TE_NOT_CHUNKED},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n",
		 SL_HTTP_E_TE_NOT_CHUNKED},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : "
		 "chunked\r\n\r\n",
		 SL_HTTP_E_WS_COLON},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n "
		 "chunked\r\n\r\n",
		 SL_HTTP_E_OBS_FOLD},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		 "Content-Length: 0\r\nContent-Length: 0\r\n\r\n",
		 SL_HTTP_E_CL_TE},
		/* CL.CL: two lengths that differ, in one field or two */
		{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
		 "Content-Length: 5\r\n\r\n",
		 SL_HTTP_E_CL_DIFF},
		{"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 5\r\n\r\n",
		 SL_HTTP_E_CL_DIFF},
	};

	(void)state;
	expect_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

static void
accepted_forms(void **state)
{
	struct sl_http_req r;
	const char *s;

	(void)state;
	/* identical repeated lengths are one length (RFC 9110 8.6) */
	s = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
	    "7\r\nContent-Length: 7, 7\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_int_equal(r.content_length, 7);
	s = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, "
	    "Chunked\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_true(r.chunked);
	/* leading empty lines are skipped and counted */
	s = "\r\n\r\nGET / HTTP/1.0\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_int_equal(r.minor_version, 0);
	/* Bearer when the configured header is absent; header wins otherwise */
	s = "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer  tok-1\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_str(r.api_key, "tok-1");
	s = "GET / HTTP/1.1\r\nAuthorization: Bearer tok-1\r\nHost: "
	    "a\r\nX-API-Key: k\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_str(r.api_key, "k");
	s = "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic eDp5\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_int_equal(r.api_key.len, 0);
	/* an upgrade to WebSocket leaves HTTP (CONNECT is refused) */
	s = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, "
	    "Upgrade\r\nUpgrade: websocket\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_true(r.upgrade);
	s = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_true(r.conn_close);
	/* obs-text in values is allowed; trailing whitespace is not the value
	 */
	s = "GET / HTTP/1.1\r\nHost: a\r\nX-N: caf\xc3\xa9 \t\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	/* X-Forwarded-For fields are kept in order */
	s = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: "
	    "1.1.1.1\r\nx-forwarded-for: 2.2.2.2\r\n\r\n";
	assert_int_equal(parse_str(s, &r), (int)strlen(s));
	assert_int_equal(r.n_xff, 2);
	assert_str(r.xff[1], "2.2.2.2");
}

/*
 * A byte at every position of a long value, so the 32- and 16-byte vector
 * scans and the scalar tail each meet it: controls and DEL refuse the
 * head, HTAB and obs-text are part of the value.
 */
static void
value_bytes_at_every_position(void **state)
{
	static const char pre[] = "GET / HTTP/1.1\r\nHost: a\r\nX-V: ";
	static const unsigned char bad[] = {0x00, 0x01, 0x0b, 0x1f, 0x7f};
	static const unsigned char ok[] = {'\t', 0x80, 0xff, ' '};
	static const char post[] = "\r\nX-K: k\r\n\r\n";
	char b[256];
	struct sl_http_req r;
	size_t pos, i, head = sizeof(pre) - 1, vlen = 80;
	size_t len = head + vlen + sizeof(post) - 1;

	(void)state;
	for (pos = 1; pos + 1 < vlen; pos++) {
		memcpy(b, pre, head);
		memset(b + head, 'v', vlen);
		memcpy(b + head + vlen, post, sizeof(post) - 1);
		for (i = 0; i < sizeof(bad); i++) {
			b[head + pos] = (char)bad[i];
			assert_int_equal(parse(b, len, &r), SL_HTTP_ERROR);
			assert_int_equal(r.error, SL_HTTP_E_CTL);
		}
		for (i = 0; i < sizeof(ok); i++) {
			b[head + pos] = (char)ok[i];
			assert_int_equal(parse(b, len, &r), (int)len);
			assert_int_equal(r.n_headers, 3);
		}
	}
}

/* Two pipelined requests: the first call returns only the first head. */
static void
pipelined(void **state)
{
	static const char two[] = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
				  "GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
	struct sl_http_req r;
	int n;

	(void)state;
	n = parse_str(two, &r);
	assert_int_equal(n, 28);
	assert_str(r.target, "/a");
	assert_int_equal(parse_str(two + n, &r), 28);
	assert_str(r.target, "/b");
}

static void
too_many_headers(void **state)
{
	char buf[8192];
	size_t o = 0;
	struct sl_http_req r;
	int i;

	(void)state;
	o += (size_t)sprintf(buf, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (i = 0; i < SL_HTTP_MAX_HEADERS; i++)
		o += (size_t)sprintf(buf + o, "X-%d: v\r\n", i);
	o += (size_t)sprintf(buf + o, "\r\n");
	assert_int_equal(parse(buf, o, &r), SL_HTTP_ERROR);
	assert_int_equal(r.error, SL_HTTP_E_TOO_MANY);
}

/* ---- chunked ---- */

static const char BODY[] =
	"4\r\nWiki\r\n5;ext=1\r\npedia\r\nE \r\n in\r\n\r\nchunks.\r\n"
	"0\r\nX-Trailer: t\r\n\r\n";

static void
chunked_whole_and_bytewise(void **state)
{
	struct sl_chunked c;
	int done;
	size_t i;
	char after[sizeof(BODY) + 3];

	(void)state;
	memcpy(after, BODY, sizeof(BODY) - 1);
	memcpy(after + sizeof(BODY) - 1, "GET", 3);
	sl_chunked_init(&c);
	assert_int_equal(
		sl_chunked_consume(&c, after, sizeof(after) - 1, &done),
		(long)strlen(BODY));
	assert_true(done);
	sl_chunked_init(&c);
	for (i = 0; i < strlen(BODY); i++) {
		assert_int_equal(sl_chunked_consume(&c, BODY + i, 1, &done), 1);
		assert_int_equal(done, i == strlen(BODY) - 1);
	}
}

static void
chunked_errors(void **state)
{
	static const char *bad[] = {
		"x\r\n",                 /* not hex */
		"\r\n",                  /* no size */
		"4\nWiki\r\n",           /* bare LF */
		"4\r\nWikiX\r\n",        /* data longer than the size */
		"10000000000000000\r\n", /* overflow */
		"0\r\n\x01x\r\n\r\n",    /* control byte in trailer */
		"4;a\x00\r\n",           /* NUL in extension */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sl_chunked c;
		int done;

		sl_chunked_init(&c);
		if (sl_chunked_consume(&c, bad[i], strlen(bad[i]) + (i == 6),
				       &done) != SL_HTTP_ERROR)
			fail_msg("case %zu accepted", i);
	}
}

/* ---- the target as the backend resolves it ---- */

static const struct sl_norm_cfg NORM = {.merge_slashes = 1};

/* Normalises method + target (+ Host) from exact-size copies. */
static int
norm(const char *method, const char *target, const char *host,
     const struct sl_norm_cfg *cfg, char *path, char *hostout)
{
	struct sl_http_req r;
	struct sl_http_norm n;
	size_t tl = strlen(target), hl = host ? strlen(host) : 0;
	char *t = malloc(tl ? tl : 1), *h = malloc(hl ? hl : 1);
	char *scratch = malloc(tl + hl ? tl + hl : 1);
	int rc;

	memset(&r, 0, sizeof(r));
	memcpy(t, target, tl);
	memcpy(h, host ? host : "", hl);
	r.method = (struct sl_str){method, (uint32_t)strlen(method)};
	r.target = (struct sl_str){t, (uint32_t)tl};
	r.host = (struct sl_str){h, (uint32_t)hl};
	rc = sl_http_normalize(cfg, &r, scratch, tl + hl, &n);
	if (rc == 0) {
		assert_true(n.path.len <= tl);
		if (n.path.len)
			memcpy(path, n.path.p, n.path.len);
		path[n.path.len] = '\0';
		if (n.host.len)
			memcpy(hostout, n.host.p, n.host.len);
		hostout[n.host.len] = '\0';
		/* normal forms are fixed points */
		if (n.path.len > 0 && path[0] == '/') {
			char again[512];
			int k = sl_http_normalize_path(cfg, path, n.path.len,
						       again);

			assert_int_equal(k, n.path.len);
			assert_memory_equal(again, path, n.path.len);
		}
	}
	free(t);
	free(h);
	free(scratch);
	return rc;
}

static void
expect_path(const char *target, const char *want)
{
	char p[512], h[512];

	if (norm("GET", target, "api.test", &NORM, p, h) != 0)
		fail_msg("%s: refused", target);
	if (strcmp(p, want) != 0)
		fail_msg("%s: got %s, want %s", target, p, want);
}

static void
expect_refused(const char *method, const char *target, const char *host,
	       const struct sl_norm_cfg *cfg, int err)
{
	char p[512], h[512];
	int rc = norm(method, target, host, cfg, p, h);

	if (rc != err)
		fail_msg("%s %s: got %s, want %s", method, target,
			 sl_http_err_name(rc), sl_http_err_name(err));
}

/* RFC 3986 5.2.4 and the normal examples of 5.4.1/5.4.2, as paths. */
static void
norm_dot_segments(void **state)
{
	(void)state;
	expect_path("/a/b/c/./../../g", "/a/g");
	expect_path("/mid/content=5/../6", "/mid/6");
	expect_path("/b/c/g", "/b/c/g");
	expect_path("/b/c/./g", "/b/c/g");
	expect_path("/b/c/g/", "/b/c/g/");
	expect_path("/b/c/.", "/b/c/");
	expect_path("/b/c/./", "/b/c/");
	expect_path("/b/c/..", "/b/");
	expect_path("/b/c/../", "/b/");
	expect_path("/b/c/../g", "/b/g");
	expect_path("/b/c/../..", "/");
	expect_path("/b/c/../../", "/");
	expect_path("/b/c/../../g", "/g");
	expect_path("/b/c/../../../g", "/g"); /* never above the root */
	expect_path("/b/c/../../../../g", "/g");
	expect_path("/./g", "/g");
	expect_path("/../g", "/g");
	expect_path("/b/c/g.", "/b/c/g.");
	expect_path("/b/c/.g", "/b/c/.g");
	expect_path("/b/c/g..", "/b/c/g..");
	expect_path("/b/c/..g", "/b/c/..g");
	expect_path("/b/c/./../g", "/b/g");
	expect_path("/b/c/./g/.", "/b/c/g/");
	expect_path("/b/c/g/./h", "/b/c/g/h");
	expect_path("/b/c/g/../h", "/b/c/h");
	expect_path("/b/c/g;x=1/./y", "/b/c/g;x=1/y");
	expect_path("/b/c/g;x=1/../y", "/b/c/y");
	expect_path("/...", "/...");
	expect_path("/.", "/");
	expect_path("/..", "/");
	expect_path("/", "/");
	expect_path("/.well-known/x", "/.well-known/x");
}

static void
norm_escapes_and_slashes(void **state)
{
	char p[512], h[512];
	struct sl_norm_cfg keep = {.merge_slashes = 0,
				   .escaped_slashes = SL_ESC_KEEP};
	struct sl_norm_cfg dec = {.merge_slashes = 1,
				  .escaped_slashes = SL_ESC_DECODE};

	(void)state;
	expect_path("/v1/%73earch", "/v1/search");
	expect_path("/v1/%73EARCH", "/v1/sEARCH");
	expect_path("/v1/%7euser", "/v1/~user");
	expect_path("/v1/%7Euser", "/v1/~user");
	expect_path("/v1/a%20b", "/v1/a%20b");
	expect_path("/v1/a%3fb", "/v1/a%3Fb");
	expect_path("/v1/%c3%a9", "/v1/%C3%A9");
	expect_path("/v1/%2541", "/v1/%2541"); /* decoded once, not twice */
	expect_path("/zz/%2e%2e/v1/search", "/v1/search");
	expect_path("/zz/%2E./v1/search", "/v1/search");
	expect_path("/v1/%2e/search", "/v1/search");
	expect_path("//v1/search", "/v1/search");
	expect_path("/v1//search", "/v1/search");
	expect_path("/v1///search//", "/v1/search/");
	expect_path("/a//../b", "/b"); /* merged first, as nginx does */
	expect_path("/v1/search?a=/../x&b=%zz", "/v1/search");
	expect_path("/v1/search?", "/v1/search");
	assert_int_equal(norm("GET", "/a//../b", "h", &keep, p, h), 0);
	assert_string_equal(p, "/a/b"); /* RFC 3986 without merging */
	assert_int_equal(norm("GET", "/v1%2fsearch", "h", &keep, p, h), 0);
	assert_string_equal(p, "/v1%2Fsearch");
	assert_int_equal(norm("GET", "/v1%2Fsearch", "h", &dec, p, h), 0);
	assert_string_equal(p, "/v1/search");
	assert_int_equal(norm("GET", "/a/b%2F..%2Fc", "h", &dec, p, h), 0);
	assert_string_equal(p, "/a/c");
	assert_int_equal(norm("GET", "/a%5cb", "h", &dec, p, h), 0);
	assert_string_equal(p, "/a\\b");
	expect_refused("GET", "/v1%2Fsearch", "h", &NORM, SL_HTTP_E_ESC_SLASH);
	expect_refused("GET", "/v1%5csearch", "h", &NORM, SL_HTTP_E_ESC_SLASH);
	/* a raw '\' is a '/' to IIS, a byte to nginx: refused unless the
	 * setting says which (any place: the vector scan's lanes and tail) */
	expect_refused("GET", "/v1\\search", "h", &NORM, SL_HTTP_E_BACKSLASH);
	expect_refused("GET", "/v1/search/abcdefghijklm\\", "h", &NORM,
		       SL_HTTP_E_BACKSLASH);
	expect_refused("GET", "/v1/search/abcdefghijklmnopqrstuvwxyz\\x", "h",
		       &NORM, SL_HTTP_E_BACKSLASH);
	expect_path("/v1/search?q=a\\b", "/v1/search");
	assert_int_equal(norm("GET", "/v1\\search", "h", &dec, p, h), 0);
	assert_string_equal(p, "/v1\\search");
	assert_int_equal(norm("GET", "/a\\..\\b", "h", &keep, p, h), 0);
	assert_string_equal(p, "/a\\..\\b");
	expect_refused("GET", "/v1/%", "h", &NORM, SL_HTTP_E_PCT);
	expect_refused("GET", "/v1/%4", "h", &NORM, SL_HTTP_E_PCT);
	expect_refused("GET", "/v1/%4g", "h", &NORM, SL_HTTP_E_PCT);
	expect_refused("GET", "/v1/%g4/x", "h", &NORM, SL_HTTP_E_PCT);
	expect_refused("GET", "/v1/%00", "h", &NORM, SL_HTTP_E_PCT_CTL);
	expect_refused("GET", "/v1/%0a", "h", &NORM, SL_HTTP_E_PCT_CTL);
	expect_refused("GET", "/v1/%7F", "h", &NORM, SL_HTTP_E_PCT_CTL);
	expect_refused("GET", "/v1/a#frag", "h", &NORM, SL_HTTP_E_FORM);
}

/* ";params": kept (nginx), stripped as a Servlet container does, refused */
static void
norm_path_params(void **state)
{
	char p[512], h[512];
	struct sl_norm_cfg strip = {.merge_slashes = 1,
				    .path_params = SL_PARAMS_STRIP};
	struct sl_norm_cfg reject = {.merge_slashes = 1,
				     .path_params = SL_PARAMS_REJECT};

	(void)state;
	expect_path("/v1/search;jsessionid=1", "/v1/search;jsessionid=1");
	assert_int_equal(
		norm("GET", "/v1/search;jsessionid=1?q", "h", &strip, p, h), 0);
	assert_string_equal(p, "/v1/search");
	assert_int_equal(norm("GET", "/a;x/b", "h", &strip, p, h), 0);
	assert_string_equal(p, "/a/b");
	/* the Tomcat bypass: "..;" is a dot segment once stripped */
	assert_int_equal(norm("GET", "/zz/..;/v1/search", "h", &strip, p, h),
			 0);
	assert_string_equal(p, "/v1/search");
	assert_int_equal(norm("GET", "/v1/search;", "h", &strip, p, h), 0);
	assert_string_equal(p, "/v1/search");
	assert_int_equal(norm("GET", "/v1/a%3Bb", "h", &strip, p, h), 0);
	assert_string_equal(p, "/v1/a%3Bb"); /* escaped: not a delimiter */
	expect_refused("GET", "/v1/search;x", "h", &reject,
		       SL_HTTP_E_PATH_PARAMS);
}

static void
norm_forms_and_hosts(void **state)
{
	char p[512], h[512];
	struct sl_norm_cfg allow = {.merge_slashes = 1,
				    .host_mismatch = SL_HOST_ALLOW};

	(void)state;
	assert_int_equal(norm("GET", "/x", "API.Test.", &NORM, p, h), 0);
	assert_string_equal(h, "api.test");
	assert_int_equal(norm("GET", "/x", "api.test:80", &NORM, p, h), 0);
	assert_string_equal(h, "api.test");
	assert_int_equal(norm("GET", "/x", "api.test:", &NORM, p, h), 0);
	assert_string_equal(h, "api.test");
	assert_int_equal(norm("GET", "/x", "Api.test:8080", &NORM, p, h), 0);
	assert_string_equal(h, "api.test:8080");
	assert_int_equal(norm("GET", "/x", "[2001:2::A]:80", &NORM, p, h), 0);
	assert_string_equal(h, "[2001:2::a]");
	assert_int_equal(norm("GET", "http://api.test/v1/search", "api.test",
			      &NORM, p, h),
			 0);
	assert_string_equal(p, "/v1/search");
	assert_string_equal(h, "api.test");
	assert_int_equal(norm("GET", "HTTP://API.test:80/v1/./search?x",
			      "api.test", &NORM, p, h),
			 0);
	assert_string_equal(p, "/v1/search");
	assert_int_equal(
		norm("GET", "http://api.test", "api.test", &NORM, p, h), 0);
	assert_string_equal(p, "/");
	assert_int_equal(norm("GET", "http://api.test:8080/v1/search",
			      "api.test:8080", &NORM, p, h),
			 0);
	assert_string_equal(h, "api.test:8080");
	expect_refused("GET", "http://api.test:8080/v1/search", "api.test",
		       &NORM, SL_HTTP_E_HOST_MISMATCH);
	expect_refused("GET", "http://other.test/v1/search", "api.test", &NORM,
		       SL_HTTP_E_HOST_MISMATCH);
	assert_int_equal(
		norm("GET", "http://other.test/v1", "api.test", &allow, p, h),
		0);
	assert_string_equal(h, "other.test"); /* RFC 9112 3.2.2 */
	expect_refused("GET", "http://u@api.test/v1", "api.test", &NORM,
		       SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "http:///v1", "api.test", &NORM,
		       SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "/x", "api.test:99999", &NORM,
		       SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "/x", "a/b", &NORM, SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "/x", "a..", &NORM, SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "/x", "a%2eb", &NORM, SL_HTTP_E_AUTHORITY);
	expect_refused("GET", "ftp://api.test/x", "api.test", &NORM,
		       SL_HTTP_E_FORM);
	expect_refused("GET", "*", "api.test", &NORM, SL_HTTP_E_FORM);
	expect_refused("GET", "api.test:80", "api.test", &NORM, SL_HTTP_E_FORM);
	expect_refused("GET", "v1/search", "api.test", &NORM, SL_HTTP_E_FORM);
	expect_refused("CONNECT", "/x", "api.test", &NORM, SL_HTTP_E_FORM);
	assert_int_equal(norm("OPTIONS", "*", "api.test", &NORM, p, h), 0);
	assert_string_equal(p, "");
	assert_int_equal(
		norm("CONNECT", "Api.test:443", "api.test", &NORM, p, h), 0);
	assert_string_equal(h, "api.test");
}

/* Clean targets are not copied: the result points into the request. */
static void
norm_clean_is_not_copied(void **state)
{
	struct sl_http_req r;
	struct sl_http_norm n;
	char scratch[64];

	(void)state;
	memset(&r, 0, sizeof(r));
	r.method = (struct sl_str){"GET", 3};
	r.target = (struct sl_str){"/v1/search?q=1", 14};
	r.host = (struct sl_str){"api.test", 8};
	assert_int_equal(sl_http_normalize(&NORM, &r, scratch, 22, &n), 0);
	assert_ptr_equal(n.path.p, r.target.p);
	assert_int_equal(n.path.len, 10);
	assert_ptr_equal(n.host.p, r.host.p);
	assert_false(n.rewritten);
}

static void
bearer_forms(void **state)
{
	struct sl_http_req r;

	(void)state;
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: h\r\n"
			      "Authorization: Bearer  k-1\r\n\r\n",
			      &r) > 0);
	assert_str(r.api_key, "k-1");
	assert_str(r.bearer, "k-1");
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nHost: h\r\n"
				   "Authorization: Bearer\tk-1\r\n\r\n",
				   &r),
			 SL_HTTP_ERROR);
	assert_int_equal(r.error, SL_HTTP_E_AUTH_SCHEME);
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: h\r\n"
			      "Authorization: Basic YTpi\r\n\r\n",
			      &r) > 0);
	assert_int_equal(r.api_key.len, 0);
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: h\r\nX-API-Key: a\r\n"
			      "Authorization: bearer b\r\n\r\n",
			      &r) > 0);
	assert_str(r.api_key, "a");
	assert_str(r.bearer, "b");
}

/* Where the key field is Authorization, the credential after its
 * scheme is the key, however the scheme is spelt. */
static void
authorization_as_key_header(void **state)
{
	static const struct sl_http_cfg auth = {
		.api_key_header = {"Authorization", 13},
	};
	static const char *const same[] = {
		"Authorization: Bearer k-1\r\n",
		"authorization: bearer   k-1\r\n",
		"Authorization: Token k-1\r\n",
		"Authorization: k-1\r\n",
	};
	static const struct {
		const char *field;
		enum sl_http_err err;
	} refused[] = {
		{"Authorization: Bearer k-1 k-2\r\n", SL_HTTP_E_DUP_IDENT},
		{"Authorization: Bearer\tk-1\r\n", SL_HTTP_E_AUTH_SCHEME},
		{"Authorization: k-1, k-2\r\n", SL_HTTP_E_DUP_IDENT},
		{"Authorization: Bearer k-1\r\nAuthorization: k-1\r\n",
		 SL_HTTP_E_DUP_IDENT},
	};
	struct sl_http_req r;
	char head[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(head, sizeof(head),
			 "GET / HTTP/1.1\r\nHost: h\r\n%s\r\n", same[i]);
		assert_true(sl_http_parse_request(head, strlen(head), &auth,
						  &r) > 0);
		assert_str(r.api_key, "k-1");
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(head, sizeof(head),
			 "GET / HTTP/1.1\r\nHost: h\r\n%s\r\n",
			 refused[i].field);
		assert_int_equal(
			sl_http_parse_request(head, strlen(head), &auth, &r),
			SL_HTTP_ERROR);
		assert_int_equal(r.error, refused[i].err);
	}
}

static void
add_method(void *ctx, const char *v, uint32_t len)
{
	char *seen = ctx;

	strncat(seen, v, len);
	strcat(seen, ",");
}

/* Method overrides: a field (three names, '_' for '-' too), two that
 * name two methods refused; "_method" in the query as PHP reads it. */
static void
method_overrides(void **state)
{
	static const struct sl_http_cfg us = {.underscores = SL_US_SAME};
	static const char under[] = "POST / HTTP/1.1\r\nHost: h\r\n"
				    "X_HTTP_Method_Override: DELETE\r\n\r\n";
	static const struct {
		const char *target, *want;
	} queries[] = {
		{"/x?_method=DELETE", "DELETE,"},
		{"/x?a=1&_method=put&_method=PATCH", "put,PATCH,"},
		{"/x?%5Fmethod=DELETE", "DELETE,"},
		{"/x?.method=DELETE", "DELETE,"},
		{"/x?[method=DELETE", "DELETE,"},
		{"/x?+_method=%44ELETE", "DELETE,"},
		{"/x?_methods=DELETE", ""},
		{"/x?_method", ""},
		{"/x?_method=", ""},
		{"/x?_method=%zz", ""},
		{"/x?_method=VERYLONGMETHODNAME", ""},
		{"/x_method=DELETE", ""},
	};
	struct sl_http_req r;
	char seen[64];
	size_t i;

	(void)state;
	assert_true(parse_str("POST / HTTP/1.1\r\nHost: h\r\n"
			      "X-HTTP-Method-Override: DELETE\r\n\r\n",
			      &r) > 0);
	assert_str(r.method_override, "DELETE");
	assert_true(parse_str("POST / HTTP/1.1\r\nHost: h\r\n"
			      "x-method-override: PUT\r\n"
			      "X-HTTP-Method: put\r\n\r\n",
			      &r) > 0);
	assert_str(r.method_override, "put");
	assert_int_equal(parse_str("POST / HTTP/1.1\r\nHost: h\r\n"
				   "X-HTTP-Method: PUT\r\n"
				   "X-HTTP-Method-Override: DELETE\r\n\r\n",
				   &r),
			 SL_HTTP_ERROR);
	assert_int_equal(r.error, SL_HTTP_E_METHOD_OVERRIDE);
	assert_true(sl_http_parse_request(under, sizeof(under) - 1, &us, &r) >
		    0);
	assert_str(r.method_override, "DELETE");
	/* kept apart from the fields a parse clears wholesale: cleared too */
	assert_true(parse_str("POST / HTTP/1.1\r\nHost: h\r\n\r\n", &r) > 0);
	assert_int_equal(r.method_override.len, 0);
	for (i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		seen[0] = '\0';
		sl_http_query_methods(
			(struct sl_str){queries[i].target,
					(uint32_t)strlen(queries[i].target)},
			add_method, seen);
		assert_string_equal(seen, queries[i].want);
	}
}

/* The query split as a plain loop would, for names without escapes:
 * every value of a parameter named exactly "_method", 1-15 bytes. */
static void
ref_methods(const char *t, size_t n, char *seen)
{
	const char *q = memchr(t, '?', n), *end = t + n, *p;

	for (p = q != NULL ? q + 1 : end; p < end;) {
		const char *e = memchr(p, '&', (size_t)(end - p));
		const char *eq;

		e = e != NULL ? e : end;
		eq = memchr(p, '=', (size_t)(e - p));
		if (eq != NULL && eq - p == 7 && memcmp(p, "_method", 7) == 0 &&
		    e - eq - 1 >= 1 && e - eq - 1 <= 15) {
			strncat(seen, eq + 1, (size_t)(e - eq - 1));
			strcat(seen, ",");
		}
		p = e + 1;
	}
}

/* Targets drawn from the pieces a split can trip on, every length to
 * past four 16-byte blocks, each in a buffer of its own size (ASan
 * sees a read past it): the same values as the plain loop's. */
static void
query_split_drawn(void **state)
{
	static const char *const piece[] = {"_method", "_meth", "=", "&",
					    "?",       "x",     "/", "DELETE"};
	uint32_t x = 2463534242u;
	char seen[1024], want[1024], t[80];
	int k;

	(void)state;
	for (k = 0; k < 200000; k++) {
		size_t n = 0, cap;
		char *b;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		cap = x % sizeof(t);
		while (n < cap) {
			const char *pc = piece[(x >> 8) % 8];
			size_t l = strlen(pc) < cap - n ? strlen(pc) : cap - n;

			memcpy(t + n, pc, l);
			n += l;
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
		}
		b = malloc(n ? n : 1);
		memcpy(b, t, n);
		seen[0] = want[0] = '\0';
		sl_http_query_methods((struct sl_str){b, (uint32_t)n},
				      add_method, seen);
		ref_methods(b, n, want);
		if (strcmp(seen, want) != 0)
			fail_msg("%.*s: %s, not %s", (int)n, t, seen, want);
		free(b);
	}
}

/* The path a path-override field names, normalised as a target;
 * NULL where the request is refused (err). */
static const char *
alt_path(const char *field, int *err, char *out)
{
	static const struct sl_http_cfg us = {.underscores = SL_US_SAME};
	char head[512], scratch[512];
	struct sl_http_req r;
	struct sl_http_norm n;

	snprintf(head, sizeof(head),
		 "GET /v1/items HTTP/1.1\r\nHost: h\r\n%s\r\n", field);
	*err = 0;
	if (sl_http_parse_request(head, strlen(head), &us, &r) <= 0) {
		*err = r.error;
		return NULL;
	}
	*err = sl_http_normalize(&NORM, &r, scratch, sizeof(scratch), &n);
	if (*err != 0)
		return NULL;
	assert_string_equal((memcpy(out, n.path.p, n.path.len),
			     out[n.path.len] = '\0', out),
			    "/v1/items");
	if (n.alt_path.len)
		memcpy(out, n.alt_path.p, n.alt_path.len);
	out[n.alt_path.len] = '\0';
	return out;
}

/* X-Original-URL and X-Rewrite-URL: the path they name, normal; two
 * naming two targets, or one naming no target, refused. */
static void
path_overrides(void **state)
{
	static const struct {
		const char *fields, *want;
		int err;
	} cases[] = {
		{"X-Original-URL: /v1/admin\r\n", "/v1/admin", 0},
		{"x-rewrite-url: /v1/%61dmin/./x?y=1\r\n", "/v1/admin/x", 0},
		{"X_Original_URL: /v1//admin/../admin\r\n", "/v1/admin", 0},
		{"X-Original-URL: http://other/v1/admin?q\r\n", "/v1/admin", 0},
		{"X-Original-URL: HTTPS://other\r\n", "/", 0},
		{"X-Original-URL: https://other?x\r\n", "/", 0},
		{"X-Original-URL: /a\r\nX-Rewrite-URL: /a\r\n", "/a", 0},
		{"X-Original-URL: /a\r\nX-Original-URL: /b\r\n", NULL,
		 SL_HTTP_E_PATH_OVERRIDE},
		{"X-Rewrite-URL: /a\r\nX-Original-URL: /A\r\n", NULL,
		 SL_HTTP_E_PATH_OVERRIDE},
		{"X-Original-URL: v1/admin\r\n", NULL, SL_HTTP_E_PATH_OVERRIDE},
		{"X-Original-URL:\r\n", NULL, SL_HTTP_E_PATH_OVERRIDE},
		{"X-Original-URL: *\r\n", NULL, SL_HTTP_E_PATH_OVERRIDE},
		{"X-Original-URL: ftp://h/v1/admin\r\n", NULL,
		 SL_HTTP_E_PATH_OVERRIDE},
		{"X-Original-URL: /v1/%zz\r\n", NULL, SL_HTTP_E_PCT},
		{"X-Original-URLs: /v1/admin\r\n", "", 0},
		{"X-Originals-URL: /v1/admin\r\n", "", 0},
	};
	struct sl_http_req r;
	char out[512];
	size_t i;
	int err;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = alt_path(cases[i].fields, &err, out);

		if (cases[i].want == NULL) {
			assert_null(got);
			assert_int_equal(err, cases[i].err);
			continue;
		}
		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
	}
	/* kept apart from the fields a parse clears wholesale: cleared too */
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: h\r\n"
			      "X-Rewrite-URL: /a\r\n\r\n",
			      &r) > 0);
	assert_true(parse_str("GET / HTTP/1.1\r\nHost: h\r\n\r\n", &r) > 0);
	assert_null(r.path_override.p);
	/* the underscore spelling is another field where the config says
	 * underscores are ignored */
	{
		static const struct sl_http_cfg ign = {.underscores =
							       SL_US_IGNORE};
		static const char h[] = "GET / HTTP/1.1\r\nHost: h\r\n"
					"X_Original_URL: /a\r\n\r\n";

		assert_true(sl_http_parse_request(h, sizeof(h) - 1, &ign, &r) >
			    0);
	}
	assert_null(r.path_override.p);
}

/* The key in the query, where the config names its parameter: decoded,
 * its name in any spelling a backend resolves, once; beside another
 * credential it conflicts. */
static void
key_in_query(void **state)
{
	static const struct sl_http_cfg q = {
		.api_key_header = {"X-API-Key", 9},
		.api_key_param = {"api_key", 7},
	};
	static const struct {
		const char *target, *key;
		int err; /* or the refusal */
	} cases[] = {
		{"/x?api_key=k1", "k1", 0},
		{"/x?a=b&api_key=k%31&c", "k1", 0},
		{"/x?api.key=k1", "k1", 0},
		{"/x?%61pi_key=k1", "k1", 0},
		{"/x?+api[key=k+1", "k 1", 0},
		{"/x?api_keys=k1&xapi_key=k2", "", 0},
		{"/x?api_key=", "", 0},
		{"/x?api_key=k1&api.key=k1", NULL, SL_HTTP_E_DUP_IDENT},
		{"/x?api_key=k%zz", NULL, SL_HTTP_E_PCT},
	};
	struct sl_http_req r;
	char head[1024], big[700];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		snprintf(head, sizeof(head),
			 "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", cases[i].target);
		rc = sl_http_parse_request(head, strlen(head), &q, &r);
		if (cases[i].key == NULL) {
			assert_int_equal(rc, SL_HTTP_ERROR);
			assert_int_equal(r.error, cases[i].err);
			continue;
		}
		assert_true(rc > 0);
		assert_str(r.api_key, cases[i].key);
	}
	/* more than SL_HTTP_KEY_PARAM_MAX bytes decoded from escapes */
	memset(big, 'a', sizeof(big));
	memcpy(big, "/x?api_key=%41", 14);
	big[SL_HTTP_KEY_PARAM_MAX + 20] = '\0';
	snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", big);
	assert_int_equal(sl_http_parse_request(head, strlen(head), &q, &r),
			 SL_HTTP_ERROR);
	assert_int_equal(r.error, SL_HTTP_E_KEY_PARAM);
	/* beside the header's key or a Bearer token: the same key, or a
	 * conflict */
	snprintf(head, sizeof(head),
		 "GET /x?api_key=k%%31 HTTP/1.1\r\nHost: h\r\n"
		 "X-API-Key: k1\r\n\r\n");
	assert_true(sl_http_parse_request(head, strlen(head), &q, &r) > 0);
	assert_false(sl_http_credentials_conflict(&r));
	snprintf(head, sizeof(head),
		 "GET /x?api_key=k2 HTTP/1.1\r\nHost: h\r\n"
		 "X-API-Key: k1\r\n\r\n");
	assert_true(sl_http_parse_request(head, strlen(head), &q, &r) > 0);
	assert_str(r.api_key, "k1");
	assert_true(sl_http_credentials_conflict(&r));
	snprintf(head, sizeof(head),
		 "GET /x?api_key=k2 HTTP/1.1\r\nHost: h\r\n"
		 "Authorization: Bearer k1\r\n\r\n");
	assert_true(sl_http_parse_request(head, strlen(head), &q, &r) > 0);
	assert_str(r.api_key, "k2");
	assert_true(sl_http_credentials_conflict(&r));
	/* without the setting the query is no credential */
	snprintf(head, sizeof(head),
		 "GET /x?api_key=k2 HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(parse_str(head, &r) > 0);
	assert_int_equal(r.api_key.len, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_request),
		cmocka_unit_test(every_truncation_is_incomplete),
		cmocka_unit_test(injected_bytes_are_errors),
		cmocka_unit_test(strictness),
		cmocka_unit_test(smuggling_shapes),
		cmocka_unit_test(upgrade_protocols),
		cmocka_unit_test(accepted_forms),
		cmocka_unit_test(value_bytes_at_every_position),
		cmocka_unit_test(pipelined),
		cmocka_unit_test(too_many_headers),
		cmocka_unit_test(chunked_whole_and_bytewise),
		cmocka_unit_test(chunked_errors),
		cmocka_unit_test(norm_dot_segments),
		cmocka_unit_test(norm_escapes_and_slashes),
		cmocka_unit_test(norm_forms_and_hosts),
		cmocka_unit_test(norm_path_params),
		cmocka_unit_test(norm_clean_is_not_copied),
		cmocka_unit_test(bearer_forms),
		cmocka_unit_test(authorization_as_key_header),
		cmocka_unit_test(method_overrides),
		cmocka_unit_test(query_split_drawn),
		cmocka_unit_test(path_overrides),
		cmocka_unit_test(key_in_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

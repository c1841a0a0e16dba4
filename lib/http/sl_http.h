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

/* forwarded-address fields kept: the newest, as many as trusted_hops may
 * reach (a field holds at least one address) */
#define SL_HTTP_MAX_XFF       16
#define SL_HTTP_MAX_HEADERS   100
#define SL_HTTP_KEY_PARAM_MAX 256 /* a query key's bytes, decoded */

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
	/* the target and the credentials, read as the backend will */
	SL_HTTP_E_PCT,           /* '%' not followed by two hex digits */
	SL_HTTP_E_PCT_CTL,       /* an encoded NUL or control byte */
	SL_HTTP_E_ESC_SLASH,     /* %2F or %5C (escaped_slashes: reject) */
	SL_HTTP_E_FORM,          /* target form the method does not allow */
	SL_HTTP_E_AUTHORITY,     /* an authority sluice will not guess at */
	SL_HTTP_E_HOST_MISMATCH, /* absolute-form authority is not Host */
	SL_HTTP_E_CREDENTIALS,   /* two credentials that name two keys */
	SL_HTTP_E_AUTH_SCHEME,   /* "Bearer" not followed by one SP */
	SL_HTTP_E_PATH_PARAMS,   /* ';' in the path (path_params: reject) */
	SL_HTTP_E_HTTP09,        /* a request line without a version */
	/* the configured client address cannot be read whole: refused,
	 * never keyed on the proxy in its place */
	SL_HTTP_E_FORWARDED,
	SL_HTTP_E_CLIENT_ADDR, /* the client address is unspecified (::) */
	/* Upgrade names a protocol other than websocket: after a 101 the
	 * backend would read requests (h2c) or a layer (TLS) sluice cannot */
	SL_HTTP_E_UPGRADE,
	/* CONNECT: after a 2xx the backend, a proxy, relays bytes sluice
	 * cannot decide, perhaps to the API itself */
	SL_HTTP_E_CONNECT,
	/* a Content-Length body whose first line reads as a request to a
	 * server that ignores the length (lib/flow) */
	SL_HTTP_E_BODY_REQUEST,
	/* an upgrade sent before the responses to the requests ahead of it
	 * came: whether a 101 answers it rests on how those were framed
	 * (lib/flow) */
	SL_HTTP_E_UPGRADE_PIPELINED,
	/* an upgrade on a connection where a response framed without a body
	 * declared one: a backend that sends that body anyway puts it where
	 * the upgrade's answer goes, and a 101 in it would read as that
	 * answer (lib/flow) */
	SL_HTTP_E_UPGRADE_FRAMING,
	/* a '\' in the path where escaped_slashes is reject: IIS reads it
	 * as '/', nginx and most Linux servers as a byte of the segment */
	SL_HTTP_E_BACKSLASH,
	/* two method-override fields that name two methods */
	SL_HTTP_E_METHOD_OVERRIDE,
	/* the key's query parameter decodes to more than
	 * SL_HTTP_KEY_PARAM_MAX bytes */
	SL_HTTP_E_KEY_PARAM,
	/* X-Original-URL and X-Rewrite-URL naming two targets, or one that
	 * is no origin- or absolute-form target */
	SL_HTTP_E_PATH_OVERRIDE,
	SL_HTTP_E__COUNT
};

struct sl_str {
	const char *p;
	uint32_t len;
};

/*
 * How a header name spelt with '_' for '-' is read: by CGI-style
 * applications (HTTP_X_API_KEY), PHP, and nginx with
 * underscores_in_headers on, as the same header.
 */
enum sl_underscores {
	SL_US_SAME = 0, /* the same header: one alone is it, two conflict */
	SL_US_IGNORE,   /* another header (the backend drops such names) */
};

/* Which request header carries what; names compared case-insensitively. */
struct sl_http_cfg {
	struct sl_str api_key_header; /* e.g. X-API-Key */
	struct sl_str user_header;    /* e.g. X-User-Id; len 0 disables */
	/* a query parameter that may carry the key (api_key); len 0: none */
	struct sl_str api_key_param;
	uint8_t underscores; /* enum sl_underscores */
	/* the forwarded-address fields kept are Forwarded (RFC 7239), not
	 * X-Forwarded-For */
	uint8_t forwarded;
};

struct sl_http_req {
	struct sl_str method;
	struct sl_str target;
	struct sl_str host;
	struct sl_str
		api_key; /* configured header, else Authorization: Bearer */
	struct sl_str user;
	struct sl_str bearer; /* Authorization: Bearer, also when api_key
				 came from the configured header */
	uint64_t content_length;
	uint16_t n_headers;
	uint8_t n_xff; /* non-empty forwarded-address fields in the head */
	uint8_t minor_version;
	uint8_t has_cl;
	uint8_t chunked;
	uint8_t conn_close;
	uint8_t upgrade; /* Upgrade requested or CONNECT: stream leaves HTTP */
	uint8_t error;   /* enum sl_http_err */
	/* X-Forwarded-For (or Forwarded) fields: field i of the head at
	 * xff[i % SL_HTTP_MAX_XFF], so the newest are kept (last: a parse
	 * clears only what precedes it) */
	struct sl_str xff[SL_HTTP_MAX_XFF];
	/* X-HTTP-Method-Override, X-HTTP-Method or X-Method-Override: the
	 * method a framework that honours them serves the request as (set
	 * by the parse apart from the rest: few requests carry one) */
	struct sl_str method_override;
	/* the target a path-override field names (X-Original-URL,
	 * X-Rewrite-URL), raw; set apart as method_override is */
	struct sl_str path_override;
	/* the key in the query (sl_http_cfg.api_key_param), decoded: where
	 * it lies when it holds no escape, else in key_param_buf */
	struct sl_str key_param;
	char key_param_buf[SL_HTTP_KEY_PARAM_MAX];
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
/*
 * Chunk data bytes that come next before any framing byte: what follows
 * in the stream up to there changes nothing the parser decides.
 */
uint64_t sl_chunked_opaque(const struct sl_chunked *c);

/*
 * Where a connection's responses end, read as its client reads them:
 * fed the server's bytes in order, it counts the responses still due
 * to requests forwarded. Framing it cannot follow for certain (a body
 * delimited by the close, a coding other than chunked alone, two
 * lengths, a body over 4 GiB, a gap in the bytes) makes the count
 * unknown for the rest of the connection. 20 bytes, held in the flow.
 */
struct sl_resp {
	uint32_t left;  /* body bytes (or chunk bytes) still to come */
	uint32_t heads; /* bit i: the i-th response due answers a HEAD */
	uint16_t status;
	uint8_t state;
	uint8_t sub; /* the chunked decoder's state */
	uint8_t idx;
	uint8_t flags;
	uint8_t due;     /* responses due */
	uint8_t ndigits; /* the chunked decoder's */
	uint8_t done;    /* responses the last call completed */
	/* bits 0-1: the last request due asks for a tunnel, 1 upgrade, 2
	 * CONNECT; bit 7: sl_resp_unsure */
	uint8_t tunnel;
	uint16_t served; /* responses completed on the connection (wraps) */
};

/* As many as can be due (sl_resp_expect follows no more). */
#define SL_RESP_ENDS 32

/* Where the last call saw a final response's status line end. */
struct sl_resp_mark {
	uint32_t off;    /* just after its LF; UINT32_MAX: none ended */
	uint16_t status; /* its status (200 or more) */
	/* which response of the connection it is (served + 1 then); set by
	 * the caller, only that one is marked (0: the first that ends) */
	uint16_t ord;
	/* set by the caller: every final status line that ended is listed
	 * too, in order (pipelined responses, each settling its own) */
	uint8_t all;
	uint8_t n_ends;
	/* set by the flow table: the segment carries the server's FIN, and
	 * every byte before it was seen and framed (no response can follow) */
	uint8_t closed;
	uint32_t from; /* where the bytes read begin; UINT32_MAX: none */
	struct {
		uint32_t off;
		uint16_t ord;
		uint16_t status;
	} end[SL_RESP_ENDS];
};

void sl_resp_init(struct sl_resp *r);
/* A request went to the server: a response is due (none has a body if
 * head, a HEAD request). */
void sl_resp_expect(struct sl_resp *r, int head);
/*
 * The last request expected asks to leave HTTP (an Upgrade, or CONNECT
 * when connect): only the status line that answers it can open the
 * tunnel (101, or 2xx to CONNECT).
 */
void sl_resp_expect_tunnel(struct sl_resp *r, int connect);
/* 1: the tunnel asked for is open; 0: its answer is still to come;
 * -1: refused, or where the answer cannot be told (framing lost or
 * unsure). */
int sl_resp_tunnel(const struct sl_resp *r);
/* The last request expected did not go after all. */
void sl_resp_unexpect(struct sl_resp *r);
/* The server's next bytes, in order; returns responses completed. */
unsigned int sl_resp_consume(struct sl_resp *r, const uint8_t *p, uint32_t n);
/* The same, and *mk: the first final status line that ended in p (of
 * response mk->ord, when not 0). */
unsigned int sl_resp_consume_mark(struct sl_resp *r, const uint8_t *p,
				  uint32_t n, struct sl_resp_mark *mk);
/* The bytes can no longer be followed (a gap, a pickup mid-stream). */
void sl_resp_lost(struct sl_resp *r);
/* Responses still due; -1 when unknown (lost, or the stream left HTTP). */
int sl_resp_due(const struct sl_resp *r);
/*
 * 1 once a response framed without a body (to HEAD, a 204, a 304)
 * declared one (a length above 0, or chunked), for the rest of the
 * connection. The client frames it so, and its count of responses due
 * stands; but a backend that sends that body anyway (a handler serving
 * HEAD as GET) puts it, whenever it comes, where a later response goes:
 * a 101 there would read as an upgrade's answer (sl_resp_tunnel).
 */
int sl_resp_unsure(const struct sl_resp *r);
/* Which response of the connection (as sl_resp_mark counts them) the
 * last request gets: expected already (sl_resp_expect) or about to be;
 * -1 when unknown. As the client counts them: where unsure, not
 * necessarily the backend's answer to it. */
int sl_resp_ord_last(const struct sl_resp *r, int expected);
/*
 * The field name (any case) in the head's field lines at p (from just
 * after the status line): 1 and *v its value, a whole number at most
 * max; 0 when the head ends without it; -1 when the head does not end
 * in these n bytes, the value is not such a number, or two copies
 * disagree.
 */
int sl_resp_field_u64(const uint8_t *p, uint32_t n, const char *name,
		      uint64_t max, uint64_t *v);

/* The same, read across segments: the state between them. */
struct sl_resp_field {
	uint64_t v; /* the copies' value */
	uint64_t x; /* this copy's, so far */
	uint16_t k; /* bytes of the name matched */
	uint8_t st;
	uint8_t found;
};
void sl_resp_field_init(struct sl_resp_field *s);
/* The next n bytes of the head (the first from just after the status
 * line): as sl_resp_field_u64, or 2 while the head goes on past them. */
int sl_resp_field_feed(struct sl_resp_field *s, const uint8_t *p, uint32_t n,
		       const char *name, uint64_t max, uint64_t *v);

const char *sl_http_err_name(enum sl_http_err e);

/*
 * The request target as the origin server resolves it (RFC 9112 3.2,
 * RFC 3986 5.2.4 and 6.2.2). sluice forwards bytes unchanged, so it must
 * decide on the meaning the backend will give them: every rule that looks
 * at the path or the host is matched against this normal form, never
 * against the raw target. Where a spelling could mean two things to two
 * servers, the answer is an error (400), not a guess.
 *
 * - origin-form "/p?q" and absolute-form "http://authority/p?q" (the
 *   authority is then the host); "*" only for OPTIONS; authority-form
 *   only for CONNECT; anything else, a fragment or userinfo: refused.
 * - %XX of an unreserved byte is decoded, in either hex case; other
 *   escapes stay escaped, upper-cased; a lone '%', or an escaped control
 *   byte: refused. %2F and %5C as escaped_slashes says.
 * - dot segments removed, escaped dots too, never above the root;
 *   repeated slashes merged when merge_slashes; the query dropped.
 * - the host folded to lower case, without a trailing dot or the default
 *   port; reg-name bytes other than letters, digits and "-._~": refused.
 */
enum sl_esc_slash {
	SL_ESC_REJECT = 0, /* 400: servers disagree on what they mean */
	SL_ESC_DECODE,     /* %2F is '/' (a separator), %5C is '\' */
	SL_ESC_KEEP,       /* opaque bytes of a segment: the backend keeps
			      them encoded too */
};

enum sl_host_mismatch {
	SL_HOST_REJECT = 0, /* absolute-form authority != Host: 400 */
	SL_HOST_ALLOW,      /* the authority wins (RFC 9112 3.2.2) */
};

/*
 * ";params" in a path segment: a plain byte to nginx and most servers,
 * stripped before routing by Servlet containers (Tomcat, Jetty: so
 * "/a;x/b" is "/a/b" and "/..;/" is "/../").
 */
enum sl_path_params {
	SL_PARAMS_KEEP = 0, /* part of the segment */
	SL_PARAMS_STRIP,    /* dropped up to the segment's end, as Servlets */
	SL_PARAMS_REJECT,   /* 400 */
};

struct sl_norm_cfg {
	uint8_t merge_slashes;   /* "//" resolves as "/" */
	uint8_t escaped_slashes; /* enum sl_esc_slash */
	uint8_t host_mismatch;   /* enum sl_host_mismatch */
	uint8_t path_params;     /* enum sl_path_params */
};

enum sl_target_form {
	SL_FORM_ORIGIN = 0,
	SL_FORM_ABSOLUTE,
	SL_FORM_AUTHORITY,
	SL_FORM_ASTERISK,
};

struct sl_http_norm {
	struct sl_str path; /* normal path, no query: "/" at least, except
			       for the authority and asterisk forms ("") */
	struct sl_str host; /* normal host, ":port" kept unless default */
	/* the normal path of the target a path-override field names
	 * (sl_http_req.path_override); len 0: none */
	struct sl_str alt_path;
	uint8_t form;      /* enum sl_target_form */
	uint8_t rewritten; /* the path differs from the raw bytes */
};

/*
 * Normalises req's target and host into out. Clean origin-form targets
 * (no '%', no "//", no "/.", no '#') and lower-case hosts are pointed at
 * where they lie, with no copy; others are written into scratch, which
 * must hold req->target.len + req->host.len + req->path_override.len
 * bytes. Returns 0 or an sl_http_err (the 400 to answer).
 */
int sl_http_normalize(const struct sl_norm_cfg *cfg,
		      const struct sl_http_req *req, char *scratch, size_t cap,
		      struct sl_http_norm *out);

/*
 * Whether the request names two API keys: X-API-Key and a Bearer token
 * that differs from it. sluice will not pick one of two identities when
 * the backend may pick the other.
 */
int sl_http_credentials_conflict(const struct sl_http_req *req);

/*
 * Normalises a path alone (a rule's, at load time), into out (at least
 * len bytes). Returns the normal length, or -(sl_http_err).
 */
int sl_http_normalize_path(const struct sl_norm_cfg *cfg, const char *path,
			   uint32_t len, char *out);
/*
 * Normalises a host alone (a rule's, at load time) as a Host field's:
 * into out (at least len bytes). Returns the normal length, or -1 where
 * a request carrying it would be refused (400 authority).
 */
int sl_http_normalize_host(const char *host, uint32_t len, char *out);

/*
 * Calls fn with the value (percent-decoded, at most 15 bytes; longer
 * ones are skipped) of each query parameter of target named "_method"
 * as PHP reads names: decoded, leading blanks dropped, ' ', '.' and '['
 * read as '_' (Laravel and Symfony serve a POST as that method).
 */
void sl_http_query_methods(struct sl_str target,
			   void (*fn)(void *ctx, const char *v, uint32_t len),
			   void *ctx);

#endif /* SL_HTTP_H */

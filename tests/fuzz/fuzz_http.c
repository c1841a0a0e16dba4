/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: the request-head parser and the chunked decoder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sl_http.h"

static const struct sl_http_cfg cfg = {
	.api_key_header = {"X-API-Key", 9},
	.user_header = {"X-User-Id", 9},
};

/* the key read out of Authorization, after its scheme, or out of the
 * query, decoded */
static const struct sl_http_cfg auth_cfg = {
	.api_key_header = {"Authorization", 13},
	.user_header = {"X-User-Id", 9},
	.api_key_param = {"api_key", 7},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A field set (non-empty) must lie within data[0..n). */
static void
outside(const struct sl_str *s, const uint8_t *data, size_t n)
{
	const char *b = (const char *)data;

	if (s->len == 0)
		return;
	if (s->p == NULL || s->p < b || s->len > n || s->p + s->len > b + n)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_http_req r;
	struct sl_chunked c;
	size_t i;
	int rc, done;

	rc = sl_http_parse_request((const char *)data, size, &cfg, &r);
	if (rc > 0) {
		/* every result must lie inside the head it parsed */
		const struct sl_str *f[] = {&r.method,  &r.target, &r.host,
					    &r.api_key, &r.user,   &r.bearer};

		if ((size_t)rc > size)
			abort();
		for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			outside(f[i], data, (size_t)rc);
		for (i = 0; i < r.n_xff && i < SL_HTTP_MAX_XFF; i++)
			outside(&r.xff[i], data, (size_t)rc);
	}
	/* every prefix of a complete head is incomplete, never an error */
	if (rc > 0)
		for (i = 0; i < (size_t)rc; i += 1 + i / 8)
			if (sl_http_parse_request((const char *)data, i, &cfg,
						  &r) != SL_HTTP_INCOMPLETE)
				abort();
	rc = sl_http_parse_request((const char *)data, size, &auth_cfg, &r);
	if (rc > 0 && r.api_key.p == r.key_param_buf) {
		if (r.api_key.len > sizeof(r.key_param_buf))
			abort();
	} else if (rc > 0) {
		outside(&r.api_key, data, (size_t)rc);
	}
	sl_chunked_init(&c);
	(void)sl_chunked_consume(&c, (const char *)data, size, &done);
	return 0;
}

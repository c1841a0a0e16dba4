/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the target normaliser. The first byte picks the options and
 * the method; the rest is the target, then the Host after a NUL. Checks:
 * no crash or overread, the result is never longer than the input, and
 * normalising the normal form again changes nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sl_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a "_method" value: decoded into a buffer of its own, 15 bytes at most */
static void
method_seen(void *ctx, const char *v, uint32_t len)
{
	(void)ctx;
	if (v == NULL || len == 0 || len > 15)
		abort();
}

static void
check_fixed_point(const struct sl_norm_cfg *cfg, struct sl_str path)
{
	char *again;
	int n;

	if (path.len == 0 || path.p[0] != '/')
		return;
	again = malloc(path.len);
	n = sl_http_normalize_path(cfg, path.p, path.len, again);
	if (n != (int)path.len || memcmp(again, path.p, path.len) != 0)
		abort();
	free(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "OPTIONS", "CONNECT",
					      "POST"};
	struct sl_norm_cfg cfg;
	struct sl_http_req r;
	struct sl_http_norm n;
	const uint8_t *nul, *nul2;
	char *t, *h, *o, *scratch;
	size_t tl, hl, ol;

	if (size < 1)
		return 0;
	cfg.merge_slashes = data[0] & 1;
	cfg.escaped_slashes = (data[0] >> 1) % 3;
	cfg.host_mismatch = (data[0] >> 3) & 1;
	cfg.path_params = (uint8_t)((data[0] >> 6) % 3);
	memset(&r, 0, sizeof(r));
	r.method.p = methods[(data[0] >> 4) & 3]; /* bits 4-5 */
	r.method.len = (uint32_t)strlen(r.method.p);
	data++;
	size--;
	/* target NUL host [NUL path override] */
	nul = memchr(data, 0, size);
	tl = nul ? (size_t)(nul - data) : size;
	hl = nul ? size - tl - 1 : 0;
	nul2 = nul ? memchr(nul + 1, 0, hl) : NULL;
	ol = nul2 ? hl - (size_t)(nul2 - nul) : 0;
	hl = nul2 ? (size_t)(nul2 - nul - 1) : hl;
	/* exact-size copies: ASan sees any read past either */
	t = malloc(tl ? tl : 1);
	h = malloc(hl ? hl : 1);
	o = malloc(ol ? ol : 1);
	scratch = malloc(tl + hl + ol ? tl + hl + ol : 1);
	memcpy(t, data, tl);
	if (hl)
		memcpy(h, nul + 1, hl);
	if (ol)
		memcpy(o, nul2 + 1, ol);
	r.target = (struct sl_str){t, (uint32_t)tl};
	r.host = (struct sl_str){h, (uint32_t)hl};
	if (nul2 != NULL)
		r.path_override = (struct sl_str){o, (uint32_t)ol};
	sl_http_query_methods(r.target, method_seen, NULL);
	if (sl_http_normalize(&cfg, &r, scratch, tl + hl + ol, &n) == 0) {
		if (n.path.len > tl || n.host.len > (hl > tl ? hl : tl) ||
		    n.alt_path.len > (ol > 1 ? ol : 1))
			abort();
		check_fixed_point(&cfg, n.path);
		if (n.alt_path.len)
			check_fixed_point(&cfg, n.alt_path);
	}
	free(t);
	free(h);
	free(o);
	free(scratch);
	return 0;
}

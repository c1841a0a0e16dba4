/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "sl_config_priv.h"

/*
 * A config file that names its own SHA-256 on its first line is applied
 * only when the rest of it hashes to that: a deploy that copies over the
 * file in place, or an editor that writes it in pieces, leaves a file
 * that parses (YAML cut after any line is YAML) and lacks rules. The sum
 * is on the first line, not the last, so that a file cut anywhere fails
 * it; what an operator runs to make it is `sha256sum` of the body.
 * SHA-256 as FIPS 180-4 states it, written for this one use: a few
 * kilobytes once per reload.
 */

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void
block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], v[8], i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^
			      (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^
			      (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		uint32_t t1 = v[7] +
			      (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
			      ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
		uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
			      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

void
sl_sha256_hex(const void *data, size_t len, char out[65])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	const uint8_t *p = data;
	uint8_t last[128];
	size_t i, tail = len % 64, n = tail < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;

	for (i = 0; i + 64 <= len; i += 64)
		block(h, p + i);
	memset(last, 0, sizeof(last));
	memcpy(last, p + len - tail, tail);
	last[tail] = 0x80;
	for (i = 0; i < 8; i++)
		last[n - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (i = 0; i < n; i += 64)
		block(h, last + i);
	for (i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}

#define SUM_TAG "# sha256:"

int
sl_config_sum_check(const char *file, const char *text, size_t len, char *err,
		    size_t errlen)
{
	const char *nl = memchr(text, '\n', len);
	const char *hex;
	char want[65], got[65];
	size_t i = 0;

	if (err == NULL)
		errlen = 0;
	if (len < sizeof(SUM_TAG) - 1 ||
	    memcmp(text, SUM_TAG, sizeof(SUM_TAG) - 1) != 0)
		return 0;
	hex = text + sizeof(SUM_TAG) - 1;
	while (hex < text + len && *hex == ' ')
		hex++;
	for (; hex + i < text + len && i < 64 && isxdigit((uint8_t)hex[i]); i++)
		want[i] = (char)tolower((uint8_t)hex[i]);
	want[i] = '\0';
	if (nl == NULL || i != 64) {
		snprintf(err, errlen,
			 "%s:1:1: the first line names a sha256 but not 64 hex "
			 "digits and a line end\n",
			 file);
		return -1;
	}
	sl_sha256_hex(nl + 1, len - (size_t)(nl + 1 - text), got);
	if (strcmp(want, got) == 0)
		return 0;
	snprintf(err, errlen,
		 "%s:1:1: the file after its first line has sha256 %s, not "
		 "the %s its first line names (partly written?)\n",
		 file, got, want);
	return -1;
}

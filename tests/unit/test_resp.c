/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The response framing tracker: every stream cut at every place (and a
 * byte at a time) gives the same count of responses due, at every
 * response's last byte and not one byte sooner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "sl_http.h"

/* due after each byte of s, fed whole, split at every offset, and a byte
 * at a time: all three must agree with a byte at a time */
static void
walk(const char *s, const int *heads, int n_req, int *due_after)
{
	size_t len = strlen(s), cut, i;
	struct sl_resp r;
	int k;

	sl_resp_init(&r);
	for (k = 0; k < n_req; k++)
		sl_resp_expect(&r, heads[k]);
	for (i = 0; i < len; i++) {
		sl_resp_consume(&r, (const uint8_t *)s + i, 1);
		due_after[i] = sl_resp_due(&r);
	}
	for (cut = 0; cut <= len; cut++) {
		sl_resp_init(&r);
		for (k = 0; k < n_req; k++)
			sl_resp_expect(&r, heads[k]);
		sl_resp_consume(&r, (const uint8_t *)s, (uint32_t)cut);
		assert_int_equal(sl_resp_due(&r),
				 cut ? due_after[cut - 1] : n_req);
		sl_resp_consume(&r, (const uint8_t *)s + cut,
				(uint32_t)(len - cut));
		assert_int_equal(sl_resp_due(&r), due_after[len - 1]);
	}
}

/* The count of responses due drops at exactly the given offsets (the
 * index of each response's last byte), and ends at want. */
static void
expect_ends(const char *s, const int *heads, int n_req, const size_t *ends,
	    int n_ends, int want)
{
	int due[4096];
	size_t i;
	int e = 0, d = n_req;

	assert_true(strlen(s) < sizeof(due) / sizeof(due[0]));
	walk(s, heads, n_req, due);
	for (i = 0; i < strlen(s); i++) {
		if (e < n_ends && i == ends[e]) {
			d--;
			e++;
		}
		if (want >= 0 || i + 1 < strlen(s))
			assert_int_equal(due[i], d);
	}
	assert_int_equal(due[strlen(s) - 1], want);
}

/* Responses end where each part ends. */
static void
parts_end(const char *const *parts, int n, const int *heads)
{
	char t[4096];
	size_t ends[8], len = 0;
	int i;

	for (i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);

		assert_true(len + l < sizeof(t));
		memcpy(t + len, parts[i], l);
		len += l;
		ends[i] = len - 1;
	}
	t[len] = 0;
	expect_ends(t, heads, n, ends, n, 0);
}

static void
length_and_chunked(void **state)
{
	static const char *const parts[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.0 200 OK\r\ncontent-LENGTH:12\r\nX: y\r\n\r\n"
		"0123456789ab",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding:  Chunked \r\n\r\n"
		"5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\n"
		"Trailer: x\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Lengthy: 7\r\n"
		"Transfer-Encodings: gzip\r\nContent-Length: 0\r\n\r\n",
	};
	const int heads[4] = {0, 0, 0, 0};

	(void)state;
	parts_end(parts, 4, heads);
}

/* A HEAD's response has no body whatever its length says; 204 and 304
 * none either; 1xx are interim. */
static void
no_body(void **state)
{
	static const char *const parts[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n"
		"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\n\r\n",
	};
	const int heads[3] = {1, 0, 0};

	(void)state;
	parts_end(parts, 3, heads);
}

/*
 * A response framed without a body that declared one leaves the
 * connection unsure, a byte at a time or whole: a backend that sends
 * that body anyway puts it where the next response goes. Declaring none
 * (no length, a length of 0), or a body framed as declared, does not.
 */
static void
unsure_after_declared_body(void **state)
{
	static const struct {
		const char *s;
		int head, unsure;
	} cases[] = {
		{"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n", 1, 1},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 1, 1},
		{"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", 0,
		 1},
		{"HTTP/1.1 204 No Content\r\ncontent-length:1\r\n\r\n", 0, 1},
		{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 0},
		{"HTTP/1.1 200 OK\r\nX: y\r\n\r\n", 1, 0},
		{"HTTP/1.1 304 Not Modified\r\n\r\n", 0, 0},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0},
		{"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n"
		 "HTTP/1.1 204 No Content\r\n\r\n",
		 0, 0},
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const uint8_t *b = (const uint8_t *)cases[i].s;
		uint32_t n = (uint32_t)strlen(cases[i].s);
		struct sl_resp whole, bytes;

		sl_resp_init(&whole);
		sl_resp_init(&bytes);
		sl_resp_expect(&whole, cases[i].head);
		sl_resp_expect(&bytes, cases[i].head);
		sl_resp_expect(&whole, 0); /* an upgrade behind it */
		sl_resp_expect(&bytes, 0);
		sl_resp_expect_tunnel(&whole, 0);
		sl_resp_expect_tunnel(&bytes, 0);
		assert_int_equal(sl_resp_ord_last(&whole, 1), 2);
		assert_int_equal(sl_resp_consume(&whole, b, n), 1);
		for (j = 0; j < n; j++)
			sl_resp_consume(&bytes, b + j, 1);
		assert_int_equal(sl_resp_unsure(&whole), cases[i].unsure);
		assert_int_equal(sl_resp_unsure(&bytes), cases[i].unsure);
		/* the client's count stands either way */
		assert_int_equal(sl_resp_due(&whole), 1);
		/* as the client counts them; but a 101's, no longer told */
		assert_int_equal(sl_resp_ord_last(&whole, 1), 2);
		assert_int_equal(sl_resp_tunnel(&whole),
				 cases[i].unsure ? -1 : 0);
		/* a request after it: still unsure */
		sl_resp_expect(&whole, 0);
		assert_int_equal(sl_resp_unsure(&whole), cases[i].unsure);
	}
}

/* What it cannot follow makes the count unknown, never wrong. */
static void
unknown(void **state)
{
	static const char *lost[] = {
		"HTTP/1.1 200 OK\r\n\r\nuntil the close",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: "
		"5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 20\n",
		"garbage",
	};
	int heads[1] = {0}, due[256];
	size_t i;
	struct sl_resp r;

	(void)state;
	for (i = 0; i < sizeof(lost) / sizeof(lost[0]); i++) {
		walk(lost[i], heads, 1, due);
		if (due[strlen(lost[i]) - 1] != -1)
			fail_msg("case %zu: %d due", i,
				 due[strlen(lost[i]) - 1]);
	}
	/* a bare status line with LF endings is still a response */
	walk("HTTP/1.1 204\n\n", heads, 1, due);
	assert_int_equal(due[13], 0);
	/* more in flight than it follows; a gap */
	sl_resp_init(&r);
	for (i = 0; i < 32; i++)
		sl_resp_expect(&r, 0);
	assert_int_equal(sl_resp_due(&r), 32);
	sl_resp_expect(&r, 0);
	assert_int_equal(sl_resp_due(&r), -1);
	sl_resp_init(&r);
	sl_resp_lost(&r);
	assert_int_equal(sl_resp_due(&r), -1);
}

/* A request that did not go after all is not waited for; the HEAD-ness
 * of the others is kept in order. */
static void
unexpect(void **state)
{
	static const char s[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n";
	struct sl_resp r;

	(void)state;
	sl_resp_init(&r);
	sl_resp_expect(&r, 1);
	sl_resp_expect(&r, 0);
	sl_resp_unexpect(&r);
	assert_int_equal(sl_resp_due(&r), 1);
	/* the HEAD's: no body, done at the head's end */
	assert_int_equal(sl_resp_consume(&r, (const uint8_t *)s, strlen(s)), 1);
	assert_int_equal(sl_resp_due(&r), 0);
	sl_resp_unexpect(&r);
	assert_int_equal(sl_resp_due(&r), 0);
}

/*
 * The status line ends where the fields begin: marked at that offset in
 * whatever pieces the stream comes, for the response asked for (an
 * interim 100 never, 0: the first final one).
 */
static void
marks(void **state)
{
	static const char s[] =
		"HTTP/1.1 100 Continue\r\n\r\n"
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab"
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	const uint32_t len = (uint32_t)strlen(s);
	const uint32_t at200 = 25 + 17, at404 = 25 + 17 + 19 + 2 + 2 + 24;
	static const uint16_t ords[] = {0, 1, 2};
	uint32_t cut, k;
	(void)state;

	for (k = 0; k < 3; k++) {
		uint32_t want = ords[k] == 2 ? at404 : at200;
		uint16_t st = ords[k] == 2 ? 404 : 200;

		for (cut = 0; cut <= len; cut++) {
			struct sl_resp r;
			struct sl_resp_mark m1 = {.ord = ords[k]}, m2 = m1;

			sl_resp_init(&r);
			sl_resp_expect(&r, 0);
			sl_resp_expect(&r, 0);
			sl_resp_consume_mark(&r, (const uint8_t *)s, cut, &m1);
			sl_resp_consume_mark(&r, (const uint8_t *)s + cut,
					     len - cut, &m2);
			if (want <= cut) {
				assert_int_equal(m1.off, want);
				assert_int_equal(m1.status, st);
				/* (0: the first final one of each call) */
				assert_int_equal(m2.off, ords[k] || cut >= at404
								 ? UINT32_MAX
								 : at404 - cut);
			} else {
				assert_int_equal(m1.off, UINT32_MAX);
				assert_int_equal(m2.off, want - cut);
				assert_int_equal(m2.status, st);
			}
			assert_int_equal(sl_resp_due(&r), 0);
			assert_int_equal(r.served, 2);
		}
	}
}

/* A whole-number field read from a head's field lines, in any case. */
static void
field_u64(void **state)
{
	static const char *const heads[] = {
		"Content-Length: 2\r\nx-ratelimit-cost:  7 \r\n\r\nab",
		"Content-Length: 2\r\n\r\nab",
		"Content-Length: 2\r\nX-RateLimit-Cost: 7",
		"X-RateLimit-Cost: 7x\r\n\r\n",
		"X-RateLimit-Cost: 7\r\nX-RateLimit-Cost: 8\r\n\r\n",
		"X-RateLimit-Cost: 7\r\nX-RateLimit-Cost: 7\r\n\r\n",
		"X-RateLimit-Cost: 1000001\r\n\r\n",
		"X-RateLimit-Cost:\r\n\r\n",
		"X-RateLimit-Costs: 3\n\n",
	};
	static const int want[] = {1, 0, -1, -1, -1, 1, -1, -1, 0};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t v = 0;

		assert_int_equal(sl_resp_field_u64((const uint8_t *)heads[i],
						   (uint32_t)strlen(heads[i]),
						   "X-RateLimit-Cost", 1000000,
						   &v),
				 want[i]);
		if (want[i] == 1)
			assert_int_equal(v, 7);
	}
}

/*
 * The field read a line at a time, written apart from the library's
 * byte-at-a-time reader, as the oracle it is held to.
 */
static int
oracle_field(const char *h, size_t n, const char *name, uint64_t max,
	     uint64_t *v)
{
	const char *p = h, *end = h + n;
	size_t nl = strlen(name);
	int found = 0;

	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		const char *le, *a, *b;
		uint64_t x = 0;

		if (lf == NULL)
			return -1;
		le = lf > p && lf[-1] == '\r' ? lf - 1 : lf;
		if (le == p)
			return found;
		if ((size_t)(le - p) > nl && p[nl] == ':' &&
		    strncasecmp(p, name, nl) == 0) {
			for (a = p + nl + 1;
			     a < le && (*a == ' ' || *a == '\t'); a++)
				;
			for (b = le; b > a && (b[-1] == ' ' || b[-1] == '\t');
			     b--)
				;
			if (a == b)
				return -1;
			for (; a < b; a++) {
				if (*a < '0' || *a > '9')
					return -1;
				x = x * 10 + (uint64_t)(*a - '0');
				if (x > max)
					return -1;
			}
			if (found && x != *v)
				return -1;
			*v = x;
			found = 1;
		}
		p = lf + 1;
	}
	return -1;
}

/* h fed in pieces cut at a and b (a <= b): the whole reading's answer */
static int
fed_in_three(const char *h, size_t n, size_t a, size_t b, uint64_t *v)
{
	struct sl_resp_field s;
	size_t cut[4] = {0, a, b, n}, i;
	int got = 2;

	sl_resp_field_init(&s);
	for (i = 0; i < 3 && got == 2; i++)
		got = sl_resp_field_feed(&s, (const uint8_t *)h + cut[i],
					 (uint32_t)(cut[i + 1] - cut[i]),
					 "X-RateLimit-Cost", 1000, v);
	return got == 2 ? -1 : got;
}

/* Heads of lines drawn from a pool (seeded, repeatable): every one,
 * cut at every pair of places, reads as the oracle reads it whole. */
static void
field_across_segments(void **state)
{
	static const char *const lines[] = {
		"X-RateLimit-Cost: 5\r\n",
		"x-ratelimit-cost:\t12 \r\n",
		"X-RateLimit-Cost: 5\n",
		"X-RateLimit-Cost:  \r\n",
		"X-RateLimit-Cost: 1001\r\n",
		"X-RateLimit-Cost: 5 5\r\n",
		"X-RateLimit-Cost: 5\r \r\n",
		"X-RateLimit-Costs: 9\r\n",
		"X-RateLimit-Cos: 9\r\n",
		"Server: x\r\n",
		"\rX: y\r\n",
		" X-RateLimit-Cost: 3\r\n",
		"X-RateLimit-Cost : 3\r\n",
		"Content-Length: 2\r\n",
		"X-RateLimit-Cost: 0\r\n",
		"X-RateLimit-Cost: 12\r\n",
		"X-RateLimit-Cost:5x\r\n",
	};
	static const char *const ends[] = {"\r\n", "\n", "", "\r"};
	uint32_t seed = 7, k;
	(void)state;

	for (k = 0; k < 3000; k++) {
		char h[256] = "";
		size_t n, a, b;
		uint32_t j, nlines;
		uint64_t want_v = 0;
		int want;

		seed = seed * 1103515245u + 12345u;
		nlines = (seed >> 16) % 4;
		for (j = 0; j < nlines; j++) {
			seed = seed * 1103515245u + 12345u;
			strcat(h, lines[(seed >> 16) %
					(sizeof(lines) / sizeof(lines[0]))]);
		}
		strcat(h, ends[(seed >> 8) % 4]);
		n = strlen(h);
		want = oracle_field(h, n, "X-RateLimit-Cost", 1000, &want_v);
		for (a = 0; a <= n; a++)
			for (b = a; b <= n; b++) {
				uint64_t v = 0;
				int got = fed_in_three(h, n, a, b, &v);

				if (got != want || (want == 1 && v != want_v))
					fail_msg("[%s] cut at %zu, %zu: %d "
						 "(%lu), "
						 "want %d (%lu)",
						 h, a, b, got, (unsigned long)v,
						 want, (unsigned long)want_v);
			}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(length_and_chunked),
		cmocka_unit_test(no_body),
		cmocka_unit_test(unsure_after_declared_body),
		cmocka_unit_test(unknown),
		cmocka_unit_test(unexpect),
		cmocka_unit_test(marks),
		cmocka_unit_test(field_u64),
		cmocka_unit_test(field_across_segments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

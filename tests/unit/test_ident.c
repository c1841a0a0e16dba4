/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sl_ident.h"

static const uint8_t PEER4[16] = {198, 18, 0, 7};
static const uint8_t PEER6[16] = {0x20, 0x01, 0x00, 0x02, 0, 0, 0xab, 0xcd,
				  1,    2,    3,    4,    5, 6, 7,    8};

static struct sl_http_req
req_with(const char *key, const char *user, const char *xff1, const char *xff2)
{
	struct sl_http_req r;

	memset(&r, 0, sizeof(r));
	if (key)
		r.api_key = (struct sl_str){key, (uint32_t)strlen(key)};
	if (user)
		r.user = (struct sl_str){user, (uint32_t)strlen(user)};
	if (xff1)
		r.xff[r.n_xff++] =
			(struct sl_str){xff1, (uint32_t)strlen(xff1)};
	if (xff2)
		r.xff[r.n_xff++] =
			(struct sl_str){xff2, (uint32_t)strlen(xff2)};
	return r;
}

static void
key_then_user_then_ip(void **state)
{
	struct sl_ident_cfg cfg = {.ipv6_prefix = 64};
	struct sl_identity id;
	struct sl_http_req r;
	char s[128];

	(void)state;
	r = req_with("k-1", "u-1", NULL, NULL);
	assert_int_equal(sl_ident_extract(&cfg, &r, 4, PEER4, &id), 0);
	assert_int_equal(id.kind, SL_ID_KEY);
	assert_memory_equal(id.id, "k-1", 3);
	r = req_with(NULL, "u-1", NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	assert_int_equal(id.kind, SL_ID_USER);
	r = req_with(NULL, NULL, NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	assert_int_equal(id.kind, SL_ID_IP);
	assert_int_equal(id.len, 4);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.0.7");
}

/* Only the entries our own proxies appended are believed. */
static void
xff_trusted_hops(void **state)
{
	struct sl_ident_cfg cfg = {
		.client_ip = SL_CIP_XFF, .trusted_hops = 1, .ipv6_prefix = 64};
	struct sl_identity id;
	struct sl_http_req r;
	char s[128];

	(void)state;
	r = req_with(NULL, NULL, "6.6.6.6, 198.18.5.5", NULL);
	assert_int_equal(sl_ident_extract(&cfg, &r, 4, PEER4, &id), 0);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.5.5");
	/* two hops: the second from the right, across two fields */
	cfg.trusted_hops = 2;
	r = req_with(NULL, NULL, "6.6.6.6, 198.18.4.4", "10.9.9.9");
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.4.4");
	/* fewer entries than hops: all are ours, the leftmost is the client */
	cfg.trusted_hops = 3;
	r = req_with(NULL, NULL, "198.18.3.3,198.18.2.2", NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.3.3");
	/* ports and brackets are stripped */
	cfg.trusted_hops = 1;
	r = req_with(NULL, NULL, "[2001:2::9]:443", NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:2001:2::");
	r = req_with(NULL, NULL, "198.18.1.1:5555", NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &id);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.1.1");
	/* garbage: refused, never the peer (the proxy) in its place */
	r = req_with(NULL, NULL, "unknown", NULL);
	assert_int_equal(sl_ident_extract(&cfg, &r, 4, PEER4, &id),
			 SL_HTTP_E_FORWARDED);
	/* no XFF at all: the peer, silently */
	r = req_with(NULL, NULL, NULL, NULL);
	assert_int_equal(sl_ident_extract(&cfg, &r, 4, PEER4, &id), 0);
	assert_false(id.xff_used);
}

static void
ipv6_prefix_grouping(void **state)
{
	struct sl_ident_cfg cfg = {.ipv6_prefix = 64};
	struct sl_identity a, b;
	uint8_t other[16];
	char s[128];

	(void)state;
	memcpy(other, PEER6, 16);
	other[15] ^= 0xff; /* same /64 */
	sl_ident_extract(&cfg, NULL, 6, PEER6, &a);
	sl_ident_extract(&cfg, NULL, 6, other, &b);
	assert_int_equal(sl_ident_hash(&a), sl_ident_hash(&b));
	/* grouped for limits, whole for the blocklist */
	assert_memory_equal(a.addr, PEER6, 16);
	assert_memory_equal(b.addr, other, 16);
	assert_memory_not_equal(a.addr, a.client_ip, 16);
	sl_ident_format(&a, s, sizeof(s));
	assert_string_equal(s, "ip:2001:2:0:abcd::");
	cfg.ipv6_prefix = 60;
	sl_ident_extract(&cfg, NULL, 6, PEER6, &a);
	sl_ident_format(&a, s, sizeof(s));
	assert_string_equal(s, "ip:2001:2:0:abc0::");
	cfg.ipv6_prefix = 128;
	sl_ident_extract(&cfg, NULL, 6, other, &b);
	sl_ident_extract(&cfg, NULL, 6, PEER6, &a);
	assert_true(sl_ident_hash(&a) != sl_ident_hash(&b));
}

/*
 * A key of every length up to the kept maximum, read from every offset
 * of a buffer that ends where it does: its bytes copied exactly, none
 * read past its end (ASan), none written past its length.
 */
static void
keys_of_every_length(void **state)
{
	struct sl_ident_cfg cfg = {.ipv6_prefix = 64};
	uint8_t tail[SL_IDENT_MAX];
	uint32_t n, o;

	(void)state;
	for (n = 1; n <= SL_IDENT_MAX; n++) {
		for (o = 0; o < 16; o++) {
			char *buf = malloc(o + n);
			struct sl_identity id;
			struct sl_http_req r;
			uint32_t i;

			assert_non_null(buf);
			for (i = 0; i < n; i++)
				buf[o + i] = (char)('!' + (i * 7 + o) % 90);
			memset(&r, 0, sizeof(r));
			r.api_key = (struct sl_str){buf + o, n};
			memset(&id, 0xa5, sizeof(id));
			memset(tail, 0xa5, sizeof(tail));
			assert_int_equal(
				sl_ident_extract(&cfg, &r, 4, PEER4, &id), 0);
			assert_int_equal(id.kind, SL_ID_KEY);
			assert_int_equal(id.len, n);
			assert_memory_equal(id.id, buf + o, n);
			if (n < SL_IDENT_MAX)
				assert_memory_equal(id.id + n, tail,
						    SL_IDENT_MAX - n);
			free(buf);
		}
	}
}

static void
long_keys_stay_distinct(void **state)
{
	struct sl_ident_cfg cfg = {.ipv6_prefix = 64};
	char k1[300], k2[300];
	struct sl_identity a, b;
	struct sl_http_req r;

	(void)state;
	memset(k1, 'a', sizeof(k1) - 1);
	k1[sizeof(k1) - 1] = '\0';
	memcpy(k2, k1, sizeof(k1));
	k2[250] = 'b';
	r = req_with(k1, NULL, NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &a);
	r = req_with(k2, NULL, NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &b);
	assert_int_equal(a.len, SL_IDENT_MAX);
	assert_memory_not_equal(a.id, b.id, SL_IDENT_MAX);
	assert_true(sl_ident_hash(&a) != sl_ident_hash(&b));
	/* a key and a user with the same text are different identities */
	r = req_with("same", NULL, NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &a);
	r = req_with(NULL, "same", NULL, NULL);
	sl_ident_extract(&cfg, &r, 4, PEER4, &b);
	assert_true(sl_ident_hash(&a) != sl_ident_hash(&b));
}

/*
 * Bucket keys, and so Redis keys, are these hashes: a change would split
 * every counter in a rolling upgrade. The values are those of the first
 * release (bytes read one at a time then); however the tail is read now,
 * and in the two-seed form, the words must stay these.
 */
static void
hash_values_are_stable(void **state)
{
	static const char text[] = "key-00001234-abcdefgh-0123456789";
	static const struct {
		uint32_t len;
		uint64_t h1, h2;
	} want[] = {
		{0, 0xbd6c8bdd53d86099ULL, 0x2d3f56b1a680c1d2ULL},
		{1, 0x7fd509ab9f515f53ULL, 0xc76bc8f9d66f7151ULL},
		{2, 0x10f2420d5a8bb6e7ULL, 0x30c93272020989e4ULL},
		{3, 0x397682952a2de252ULL, 0x8db8d08aa522ba7dULL},
		{4, 0xa0f21af995e27f28ULL, 0xcbc59324f9757b85ULL},
		{5, 0x63e88d04bd9a7c17ULL, 0xc3ba9ad7d631f6a7ULL},
		{6, 0x037f80facf62b6b7ULL, 0x24773d81bf1a3c28ULL},
		{7, 0x0d4907d76ddbbb5eULL, 0x85200ab97877d0ebULL},
		{8, 0x5f5084f1b4d1d263ULL, 0x455e3571abf5a9ebULL},
		{9, 0xa624feef1282e8d0ULL, 0xd33e19b73884d4c8ULL},
		{16, 0x51d5f4183bfa9302ULL, 0xdb4653a8bd716d5bULL},
		{23, 0x70d8fdc84d8d389bULL, 0x85acecbfb0e2317cULL},
		{30, 0xf507572023b491a0ULL, 0x47ee1ce0dfb469a8ULL},
	};
	const uint64_t s1 = 0x5c09e + 1, s2 = 0x7e57 ^ (1ULL << 40);
	uint8_t buf[80];
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t h[2];

		assert_int_equal(sl_hash64(text, want[i].len, s1), want[i].h1);
		assert_int_equal(sl_hash64(text, want[i].len, s2), want[i].h2);
		sl_hash64x2(text, want[i].len, s1, s2, h);
		assert_int_equal(h[0], want[i].h1);
		assert_int_equal(h[1], want[i].h2);
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	for (i = 0; i <= sizeof(buf); i++) {
		uint64_t h[2];

		sl_hash64x2(buf, i, 3, 5, h);
		assert_int_equal(h[0], sl_hash64(buf, i, 3));
		assert_int_equal(h[1], sl_hash64(buf, i, 5));
	}
}

/* The parser's ring and the ident's pick, over n fields of one address. */
static void
parse_xff(const char *head, const struct sl_ident_cfg *ic,
	  const struct sl_http_cfg *hc, int want_rc, const char *want)
{
	struct sl_http_req r;
	struct sl_identity id;
	char s[128];
	int rc;

	assert_true(sl_http_parse_request(head, strlen(head), hc, &r) > 0);
	rc = sl_ident_extract(ic, &r, 4, PEER4, &id);
	assert_int_equal(rc, want_rc);
	if (rc != 0)
		return;
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, want);
}

/* Any number of fields, merged or apart: counted from the right. */
static void
xff_any_number_of_fields(void **state)
{
	struct sl_ident_cfg ic = {
		.client_ip = SL_CIP_XFF, .trusted_hops = 1, .ipv6_prefix = 64};
	char head[4096];
	int n, hops;

	(void)state;
	for (hops = 1; hops <= 16; hops++) {
		ic.trusted_hops = (uint8_t)hops;
		for (n = 1; n <= 40; n++) {
			int i, len = sprintf(head,
					     "GET / HTTP/1.1\r\nHost: a\r\n");
			char want[32];

			/* field i names 198.18.0.i: the client is field
			 * n - hops (the leftmost when fewer) */
			for (i = 0; i < n; i++)
				len += sprintf(
					head + len,
					"X-Forwarded-For: 198.18.0.%d\r\n",
					i + 1);
			strcpy(head + len, "\r\n");
			sprintf(want, "ip:198.18.0.%d",
				n > hops ? n - hops + 1 : 1);
			parse_xff(head, &ic, NULL, 0, want);
		}
	}
	/* one merged field and one appended: the 2nd from the right */
	ic.trusted_hops = 2;
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "X-Forwarded-For: 6.6.6.6, 7.7.7.7,, 198.18.9.9\r\n"
		  "X-Forwarded-For:\r\n"
		  "X-Forwarded-For: 198.18.1.1\r\n\r\n",
		  &ic, NULL, 0, "ip:198.18.9.9");
	/* the blocklisted client behind five fields is still the client */
	ic.trusted_hops = 1;
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\n"
		  "X-Forwarded-For: 1.1.1.2\r\nX-Forwarded-For: 1.1.1.3\r\n"
		  "X-Forwarded-For: 1.1.1.4\r\n"
		  "X-Forwarded-For: 203.0.113.7\r\n\r\n",
		  &ic, NULL, 0, "ip:203.0.113.7");
	/* the picked element is no address: refused */
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "X-Forwarded-For: 198.18.0.1, bogus\r\n\r\n",
		  &ic, NULL, SL_HTTP_E_FORWARDED, NULL);
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "X-Forwarded-For: [2001:2::1]x\r\n\r\n",
		  &ic, NULL, SL_HTTP_E_FORWARDED, NULL);
	/* more fields than kept, the pick not among them: refused */
	{
		struct sl_http_req r;
		struct sl_identity id;
		int i;

		memset(&r, 0, sizeof(r));
		for (i = 0; i < 20; i++)
			r.xff[i % SL_HTTP_MAX_XFF] = (struct sl_str){" , ", 3};
		r.n_xff = 20;
		assert_int_equal(sl_ident_extract(&ic, &r, 4, PEER4, &id),
				 SL_HTTP_E_FORWARDED);
	}
}

/* IPv4-mapped and -compatible addresses are their IPv4 address. */
static void
one_family_per_client(void **state)
{
	struct sl_ident_cfg ic = {
		.client_ip = SL_CIP_XFF, .trusted_hops = 1, .ipv6_prefix = 64};
	static const char *const v4[] = {
		"::ffff:203.0.113.7", "[::ffff:203.0.113.7]:80",
		"::FFFF:cb00:7107",   "::203.0.113.7",
		"203.0.113.7:1",      "[::ffff:cb00:7107]"};
	uint8_t mapped[16] = {0, 0, 0,    0,    0,   0,  0, 0,
			      0, 0, 0xff, 0xff, 198, 18, 0, 9};
	struct sl_identity id;
	char head[256], s[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		sprintf(head,
			"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: "
			"%s\r\n\r\n",
			v4[i]);
		parse_xff(head, &ic, NULL, 0, "ip:203.0.113.7");
	}
	/* the unspecified address is no client */
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: ::\r\n\r\n",
		  &ic, NULL, SL_HTTP_E_CLIENT_ADDR, NULL);
	parse_xff(
		"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 0.0.0.0\r\n\r\n",
		&ic, NULL, SL_HTTP_E_CLIENT_ADDR, NULL);
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "X-Forwarded-For: ::ffff:0.0.0.0\r\n\r\n",
		  &ic, NULL, SL_HTTP_E_CLIENT_ADDR, NULL);
	/* ::1 stays IPv6 */
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: ::1\r\n\r\n",
		  &ic, NULL, 0, "ip:::");
	/* from the packet too: a mapped peer is an IPv4 client, whole */
	ic.client_ip = SL_CIP_PEER;
	assert_int_equal(sl_ident_extract(&ic, NULL, 6, mapped, &id), 0);
	assert_int_equal(id.ip_af, 4);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.0.9");
	assert_memory_equal(id.addr, "\xc6\x12\x00\x09", 4);
	memset(mapped, 0, 16);
	assert_int_equal(sl_ident_extract(&ic, NULL, 6, mapped, &id),
			 SL_HTTP_E_CLIENT_ADDR);
}

/* Forwarded (RFC 7239): for= of the element trusted_hops from the right. */
static void
forwarded_header(void **state)
{
	struct sl_ident_cfg ic = {.client_ip = SL_CIP_FORWARDED,
				  .trusted_hops = 1,
				  .ipv6_prefix = 128};
	struct sl_http_cfg hc = {.forwarded = 1};

	(void)state;
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "Forwarded: for=6.6.6.6, for=198.18.0.5;proto=http;by=x\r\n"
		  "X-Forwarded-For: 7.7.7.7\r\n\r\n",
		  &ic, &hc, 0, "ip:198.18.0.5");
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "Forwarded: For=\"[2001:2::17]:4711\"\r\n\r\n",
		  &ic, &hc, 0, "ip:2001:2::17");
	/* a quoted comma is not a new element */
	ic.trusted_hops = 2;
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\n"
		  "Forwarded: for=198.18.0.1;x=\"a,b\", for=198.18.0.2\r\n"
		  "Forwarded: proto=https;for=\"198.18.0.3:8443\"\r\n\r\n",
		  &ic, &hc, 0, "ip:198.18.0.2");
	ic.trusted_hops = 1;
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nForwarded: for=unknown\r\n\r\n",
		  &ic, &hc, SL_HTTP_E_FORWARDED, NULL);
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nForwarded: for=_hidden\r\n\r\n",
		  &ic, &hc, SL_HTTP_E_FORWARDED, NULL);
	parse_xff("GET / HTTP/1.1\r\nHost: a\r\nForwarded: proto=http\r\n\r\n",
		  &ic, &hc, SL_HTTP_E_FORWARDED, NULL);
	/* X-Forwarded-For alone is not what was configured: the peer */
	parse_xff(
		"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 7.7.7.7\r\n\r\n",
		&ic, &hc, 0, "ip:198.18.0.7");
}

/* An identity header spelt with '_' is the same header (by default). */
static void
underscore_names(void **state)
{
	struct sl_http_cfg hc = {.api_key_header = {"X-API-Key", 9}};
	struct sl_http_req r;
	const char *one = "GET / HTTP/1.1\r\nHost: a\r\nX_API_Key: k-1\r\n\r\n";
	const char *two = "GET / HTTP/1.1\r\nHost: a\r\nX-Api-Key: k-1\r\n"
			  "x_api_key: k-2\r\n\r\n";

	(void)state;
	assert_true(sl_http_parse_request(one, strlen(one), &hc, &r) > 0);
	assert_int_equal(r.api_key.len, 3);
	assert_int_equal(sl_http_parse_request(two, strlen(two), &hc, &r),
			 SL_HTTP_ERROR);
	assert_int_equal(r.error, SL_HTTP_E_DUP_IDENT);
	hc.underscores = SL_US_IGNORE;
	assert_true(sl_http_parse_request(one, strlen(one), &hc, &r) > 0);
	assert_int_equal(r.api_key.len, 0);
	assert_true(sl_http_parse_request(two, strlen(two), &hc, &r) > 0);
	assert_memory_equal(r.api_key.p, "k-1", 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_then_user_then_ip),
		cmocka_unit_test(xff_trusted_hops),
		cmocka_unit_test(xff_any_number_of_fields),
		cmocka_unit_test(one_family_per_client),
		cmocka_unit_test(forwarded_header),
		cmocka_unit_test(underscore_names),
		cmocka_unit_test(ipv6_prefix_grouping),
		cmocka_unit_test(keys_of_every_length),
		cmocka_unit_test(long_keys_stay_distinct),
		cmocka_unit_test(hash_values_are_stable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

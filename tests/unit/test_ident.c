/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
		.use_xff = 1, .trusted_hops = 1, .ipv6_prefix = 64};
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
	/* garbage: the peer, and the caller is told */
	r = req_with(NULL, NULL, "unknown", NULL);
	assert_int_equal(sl_ident_extract(&cfg, &r, 4, PEER4, &id), 1);
	sl_ident_format(&id, s, sizeof(s));
	assert_string_equal(s, "ip:198.18.0.7");
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_then_user_then_ip),
		cmocka_unit_test(xff_trusted_hops),
		cmocka_unit_test(ipv6_prefix_grouping),
		cmocka_unit_test(long_keys_stay_distinct),
		cmocka_unit_test(hash_values_are_stable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

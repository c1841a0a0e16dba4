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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_then_user_then_ip),
		cmocka_unit_test(xff_trusted_hops),
		cmocka_unit_test(ipv6_prefix_grouping),
		cmocka_unit_test(long_keys_stay_distinct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

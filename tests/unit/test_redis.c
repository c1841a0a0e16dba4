/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sl_redis.h"

static uint16_t
slot(const char *k)
{
	return sl_redis_slot(k, strlen(k));
}

/* The check value of CRC16/XMODEM, and the slots a redis-server 7.0's
 * CLUSTER KEYSLOT gave for these keys. */
static void
slots(void **state)
{
	(void)state;
	assert_int_equal(sl_redis_crc16("123456789", 9), 0x31c3);
	assert_int_equal(slot("foo"), 12182);
	assert_int_equal(slot("bar"), 5061);
	assert_int_equal(slot("hello"), 866);
	/* a hash tag: only what is between the first { and the next } */
	assert_int_equal(slot("{user1000}.following"), 3443);
	assert_int_equal(slot("{user1000}.following"), slot("user1000"));
	assert_int_equal(slot("{user1000}.followers"), slot("user1000"));
	assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
	assert_int_equal(slot("foo{{bar}}zap"), 4015);
	assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
	/* an empty tag, or none closed: the whole key */
	assert_int_equal(slot("foo{}{bar}"),
			 sl_redis_crc16("foo{}{bar}", 10) % SL_REDIS_SLOTS);
	assert_int_equal(slot("foo{bar"),
			 sl_redis_crc16("foo{bar", 7) % SL_REDIS_SLOTS);
	/* the length is what counts, not a NUL */
	assert_int_equal(sl_redis_slot("foo{bar}", 4), slot("foo{"));
	assert_int_equal(sl_redis_slot("", 0), 0);
}

static void
redirects(void **state)
{
	struct sl_redirect r;

	(void)state;
	assert_true(sl_redis_redirect("MOVED 3999 127.0.0.1:6381", &r));
	assert_true(r.moved);
	assert_int_equal(r.slot, 3999);
	assert_string_equal(r.host, "127.0.0.1");
	assert_int_equal(r.port, 6381);
	assert_true(sl_redis_redirect("ASK 16383 10.0.0.2:7000", &r));
	assert_false(r.moved);
	assert_int_equal(r.slot, 16383);
	/* an IPv6 node: the port is after the last colon */
	assert_true(sl_redis_redirect("MOVED 1 ::1:7001", &r));
	assert_string_equal(r.host, "::1");
	assert_int_equal(r.port, 7001);
	/* anything else is not one, and is not half read */
	assert_false(sl_redis_redirect("ERR wrong number of arguments", &r));
	assert_false(sl_redis_redirect("MOVED 16384 127.0.0.1:6381", &r));
	assert_false(sl_redis_redirect("MOVED -1 127.0.0.1:6381", &r));
	assert_false(sl_redis_redirect("MOVED 12 127.0.0.1:0", &r));
	assert_false(sl_redis_redirect("MOVED 12 127.0.0.1:65536", &r));
	assert_false(sl_redis_redirect("MOVED 12 127.0.0.1:6381x", &r));
	assert_false(sl_redis_redirect("MOVED 12 127.0.0.1", &r));
	assert_false(sl_redis_redirect("MOVED 12 :6381", &r));
	assert_false(sl_redis_redirect("MOVED 12", &r));
	assert_false(sl_redis_redirect("MOVED  127.0.0.1:1", &r));
	assert_false(sl_redis_redirect("MOVEDX 1 h:1", &r));
	assert_false(sl_redis_redirect("ASK", &r));
}

/* A host longer than the buffer is refused, not cut. */
static void
long_host(void **state)
{
	char err[600];
	struct sl_redirect r;

	(void)state;
	memcpy(err, "MOVED 7 ", 8);
	memset(err + 8, 'h', 300);
	memcpy(err + 308, ":6379", 6);
	assert_false(sl_redis_redirect(err, &r));
	memset(err + 8, 'h', 255);
	memcpy(err + 263, ":6379", 6);
	assert_true(sl_redis_redirect(err, &r));
	assert_int_equal(strlen(r.host), 255);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slots),
		cmocka_unit_test(redirects),
		cmocka_unit_test(long_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: server bytes through the response framing tracker, cut
 * where the input says, with requests expected between: the count of
 * responses due is never more than were expected, and cutting the same
 * bytes elsewhere gives the same count.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sl_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_resp a, b;
	size_t i, cut;
	int expected;

	if (size < 2)
		return 0;
	/* the first byte: how many requests are due, and which are HEAD */
	expected = data[0] % 8;
	cut = data[1] % (size - 1);
	sl_resp_init(&a);
	sl_resp_init(&b);
	for (i = 0; i < (size_t)expected; i++) {
		sl_resp_expect(&a, (data[0] >> 3) & (1u << i % 5));
		sl_resp_expect(&b, (data[0] >> 3) & (1u << i % 5));
	}
	data += 2;
	size -= 2;
	for (i = 0; i < size; i++)
		sl_resp_consume(&a, data + i, 1);
	sl_resp_consume(&b, data, (uint32_t)cut);
	sl_resp_consume(&b, data + cut, (uint32_t)(size - cut));
	if (sl_resp_due(&a) != sl_resp_due(&b) || sl_resp_due(&a) > expected ||
	    sl_resp_due(&a) < -1)
		abort();
	/* the same bytes as a head's field lines (cost_from_response) */
	{
		uint64_t v = 0;
		int got = sl_resp_field_u64(data, (uint32_t)size,
					    "X-RateLimit-Cost", 1000000, &v);

		if (got < -1 || got > 1 || v > 1000000)
			abort();
		/* read across two segments, cut where the first byte says:
		 * the same answer */
		if (size > 0) {
			struct sl_resp_field s;
			uint32_t cut = data[0] % (uint32_t)size;
			uint64_t w = 0;
			int two;

			sl_resp_field_init(&s);
			two = sl_resp_field_feed(
				&s, data, cut, "X-RateLimit-Cost", 1000000, &w);
			if (two == 2)
				two = sl_resp_field_feed(
					&s, data + cut, (uint32_t)size - cut,
					"X-RateLimit-Cost", 1000000, &w);
			if ((two == 2 ? -1 : two) != got ||
			    (got == 1 && w != v))
				abort();
		}
	}
	return 0;
}

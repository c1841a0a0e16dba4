/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C authority's arithmetic on a sequence read from stdin, for the
 * differential test against the Redis scripts (tests/func/test_lua.py).
 * First line: algo count period_ms burst. Then one step per line:
 *   g T WANT NEED   a grant at T ms: prints "granted remaining retry_ms"
 *   r T UNITS       units given back at T ms: prints "ok"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_lease.h"
#include "sl_limit.h"

#define MS 1000000ULL

int
main(void)
{
	struct sl_limit_params p;
	struct sl_limit_state *s =
		calloc(1, sizeof(*s) + SL_LOG_MAX * sizeof(uint32_t));
	unsigned long long count, period, burst, t, a, b;
	unsigned int algo;
	char op;

	if (s == NULL ||
	    scanf("%u %llu %llu %llu", &algo, &count, &period, &burst) != 4 ||
	    sl_limit_params_init(&p, (uint8_t)algo, count, period * MS,
				 burst) != 0) {
		fprintf(stderr, "limit_replay: bad header\n");
		return 2;
	}
	while (scanf(" %c %llu", &op, &t) == 2) {
		struct sl_lease_grant g;

		if (op == 'g' && scanf("%llu %llu", &a, &b) == 2) {
			sl_lease_grant(&p, s, a, b, t * MS, 1000 * MS, &g);
			printf("%llu %llu %llu\n",
			       (unsigned long long)g.granted,
			       (unsigned long long)g.remaining,
			       (unsigned long long)((g.retry_ns + MS - 1) /
						    MS));
		} else if (op == 'r' && scanf("%llu", &a) == 1) {
			sl_lease_give_back(&p, s, a, t * MS);
			printf("ok\n");
		} else {
			fprintf(stderr, "limit_replay: bad step\n");
			return 2;
		}
	}
	free(s);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The owed-charges table against a plain model: every unit added is either
 * drained once or counted as dropped, whatever the order of adds and
 * removals (linear probing with backward-shift deletion). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "owed.h"

#define KEYS 6000

static struct sl_owed o;
static uint64_t model[KEYS];

static void
add(uint32_t k, uint64_t units)
{
	struct sl_coord_msg q;

	memset(&q, 0, sizeof(q));
	q.k1 = k % 7;
	q.k2 = k;
	q.back.count = 600;
	if (sl_owed_add(&o, &q, units, 1) == 0)
		model[k] += units;
}

/* Drains up to n entries; each must match the model exactly. */
static void
drain(int n)
{
	int i;

	for (; n > 0; n--) {
		i = sl_owed_next(&o);
		if (i < 0)
			return;
		assert_int_equal(o.e[i].k1, o.e[i].k2 % 7);
		assert_true(o.e[i].k2 < KEYS);
		assert_int_equal(o.e[i].back.units, model[o.e[i].k2]);
		assert_int_equal(o.e[i].back.count, 600);
		model[o.e[i].k2] = 0;
		sl_owed_remove(&o, (uint32_t)i);
	}
}

static void
owed_model(void **state)
{
	uint64_t added = 0, dropped0;
	int round, j;

	(void)state;
	memset(&o, 0, sizeof(o));
	srand(7);
	for (round = 0; round < 200; round++) {
		for (j = 0; j < 100; j++) {
			uint32_t k = (uint32_t)rand() % KEYS;

			add(k, 1 + (uint64_t)(rand() % 5));
		}
		drain(rand() % 120);
	}
	/* full: what cannot be owed is counted, never half-kept */
	dropped0 = o.dropped_units;
	for (j = 0; j < KEYS; j++) {
		uint64_t before = model[j];

		add((uint32_t)j, 3);
		added += model[j] - before;
	}
	assert_true(o.n <= SL_OWED_CAP - 1);
	assert_int_equal(o.dropped_units - dropped0 + added, 3ULL * KEYS);
	drain(SL_OWED_CAP);
	assert_int_equal(o.n, 0);
	assert_int_equal(sl_owed_next(&o), -1);
	for (j = 0; j < KEYS; j++)
		assert_int_equal(model[j], 0);
}

/* Units to refund and units to charge for one key are two entries, each
 * summed on its own: a refund never cancels a charge on the way. */
static void
owed_directions(void **state)
{
	struct sl_coord_msg q;
	uint64_t taken = 0, back = 0;
	int i;

	(void)state;
	memset(&o, 0, sizeof(o));
	memset(&q, 0, sizeof(q));
	q.k1 = 1;
	q.k2 = 2;
	q.type = SL_CO_TAKEN;
	assert_int_equal(sl_owed_add(&o, &q, 3, 1), 0);
	q.type = SL_CO_GIVE_BACK;
	assert_int_equal(sl_owed_add(&o, &q, 2, 2), 0);
	assert_int_equal(sl_owed_add(&o, &q, 5, 3), 0);
	q.type = SL_CO_TAKEN;
	assert_int_equal(sl_owed_add(&o, &q, 1, 4), 0);
	assert_int_equal(o.n, 2);
	while ((i = sl_owed_next(&o)) >= 0) {
		if (o.e[i].type == SL_CO_GIVE_BACK)
			back += o.e[i].back.units;
		else
			taken += o.e[i].back.units;
		sl_owed_remove(&o, (uint32_t)i);
	}
	assert_int_equal(taken, 4);
	assert_int_equal(back, 7);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(owed_model),
		cmocka_unit_test(owed_directions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

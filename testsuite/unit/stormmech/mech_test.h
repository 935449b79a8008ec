/* SPDX-License-Identifier: GPL-2.0-or-later */
/* shared bits of the multi-process Check programs */
#ifndef MECH_TEST_H
#define MECH_TEST_H
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* provider of loop index _i, or skip the test with a message */
#define PROV_OR_SKIP(_i) ({                                             \
	const char *_p = h_prov_name(_i);                               \
	if (!h_provider_ok(_p)) {                                       \
		fprintf(stderr, "SKIP: provider %s not offered by "     \
			"fi_getinfo\n", _p);                            \
		return;                                                 \
	}                                                               \
	_p; })

static inline void fill_pattern(uint8_t *b, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static inline storm_set_t range_set(int a, int b)
{
	storm_set_t s;
	storm_set_clear(&s);
	storm_set_range(&s, a, b);
	return s;
}

#define START_OR_FAIL(h, n, cfg) \
	ck_assert_msg(h_start((h), (n), (cfg)) == 0, "harness start failed")

static inline Suite *mech_suite(const char *name, TCase **tcs, int ntc)
{
	Suite *s = suite_create(name);
	for (int i = 0; i < ntc; i++)
		suite_add_tcase(s, tcs[i]);
	return s;
}

static inline int mech_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check_run.h - run one Check suite and give main's exit status: the same
 * for every unit test, so it is written once.
 */
#ifndef STORM_CHECK_RUN_H
#define STORM_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int storm_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif

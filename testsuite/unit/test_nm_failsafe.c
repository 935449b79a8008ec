/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_failsafe.c - the node manager's fail-safe opens, thaws once and
 * closes again, on a clock the test drives.
 */
#include <check.h>
#include <stdint.h>

#include "src/nm/nm_failsafe.h"

#include "check_run.h"

#define MS 1000000ULL
#define FAILSAFE_NS (500 * MS)

static int nthaws;

static int count_thaw(void *arg)
{
	(void) arg;
	nthaws++;
	return 3;
}

static void setup(void)
{
	nthaws = 0;
}

START_TEST(closed_until_failsafe_passes)
{
	nm_failsafe_t fs = { 0 };

	nm_failsafe_start(&fs, 1000 * MS);
	ck_assert(!nm_failsafe_check(&fs, 1000 * MS + FAILSAFE_NS, FAILSAFE_NS,
				     count_thaw, NULL));
	ck_assert_int_eq(nthaws, 0);
	ck_assert(!fs.open);
	ck_assert_uint_eq(nm_failsafe_due(&fs, FAILSAFE_NS),
			  1000 * MS + FAILSAFE_NS + MS);
}
END_TEST

START_TEST(opens_once_and_thaws_once)
{
	nm_failsafe_t fs = { 0 };

	nm_failsafe_start(&fs, 1000 * MS);
	ck_assert(nm_failsafe_check(&fs, 1000 * MS + FAILSAFE_NS + 1,
				    FAILSAFE_NS, count_thaw, NULL));
	ck_assert_int_eq(nthaws, 1);
	ck_assert(fs.open);
	ck_assert_uint_eq(fs.nevents, 1);
	/* open: nothing more to thaw, no deadline of its own */
	ck_assert(!nm_failsafe_check(&fs, 5000 * MS, FAILSAFE_NS, count_thaw,
				     NULL));
	ck_assert_int_eq(nthaws, 1);
	ck_assert_uint_eq(nm_failsafe_due(&fs, FAILSAFE_NS), UINT64_MAX);
}
END_TEST

START_TEST(a_strobe_closes_it_and_restarts_the_watch)
{
	nm_failsafe_t fs = { 0 };

	nm_failsafe_start(&fs, 0);
	ck_assert(nm_failsafe_check(&fs, FAILSAFE_NS + 1, FAILSAFE_NS,
				    count_thaw, NULL));
	nm_failsafe_strobe(&fs, 2000 * MS, 42);
	ck_assert(!fs.open);
	ck_assert(!nm_failsafe_check(&fs, 2000 * MS + FAILSAFE_NS,
				     FAILSAFE_NS, count_thaw, NULL));
	ck_assert(nm_failsafe_check(&fs, 2000 * MS + FAILSAFE_NS + 1,
				    FAILSAFE_NS, count_thaw, NULL));
	ck_assert_int_eq(nthaws, 2);
	ck_assert_uint_eq(fs.nevents, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nm_failsafe");
	TCase *tc = tcase_create("failsafe");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, closed_until_failsafe_passes);
	tcase_add_test(tc, opens_once_and_thaws_once);
	tcase_add_test(tc, a_strobe_closes_it_and_restarts_the_watch);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_nmctl.c - the node manager's instance lock path
 * (src/common/storm_nmctl.c): one per node and slurm.conf, the same however
 * slurm.conf is named, and nothing in it from storm.conf.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/storm_nmctl.h"

#include "check_run.h"

static char dir[] = "/tmp/storm-nmctl-XXXXXX";
static char conf_a[256], conf_b[256];

static void setup(void)
{
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(conf_a, sizeof(conf_a), "%s/a.conf", dir);
	snprintf(conf_b, sizeof(conf_b), "%s/b.conf", dir);
	ck_assert_ptr_nonnull(f = fopen(conf_a, "w"));
	fclose(f);
	ck_assert_ptr_nonnull(f = fopen(conf_b, "w"));
	fclose(f);
}

static void teardown(void)
{
	unlink(conf_a);
	unlink(conf_b);
	rmdir(dir);
}

static const char *lock(const char *conf, const char *node)
{
	static char out[2][4200];
	static int i;

	i ^= 1;
	storm_nm_instance_lock(conf, node, out[i], sizeof(out[i]));
	return out[i];
}

START_TEST(under_run_dir_named_by_node)
{
	const char *p = lock(conf_a, "node7");
	size_t n = strlen(STORM_NM_RUN_DIR "/nm-node7-");

	ck_assert_int_eq(strncmp(p, STORM_NM_RUN_DIR "/nm-node7-", n), 0);
	ck_assert_uint_eq(strlen(p + n), 16 + strlen(".lock"));
	ck_assert_str_eq(p + n + 16, ".lock");
}
END_TEST

START_TEST(one_per_node_and_slurm_conf)
{
	ck_assert_str_eq(lock(conf_a, "node1"), lock(conf_a, "node1"));
	ck_assert_str_ne(lock(conf_a, "node1"), lock(conf_a, "node2"));
	ck_assert_str_ne(lock(conf_a, "node1"), lock(conf_b, "node1"));
}
END_TEST

START_TEST(same_file_however_named)
{
	char odd[300];

	snprintf(odd, sizeof(odd), "%s/./../%s/a.conf", dir, strrchr(dir, '/') + 1);
	ck_assert_str_eq(lock(odd, "node1"), lock(conf_a, "node1"));
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_str_eq(lock("a.conf", "node1"), lock(conf_a, "node1"));
}
END_TEST

START_TEST(empty_takes_slurm_conf_env)
{
	setenv("SLURM_CONF", conf_b, 1);
	ck_assert_str_eq(lock("", "node1"), lock(conf_b, "node1"));
	ck_assert_str_eq(lock(NULL, "node1"), lock(conf_b, "node1"));
	unsetenv("SLURM_CONF");
	ck_assert_str_eq(lock(NULL, "node1"), lock("/etc/slurm/slurm.conf", "node1"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_nmctl");
	TCase *tc = tcase_create("instance_lock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, under_run_dir_named_by_node);
	tcase_add_test(tc, one_per_node_and_slurm_conf);
	tcase_add_test(tc, same_file_however_named);
	tcase_add_test(tc, empty_takes_slurm_conf_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_bcast_dir.c - how the node manager tells what backs BcastDir
 * (nm_bcast_dir.c): the mount holding a path in a mountinfo table, and
 * whether a tmpfs's options give its files huge pages.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/nm/nm_bcast_dir.h"

#include "check_run.h"

static const char table[] =
	"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n"
	"30 22 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64\n"
	"40 22 0:30 / /var/spool/storm rw,relatime - tmpfs storm rw,size=4194304k,mode=755,huge=within_size,inode64\n"
	"41 22 0:31 / /mnt/with\\040space rw shared:9 master:2 - tmpfs x rw,huge=always\n"
	"42 22 0:32 / /stack rw - tmpfs a rw,huge=within_size\n"
	"43 22 0:33 / /stack rw - tmpfs b rw\n"
	"this line is not a mount\n";

static int lookup(const char *path, char *fstype, char *opts)
{
	FILE *fp = fmemopen((void *) table, sizeof(table) - 1, "r");
	int rc;

	ck_assert_ptr_nonnull(fp);
	rc = nm_mount_of(fp, path, fstype, 64, opts, 256);
	fclose(fp);
	return rc;
}

START_TEST(test_longest_mount_point_wins)
{
	char fs[64], opts[256];

	ck_assert_int_eq(lookup("/var/spool/storm/job_7", fs, opts), 0);
	ck_assert_str_eq(fs, "tmpfs");
	ck_assert_ptr_nonnull(strstr(opts, "huge=within_size"));
	ck_assert_int_eq(lookup("/var/spool/storm", fs, opts), 0);
	ck_assert_str_eq(fs, "tmpfs");
	ck_assert_int_eq(lookup("/dev/shm/storm", fs, opts), 0);
	ck_assert_str_eq(fs, "tmpfs");
	ck_assert_str_eq(opts, "rw,inode64");
}
END_TEST

START_TEST(test_prefix_stops_at_a_component)
{
	char fs[64], opts[256];

	/* /var/spool/stormy is not under /var/spool/storm */
	ck_assert_int_eq(lookup("/var/spool/stormy", fs, opts), 0);
	ck_assert_str_eq(fs, "ext4");
	ck_assert_int_eq(lookup("/home", fs, opts), 0);
	ck_assert_str_eq(fs, "ext4");
}
END_TEST

START_TEST(test_escapes_optional_fields_and_stacking)
{
	char fs[64], opts[256];

	ck_assert_int_eq(lookup("/mnt/with space/d", fs, opts), 0);
	ck_assert_str_eq(opts, "rw,huge=always");
	/* two mounts on /stack: the later one hides the earlier */
	ck_assert_int_eq(lookup("/stack/x", fs, opts), 0);
	ck_assert_str_eq(opts, "rw");
	ck_assert_int_eq(lookup("relative/path", fs, opts), -ENOENT);
}
END_TEST

START_TEST(test_tmpfs_huge)
{
	const char *never = "always within_size advise [never] deny force\n";

	ck_assert(nm_tmpfs_huge("rw,size=1g,huge=within_size", never));
	ck_assert(nm_tmpfs_huge("rw,huge=always,inode64", NULL));
	ck_assert(!nm_tmpfs_huge("rw,huge=advise", never));
	ck_assert(!nm_tmpfs_huge("rw,huge=never", never));
	ck_assert(!nm_tmpfs_huge("rw,inode64", never));
	ck_assert(!nm_tmpfs_huge("rw,huge=within_sizex", never));
	/* the sysfs knob's deny and force override the mount */
	ck_assert(!nm_tmpfs_huge("rw,huge=within_size",
				 "always within_size advise never [deny] force"));
	ck_assert(nm_tmpfs_huge("rw", "always within_size advise never deny [force]"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nm_bcast_dir");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_longest_mount_point_wins);
	tcase_add_test(tc, test_prefix_stops_at_a_component);
	tcase_add_test(tc, test_escapes_optional_fields_and_stacking);
	tcase_add_test(tc, test_tmpfs_huge);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}

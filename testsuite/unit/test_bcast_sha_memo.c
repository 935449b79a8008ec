/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bcast_sha_memo.c - srun's memo of file hashes
 * (src/plugins/bcast/bcast_sha_memo.c): a file's SHA-256 read once, then
 * from the memo while the file's version is the same; a changed file
 * hashed again; a file changed within the racy window not remembered; a
 * memo that cannot be written still hashes; malformed lines ignored; a
 * memo past its bound compacted to its newest lines.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/plugins/bcast/bcast_sha_memo.h"

#include "check_run.h"

static char T[] = "/tmp/storm-sha-memo-XXXXXX";
static char OLD[PATH_MAX];	/* a file older than the racy window */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

static size_t lines_of(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* The file's hash through memo m; its stat in *st. */
static void memo_hash(storm_sha_memo_t *m, const char *path, struct stat *st,
		      uint8_t sha[STORM_SHA256_LEN])
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, st), 0);
	ck_assert_int_eq(storm_sha_memo_file(m, fd, st, sha), 0);
	close(fd);
}

static void expect_sha_of(const char *text, const uint8_t sha[STORM_SHA256_LEN])
{
	uint8_t want[STORM_SHA256_LEN];

	ck_assert_int_eq(storm_sha256_buf(text, strlen(text), want), 0);
	ck_assert_mem_eq(sha, want, STORM_SHA256_LEN);
}

static void memo_path(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", T, name);
	unlink(out);
}

START_TEST(hashed_once_then_remembered)
{
	char memo[PATH_MAX];
	uint8_t sha[STORM_SHA256_LEN];
	uint64_t hits, hashed, bytes;
	struct stat st;
	storm_sha_memo_t *m;

	memo_path(memo, "sub/dir/memo");
	m = storm_sha_memo_open(memo);
	memo_hash(m, OLD, &st, sha);
	expect_sha_of("an old file\n", sha);
	storm_sha_memo_counts(m, &hits, &hashed, &bytes);
	ck_assert_uint_eq(hits, 0);
	ck_assert_uint_eq(hashed, 1);
	ck_assert_uint_eq(bytes, 12);
	storm_sha_memo_close(m);	/* creates sub/dir */
	ck_assert_uint_eq(lines_of(memo), 1);

	m = storm_sha_memo_open(memo);
	memset(sha, 0, sizeof(sha));
	memo_hash(m, OLD, &st, sha);
	expect_sha_of("an old file\n", sha);
	storm_sha_memo_counts(m, &hits, &hashed, &bytes);
	ck_assert_uint_eq(hits, 1);
	ck_assert_uint_eq(hashed, 0);
	storm_sha_memo_close(m);
	ck_assert_uint_eq(lines_of(memo), 1);	/* nothing new to add */
}
END_TEST

START_TEST(changed_file_hashed_again_and_racy_not_remembered)
{
	char memo[PATH_MAX], path[PATH_MAX];
	uint8_t sha[STORM_SHA256_LEN];
	uint64_t hits, hashed, bytes;
	struct stat st;
	storm_sha_memo_t *m;

	memo_path(memo, "memo-changed");
	snprintf(path, sizeof(path), "%s/young", T);
	write_file(path, "version 1\n");
	m = storm_sha_memo_open(memo);
	memo_hash(m, path, &st, sha);
	expect_sha_of("version 1\n", sha);
	/* the same size, new bytes, within the same second */
	write_file(path, "version 2\n");
	memo_hash(m, path, &st, sha);
	expect_sha_of("version 2\n", sha);
	storm_sha_memo_counts(m, &hits, &hashed, &bytes);
	ck_assert_uint_eq(hits, 0);
	ck_assert_uint_eq(hashed, 2);
	storm_sha_memo_close(m);
	/* a file within the racy window is never written to the memo */
	ck_assert_uint_eq(lines_of(memo), 0);
}
END_TEST

START_TEST(size_changed_while_read)
{
	char memo[PATH_MAX];
	uint8_t sha[STORM_SHA256_LEN];
	struct stat st;
	storm_sha_memo_t *m;
	int fd = open(OLD, O_RDONLY);

	memo_path(memo, "memo-size");
	m = storm_sha_memo_open(memo);
	ck_assert_int_eq(fstat(fd, &st), 0);
	st.st_size += 5;	/* what srun saw before the file shrank */
	st.st_ino += 1;		/* not the version the memo may know */
	errno = 0;
	ck_assert_int_eq(storm_sha_memo_file(m, fd, &st, sha), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(fd);
	storm_sha_memo_close(m);
}
END_TEST

START_TEST(unwritable_memo_still_hashes)
{
	uint8_t sha[STORM_SHA256_LEN];
	struct stat st;
	storm_sha_memo_t *m = storm_sha_memo_open("/proc/storm-no-such/memo");

	ck_assert_ptr_nonnull(m);
	memo_hash(m, OLD, &st, sha);
	expect_sha_of("an old file\n", sha);
	storm_sha_memo_close(m);
}
END_TEST

START_TEST(malformed_lines_ignored)
{
	char memo[PATH_MAX], line[512];
	uint8_t sha[STORM_SHA256_LEN];
	uint64_t hits, hashed, bytes;
	struct stat st;
	storm_sha_memo_t *m;
	FILE *f;

	memo_path(memo, "memo-junk");
	ck_assert_int_eq(stat(OLD, &st), 0);
	f = fopen(memo, "w");
	ck_assert_ptr_nonnull(f);
	/* this file's version with a digest too short, and with junk after */
	snprintf(line, sizeof(line), "%lu %lu %lu %ld.%09ld %ld.%09ld abcd\n",
		 (unsigned long) st.st_dev, (unsigned long) st.st_ino,
		 (unsigned long) st.st_size, (long) st.st_mtim.tv_sec,
		 (long) st.st_mtim.tv_nsec, (long) st.st_ctim.tv_sec,
		 (long) st.st_ctim.tv_nsec);
	fputs(line, f);
	fputs("garbage\n\n1 2 3\n", f);
	fclose(f);
	m = storm_sha_memo_open(memo);
	memo_hash(m, OLD, &st, sha);
	expect_sha_of("an old file\n", sha);
	storm_sha_memo_counts(m, &hits, &hashed, &bytes);
	ck_assert_uint_eq(hits, 0);
	ck_assert_uint_eq(hashed, 1);
	storm_sha_memo_close(m);
}
END_TEST

START_TEST(compacted_past_its_bound)
{
	char memo[PATH_MAX];
	uint8_t sha[STORM_SHA256_LEN];
	uint64_t hits, hashed, bytes;
	struct stat st;
	storm_sha_memo_t *m;
	FILE *f;

	memo_path(memo, "memo-full");
	f = fopen(memo, "w");
	ck_assert_ptr_nonnull(f);
	for (unsigned long i = 0; i < STORM_SHA_MEMO_MAX; i++)
		fprintf(f, "1 %lu 10 1.000000000 1.000000000 %064lx\n", i, i);
	fclose(f);
	m = storm_sha_memo_open(memo);
	memo_hash(m, OLD, &st, sha);
	storm_sha_memo_close(m);
	ck_assert_uint_eq(lines_of(memo), STORM_SHA_MEMO_MAX / 2);
	/* the newest line, this file's, is among those kept */
	m = storm_sha_memo_open(memo);
	memo_hash(m, OLD, &st, sha);
	expect_sha_of("an old file\n", sha);
	storm_sha_memo_counts(m, &hits, &hashed, &bytes);
	ck_assert_uint_eq(hits, 1);
	storm_sha_memo_close(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bcast_sha_memo");
	TCase *tc = tcase_create("memo");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, hashed_once_then_remembered);
	tcase_add_test(tc, changed_file_hashed_again_and_racy_not_remembered);
	tcase_add_test(tc, size_changed_while_read);
	tcase_add_test(tc, unwritable_memo_still_hashes);
	tcase_add_test(tc, malformed_lines_ignored);
	tcase_add_test(tc, compacted_past_its_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	FILE *f;
	int rc;

	if (!mkdtemp(T))
		return EXIT_FAILURE;
	snprintf(OLD, sizeof(OLD), "%s/old", T);
	f = fopen(OLD, "w");	/* not write_file(): no Check outside a test */
	if (!f || fputs("an old file\n", f) < 0 || fclose(f))
		return EXIT_FAILURE;
	/* the memo remembers only files whose times are older than its racy
	 * window: wait that out once for OLD */
	sleep(STORM_SHA_MEMO_RACY_S + 1);
	rc = storm_check_run(suite());
	if (system("rm -rf /tmp/storm-sha-memo-*") < 0)
		rc = EXIT_FAILURE;
	return rc;
}

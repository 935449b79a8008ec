/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_bcast_cache.c - the node manager's store of broadcast files
 * across jobs (src/nm/nm_bcast_cache.c, nm_bcast_cache_ctl.c,
 * nm_bcast_cache_ops.c): content
 * named by its SHA-256, kept as root's read-only files per user, placed
 * as hard links, the least recently used evicted past the limit, entries
 * that are not as the store left them refused, users kept apart, and the
 * control commands' rule that only root sees or purges another's; then a
 * bundle extracted through the store as its user, and a second one of
 * references, placed or named absent.
 *
 * Needs root (the store is root's and hands out links as root).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/common/storm_bundle.h"
#include "src/common/storm_sha256.h"
#include "src/nm/nm.h"
#include "src/nm/nm_bcast_cache.h"
#include "src/nm/nm_bcast_cache_ctl.h"
#include "src/nm/nm_bcast_cache_ops.h"

#include "check_run.h"

#define ALICE 4201
#define BOB 4202
#define HELLO_SHA "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

static char base[] = "/tmp/storm-cache-XXXXXX";
static int basefd = -1, jobfd = -1;

static void rm_tree(int parent, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(parent, name, 0);
		return;
	}
	fchmodat(parent, name, 0700, 0);
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd >= 0 && (d = fdopendir(fd))) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_tree(dirfd(d), de->d_name);
		closedir(d);
	}
	unlinkat(parent, name, AT_REMOVEDIR);
}

/* BcastDir with one job directory of ALICE's; the store at limit. */
static void open_store(uint64_t limit)
{
	ck_assert_int_eq(nm_bcast_cache_init(base, limit, 0), 0);
}

static void setup(void)
{
	strcpy(base, "/tmp/storm-cache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	ck_assert_int_ge(basefd = open(base, O_RDONLY | O_DIRECTORY), 0);
	ck_assert_int_eq(mkdirat(basefd, "job_1", 0700), 0);
	ck_assert_int_eq(fchownat(basefd, "job_1", ALICE, ALICE, 0), 0);
	ck_assert_int_ge(jobfd = openat(basefd, "job_1", O_RDONLY | O_DIRECTORY), 0);
	open_store(1 << 20);
}

static void teardown(void)
{
	nm_bcast_cache_fini();
	close(jobfd);
	close(basefd);
	rm_tree(AT_FDCWD, base);
}

/* A file of alice's in the job's directory, open: a bundle's source. */
static int job_file(const char *name, const char *content, mode_t mode)
{
	int fd = openat(jobfd, name, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)),
			 (ssize_t) strlen(content));
	ck_assert_int_eq(fchown(fd, ALICE, ALICE), 0);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	return fd;
}

/* A received file kept at leaf in the job's directory, as an extraction
 * keeps it, and named by the store: its SHA-256 in sha. */
static int keep(uid_t uid, const char *leaf, const char *content,
		mode_t mode, uint8_t sha[STORM_SHA256_LEN])
{
	int rc = nm_bcast_cache_keep(uid, content, strlen(content), mode,
				     jobfd, leaf);

	nm_bcast_cache_settle();
	ck_assert_int_eq(storm_sha256_buf(content, strlen(content), sha), 0);
	return rc;
}

static char *entry_path(uid_t uid, const uint8_t sha[STORM_SHA256_LEN],
			bool exec)
{
	static char out[2][4200];
	static int i;
	char hex[STORM_SHA256_HEX];

	i = !i;
	storm_sha256_hex(sha, hex);
	snprintf(out[i], sizeof(out[i]), "%s/.cache/%u/%s%s", base,
		 (unsigned) uid, hex, exec ? ".x" : "");
	return out[i];
}

/* The names in uid's store: its entries, or with temporaries every one. */
static int names_in_store(uid_t uid, bool temporaries)
{
	char path[4200];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/.cache/%u", base, (unsigned) uid);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.' ||
		     (temporaries && strcmp(de->d_name, ".") &&
		      strcmp(de->d_name, ".."));
	closedir(d);
	return n;
}

static int entries(uid_t uid)
{
	return names_in_store(uid, false);
}

static void reads(int dirfd, const char *name, const char *content)
{
	char buf[256] = "";
	int fd = openat(dirfd, name, O_RDONLY);

	ck_assert_msg(fd >= 0, "%s: %s", name, strerror(errno));
	ck_assert_int_ge(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	ck_assert_str_eq(buf, content);
}

static uint64_t len(const char *s)
{
	return strlen(s);
}

START_TEST(sha256_known_answers)
{
	uint8_t sha[STORM_SHA256_LEN], back[STORM_SHA256_LEN];
	char hex[STORM_SHA256_HEX];

	ck_assert_int_eq(storm_sha256_buf("hello", 5, sha), 0);
	storm_sha256_hex(sha, hex);
	ck_assert_str_eq(hex, HELLO_SHA);
	ck_assert_int_eq(storm_sha256_buf("", 0, sha), 0);
	storm_sha256_hex(sha, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ck_assert_int_eq(storm_sha256_parse(HELLO_SHA, back), 0);
	ck_assert_int_eq(storm_sha256_buf("hello", 5, sha), 0);
	ck_assert_mem_eq(back, sha, sizeof(sha));
	ck_assert_int_eq(storm_sha256_parse("2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824", back), 0);
	ck_assert_mem_eq(back, sha, sizeof(sha));
	ck_assert_int_eq(storm_sha256_parse(HELLO_SHA "0", back), -1);
	ck_assert_int_eq(storm_sha256_parse("2cf24dba", back), -1);
	snprintf(hex, sizeof(hex), "%s", HELLO_SHA);
	hex[7] = 'g';
	ck_assert_int_eq(storm_sha256_parse(hex, back), -1);
}
END_TEST

START_TEST(keep_then_place)
{
	uint8_t sha[STORM_SHA256_LEN], other[STORM_SHA256_LEN] = { 0 };
	char hex[STORM_SHA256_HEX];
	struct stat st, lst;

	ck_assert_int_eq(keep(ALICE, "f", "hello", 0644, sha), 0);
	storm_sha256_hex(sha, hex);
	ck_assert_str_eq(hex, HELLO_SHA);
	/* root's store, root's read-only copy */
	ck_assert_int_eq(stat(entry_path(ALICE, sha, false), &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
	ck_assert_uint_eq(st.st_size, 5);
	ck_assert_int_eq(fstatat(basefd, ".cache", &lst, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(lst.st_uid, 0);
	ck_assert_uint_eq(lst.st_mode & 07777, 0700);
	ck_assert_int_eq(fstatat(basefd, ".cache/4201", &lst, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(lst.st_uid, 0);
	ck_assert_uint_eq(lst.st_mode & 07777, 0700);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);

	/* a hard link to that very inode */
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0640, jobfd, "g"), 0);
	ck_assert_int_eq(fstatat(jobfd, "g", &lst, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(lst.st_ino, st.st_ino);
	reads(jobfd, "g", "hello");

	/* held once, however often kept */
	ck_assert_int_eq(keep(ALICE, "f2", "hello", 0600, sha), 0);
	ck_assert_int_eq(entries(ALICE), 1);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);

	/* not held: other content, the executable class, another size */
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, other, 5, 0644, jobfd, "h"),
			 -ENOENT);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0755, jobfd, "h"),
			 -ENOENT);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"),
			 -EEXIST);
	ck_assert_int_eq(fstatat(jobfd, "h", &lst, AT_SYMLINK_NOFOLLOW), -1);
}
END_TEST

START_TEST(executable_class_apart)
{
	uint8_t sha[STORM_SHA256_LEN], sha2[STORM_SHA256_LEN];
	struct stat st;

	ck_assert_int_eq(keep(ALICE, "prog", "#!/bin/sh\n", 0700, sha), 0);
	ck_assert_int_eq(stat(entry_path(ALICE, sha, true), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0555);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 10, 0644, jobfd, "data"),
			 -ENOENT);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 10, 0100, jobfd, "run"), 0);
	ck_assert_int_eq(fstatat(jobfd, "run", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0555);
	/* the same bytes as data: an entry of its own */
	ck_assert_int_eq(keep(ALICE, "copy", "#!/bin/sh\n", 0644, sha2), 0);
	ck_assert_mem_eq(sha, sha2, sizeof(sha));
	ck_assert_int_eq(entries(ALICE), 2);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 20);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 10, 0644, jobfd, "data"), 0);
	ck_assert_int_eq(fstatat(jobfd, "data", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
}
END_TEST

/* The identity an extraction runs with comes back after a call. */
START_TEST(caller_identity_kept)
{
	uint8_t sha[STORM_SHA256_LEN];

	syscall(SYS_setfsgid, ALICE);
	syscall(SYS_setfsuid, ALICE);
	ck_assert_int_eq(keep(ALICE, "f", "hello", 0644, sha), 0);
	ck_assert_int_eq((int) syscall(SYS_setfsuid, -1), ALICE);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), 0);
	ck_assert_int_eq((int) syscall(SYS_setfsuid, -1), ALICE);
	ck_assert_int_eq((int) syscall(SYS_setfsgid, -1), ALICE);
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
}
END_TEST

static void used_at(uid_t uid, const uint8_t sha[STORM_SHA256_LEN], time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	ck_assert_int_eq(utimensat(AT_FDCWD, entry_path(uid, sha, false), ts, 0), 0);
}

static bool held(uid_t uid, const uint8_t sha[STORM_SHA256_LEN])
{
	return access(entry_path(uid, sha, false), F_OK) == 0;
}

START_TEST(least_recently_used_evicted)
{
	char a[41], b[41], c[41], d[91];
	uint8_t sa[32], sb[32], sc[32], sd[32];

	nm_bcast_cache_fini();
	open_store(100);
	memset(a, 'a', 40), a[40] = '\0';
	memset(b, 'b', 40), b[40] = '\0';
	memset(c, 'c', 40), c[40] = '\0';
	memset(d, 'd', 90), d[90] = '\0';
	ck_assert_int_eq(keep(ALICE, "a", a, 0644, sa), 0);
	ck_assert_int_eq(keep(ALICE, "b", b, 0644, sb), 0);
	used_at(ALICE, sa, 1000);
	used_at(ALICE, sb, 2000);
	/* a use makes a the most recent */
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sa, 40, 0644, jobfd, "a-link"), 0);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 80);
	/* 120 > 100: b, the least recently used, goes; 80 is under 100 - 100/8 */
	ck_assert_int_eq(keep(ALICE, "c", c, 0644, sc), 0);
	ck_assert(held(ALICE, sa));
	ck_assert(!held(ALICE, sb));
	ck_assert(held(ALICE, sc));
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 80);
	/* the entry just named stays even when all others must go */
	ck_assert_int_eq(keep(ALICE, "d", d, 0644, sd), 0);
	ck_assert(held(ALICE, sd));
	ck_assert(!held(ALICE, sa));
	ck_assert(!held(ALICE, sc));
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 90);
	/* what a job links to outlives the eviction */
	reads(jobfd, "a-link", a);
	/* larger than the limit: not kept */
	ck_assert_int_eq(keep(ALICE, "big", "0123456789012345678901234567890123456789"
			      "0123456789012345678901234567890123456789"
			      "0123456789012345678901234567890123456789", 0644, sa),
			 -EFBIG);
	ck_assert_int_eq(entries(ALICE), 1);
}
END_TEST

/* What a launch found in the store stays until its data arrives: an entry
 * used in the last hold seconds is not evicted; when only such entries
 * hold the store over its limit, the new one is not kept instead. */
START_TEST(entries_in_use_not_evicted)
{
	char a[41], b[41], c[41], d[41];
	uint8_t sa[32], sb[32], sc[32], sd[32];

	nm_bcast_cache_fini();
	ck_assert_int_eq(nm_bcast_cache_init(base, 100, 600), 0);
	memset(a, 'a', 40), a[40] = '\0';
	memset(b, 'b', 40), b[40] = '\0';
	memset(c, 'c', 40), c[40] = '\0';
	memset(d, 'd', 40), d[40] = '\0';
	ck_assert_int_eq(keep(ALICE, "a", a, 0644, sa), 0);
	ck_assert_int_eq(keep(ALICE, "b", b, 0644, sb), 0);
	used_at(ALICE, sb, 1000);	/* long unused: may go */
	ck_assert_int_eq(keep(ALICE, "c", c, 0644, sc), 0);
	ck_assert(held(ALICE, sa));
	ck_assert(!held(ALICE, sb));
	ck_assert(held(ALICE, sc));
	/* a and c just used: d is the one not kept; the job has its file */
	ck_assert_int_eq(keep(ALICE, "d", d, 0644, sd), 0);
	ck_assert(held(ALICE, sa));
	ck_assert(held(ALICE, sc));
	ck_assert(!held(ALICE, sd));
	reads(jobfd, "d", d);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 80);
	ck_assert_int_eq(names_in_store(ALICE, true), 2);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sa, 40, 0644, jobfd, "a-link"), 0);
	/* once they are old, the new content is kept again */
	used_at(ALICE, sa, 1000);
	used_at(ALICE, sc, 2000);
	ck_assert_int_eq(keep(ALICE, "d-again", d, 0644, sd), 0);
	ck_assert(held(ALICE, sd));
	ck_assert(!held(ALICE, sa));
	ck_assert(held(ALICE, sc));
}
END_TEST

/* A file received is written once, into the store, as the job's link;
 * it is named by its SHA-256 afterwards, off the launch's path. */
START_TEST(kept_file_is_one_copy_named_later)
{
	uint8_t sha[STORM_SHA256_LEN], xsha[STORM_SHA256_LEN];
	char big[2048];
	struct stat st, est;

	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, "hello", 5, 0640, jobfd, "k"), 0);
	ck_assert_int_eq(fstatat(jobfd, "k", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
	reads(jobfd, "k", "hello");
	nm_bcast_cache_settle();
	ck_assert_int_eq(storm_sha256_parse(HELLO_SHA, sha), 0);
	ck_assert_int_eq(stat(entry_path(ALICE, sha, false), &est), 0);
	ck_assert_uint_eq(est.st_ino, st.st_ino);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);
	/* named: the next launch is offered it */
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "p"), 0);
	/* the same bytes again: still one entry, the job has its file */
	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, "hello", 5, 0600, jobfd, "k2"), 0);
	nm_bcast_cache_settle();
	reads(jobfd, "k2", "hello");
	ck_assert_int_eq(entries(ALICE), 1);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);
	/* the executable class */
	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, "#!/bin/sh\n", 10, 0750, jobfd, "run"), 0);
	ck_assert_int_eq(fstatat(jobfd, "run", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0555);
	nm_bcast_cache_settle();
	ck_assert_int_eq(storm_sha256_buf("#!/bin/sh\n", 10, xsha), 0);
	ck_assert_int_eq(access(entry_path(ALICE, xsha, true), F_OK), 0);
	ck_assert_int_eq(entries(ALICE), 2);
	/* refused: nothing at the leaf, nothing left in the store */
	nm_bcast_cache_fini();
	open_store(1024);
	memset(big, 'b', sizeof(big));
	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, big, sizeof(big), 0644, jobfd, "big"), -EFBIG);
	ck_assert_int_eq(fstatat(jobfd, "big", &st, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, "x", 1, 0644, jobfd, "k"), -EEXIST);
	ck_assert_int_eq(names_in_store(ALICE, true), 2);	/* no temporary */
}
END_TEST

/* An entry changed behind the store's back is refused and removed. */
START_TEST(unfit_entries_refused)
{
	uint8_t sha[STORM_SHA256_LEN];
	char *p;
	int fd;

	ck_assert_int_eq(keep(ALICE, "f1", "hello", 0644, sha), 0);
	p = entry_path(ALICE, sha, false);
	/* user-writable */
	ck_assert_int_eq(chmod(p, 0666), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), -ENOENT);
	ck_assert_int_eq(access(p, F_OK), -1);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 0);
	/* the user's */
	ck_assert_int_eq(keep(ALICE, "f2", "hello", 0644, sha), 0);
	ck_assert_int_eq(chown(p, ALICE, ALICE), 0);
	ck_assert_int_eq(chmod(p, 0444), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), -ENOENT);
	ck_assert_int_eq(access(p, F_OK), -1);
	/* wrongly sized */
	ck_assert_int_eq(keep(ALICE, "f3", "hello", 0644, sha), 0);
	ck_assert_int_ge(fd = open(p, O_WRONLY | O_APPEND), 0);
	ck_assert_int_eq(write(fd, "!", 1), 1);
	close(fd);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), -ENOENT);
	ck_assert_int_eq(access(p, F_OK), -1);
	/* a symlink in its place */
	ck_assert_int_eq(symlink("/etc/passwd", p), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), -ENOENT);
	ck_assert_int_eq(faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(faccessat(jobfd, "g", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	/* and an unfit entry is replaced by the next kept file's */
	ck_assert_int_eq(keep(ALICE, "f4", "hello", 0644, sha), 0);
	ck_assert_int_eq(chmod(p, 0644), 0);
	ck_assert_int_eq(keep(ALICE, "f5", "hello", 0644, sha), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), 0);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);
}
END_TEST

START_TEST(empty_file)
{
	uint8_t sha[STORM_SHA256_LEN];
	char hex[STORM_SHA256_HEX];
	struct stat st;

	ck_assert_int_eq(keep(ALICE, "e", "", 0644, sha), 0);
	storm_sha256_hex(sha, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 0, 0644, jobfd, "e2"), 0);
	ck_assert_int_eq(fstatat(jobfd, "e2", &st, 0), 0);
	ck_assert_uint_eq(st.st_size, 0);
}
END_TEST

START_TEST(users_apart)
{
	uint8_t sa[STORM_SHA256_LEN], sb[STORM_SHA256_LEN];
	struct stat a, b, l;

	ck_assert_int_eq(keep(ALICE, "f", "shared bytes", 0644, sa), 0);
	/* bob has not sent them: not his to have */
	ck_assert_int_eq(nm_bcast_cache_place(BOB, sa, len("shared bytes"), 0644,
					      jobfd, "g"), -ENOENT);
	ck_assert_int_eq(keep(BOB, "f2", "shared bytes", 0644, sb), 0);
	ck_assert_int_eq(stat(entry_path(ALICE, sa, false), &a), 0);
	ck_assert_int_eq(stat(entry_path(BOB, sb, false), &b), 0);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	ck_assert_int_eq(nm_bcast_cache_place(BOB, sb, len("shared bytes"), 0644,
					      jobfd, "g"), 0);
	ck_assert_int_eq(fstatat(jobfd, "g", &l, 0), 0);
	ck_assert_uint_eq(l.st_ino, b.st_ino);
	/* each bound alone; a purge of one leaves the other */
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 12);
	ck_assert_uint_eq(nm_bcast_cache_bytes(BOB), 12);
	ck_assert_int_eq(nm_bcast_cache_purge(ALICE), 1);
	ck_assert_int_eq(entries(ALICE), 0);
	ck_assert_int_eq(entries(BOB), 1);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sa, 12, 0644, jobfd, "h"), -ENOENT);
}
END_TEST

static char *listed(uid_t uid, int *n)
{
	static char buf[8192];
	FILE *fp = fmemopen(buf, sizeof(buf), "w");

	ck_assert_ptr_nonnull(fp);
	*n = nm_bcast_cache_list(uid, fp);
	fclose(fp);
	return buf;
}

START_TEST(list_and_purge)
{
	uint8_t sha[STORM_SHA256_LEN];
	char want[256], *out;
	int n;

	ck_assert_int_eq(keep(ALICE, "f", "hello", 0644, sha), 0);
	ck_assert_int_eq(keep(ALICE, "x", "hello", 0755, sha), 0);
	ck_assert_int_eq(keep(BOB, "g", "bob's", 0644, sha), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "b"), -ENOENT);
	out = listed(ALICE, &n);
	ck_assert_int_eq(n, 2);
	snprintf(want, sizeof(want), "%u %s 5 0444 ", ALICE, HELLO_SHA);
	ck_assert_msg(strstr(out, want), "%s", out);
	snprintf(want, sizeof(want), "%u %s 5 0555 ", ALICE, HELLO_SHA);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_ptr_null(strstr(out, "4202 "));
	out = listed(NM_BCAST_CACHE_ALL, &n);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_nonnull(strstr(out, "4202 "));
	out = listed(4999, &n);
	ck_assert_int_eq(n, 0);
	/* a place's link stays through a purge */
	ck_assert_int_eq(storm_sha256_parse(HELLO_SHA, sha), 0);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "kept"), 0);
	ck_assert_int_eq(nm_bcast_cache_purge(NM_BCAST_CACHE_ALL), 3);
	out = listed(NM_BCAST_CACHE_ALL, &n);
	ck_assert_int_eq(n, 0);
	reads(jobfd, "kept", "hello");
	ck_assert_int_eq(nm_bcast_cache_purge(ALICE), 0);
	/* the store goes on after a purge */
	ck_assert_int_eq(keep(ALICE, "f-again", "hello", 0644, sha), 0);
	ck_assert_int_eq(entries(ALICE), 1);
}
END_TEST

/* What a restarted node manager finds: the entries, counted. */
START_TEST(restart_finds_the_store)
{
	uint8_t sha[STORM_SHA256_LEN];
	char stale[4200];
	int fd;

	ck_assert_int_eq(keep(ALICE, "f", "hello", 0644, sha), 0);
	/* even of a process of the same pid (a container's node manager) */
	snprintf(stale, sizeof(stale), "%s/.cache/%u/.tmp-%d-0.0-7", base, ALICE,
		 (int) getpid());
	ck_assert_int_ge(fd = open(stale, O_WRONLY | O_CREAT, 0600), 0);
	close(fd);
	nm_bcast_cache_fini();
	open_store(1 << 20);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"), 0);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), 5);
	/* a dead node manager's temporary is gone */
	ck_assert_int_eq(access(stale, F_OK), -1);
}
END_TEST

START_TEST(cache_off)
{
	uint8_t sha[STORM_SHA256_LEN] = { 0 };
	char *out;
	int n;

	nm_bcast_cache_fini();
	rm_tree(basefd, ".cache");
	ck_assert_int_eq(nm_bcast_cache_init(base, 0, 0), 0);
	ck_assert(!nm_bcast_cache_enabled());
	ck_assert_int_eq(nm_bcast_cache_keep(ALICE, "hello", 5, 0644, jobfd, "f"),
			 -EOPNOTSUPP);
	ck_assert_int_eq(faccessat(jobfd, "f", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(nm_bcast_cache_place(ALICE, sha, 5, 0644, jobfd, "g"),
			 -EOPNOTSUPP);
	out = listed(ALICE, &n);
	(void) out;
	ck_assert_int_eq(n, -EOPNOTSUPP);
	ck_assert_int_eq(nm_bcast_cache_purge(ALICE), -EOPNOTSUPP);
	ck_assert_int_eq(faccessat(basefd, ".cache", F_OK, 0), -1);
}
END_TEST

/* BcastDir may be writable by users: a .cache they made is refused. */
START_TEST(foreign_cache_dir_refused)
{
	nm_bcast_cache_fini();
	rm_tree(basefd, ".cache");
	ck_assert_int_eq(mkdirat(basefd, ".cache", 0700), 0);
	ck_assert_int_eq(fchownat(basefd, ".cache", ALICE, ALICE, 0), 0);
	ck_assert_int_eq(nm_bcast_cache_init(base, 1 << 20, 0), -EPERM);
	ck_assert(!nm_bcast_cache_enabled());
	ck_assert_int_eq(unlinkat(basefd, ".cache", AT_REMOVEDIR), 0);
	ck_assert_int_eq(symlinkat("job_1", basefd, ".cache"), 0);
	ck_assert_int_eq(nm_bcast_cache_init(base, 1 << 20, 0), -EPERM);
	ck_assert_int_eq(unlinkat(basefd, ".cache", 0), 0);
	/* root's, but open to all: closed again */
	ck_assert_int_eq(mkdirat(basefd, ".cache", 0777), 0);
	ck_assert_int_eq(fchmodat(basefd, ".cache", 0777, 0), 0);
	open_store(1 << 20);
	{
		struct stat st;

		ck_assert_int_eq(fstatat(basefd, ".cache", &st, 0), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0700);
	}
}
END_TEST

/* ---- the control commands ---- */

static int ctl(int (*fn)(nm_t *, const nm_peer_t *, char *, char *, size_t),
	       uid_t as, const char *args, char *out, size_t outlen)
{
	static nm_t nm;
	nm_peer_t peer = { .pid = getpid(), .uid = as, .gid = as, .fd = -1 };
	char a[64];

	nm.conf.bcast_cache_bytes = 1 << 20;
	snprintf(a, sizeof(a), "%s", args);
	out[0] = '\0';
	return fn(&nm, &peer, a, out, outlen);
}

START_TEST(ctl_only_root_sees_others)
{
	uint8_t sha[STORM_SHA256_LEN];
	char out[4096];

	ck_assert_int_eq(keep(ALICE, "f", "hello", 0644, sha), 0);
	ck_assert_int_eq(keep(BOB, "g", "bob's", 0644, sha), 0);
	/* a user: their own, by default or by name; nobody else's */
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, ALICE, "", out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "entries=1 bytes=5 limit=1048576 shown=1\n"
			      "4201 " HELLO_SHA " 5 0444 ") == out, "%s", out);
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, ALICE, "4201", out, sizeof(out)), 0);
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, ALICE, "4202", out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "permission denied"));
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, ALICE, "all", out, sizeof(out)), 1);
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_purge, ALICE, "4202", out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "permission denied"));
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_purge, ALICE, "all", out, sizeof(out)), 1);
	ck_assert_int_eq(entries(BOB), 1);
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, ALICE, "42x", out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "usage: cache_list"));
	/* root: everyone's by default, anyone's by name */
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, 0, "", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "entries=2 bytes=10 "));
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, 0, "4202", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "entries=1 bytes=5 "));
	/* a reply that cannot hold every line says how many it shows */
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, 0, "", out, 150), 0);
	ck_assert_msg(strstr(out, "entries=2 bytes=10 limit=1048576 shown=1\n"), "%s", out);
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_purge, ALICE, "", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "purged=1");
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_purge, 0, "4202", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "purged=1");
	nm_bcast_cache_fini();
	ck_assert_int_eq(ctl(nm_bcast_cache_ctl_list, 0, "", out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "BcastCacheSize=0"));
}
END_TEST

/* ---- a bundle through the store ---- */

typedef struct {
	int n;
	uint64_t ordinal;
	uint8_t sha[STORM_BUNDLE_SHA256];
	uint64_t size;
	unsigned mode;
} absent_t;

static void note_absent(void *arg, uint64_t ordinal,
			const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
			unsigned mode)
{
	absent_t *a = arg;

	a->n++;
	a->ordinal = ordinal;
	memcpy(a->sha, sha, sizeof(a->sha));
	a->size = size;
	a->mode = mode;
}

static size_t write_bundle(storm_bundle_t *b, const char *name, void **buf)
{
	int fd = openat(basefd, name, O_RDWR | O_CREAT | O_TRUNC, 0600);
	size_t n = (size_t) storm_bundle_size(b);
	char err[512];

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(storm_bundle_write(b, fd, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(*buf = malloc(n));
	ck_assert_int_eq(pread(fd, *buf, n, 0), (ssize_t) n);
	close(fd);
	return n;
}

/* Extract b into job_1/<dir> through alice's or bob's store, as the node
 * manager does: with the user's file-system identity. */
static int extract_via(storm_bundle_t *b, const char *dir,
		       nm_bcast_cache_use_t *use, char *err, size_t errlen)
{
	void *buf;
	size_t n = write_bundle(b, "bundle", &buf);
	int out, rc;

	ck_assert_int_eq(mkdirat(jobfd, dir, 0700), 0);
	ck_assert_int_eq(fchownat(jobfd, dir, use->uid, use->uid, 0), 0);
	ck_assert_int_ge(out = openat(jobfd, dir, O_RDONLY | O_DIRECTORY), 0);
	syscall(SYS_setfsgid, use->uid);
	syscall(SYS_setfsuid, use->uid);
	rc = storm_bundle_extract_ex(buf, n, out, &nm_bcast_cache_ops, use,
				     err, errlen);
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	close(out);
	free(buf);
	return rc;
}

START_TEST(bundle_through_the_store)
{
	static const uint8_t unheld[STORM_BUNDLE_SHA256] = { 9, 9, 9 };
	absent_t missing = { 0 };
	nm_bcast_cache_use_t use = { .uid = ALICE, .absent = note_absent,
				     .arg = &missing };
	storm_bundle_t *b = storm_bundle_new();
	uint8_t sha[STORM_SHA256_LEN];
	char err[512], src[4200];

	/* a first launch: files travel, the store keeps them */
	ck_assert_int_eq(mkdirat(basefd, "src", 0755), 0);
	snprintf(src, sizeof(src), "%s/src/lib.so", base);
	close(job_file("../src/lib.so", "ELF library", 0755));
	ck_assert_int_eq(storm_bundle_add(b, src, "lib/lib.so", false, err,
					  sizeof(err)), 0);
	ck_assert_msg(extract_via(b, "s0_tree", &use, err, sizeof(err)) == 0,
		      "%s", err);
	storm_bundle_free(b);
	ck_assert_uint_eq(use.kept, 1);
	ck_assert_uint_eq(use.kept_bytes, 11);
	ck_assert_int_eq(storm_sha256_buf("ELF library", 11, sha), 0);
	nm_bcast_cache_settle();
	/* one copy: the job's file is the entry */
	{
		struct stat js, es;

		ck_assert_int_eq(fstatat(jobfd, "s0_tree/lib/lib.so", &js, 0), 0);
		ck_assert_int_eq(stat(entry_path(ALICE, sha, true), &es), 0);
		ck_assert_uint_eq(js.st_ino, es.st_ino);
	}

	/* the next: references; what the store lacks is named */
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add_ref(b, "lib/lib.so", 0755, 11, sha,
					      err, sizeof(err)), 0);
	ck_assert_int_eq(storm_bundle_add_ref(b, "lib/other.so", 0644, 7,
					      unheld, err, sizeof(err)), 0);
	ck_assert_int_eq(extract_via(b, "s1_tree", &use, err, sizeof(err)),
			 STORM_BUNDLE_ABSENT);
	storm_bundle_free(b);
	ck_assert_ptr_nonnull(strstr(err, "'lib/other.so': not in this node's cache"));
	ck_assert_uint_eq(use.placed, 1);
	ck_assert_uint_eq(use.placed_bytes, 11);
	ck_assert_uint_eq(use.missing, 1);
	ck_assert_int_eq(missing.n, 1);
	ck_assert_uint_eq(missing.ordinal, 1);	/* the second reference */
	ck_assert_mem_eq(missing.sha, unheld, sizeof(unheld));
	ck_assert_uint_eq(missing.size, 7);
	ck_assert_uint_eq(missing.mode, 0644);
	reads(jobfd, "s1_tree/lib/lib.so", "ELF library");
	/* the user reads their link and cannot change what it names */
	{
		int fd, w, e;

		syscall(SYS_setfsgid, ALICE);
		syscall(SYS_setfsuid, ALICE);
		fd = openat(jobfd, "s1_tree/lib/lib.so", O_RDONLY);
		w = openat(jobfd, "s1_tree/lib/lib.so", O_WRONLY);
		e = errno;
		ck_assert_int_eq(fchmodat(jobfd, "s1_tree/lib/lib.so", 0777, 0), -1);
		syscall(SYS_setfsuid, 0);
		syscall(SYS_setfsgid, 0);
		ck_assert_int_ge(fd, 0);
		close(fd);
		ck_assert_int_eq(w, -1);
		ck_assert_int_eq(e, EACCES);
	}

	/* another user's store lacks it */
	use = (nm_bcast_cache_use_t) { .uid = BOB };
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add_ref(b, "lib.so", 0755, 11, sha, err,
					      sizeof(err)), 0);
	ck_assert_int_eq(extract_via(b, "s2_tree", &use, err, sizeof(err)),
			 STORM_BUNDLE_ABSENT);
	ck_assert_uint_eq(use.missing, 1);
	storm_bundle_free(b);

	/* without a cache every reference is absent, every file extracted */
	nm_bcast_cache_fini();
	ck_assert_int_eq(nm_bcast_cache_init(base, 0, 0), 0);
	use = (nm_bcast_cache_use_t) { .uid = ALICE };
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add(b, src, "lib.so", false, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(storm_bundle_add_ref(b, "ref.so", 0755, 11, sha, err,
					      sizeof(err)), 0);
	ck_assert_int_eq(extract_via(b, "s3_tree", &use, err, sizeof(err)),
			 STORM_BUNDLE_ABSENT);
	ck_assert_uint_eq(use.not_kept, 1);
	ck_assert_uint_eq(use.missing, 1);
	reads(jobfd, "s3_tree/lib.so", "ELF library");
	storm_bundle_free(b);
}
END_TEST

/* ---- threads ---- */

static void *keeper(void *arg)
{
	long id = (long) arg;
	char name[32], content[64];
	uint8_t sha[STORM_SHA256_LEN];

	for (int i = 0; i < 40; i++) {
		int rc;

		snprintf(name, sizeof(name), "t%ld-%d", id, i);
		/* half the content shared between threads */
		snprintf(content, sizeof(content), "content %d %ld", i,
			 i % 2 ? id : 0L);
		if (nm_bcast_cache_keep(ALICE, content, strlen(content), 0600,
					jobfd, name) ||
		    storm_sha256_buf(content, strlen(content), sha))
			return (void *) 1L;
		snprintf(name, sizeof(name), "p%ld-%d", id, i);
		/* not named yet, or evicted meanwhile by another's: absent */
		rc = nm_bcast_cache_place(ALICE, sha, strlen(content), 0600,
					  jobfd, name);
		if (rc && rc != -ENOENT)
			return (void *) 1L;
	}
	return NULL;
}

START_TEST(threads_keep_the_count)
{
	pthread_t t[4];
	char path[4200];
	struct dirent *de;
	struct stat st;
	uint64_t sum = 0;
	void *r;
	DIR *d;

	nm_bcast_cache_fini();
	open_store(1500);	/* small enough to evict meanwhile */
	for (long i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, keeper, (void *) i), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &r), 0);
		ck_assert_ptr_null(r);
	}
	nm_bcast_cache_settle();
	snprintf(path, sizeof(path), "%s/.cache/%u", base, ALICE);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((de = readdir(d))) {
		ck_assert_msg(de->d_name[0] != '.' || !strcmp(de->d_name, ".") ||
			      !strcmp(de->d_name, ".."), "left: %s", de->d_name);
		if (de->d_name[0] != '.' &&
		    !fstatat(dirfd(d), de->d_name, &st, 0))
			sum += (uint64_t) st.st_size;
	}
	closedir(d);
	ck_assert_uint_eq(nm_bcast_cache_bytes(ALICE), sum);
	ck_assert_uint_le(sum, 1500);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nm_bcast_cache");
	TCase *tc = tcase_create("cache");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, sha256_known_answers);
	tcase_add_test(tc, keep_then_place);
	tcase_add_test(tc, executable_class_apart);
	tcase_add_test(tc, caller_identity_kept);
	tcase_add_test(tc, least_recently_used_evicted);
	tcase_add_test(tc, entries_in_use_not_evicted);
	tcase_add_test(tc, kept_file_is_one_copy_named_later);
	tcase_add_test(tc, unfit_entries_refused);
	tcase_add_test(tc, empty_file);
	tcase_add_test(tc, users_apart);
	tcase_add_test(tc, list_and_purge);
	tcase_add_test(tc, restart_finds_the_store);
	tcase_add_test(tc, cache_off);
	tcase_add_test(tc, foreign_cache_dir_refused);
	tcase_add_test(tc, ctl_only_root_sees_others);
	tcase_add_test(tc, bundle_through_the_store);
	tcase_add_test(tc, threads_keep_the_count);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "skipped: the broadcast cache is root's\n");
		return 77;
	}
	return storm_check_run(suite());
}

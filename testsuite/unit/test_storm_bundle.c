/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_bundle.c - many files as one broadcast
 * (src/common/storm_bundle.c): a tree goes round trip with its files,
 * symlinks and modes; the writer's size is the bytes it writes; and every
 * crafted stream the node manager must refuse is refused, with nothing
 * created outside the directory it extracts into.  Cached references
 * ('c' entries) are resolved through the caller's ops, refused without
 * them, and every file is offered to the file op.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/storm_bundle.h"

#include "check_run.h"

static char base[] = "/tmp/storm-bundle-XXXXXX";
static char err[512];

static char *at(const char *rel)
{
	static char out[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(out[i], sizeof(out[i]), "%s/%s", base, rel);
	return out[i];
}

static void put(const char *rel, const char *content, mode_t mode)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)),
			 (ssize_t) strlen(content));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void mkd(const char *rel, mode_t mode)
{
	ck_assert_int_eq(mkdir(at(rel), 0700), 0);
	ck_assert_int_eq(chmod(at(rel), mode), 0);
}

/* Extracted directories may shut out their owner: opened up before. */
static void rm_tree(int parent, const char *name)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(parent, name, 0);
		return;
	}
	fchmodat(parent, name, 0700, 0);
	if ((fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) >= 0 &&
	    (d = fdopendir(fd))) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_tree(dirfd(d), de->d_name);
		closedir(d);
	}
	unlinkat(parent, name, AT_REMOVEDIR);
}

static void setup(void)
{
	strcpy(base, "/tmp/storm-bundle-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	umask(022);
}

static void teardown(void)
{
	rm_tree(AT_FDCWD, base);
}

/* The bytes storm_bundle_write() makes, which must be size() of them. */
static unsigned char *written(storm_bundle_t *b, size_t *len)
{
	int fd = open(at("bundle.out"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	unsigned char *p;
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(storm_bundle_write(b, fd, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq((uint64_t) st.st_size, storm_bundle_size(b));
	ck_assert_ptr_nonnull(p = malloc((size_t) st.st_size + 1));
	ck_assert_int_eq(pread(fd, p, (size_t) st.st_size, 0), st.st_size);
	close(fd);
	unlink(at("bundle.out"));
	*len = (size_t) st.st_size;
	return p;
}

/* Extract into a fresh directory base/<out>. */
static int extract(const void *buf, size_t len, const char *out)
{
	int fd, rc;

	mkd(out, 0700);
	ck_assert_int_ge(fd = open(at(out), O_RDONLY | O_DIRECTORY), 0);
	err[0] = '\0';
	rc = storm_bundle_extract(buf, len, fd, err, sizeof(err));
	close(fd);
	return rc;
}

static int entries_in(const char *rel)
{
	DIR *d = opendir(at(rel));
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void is_file(const char *rel, const char *content, mode_t mode)
{
	char buf[256] = "";
	struct stat st;
	int fd;

	ck_assert_msg(lstat(at(rel), &st) == 0, "%s: %s", rel, strerror(errno));
	ck_assert_msg(S_ISREG(st.st_mode), "%s is not a file", rel);
	ck_assert_msg((st.st_mode & 07777) == mode, "%s: mode %o, not %o", rel,
		      st.st_mode & 07777, mode);
	ck_assert_uint_eq((size_t) st.st_size, strlen(content));
	ck_assert_int_ge(fd = open(at(rel), O_RDONLY), 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), (ssize_t) strlen(content));
	close(fd);
	ck_assert_str_eq(buf, content);
}

static void is_dir(const char *rel, mode_t mode)
{
	struct stat st;

	ck_assert_msg(lstat(at(rel), &st) == 0, "%s: %s", rel, strerror(errno));
	ck_assert_msg(S_ISDIR(st.st_mode), "%s is not a directory", rel);
	ck_assert_msg((st.st_mode & 07777) == mode, "%s: mode %o, not %o", rel,
		      st.st_mode & 07777, mode);
}

static void is_link(const char *rel, const char *target)
{
	char buf[4200];
	ssize_t n = readlink(at(rel), buf, sizeof(buf) - 1);

	ck_assert_msg(n >= 0, "%s: %s", rel, strerror(errno));
	buf[n] = '\0';
	ck_assert_str_eq(buf, target);
}

static void absent(const char *rel)
{
	struct stat st;

	ck_assert_msg(lstat(at(rel), &st) < 0 && errno == ENOENT,
		      "%s exists", rel);
}

/* A tree with what a job's directory holds: files, an empty one, nested
 * and read-only directories, a symlink, a set-ID file and a fifo; and a
 * library named by a symlink. */
static void make_tree(void)
{
	mkd("src", 0755);
	mkd("src/tree", 0750);
	put("src/tree/a", "hello", 0644);
	put("src/tree/empty", "", 0600);
	mkd("src/tree/sub", 0755);
	mkd("src/tree/sub/deeper", 0711);
	put("src/tree/sub/deeper/x", "xx", 0750);
	ck_assert_int_eq(symlink("a", at("src/tree/link")), 0);
	put("src/tree/suid", "s", 04755);
	ck_assert_int_eq(mkfifo(at("src/tree/pipe"), 0600), 0);
	mkd("src/tree/ro", 0700);
	put("src/tree/ro/f", "r", 0444);
	ck_assert_int_eq(chmod(at("src/tree/ro"), 0555), 0);
	put("src/libreal.so.1", "ELF", 0755);
	ck_assert_int_eq(symlink(at("src/libreal.so.1"), at("src/libfoo.so")), 0);
}

static storm_bundle_t *tree_bundle(void)
{
	storm_bundle_t *b = storm_bundle_new();

	ck_assert_ptr_nonnull(b);
	ck_assert_msg(storm_bundle_add(b, at("src/tree"), "job/tree", false,
				       err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(storm_bundle_add(b, at("src/libfoo.so"), "job/lib/libfoo.so",
				       true, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(storm_bundle_add(b, at("src/libfoo.so"), "job/lib/alias.so",
				       false, err, sizeof(err)) == 0, "%s", err);
	return b;
}

START_TEST(tree_round_trip)
{
	storm_bundle_t *b;
	unsigned char *p;
	size_t len;

	make_tree();
	b = tree_bundle();
	/* job, tree, a, empty, link, ro, ro/f, sub, deeper, x, suid, lib,
	 * libfoo.so, alias.so; the fifo counted apart */
	ck_assert_uint_eq(storm_bundle_entries(b), 14);
	ck_assert_uint_eq(storm_bundle_skipped(b), 1);
	p = written(b, &len);
	/* modes come out as the bundle says, whatever the extractor's umask */
	umask(077);
	ck_assert_msg(extract(p, len, "out") == 0, "%s", err);
	umask(022);
	is_dir("out/job", 0755);
	is_dir("out/job/tree", 0750);
	is_file("out/job/tree/a", "hello", 0644);
	is_file("out/job/tree/empty", "", 0600);
	is_dir("out/job/tree/sub", 0755);
	is_dir("out/job/tree/sub/deeper", 0711);
	is_file("out/job/tree/sub/deeper/x", "xx", 0750);
	is_link("out/job/tree/link", "a");
	is_file("out/job/tree/suid", "s", 0755);
	absent("out/job/tree/pipe");
	is_dir("out/job/tree/ro", 0555);
	is_file("out/job/tree/ro/f", "r", 0444);
	is_dir("out/job/lib", 0755);
	is_file("out/job/lib/libfoo.so", "ELF", 0755);
	is_link("out/job/lib/alias.so", at("src/libreal.so.1"));
	ck_assert_int_eq(entries_in("out"), 1);
	free(p);
	storm_bundle_free(b);
}
END_TEST

START_TEST(same_files_same_bytes)
{
	storm_bundle_t *b1, *b2;
	unsigned char *p1, *p2;
	size_t l1, l2;

	make_tree();
	b1 = tree_bundle();
	b2 = tree_bundle();
	p1 = written(b1, &l1);
	p2 = written(b2, &l2);
	ck_assert_uint_eq(l1, l2);
	ck_assert_int_eq(memcmp(p1, p2, l1), 0);
	free(p1);
	free(p2);
	storm_bundle_free(b1);
	storm_bundle_free(b2);
}
END_TEST

START_TEST(empty_bundle)
{
	storm_bundle_t *b = storm_bundle_new();
	unsigned char *p;
	size_t len;

	ck_assert_uint_eq(storm_bundle_size(b), STORM_BUNDLE_HDR);
	p = written(b, &len);
	ck_assert_msg(extract(p, len, "out") == 0, "%s", err);
	ck_assert_int_eq(entries_in("out"), 0);
	free(p);
	storm_bundle_free(b);
}
END_TEST

START_TEST(duplicates_skipped_conflicts_refused)
{
	storm_bundle_t *b;
	uint64_t n, size;

	make_tree();
	b = tree_bundle();
	n = storm_bundle_entries(b);
	size = storm_bundle_size(b);
	/* the same kind under the same name: nothing changes */
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree"), "job/tree", false,
					  err, sizeof(err)), 0);
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree/sub/deeper/x"),
					  "job/tree/a", false, err, sizeof(err)), 0);
	ck_assert_uint_eq(storm_bundle_entries(b), n);
	ck_assert_uint_eq(storm_bundle_size(b), size);
	/* another kind: refused, and the bundle is as it was */
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree"), "job/tree/a", false,
					  err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "already in the bundle"));
	ck_assert_int_eq(storm_bundle_add(b, at("src/libreal.so.1"),
					  "job/tree/a/b", false, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "not a directory"));
	ck_assert_uint_eq(storm_bundle_entries(b), n);
	ck_assert_uint_eq(storm_bundle_size(b), size);
	storm_bundle_free(b);

	/* a conflict deep in a tree undoes the whole add */
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add(b, at("src/libreal.so.1"),
					  "t/sub/deeper", false, err, sizeof(err)), 0);
	n = storm_bundle_entries(b);
	size = storm_bundle_size(b);
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree"), "t", false, err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "src/tree/sub/deeper"));
	ck_assert_uint_eq(storm_bundle_entries(b), n);
	ck_assert_uint_eq(storm_bundle_size(b), size);
	ck_assert_uint_eq(storm_bundle_skipped(b), 0);
	/* and what was undone can be added elsewhere */
	ck_assert_msg(storm_bundle_add(b, at("src/tree"), "u", false, err,
				       sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(storm_bundle_entries(b), n + 10);
	storm_bundle_free(b);
}
END_TEST

START_TEST(bad_names_and_sources_refused)
{
	static const char *bad[] = {
		"../x", "/abs", "a//b", "a/./b", "", "a/", ".", "a/..", "a\nb",
	};
	storm_bundle_t *b = storm_bundle_new();

	make_tree();
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_msg(storm_bundle_add(b, at("src/tree/a"), bad[i], false,
					       err, sizeof(err)) == -1, "%s", bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "bad bundle name"));
	}
	ck_assert_int_eq(storm_bundle_add(b, at("src/missing"), "m", false, err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "src/missing"));
	ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree/pipe"), "p", false, err,
					  sizeof(err)), -1);
	ck_assert_uint_eq(storm_bundle_entries(b), 0);
	ck_assert_uint_eq(storm_bundle_size(b), STORM_BUNDLE_HDR);
	storm_bundle_free(b);
}
END_TEST

START_TEST(changed_while_being_sent)
{
	storm_bundle_t *b = storm_bundle_new();
	int fd;

	make_tree();
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree/a"), "a", false, err,
					  sizeof(err)), 0);
	put("src/tree/a", "hello, longer", 0644);
	ck_assert_int_ge(fd = open(at("b.out"), O_RDWR | O_CREAT, 0600), 0);
	ck_assert_int_eq(storm_bundle_write(b, fd, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "changed while being sent"));
	put("src/tree/a", "", 0644);
	ck_assert_int_eq(storm_bundle_write(b, fd, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "changed while being sent"));
	storm_bundle_free(b);

	/* a file in a tree replaced by a symlink is not followed */
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add(b, at("src/tree"), "t", false, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(unlink(at("src/tree/empty")), 0);
	ck_assert_int_eq(symlink("/etc/passwd", at("src/tree/empty")), 0);
	ck_assert_int_eq(storm_bundle_write(b, fd, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "src/tree/empty: changed while being sent"));
	close(fd);
	storm_bundle_free(b);
}
END_TEST

/* ---- crafted streams ---- */

typedef struct {
	unsigned char p[1 << 14];
	size_t len;
} craft_t;

static void raw(craft_t *c, const void *p, size_t n)
{
	ck_assert_uint_le(c->len + n, sizeof(c->p));
	memcpy(c->p + c->len, p, n);
	c->len += n;
}

static void u32(craft_t *c, uint32_t v)
{
	unsigned char b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char) (v >> (8 * i));
	raw(c, b, 4);
}

static void u64(craft_t *c, uint64_t v)
{
	u32(c, (uint32_t) v);
	u32(c, (uint32_t) (v >> 32));
}

static void begin(craft_t *c, uint64_t count)
{
	c->len = 0;
	raw(c, STORM_BUNDLE_MAGIC, 8);
	u64(c, count);
}

/* An entry with the lengths its header claims given apart from the
 * bytes that follow, so that they can disagree. */
static void entry_as(craft_t *c, char type, uint32_t mode, const char *name,
		     uint32_t name_len, uint32_t link_len, uint64_t size,
		     const void *tail, size_t tail_len)
{
	unsigned char h[4] = { (unsigned char) type, 0, 0, 0 };

	raw(c, h, 4);
	u32(c, mode);
	u32(c, name_len);
	u32(c, link_len);
	u64(c, size);
	/* a name length past any buffer: only the name's first byte follows */
	raw(c, name, name_len < sizeof(c->p) / 2 ? name_len : 1);
	raw(c, tail, tail_len);
}

static void entry(craft_t *c, char type, uint32_t mode, const char *name,
		  const char *tail)
{
	size_t tl = strlen(tail);

	entry_as(c, type, mode, name, (uint32_t) strlen(name),
		 type == 'l' ? (uint32_t) tl : 0, type == 'f' ? tl : 0, tail, tl);
}

/* Refused before anything is created. */
static void refused(const craft_t *c, const char *why)
{
	static int n;
	char out[32];

	snprintf(out, sizeof(out), "r%d", n++);
	ck_assert_msg(extract(c->p, c->len, out) == -1, "accepted: %s", why);
	ck_assert_msg(err[0], "no error text: %s", why);
	ck_assert_msg(entries_in(out) == 0, "%s: left %d entries", why,
		      entries_in(out));
}

START_TEST(crafted_names_refused)
{
	static const char *bad[] = {
		"../x", "/abs", "a//b", "a/./b", "a/", ".", "..", "x/..", "a\nb",
	};
	craft_t c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		begin(&c, 2);
		entry(&c, 'd', 0755, "a", "");
		entry(&c, 'f', 0644, bad[i], "data");
		refused(&c, bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "bad name"));
		ck_assert_ptr_null(strchr(err, '\n'));
	}
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "a\0b", 3, 0, 0, "", 0);
	refused(&c, "a NUL in a name");
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "", 0, 0, 0, "", 0);
	refused(&c, "an empty name");
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "a", 0xffffffffu, 0, 0, "", 0);
	refused(&c, "a name longer than the cap");
}
END_TEST

START_TEST(crafted_symlink_not_followed)
{
	char probe[64], name[80];
	craft_t c;

	snprintf(probe, sizeof(probe), "storm-bundle-probe-%d", (int) getpid());
	/* a file through a symlink entry */
	snprintf(name, sizeof(name), "d/%s", probe);
	begin(&c, 2);
	entry(&c, 'l', 0777, "d", "/tmp");
	entry(&c, 'f', 0644, name, "escaped");
	refused(&c, "a file through a symlink entry");
	ck_assert_ptr_nonnull(strstr(err, "not a directory earlier"));
	/* a directory through one */
	begin(&c, 2);
	entry(&c, 'l', 0777, "d", "/tmp");
	entry(&c, 'd', 0755, name, "");
	refused(&c, "a directory through a symlink entry");
	snprintf(name, sizeof(name), "/tmp/%s", probe);
	ck_assert_int_eq(access(name, F_OK), -1);

	/* a symlink already in the directory is not written through either */
	mkd("pre", 0700);
	ck_assert_int_eq(symlink(name, at("pre/f")), 0);
	begin(&c, 1);
	entry(&c, 'f', 0644, "f", "escaped");
	{
		int fd = open(at("pre"), O_RDONLY | O_DIRECTORY);

		ck_assert_int_eq(storm_bundle_extract(c.p, c.len, fd, err,
						      sizeof(err)), -1);
		close(fd);
	}
	ck_assert_int_eq(access(name, F_OK), -1);
}
END_TEST

START_TEST(crafted_order_and_duplicates_refused)
{
	craft_t c;

	begin(&c, 2);
	entry(&c, 'f', 0644, "a/b", "x");
	entry(&c, 'd', 0755, "a", "");
	refused(&c, "a file before its parent");
	ck_assert_ptr_nonnull(strstr(err, "parent"));
	begin(&c, 2);
	entry(&c, 'f', 0644, "a", "x");
	entry(&c, 'f', 0644, "a/b", "x");
	refused(&c, "a file under a file");
	begin(&c, 2);
	entry(&c, 'f', 0644, "a", "x");
	entry(&c, 'f', 0644, "a", "y");
	refused(&c, "a name twice");
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	begin(&c, 2);
	entry(&c, 'd', 0755, "a", "");
	entry(&c, 'd', 0755, "a", "");
	refused(&c, "a directory twice");
}
END_TEST

START_TEST(crafted_lengths_refused)
{
	unsigned char good[4096];
	size_t good_len;
	craft_t c;

	/* every proper prefix of a sound stream */
	begin(&c, 4);
	entry(&c, 'd', 0755, "d", "");
	entry(&c, 'f', 0644, "d/f", "data");
	entry(&c, 'l', 0777, "d/l", "f");
	entry(&c, 'f', 0600, "e", "");
	ck_assert_msg(extract(c.p, c.len, "whole") == 0, "%s", err);
	is_file("whole/d/f", "data", 0644);
	is_link("whole/d/l", "f");
	is_file("whole/e", "", 0600);
	good_len = c.len;
	memcpy(good, c.p, good_len);
	for (size_t cut = 0; cut < good_len; cut++) {
		char why[32];

		snprintf(why, sizeof(why), "cut at %zu", cut);
		c.len = cut;
		refused(&c, why);
	}
	/* trailing bytes */
	memcpy(c.p, good, good_len);
	c.len = good_len;
	raw(&c, "x", 1);
	refused(&c, "a byte after the last entry");
	ck_assert_ptr_nonnull(strstr(err, "after the last entry"));

	/* a size past the end of the buffer */
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "f", 1, 0, 1ULL << 40, "data", 4);
	refused(&c, "a size past the buffer");
	ck_assert_ptr_nonnull(strstr(err, "data truncated"));
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "f", 1, 0, UINT64_MAX, "data", 4);
	refused(&c, "the largest size");
	begin(&c, 1);
	entry_as(&c, 'l', 0777, "l", 1, 0xfffffff0u, 0, "t", 1);
	refused(&c, "a link length past the cap");
	begin(&c, 1);
	entry_as(&c, 'l', 0777, "l", 1, 100, 0, "t", 1);
	refused(&c, "a link length past the buffer");
	ck_assert_ptr_nonnull(strstr(err, "link truncated"));

	/* counts */
	begin(&c, UINT64_MAX);
	entry(&c, 'f', 0644, "f", "x");
	refused(&c, "the largest count");
	begin(&c, STORM_BUNDLE_MAX_ENTRIES + 1ULL);
	refused(&c, "a count past the cap");
	begin(&c, 3);
	entry(&c, 'f', 0644, "f", "x");
	refused(&c, "a count past the entries");
	begin(&c, 0);
	entry(&c, 'f', 0644, "f", "x");
	refused(&c, "a count short of the entries");

	/* the magic */
	begin(&c, 1);
	entry(&c, 'f', 0644, "f", "x");
	c.p[7] = '2';
	refused(&c, "another magic");
	ck_assert_ptr_nonnull(strstr(err, "magic"));
}
END_TEST

START_TEST(crafted_fields_refused)
{
	craft_t c;

	begin(&c, 1);
	entry(&c, 'f', 0644, "f", "x");
	c.p[STORM_BUNDLE_HDR + 2] = 1;
	refused(&c, "padding not zero");
	begin(&c, 1);
	entry(&c, 'p', 0644, "p", "");
	refused(&c, "an unknown type");
	begin(&c, 1);
	entry_as(&c, 'd', 0755, "d", 1, 0, 1, "x", 1);
	refused(&c, "a directory with data");
	begin(&c, 1);
	entry_as(&c, 'f', 0644, "f", 1, 1, 0, "x", 1);
	refused(&c, "a file with a link");
	begin(&c, 1);
	entry_as(&c, 'l', 0777, "l", 1, 0, 0, "", 0);
	refused(&c, "a symlink without a target");
	begin(&c, 1);
	entry_as(&c, 'l', 0777, "l", 1, 3, 0, "a\0b", 3);
	refused(&c, "a NUL in a link target");
}
END_TEST

START_TEST(crafted_modes_masked)
{
	craft_t c;

	begin(&c, 3);
	entry(&c, 'd', 01777 | 02000, "d", "");
	entry(&c, 'f', 06777, "d/f", "x");
	entry(&c, 'f', 0xffffffffu, "d/g", "y");
	ck_assert_msg(extract(c.p, c.len, "out") == 0, "%s", err);
	is_dir("out/d", 0777);
	is_file("out/d/f", "x", 0777);
	is_file("out/d/g", "y", 0777);
}
END_TEST

/* ---- cached references ---- */

/* A resolver over a table of contents: a file it knows is written at
 * the leaf (0444, as a cache's would be), any other is absent and
 * recorded. */
typedef struct {
	const char *content[8];
	int placed, absent;
	char absent_leaf[64];
	unsigned mode_seen;
	uint64_t size_seen;
} resolver_t;

static void sha_of(const char *content, uint8_t sha[STORM_BUNDLE_SHA256])
{
	/* not SHA-256: the bundle only carries the bytes */
	memset(sha, 0, STORM_BUNDLE_SHA256);
	snprintf((char *) sha, STORM_BUNDLE_SHA256, "%s", content);
}

static int resolve(void *arg, int parentfd, const char *leaf,
		   const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
		   unsigned mode, char *why, size_t whylen)
{
	resolver_t *r = arg;
	uint8_t want[STORM_BUNDLE_SHA256];
	int fd;

	r->mode_seen = mode;
	r->size_seen = size;
	for (int i = 0; i < 8 && r->content[i]; i++) {
		sha_of(r->content[i], want);
		if (memcmp(want, sha, sizeof(want)) ||
		    size != strlen(r->content[i]))
			continue;
		fd = openat(parentfd, leaf, O_WRONLY | O_CREAT | O_EXCL, 0444);
		if (fd < 0) {
			snprintf(why, whylen, "%s: %s", leaf, strerror(errno));
			return -1;
		}
		ck_assert_int_eq(write(fd, r->content[i], size), (ssize_t) size);
		close(fd);
		r->placed++;
		return 0;
	}
	if (!r->absent++)
		snprintf(r->absent_leaf, sizeof(r->absent_leaf), "%s", leaf);
	return STORM_BUNDLE_ABSENT;
}

static int extract_ex(const void *buf, size_t len, const char *out,
		      const storm_bundle_ops_t *ops, void *arg)
{
	int fd, rc;

	mkd(out, 0700);
	ck_assert_int_ge(fd = open(at(out), O_RDONLY | O_DIRECTORY), 0);
	err[0] = '\0';
	rc = storm_bundle_extract_ex(buf, len, fd, ops, arg, err, sizeof(err));
	close(fd);
	return rc;
}

static void add_ref(storm_bundle_t *b, const char *name, unsigned mode,
		    const char *content)
{
	uint8_t sha[STORM_BUNDLE_SHA256];

	sha_of(content, sha);
	ck_assert_msg(storm_bundle_add_ref(b, name, mode, strlen(content), sha,
					   err, sizeof(err)) == 0, "%s", err);
}

START_TEST(refs_round_trip)
{
	storm_bundle_ops_t ops = { .ref = resolve };
	resolver_t r = { .content = { "cached lib", "cached data" } };
	storm_bundle_t *b;
	unsigned char *p;
	uint64_t size0;
	size_t len;

	make_tree();
	b = tree_bundle();
	size0 = storm_bundle_size(b);
	add_ref(b, "job/lib/libc1.so", 0755, "cached lib");
	add_ref(b, "job/deep/data/d", 0640, "cached data");
	/* the entries and the new parents job/deep and job/deep/data */
	ck_assert_uint_eq(storm_bundle_size(b) - size0,
			  2 * (STORM_BUNDLE_ENTRY_HDR + STORM_BUNDLE_SHA256) +
			  strlen("job/lib/libc1.so") + strlen("job/deep/data/d") +
			  2 * STORM_BUNDLE_ENTRY_HDR + strlen("job/deep") +
			  strlen("job/deep/data"));
	p = written(b, &len);
	ck_assert_msg(extract_ex(p, len, "out", &ops, &r) == 0, "%s", err);
	ck_assert_int_eq(r.placed, 2);
	ck_assert_int_eq(r.absent, 0);
	ck_assert_uint_eq(r.mode_seen, 0640);
	ck_assert_uint_eq(r.size_seen, strlen("cached data"));
	is_file("out/job/lib/libc1.so", "cached lib", 0444);
	is_file("out/job/deep/data/d", "cached data", 0444);
	is_dir("out/job/deep/data", 0755);
	/* what travelled with the references is there as without them */
	is_file("out/job/tree/a", "hello", 0644);
	is_file("out/job/lib/libfoo.so", "ELF", 0755);
	is_dir("out/job/tree/ro", 0555);
	free(p);
	storm_bundle_free(b);
}
END_TEST

START_TEST(refs_absent_all_seen)
{
	storm_bundle_ops_t ops = { .ref = resolve };
	resolver_t r = { .content = { "held" } };
	storm_bundle_t *b = storm_bundle_new();
	unsigned char *p;
	size_t len;

	ck_assert_ptr_nonnull(b);
	add_ref(b, "a/missing1", 0644, "not held");
	add_ref(b, "a/held", 0644, "held");
	add_ref(b, "b/missing2", 0755, "not held either");
	p = written(b, &len);
	ck_assert_msg(extract_ex(p, len, "out", &ops, &r) == STORM_BUNDLE_ABSENT,
		      "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "'a/missing1' and 1 more: not in this node's cache"));
	ck_assert_int_eq(r.absent, 2);
	ck_assert_int_eq(r.placed, 1);
	ck_assert_str_eq(r.absent_leaf, "missing1");
	/* one pass placed what it could; directories left open to fill */
	is_file("out/a/held", "held", 0444);
	is_dir("out/a", 0700);
	absent("out/a/missing1");
	free(p);
	storm_bundle_free(b);
}
END_TEST

START_TEST(refs_without_a_cache_refused)
{
	storm_bundle_ops_t no_ref = { .ref = NULL };
	storm_bundle_t *b = storm_bundle_new();
	unsigned char *p;
	size_t len;

	ck_assert_ptr_nonnull(b);
	add_ref(b, "d/f", 0644, "x");
	p = written(b, &len);
	ck_assert_int_eq(extract(p, len, "out"), -1);
	ck_assert_ptr_nonnull(strstr(err, "'d/f': a cached file, and no cache here"));
	ck_assert_int_eq(entries_in("out"), 0);
	ck_assert_int_eq(extract_ex(p, len, "out2", &no_ref, NULL), -1);
	ck_assert_int_eq(entries_in("out2"), 0);
	free(p);
	storm_bundle_free(b);
}
END_TEST

START_TEST(refs_duplicates_and_conflicts)
{
	storm_bundle_t *b = storm_bundle_new();
	uint8_t sha[STORM_BUNDLE_SHA256] = { 1 };
	uint64_t size, n;

	ck_assert_ptr_nonnull(b);
	put("f", "sent", 0644);
	ck_assert_int_eq(storm_bundle_add(b, at("f"), "d/f", false, err,
					  sizeof(err)), 0);
	size = storm_bundle_size(b);
	n = storm_bundle_entries(b);
	/* a file sent stays; the same reference twice is one */
	ck_assert_int_eq(storm_bundle_add_ref(b, "d/f", 0644, 4, sha, err,
					      sizeof(err)), 0);
	ck_assert_uint_eq(storm_bundle_size(b), size);
	ck_assert_int_eq(storm_bundle_add_ref(b, "d/g", 0644, 4, sha, err,
					      sizeof(err)), 0);
	ck_assert_int_eq(storm_bundle_add_ref(b, "d/g", 0600, 9, sha, err,
					      sizeof(err)), 0);
	ck_assert_uint_eq(storm_bundle_entries(b), n + 1);
	ck_assert_int_eq(storm_bundle_add(b, at("f"), "d/g", false, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(storm_bundle_entries(b), n + 1);
	size = storm_bundle_size(b);
	/* a directory of that name, a file as a parent, a bad name */
	ck_assert_int_eq(storm_bundle_add_ref(b, "d", 0644, 4, sha, err,
					      sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "already in the bundle as a directory"));
	ck_assert_int_eq(storm_bundle_add_ref(b, "d/g/h", 0644, 4, sha, err,
					      sizeof(err)), -1);
	ck_assert_int_eq(storm_bundle_add_ref(b, "x/../y", 0644, 4, sha, err,
					      sizeof(err)), -1);
	/* a failed add left nothing, not even the parents it added */
	ck_assert_int_eq(storm_bundle_add_ref(b, "new/parent/d", 0644, 4, sha,
					      err, sizeof(err)), 0);
	ck_assert_uint_eq(storm_bundle_entries(b), n + 4);
	storm_bundle_free(b);
	b = storm_bundle_new();
	ck_assert_int_eq(storm_bundle_add(b, at("f"), "top", false, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(storm_bundle_add_ref(b, "top/x/y", 0644, 4, sha, err,
					      sizeof(err)), -1);
	ck_assert_uint_eq(storm_bundle_entries(b), 1);
	(void) size;
	storm_bundle_free(b);
}
END_TEST

/* file puts each file its own way, or leaves it to the extractor. */
typedef struct {
	int calls;
	char last[64];
} done_t;

static int file_op(void *arg, int parentfd, const char *leaf,
		   const void *data, uint64_t size, unsigned mode)
{
	done_t *d = arg;
	struct stat st;
	int fd;

	/* a new leaf: nothing there yet */
	ck_assert_int_eq(fstatat(parentfd, leaf, &st, AT_SYMLINK_NOFOLLOW), -1);
	d->calls++;
	snprintf(d->last, sizeof(d->last), "%s:%.*s:%o", leaf, (int) size,
		 (const char *) data, mode);
	if (!strcmp(leaf, "fail")) {
		errno = EDQUOT;
		return -1;
	}
	if (strncmp(leaf, "own", 3))
		return 1;
	fd = openat(parentfd, leaf, O_WRONLY | O_CREAT | O_EXCL, 0400);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "mine", 4), 4);
	close(fd);
	return 0;
}

START_TEST(file_op_sees_each_file)
{
	storm_bundle_ops_t ops = { .file = file_op };
	done_t d = { 0 };
	struct stat st;
	craft_t c;

	begin(&c, 4);
	entry(&c, 'd', 0755, "d", "");
	entry(&c, 'f', 0640, "d/one", "1");
	entry(&c, 'f', 0750, "d/two", "22");
	entry(&c, 'f', 0644, "d/own", "333");
	ck_assert_msg(extract_ex(c.p, c.len, "out", &ops, &d) == 0, "%s", err);
	ck_assert_int_eq(d.calls, 3);
	ck_assert_str_eq(d.last, "own:333:644");
	/* left to the extractor: its bytes and mode */
	ck_assert_int_eq(stat(at("out/d/two"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	ck_assert_uint_eq(st.st_size, 2);
	/* put by the op: as it left it */
	ck_assert_int_eq(stat(at("out/d/own"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0400);
	ck_assert_uint_eq(st.st_size, 4);
	begin(&c, 1);
	entry(&c, 'f', 0644, "fail", "x");
	ck_assert_int_eq(extract_ex(c.p, c.len, "out2", &ops, &d), -1);
	ck_assert_ptr_nonnull(strstr(err, "'fail': "));
	ck_assert_ptr_nonnull(strstr(err, strerror(EDQUOT)));
}
END_TEST

/* The test's "hash": the file's bytes; "xx" stays data. */
static int hash_file(void *arg, const char *src, bool follow, uint64_t size,
		     uint8_t sha[STORM_BUNDLE_SHA256], char *why, size_t whylen)
{
	char buf[64] = "";
	int fd = open(src, O_RDONLY | (follow ? 0 : O_NOFOLLOW));

	(void) arg;
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", src, strerror(errno));
		return -1;
	}
	ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), (ssize_t) size);
	close(fd);
	sha_of(buf, sha);
	return strcmp(buf, "xx") ? 0 : 1;
}

static int hash_fails(void *arg, const char *src, bool follow, uint64_t size,
		      uint8_t sha[STORM_BUNDLE_SHA256], char *why, size_t whylen)
{
	(void) arg, (void) follow, (void) size, (void) sha;
	snprintf(why, whylen, "%s: no hash", src);
	return -1;
}

START_TEST(refs_of_a_bundle)
{
	storm_bundle_ops_t ops = { .ref = resolve };
	resolver_t r = { .content = { "hello", "", "s", "r", "ELF" } };
	storm_bundle_t *b, *refs;
	unsigned char *p;
	size_t len;

	make_tree();
	b = tree_bundle();
	ck_assert_ptr_nonnull(refs = storm_bundle_refs(b, hash_file, NULL, err,
						       sizeof(err)));
	ck_assert_uint_eq(storm_bundle_entries(refs), storm_bundle_entries(b));
	ck_assert_uint_eq(storm_bundle_skipped(refs), storm_bundle_skipped(b));
	/* five files' 10 bytes of data become five hashes */
	ck_assert_uint_eq(storm_bundle_size(refs), storm_bundle_size(b) - 10 +
			  5 * STORM_BUNDLE_SHA256);
	p = written(refs, &len);
	ck_assert_msg(extract_ex(p, len, "out", &ops, &r) == 0, "%s", err);
	/* files as references: hello, empty, suid, ro/f, the library */
	ck_assert_int_eq(r.placed, 5);
	is_file("out/job/tree/a", "hello", 0444);
	is_file("out/job/tree/empty", "", 0444);
	is_file("out/job/tree/sub/deeper/x", "xx", 0750);
	is_file("out/job/lib/libfoo.so", "ELF", 0444);
	is_link("out/job/tree/link", "a");
	is_dir("out/job/tree/ro", 0555);
	free(p);
	storm_bundle_free(refs);
	ck_assert_ptr_null(storm_bundle_refs(b, hash_fails, NULL, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, ": no hash"));
	storm_bundle_free(b);
}
END_TEST

START_TEST(crafted_refs_refused)
{
	storm_bundle_ops_t ops = { .ref = resolve };
	resolver_t r = { .content = { NULL } };
	uint8_t sha[STORM_BUNDLE_SHA256] = { 0 };
	craft_t c;

	begin(&c, 1);
	entry_as(&c, 'c', 0644, "c", 1, 0, 5, sha, sizeof(sha) - 1);
	ck_assert_int_eq(extract_ex(c.p, c.len, "o1", &ops, &r), -1);
	ck_assert_ptr_nonnull(strstr(err, "content hash truncated"));
	begin(&c, 1);
	entry_as(&c, 'c', 0644, "c", 1, 1, 5, sha, sizeof(sha));
	ck_assert_int_eq(extract_ex(c.p, c.len, "o2", &ops, &r), -1);
	ck_assert_ptr_nonnull(strstr(err, "bad link length"));
	/* a reference as a parent is not a directory */
	begin(&c, 2);
	entry_as(&c, 'c', 0644, "c", 1, 0, 5, sha, sizeof(sha));
	entry(&c, 'f', 0644, "c/f", "x");
	ck_assert_int_eq(extract_ex(c.p, c.len, "o3", &ops, &r), -1);
	ck_assert_ptr_nonnull(strstr(err, "parent"));
	/* the whole stream first: a bad entry after a reference means
	 * nothing was resolved */
	begin(&c, 2);
	entry_as(&c, 'c', 0644, "c", 1, 0, 5, sha, sizeof(sha));
	entry(&c, 'p', 0644, "p", "");
	ck_assert_int_eq(extract_ex(c.p, c.len, "o4", &ops, &r), -1);
	ck_assert_int_eq(r.absent + r.placed, 0);
	ck_assert_int_eq(entries_in("o1") + entries_in("o2") + entries_in("o3") +
			 entries_in("o4"), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_bundle");
	TCase *tc = tcase_create("bundle");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tree_round_trip);
	tcase_add_test(tc, same_files_same_bytes);
	tcase_add_test(tc, empty_bundle);
	tcase_add_test(tc, duplicates_skipped_conflicts_refused);
	tcase_add_test(tc, bad_names_and_sources_refused);
	tcase_add_test(tc, changed_while_being_sent);
	tcase_add_test(tc, crafted_names_refused);
	tcase_add_test(tc, crafted_symlink_not_followed);
	tcase_add_test(tc, crafted_order_and_duplicates_refused);
	tcase_add_test(tc, crafted_lengths_refused);
	tcase_add_test(tc, crafted_fields_refused);
	tcase_add_test(tc, crafted_modes_masked);
	tcase_add_test(tc, refs_round_trip);
	tcase_add_test(tc, refs_absent_all_seen);
	tcase_add_test(tc, refs_without_a_cache_refused);
	tcase_add_test(tc, refs_duplicates_and_conflicts);
	tcase_add_test(tc, file_op_sees_each_file);
	tcase_add_test(tc, crafted_refs_refused);
	tcase_add_test(tc, refs_of_a_bundle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_bundle.c - libFuzzer target: a bundle as a user may craft it, which
 * the node manager extracts (storm_bundle_extract).  Each input is
 * extracted into a fresh directory "x" inside a scratch directory made
 * once; whatever the input, nothing may appear beside "x" (no name climbed
 * out, nothing was written through a symlink) and nothing inside it may
 * carry a set-ID or sticky bit.  The directory is removed after each input.
 *
 * Input: the bundle bytes, as they are.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/storm_bundle.h"

static char scratch[4096];

/* A cache that holds nothing; the extractor must still not place the
 * leaf, nor stop before the other entries. */
static int ref_absent(void *arg, int parentfd, const char *leaf,
		      const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
		      unsigned mode, char *err, size_t errlen)
{
	struct stat st;

	(void) arg;
	(void) sha;
	(void) size;
	(void) mode;
	(void) err;
	(void) errlen;
	if (!leaf[0] || strchr(leaf, '/') ||
	    !fstatat(parentfd, leaf, &st, AT_SYMLINK_NOFOLLOW))
		abort();	/* a leaf is one new component */
	return STORM_BUNDLE_ABSENT;
}

/* What a cache's keep sees: a new leaf and the bundle's bytes, all of
 * them readable; every other file is left to the extractor. */
static int file_op(void *arg, int parentfd, const char *leaf,
		   const void *data, uint64_t size, unsigned mode)
{
	struct stat st;
	volatile unsigned char sum = 0;

	(void) arg;
	if (!leaf[0] || strchr(leaf, '/') || (mode & ~0777u) ||
	    !fstatat(parentfd, leaf, &st, AT_SYMLINK_NOFOLLOW))
		abort();
	for (uint64_t i = 0; i < size; i++)
		sum ^= ((const unsigned char *) data)[i];
	(void) sum;
	return 1;
}

static const storm_bundle_ops_t ops = { .ref = ref_absent,
					.file = file_op };
static int scratch_fd = -1;

/* Remove name under parent, opening up directories first: an extracted
 * directory may shut out its owner.  Aborts on a set-ID or sticky bit. */
static void rm_tree(int parent, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISLNK(st.st_mode) && (st.st_mode & 07000))
		abort();
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(parent, name, 0);
		return;
	}
	fchmodat(parent, name, 0700, 0);
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_tree(dirfd(d), de->d_name);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	if (unlinkat(parent, name, AT_REMOVEDIR))
		abort();
}

/* Only "x" (or nothing) beside the extraction directory. */
static void nothing_beside(void)
{
	int fd = dup(scratch_fd);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd)))
		abort();
	rewinddir(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "x")) {
			fprintf(stderr, "fuzz_bundle: %s/%s escaped\n", scratch,
				de->d_name);
			abort();
		}
	closedir(d);
}

static void cleanup(void)
{
	if (scratch_fd >= 0) {
		rm_tree(scratch_fd, "x");
		close(scratch_fd);
		rmdir(scratch);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void) argc;
	(void) argv;
	snprintf(scratch, sizeof(scratch), "%s/storm-fuzz-bundle-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch) ||
	    (scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		abort();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	int fd;

	if (mkdirat(scratch_fd, "x", 0700))
		abort();
	fd = openat(scratch_fd, "x", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	err[0] = '\0';
	if (storm_bundle_extract_ex(data, size, fd, &ops, NULL, err,
				    sizeof(err)) && !err[0])
		abort();	/* a refusal always says why */
	close(fd);
	nothing_beside();
	rm_tree(scratch_fd, "x");
	return 0;
}

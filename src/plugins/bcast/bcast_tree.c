/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_tree.c - the bundle that travels with a broadcast executable; see
 * bcast_tree.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/storm_bundle.h"
#include "bcast_libs.h"
#include "bcast_sha_memo.h"
#include "bcast_tree.h"

/* Append path to the ':'-separated list *list; 0 or -1 (ENOMEM). */
static int _list_add(char **list, const char *path)
{
	size_t old = *list ? strlen(*list) : 0;
	char *n = realloc(*list, old + strlen(path) + 2);

	if (!n)
		return -1;
	if (old)
		n[old++] = ':';
	strcpy(n + old, path);
	*list = n;
	return 0;
}

/* path lies in the ':'-separated list of directories (whole components). */
static bool _under(const char *path, const char *list)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t) (end - p) : strlen(p);

		if (n && !strncmp(path, p, n) && (path[n] == '/' || !path[n]))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

__attribute__((format(printf, 2, 3)))
static void _note(storm_tree_t *t, const char *fmt, ...)
{
	size_t l = strlen(t->note);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->note + l, sizeof(t->note) - l, fmt, ap);
	va_end(ap);
}

/* The named files, by their real paths, mirror layout; 0 or -1. */
static int _add_files(storm_tree_t *t, storm_bundle_t *b, const char *files,
		      char *err, size_t errlen)
{
	char *dup = strdup(files), *save = NULL, *tok;
	char real[PATH_MAX];
	int rc = 0;

	if (!dup) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (tok = strtok_r(dup, ":", &save); tok && !rc;
	     tok = strtok_r(NULL, ":", &save)) {
		if (!realpath(tok, real)) {
			snprintf(err, errlen, "SLURM_STORM_FILES: %s: %s", tok,
				 strerror(errno));
			rc = -1;
		} else if (!strcmp(real, "/")) {
			snprintf(err, errlen, "SLURM_STORM_FILES: %s: the root directory cannot be sent",
				 tok);
			rc = -1;
		} else if (_under(real, t->binds)) {
			continue;	/* inside one named before */
		} else if (storm_bundle_add(b, real, real + 1, false, err,
					    errlen) ||
			   _list_add(&t->binds, real)) {
			rc = -1;
		} else {
			t->files++;
		}
	}
	free(dup);
	return rc;
}

/* lib's path with its directory resolved (the loader names "$ORIGIN/../lib"
 * as "<dir>/bin/../lib/..."), its own name kept: where it is presented
 * and the name of its copy.  false when the directory cannot be
 * resolved. */
static bool _lib_path(const char *lib, char *out, size_t len)
{
	const char *base = strrchr(lib, '/');
	char dir[PATH_MAX], real[PATH_MAX];

	if (!base || (size_t) (base - lib) >= sizeof(dir))
		return false;
	memcpy(dir, lib, (size_t) (base - lib));
	dir[base - lib] = '\0';
	if (!realpath(dir[0] ? dir : "/", real))
		return false;
	return (size_t) snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "",
				 base + 1) < len;
}

/* The executable's library closure; problems only noted: the program then
 * loads them from their own paths, as without STORM. */
static void _add_libs(storm_tree_t *t, storm_bundle_t *b, const char *exe,
		      const char *exclude)
{
	char **libs = NULL, lerr[512];
	int n, missing = 0;

	n = bcast_libs_closure(exe, exclude, &libs, &missing, lerr,
			       sizeof(lerr));
	if (n < 0) {
		_note(t, "its libraries are not sent (%s: %s); ", exe, lerr);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(libs[i], '/');
		char name[PATH_MAX], lib[PATH_MAX];

		if (!_lib_path(libs[i], lib, sizeof(lib))) {
			_note(t, "%s is not sent (%s); ", libs[i], strerror(errno));
			continue;
		}
		if (t->slurm_libs) {
			snprintf(name, sizeof(name), "%s", base + 1);
		} else {
			if (_under(lib, t->binds))
				continue;
			snprintf(name, sizeof(name), "%s", lib + 1);
		}
		if (storm_bundle_add(b, lib, name, true, lerr, sizeof(lerr))) {
			_note(t, "%s is not sent (%s); ", lib, lerr);
			continue;
		}
		if (!t->slurm_libs && _list_add(&t->binds, lib)) {
			_note(t, "%s is not sent (out of memory); ", lib);
			continue;
		}
		t->libs++;
	}
	bcast_libs_free(libs);
}

/* Bundle b into an unlinked temporary file *fd, reachable at path (64
 * bytes), of *size bytes. */
static int _write(storm_bundle_t *b, int *fd, char *path, uint64_t *size,
		  char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	bool own = tmp && tmp[0] == '/';
	char name[PATH_MAX];

	snprintf(name, sizeof(name), "%s/storm-bundle-XXXXXX",
		 own ? tmp : "/tmp");
	*fd = mkostemp(name, O_CLOEXEC);
	if (*fd < 0 && own) {	/* the user's TMPDIR refused: /tmp */
		snprintf(name, sizeof(name), "/tmp/storm-bundle-XXXXXX");
		*fd = mkostemp(name, O_CLOEXEC);
	}
	if (*fd < 0) {
		snprintf(err, errlen, "cannot create a temporary file: %s",
			 strerror(errno));
		return -1;
	}
	unlink(name);
	snprintf(path, 64, "/proc/self/fd/%d", *fd);
	if (storm_bundle_write(b, *fd, err, errlen))
		return -1;
	*size = storm_bundle_size(b);
	return 0;
}

/* How the files of a bundle become references. */
typedef struct hash_ctx {
	storm_sha_memo_t *memo;
	const uint8_t *lacked;	/* files kept as data: bit i, the i-th */
	size_t lacked_len;
	uint64_t ordinal;	/* files seen */
} hash_ctx_t;

/* storm_bundle_refs()'s hash: data for a file some node lacked, else the
 * SHA-256 of the size bytes at src, from the user's memo
 * (bcast_sha_memo.h) when it knows this version. */
static int _hash(void *arg, const char *src, bool follow, uint64_t size,
		 uint8_t sha[STORM_BUNDLE_SHA256], char *err, size_t errlen)
{
	hash_ctx_t *h = arg;
	uint64_t i = h->ordinal++;
	struct stat st;
	int fd, rc = -1;

	if (h->lacked && i / 8 < h->lacked_len &&
	    (h->lacked[i / 8] & (1u << (i % 8))))
		return 1;
	fd = open(src, O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));

	if (fd < 0 || fstat(fd, &st))
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
	else if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != size)
		snprintf(err, errlen, "%s: changed while being sent", src);
	else if (storm_sha_memo_file(h->memo, fd, &st, sha))
		snprintf(err, errlen, "%s: %s", src, errno == EAGAIN ?
			 "changed while being sent" : strerror(errno));
	else
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The bundle of references beside the bundle itself; without it (t->rfd
 * -1, with a note) the files are sent as they are. */
static void _write_refs(storm_tree_t *t, const storm_bundle_t *b)
{
	storm_sha_memo_t *memo = storm_sha_memo_open(NULL);
	hash_ctx_t h = { .memo = memo };
	uint64_t hits, hashed, bytes;
	char err[512];
	storm_bundle_t *r = memo ? storm_bundle_refs(b, _hash, &h, err,
						     sizeof(err)) : NULL;

	if (!memo)
		snprintf(err, sizeof(err), "out of memory");
	if (!r || _write(r, &t->rfd, t->rpath, &t->rsize, err, sizeof(err))) {
		_note(t, "the nodes' caches are not asked (%s); ", err);
		if (t->rfd >= 0)
			close(t->rfd);
		t->rfd = -1;
		t->rpath[0] = '\0';
		t->rsize = 0;
	}
	if (memo) {
		storm_sha_memo_counts(memo, &hits, &hashed, &bytes);
		t->sha_memo_hits = hits;
		t->sha_hashed_bytes = bytes;
		storm_sha_memo_close(memo);
	}
	storm_bundle_free(r);
}

extern int storm_tree_build(storm_tree_t *t, const char *exe, bool libs,
			    bool slurm_libs, const char *exclude,
			    const char *files, uint64_t max_bytes, bool refs,
			    const char *exe_entry, char *err, size_t errlen)
{
	storm_bundle_t *b = storm_bundle_new();
	char size[32], max[32];
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->fd = t->rfd = -1;
	t->slurm_libs = slurm_libs;
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (files && files[0] && _add_files(t, b, files, err, errlen))
		goto out;
	if (libs)
		_add_libs(t, b, exe, exclude);
	if (exe_entry && exe_entry[0] == '/' && exe_entry[1]) {
		if (storm_bundle_add(b, exe_entry, exe_entry + 1, false, err,
				     errlen))
			goto out;
		t->exe = true;
	}
	rc = 0;
	if (!t->libs && !t->files && !t->exe)
		goto out;
	if (storm_bundle_size(b) > max_bytes) {
		snprintf(size, sizeof(size), "%" PRIu64, storm_bundle_size(b));
		snprintf(max, sizeof(max), "%" PRIu64, max_bytes);
		if (t->files) {
			snprintf(err, errlen, "SLURM_STORM_FILES: the named files and libraries take %s bytes, more than BcastMaxSize (%s)",
				 size, max);
			rc = -1;
			goto out;
		}
		_note(t, "its libraries are not sent (%s bytes, more than BcastMaxSize, %s); ",
		      size, max);
		goto out;
	}
	if (_write(b, &t->fd, t->path, &t->size, err, errlen)) {
		rc = -1;
		goto out;
	}
	if (refs)
		_write_refs(t, b);
	rc = 1;
out:
	if (rc == 1 && t->rfd >= 0)
		t->bundle = b;	/* for storm_tree_lacked() */
	else
		storm_bundle_free(b);
	if (rc != 1)
		storm_tree_free(t);
	return rc;
}

extern int storm_tree_lacked(storm_tree_t *t, const uint8_t *bits,
			     size_t len, char *err, size_t errlen)
{
	storm_sha_memo_t *memo;
	hash_ctx_t h = { .lacked = bits, .lacked_len = len };
	storm_bundle_t *r;
	int fd = -1, rc = -1;
	uint64_t size;
	char path[64];

	if (!t->bundle) {
		snprintf(err, errlen, "no bundle kept");
		return -1;
	}
	if (!(memo = h.memo = storm_sha_memo_open(NULL))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r = storm_bundle_refs(t->bundle, _hash, &h, err, errlen);
	if (r && !_write(r, &fd, path, &size, err, errlen)) {
		close(t->fd);
		t->fd = fd;
		fd = -1;
		/* the same string: a request's path points at it */
		snprintf(t->path, sizeof(t->path), "/proc/self/fd/%d", t->fd);
		t->size = size;
		rc = 0;
	}
	if (fd >= 0)
		close(fd);
	storm_bundle_free(r);
	storm_sha_memo_close(memo);
	return rc;
}

extern void storm_tree_free(storm_tree_t *t)
{
	storm_bundle_free(t->bundle);
	t->bundle = NULL;
	if (t->fd >= 0)
		close(t->fd);
	if (t->rfd >= 0)
		close(t->rfd);
	free(t->binds);
	t->fd = t->rfd = -1;
	t->path[0] = t->rpath[0] = '\0';
	t->size = t->rsize = 0;
	t->binds = NULL;
	t->libs = t->files = 0;
	t->exe = false;
}

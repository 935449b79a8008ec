/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache.c - the node-local store of broadcast files across jobs
 * (nm_bcast_cache.h).
 *
 * The directories are the truth: an entry is a file there, its mtime its
 * last use.  In memory the store keeps, per user seen, only an open
 * directory and a byte count, read from the directory on first use, so a
 * node manager that restarts finds what the last one kept.  One lock
 * guards that table and every change of a directory's entries; the slow
 * parts of keeping a file (writing its bytes, later hashing them) run
 * outside it, on a temporary file of its own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nm_bcast_cache.h"
#include "nm_log.h"
#include "src/common/storm_thread.h"

#define COPY_BUF (1 << 20)
#define TMP_PREFIX ".tmp-"
#define TMP_NAME 64
#define EXEC_SUFFIX ".x"
/* "<hex>" or "<hex>.x" */
#define ENTRY_NAME (STORM_SHA256_HEX + sizeof(EXEC_SUFFIX) - 1)

typedef struct {
	uid_t uid;
	int dirfd;		/* .cache/<uid> */
	uint64_t bytes;		/* sizes of its entries */
} ucache_t;

/* A kept file written and linked, its SHA-256 not yet known. */
typedef struct pending {
	struct pending *next;
	uid_t uid;
	char tmp[TMP_NAME];
	uint64_t size;
	bool exec;
} pending_t;

static struct {
	pthread_mutex_t lock;
	int cachefd;		/* BcastDir/.cache; -1: no cache */
	uint64_t limit;
	unsigned hold_s;	/* an entry used this recently is not evicted */
	ucache_t *u;
	size_t nu, capu;
	char self[48];		/* this store's temporaries: TMP_PREFIX self */
	uint64_t seq;		/* and a number */
	/* kept files to name, oldest first, and the thread that names them */
	pending_t *head, *tail;
	bool naming;		/* the hasher holds one it took off the list */
	pthread_cond_t wake;	/* work for the hasher, or its stop */
	pthread_cond_t idle;	/* the list is empty and the hasher waits */
	storm_thread_t hasher;
} store = { .lock = PTHREAD_MUTEX_INITIALIZER, .cachefd = -1,
	    .wake = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER,
	    .hasher = STORM_THREAD_INIT("nm-cache-hash", &store.lock,
					&store.wake) };

/* names kept files (nm_bcast_cache_keep) */
static void *hasher(void *arg);

/* ------------------------------------------------ file-system identity */
typedef struct {
	int uid, gid;
} fs_ident_t;

/* Root's file-system identity for this thread; the caller's kept. */
static fs_ident_t fs_root(void)
{
	fs_ident_t was;

	was.uid = (int) syscall(SYS_setfsuid, 0);
	was.gid = (int) syscall(SYS_setfsgid, 0);
	return was;
}

static void fs_back(fs_ident_t was)
{
	syscall(SYS_setfsgid, was.gid);
	syscall(SYS_setfsuid, was.uid);
}

/* ------------------------------------------------------------ names */
static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* An entry's name: 64 hex digits, ".x" for the executable class. */
static bool entry_name(const char *name, bool *exec)
{
	size_t n = strlen(name), h = STORM_SHA256_HEX - 1;

	if (n == h)
		*exec = false;
	else if (n == h + strlen(EXEC_SUFFIX) && !strcmp(name + h, EXEC_SUFFIX))
		*exec = true;
	else
		return false;
	return is_hex(name, h);
}

static void name_of(const uint8_t sha[STORM_SHA256_LEN], bool exec,
		    char out[ENTRY_NAME])
{
	storm_sha256_hex(sha, out);
	if (exec)
		strcat(out, EXEC_SUFFIX);
}

static mode_t entry_mode(bool exec)
{
	return exec ? 0555 : 0444;
}

/* What reuse relies on instead of a second hash (see the header). */
static bool entry_ok(const struct stat *st, bool exec, uint64_t size)
{
	return S_ISREG(st->st_mode) && st->st_uid == 0 &&
	       (st->st_mode & 07777) == entry_mode(exec) &&
	       (uint64_t) st->st_size == size && st->st_nlink >= 1;
}

/* A user directory's name: the uid in decimal, nothing else. */
static bool uid_name(const char *name, uid_t *uid)
{
	char *end;
	unsigned long v;

	if (name[0] < '0' || name[0] > '9' || (name[0] == '0' && name[1]))
		return false;
	errno = 0;
	v = strtoul(name, &end, 10);
	if (errno || *end || v >= (unsigned long) NM_BCAST_CACHE_ALL)
		return false;
	*uid = (uid_t) v;
	return true;
}

/* A DIR stream over a copy of dirfd, from its start. */
static DIR *dir_at(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0)
		return NULL;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	return d;
}

/* A directory of root's, 0700, at name in parent, made if absent and
 * make is set; an fd or -errno.  One another user owns, or that is not a
 * directory, is refused: BcastDir may be writable by users. */
static int root_dir(int parent, const char *name, bool make)
{
	struct stat st;
	int fd, e = 0;

	if (make && mkdirat(parent, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (fstat(fd, &st))
		e = errno;
	else if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		e = EPERM;
	else if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700))
		e = errno;
	if (e) {
		close(fd);
		return -e;
	}
	return fd;
}

/* ------------------------------------------------------------ users */
/* A temporary not of this store's: an earlier node manager's (the pid
 * alone may be the same again, in a container). */
static bool stale_tmp(const char *name)
{
	size_t n = strlen(TMP_PREFIX);

	return !strncmp(name, TMP_PREFIX, n) &&
	       strncmp(name + n, store.self, strlen(store.self));
}

/* Count a user directory's entries' bytes; temporaries an earlier node
 * manager left go. */
static uint64_t load_bytes(int dirfd)
{
	DIR *d = dir_at(dirfd);
	struct dirent *e;
	struct stat st;
	uint64_t bytes = 0;
	bool exec;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (stale_tmp(e->d_name))
			unlinkat(dirfd, e->d_name, 0);
		else if (entry_name(e->d_name, &exec) &&
			 !fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			bytes += (uint64_t) st.st_size;
	}
	closedir(d);
	return bytes;
}

/* caller holds the lock */
static ucache_t *find_user(uid_t uid)
{
	for (size_t i = 0; i < store.nu; i++)
		if (store.u[i].uid == uid)
			return &store.u[i];
	return NULL;
}

/* uid's store, opened on first use (made if make); NULL with *rc.
 * caller holds the lock */
static ucache_t *user(uid_t uid, bool make, int *rc)
{
	ucache_t *u = find_user(uid);
	char name[16];
	int fd;

	if (u)
		return u;
	if (store.nu == store.capu) {
		size_t cap = store.capu ? 2 * store.capu : 16;
		ucache_t *n = realloc(store.u, cap * sizeof(*n));

		if (!n) {
			*rc = -ENOMEM;
			return NULL;
		}
		store.u = n;
		store.capu = cap;
	}
	snprintf(name, sizeof(name), "%u", (unsigned) uid);
	if ((fd = root_dir(store.cachefd, name, make)) < 0) {
		if (fd != -ENOENT)
			nm_error("bcast cache: %s/%s: %s", NM_BCAST_CACHE_DIR,
				 name, strerror(-fd));
		*rc = fd;
		return NULL;
	}
	u = &store.u[store.nu++];
	u->uid = uid;
	u->dirfd = fd;
	u->bytes = load_bytes(fd);
	return u;
}

/* caller holds the lock */
static void forget_user(ucache_t *u)
{
	close(u->dirfd);
	*u = store.u[--store.nu];
}

/* ------------------------------------------------------------ evict */
typedef struct {
	char name[ENTRY_NAME];
	struct timespec used;
	uint64_t size;
} aged_t;

static int older(const void *a, const void *b)
{
	const struct timespec *x = &((const aged_t *) a)->used;
	const struct timespec *y = &((const aged_t *) b)->used;

	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? -1 : 1;
	return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

/* Least recently used first, never one used in the last hold seconds,
 * until an eighth under the limit; the count read afresh from the
 * directory.  When only entries in use are left over the limit, keep (the
 * entry just named) goes too: a launch between its references and its
 * data relies on what it found.  Returns whether keep stays.  caller
 * holds the lock */
static bool evict(ucache_t *u, const char *keep)
{
	uint64_t total = 0, low = store.limit - store.limit / 8, freed = 0;
	uint64_t keep_size = 0;
	aged_t *a = NULL;
	size_t n = 0, cap = 0, gone = 0;
	DIR *d = dir_at(u->dirfd);
	struct dirent *e;
	struct stat st;
	struct timespec now;
	bool exec, kept = true;

	if (!d)
		return true;
	clock_gettime(CLOCK_REALTIME, &now);
	while ((e = readdir(d))) {
		if (!entry_name(e->d_name, &exec) ||
		    fstatat(u->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		total += (uint64_t) st.st_size;
		if (!strcmp(e->d_name, keep)) {
			keep_size = (uint64_t) st.st_size;
			continue;
		}
		if (store.hold_s &&
		    st.st_mtim.tv_sec + (time_t) store.hold_s > now.tv_sec)
			continue;	/* in use: a launch may rely on it */
		if (n == cap) {
			aged_t *na = realloc(a, (cap = cap ? 2 * cap : 64) *
					     sizeof(*a));

			if (!na)
				break;	/* evict what is known so far */
			a = na;
		}
		/* entry_name() held it to ENTRY_NAME - 1 bytes */
		memcpy(a[n].name, e->d_name, strlen(e->d_name) + 1);
		a[n].used = st.st_mtim;
		a[n].size = (uint64_t) st.st_size;
		n++;
	}
	closedir(d);
	if (total > store.limit) {
		if (n)
			qsort(a, n, sizeof(*a), older);
		for (size_t i = 0; i < n && total > low; i++)
			if (!unlinkat(u->dirfd, a[i].name, 0)) {
				total -= a[i].size;
				freed += a[i].size;
				gone++;
			}
		if (total > store.limit && keep_size &&
		    !unlinkat(u->dirfd, keep, 0)) {
			total -= keep_size;
			kept = false;
			nm_verbose("bcast cache: uid %u: a new entry of %" PRIu64 " bytes not kept: the store is full of entries used in the last %u s",
				   (unsigned) u->uid, keep_size, store.hold_s);
		}
		nm_verbose("bcast cache: uid %u: least recently used evicted: "
			   "%zu entries, %" PRIu64 " bytes; %" PRIu64 " bytes kept",
			   (unsigned) u->uid, gone, freed, total);
	}
	u->bytes = total;
	free(a);
	return kept;
}

/* ------------------------------------------------------------ API */
extern int nm_bcast_cache_init(const char *bcast_dir, uint64_t per_user_bytes,
			       unsigned hold_s)
{
	struct timespec now;
	int bfd, cfd, rc = 0;

	nm_bcast_cache_fini();
	if (!per_user_bytes)
		return 0;
	bfd = open(bcast_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0) {
		rc = -errno;
		nm_error("bcast cache: %s: %s", bcast_dir, strerror(-rc));
		return rc;
	}
	cfd = root_dir(bfd, NM_BCAST_CACHE_DIR, true);
	close(bfd);
	if (cfd < 0) {
		nm_error("bcast cache: %s/%s: %s%s", bcast_dir,
			 NM_BCAST_CACHE_DIR, strerror(-cfd),
			 cfd == -EPERM ? " (not a directory of root's)" : "");
		return cfd;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&store.lock);
	store.cachefd = cfd;
	store.limit = per_user_bytes;
	store.hold_s = hold_s;
	snprintf(store.self, sizeof(store.self), "%d-%llx.%lx-", (int) getpid(),
		 (unsigned long long) now.tv_sec, (unsigned long) now.tv_nsec);
	pthread_mutex_unlock(&store.lock);
	if ((rc = storm_thread_start(&store.hasher, hasher, NULL))) {
		nm_error("bcast cache: cannot start the thread that names kept files: %s",
			 strerror(rc));
		nm_bcast_cache_fini();
		return -rc;
	}
	nm_info("bcast cache: %s/%s, %" PRIu64 " bytes per user", bcast_dir,
		NM_BCAST_CACHE_DIR, per_user_bytes);
	return 0;
}

extern void nm_bcast_cache_fini(void)
{
	storm_thread_stop(&store.hasher);
	pthread_mutex_lock(&store.lock);
	/* not named yet: the jobs keep their links, the store drops them */
	while (store.head) {
		pending_t *p = store.head;
		ucache_t *u = find_user(p->uid);

		if (u)
			unlinkat(u->dirfd, p->tmp, 0);
		store.head = p->next;
		free(p);
	}
	store.tail = NULL;
	while (store.nu)
		forget_user(&store.u[0]);
	free(store.u);
	store.u = NULL;
	store.capu = 0;
	if (store.cachefd >= 0)
		close(store.cachefd);
	store.cachefd = -1;
	store.limit = 0;
	pthread_mutex_unlock(&store.lock);
}

extern bool nm_bcast_cache_enabled(void)
{
	bool on;

	pthread_mutex_lock(&store.lock);
	on = store.cachefd >= 0;
	pthread_mutex_unlock(&store.lock);
	return on;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

/* The SHA-256 of the size bytes of in; 0 or -errno (-ESTALE: not size
 * bytes long). */
static int hash_file(int in, uint64_t size, uint8_t sha[STORM_SHA256_LEN])
{
	unsigned char *buf = malloc(COPY_BUF);
	storm_sha256_t *h = storm_sha256_new();
	uint64_t off = 0;
	int rc = 0;

	if (!buf || !h) {
		rc = -ENOMEM;
		goto done;
	}
	while (!rc && off <= size) {
		/* one byte past the end: a longer file is refused */
		size_t want = size - off < COPY_BUF ? (size_t) (size - off) + 1 :
						      COPY_BUF;
		ssize_t r = pread(in, buf, want, (off_t) off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		else if ((uint64_t) r > size - off || (r == 0 && off < size))
			rc = -ESTALE;
		else if (r == 0)
			break;
		else if (storm_sha256_update(h, buf, (size_t) r))
			rc = -EIO;
		else
			off += (uint64_t) r;
	}
	if (!rc && storm_sha256_final(h, sha))
		rc = -EIO;
done:
	storm_sha256_free(h);
	free(buf);
	return rc;
}

/* Put the written temporary in place as name, or mark the held copy used;
 * evict.  caller holds the lock; 0 or -errno */
static int commit(uid_t uid, int dirfd, const char *tmp, const char *name,
		  bool exec, uint64_t size)
{
	ucache_t *u;
	struct stat st;
	uint64_t old = 0;
	int rc = 0;

	if (!renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE))
		goto added;
	if (errno != EEXIST)
		return -errno;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (entry_ok(&st, exec, size)) {
		/* held already: the bytes are the same, by their name */
		unlinkat(dirfd, tmp, 0);
		return utimensat(dirfd, name, NULL, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	}
	/* an entry that fails the checks is replaced by the one just made */
	if (S_ISREG(st.st_mode))
		old = (uint64_t) st.st_size;
	if (renameat(dirfd, tmp, dirfd, name))
		return -errno;
added:
	if ((u = user(uid, false, &rc))) {
		u->bytes = u->bytes + size >= old ? u->bytes + size - old : 0;
		if (u->bytes > store.limit && !evict(u, name))
			return -ENOSPC;
	}
	return 0;
}

/* A new entry of size bytes for uid: a copy of the user's store
 * directory's fd in *dirfd and a temporary's name in tmp (TMP_NAME
 * bytes), made afresh; 0, -EOPNOTSUPP (no cache), -EFBIG (larger than
 * the limit) or -errno.  The caller has root's identity. */
static int begin_entry(uid_t uid, uint64_t size, int *dirfd,
		       char tmp[TMP_NAME])
{
	ucache_t *u;
	int rc = 0;

	pthread_mutex_lock(&store.lock);
	if (store.cachefd < 0)
		rc = -EOPNOTSUPP;
	else if (size > store.limit)
		rc = -EFBIG;
	else if ((u = user(uid, true, &rc)) && (*dirfd = dup(u->dirfd)) < 0)
		rc = -errno;
	snprintf(tmp, TMP_NAME, TMP_PREFIX "%s%" PRIu64, store.self,
		 store.seq++);
	pthread_mutex_unlock(&store.lock);
	return rc;
}

/* ------------------------------------------------------------ keep */
/* Name one kept file by its bytes' SHA-256, or drop it. */
static void name_kept(const pending_t *p)
{
	uint8_t sha[STORM_SHA256_LEN];
	char name[ENTRY_NAME];
	ucache_t *u;
	int dirfd = -1, fd = -1, rc = 0;

	pthread_mutex_lock(&store.lock);
	if (!(u = user(p->uid, false, &rc)) || (dirfd = dup(u->dirfd)) < 0)
		rc = rc ? rc : -errno;
	pthread_mutex_unlock(&store.lock);
	if (rc)
		return;	/* purged meanwhile: the file went with the store */
	/* root's and read-only since it was written: the bytes hashed now
	 * are the bytes written then */
	if ((fd = openat(dirfd, p->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = -errno;
	else
		rc = hash_file(fd, p->size, sha);
	if (!rc) {
		name_of(sha, p->exec, name);
		pthread_mutex_lock(&store.lock);
		rc = commit(p->uid, dirfd, p->tmp, name, p->exec, p->size);
		pthread_mutex_unlock(&store.lock);
	}
	if (rc) {
		unlinkat(dirfd, p->tmp, 0);
		if (rc != -ENOSPC && rc != -ENOENT)
			nm_verbose("bcast cache: uid %u: a kept file of %" PRIu64 " bytes not named: %s",
				   (unsigned) p->uid, p->size, strerror(-rc));
	}
	if (fd >= 0)
		close(fd);
	close(dirfd);
}

static void *hasher(void *arg)
{
	(void) arg;
	fs_root();	/* this thread's own, for good */
	pthread_mutex_lock(&store.lock);
	while (!storm_thread_stopping(&store.hasher)) {
		pending_t *p = store.head;

		if (!p) {
			pthread_cond_broadcast(&store.idle);
			pthread_cond_wait(&store.wake, &store.lock);
			continue;
		}
		if (!(store.head = p->next))
			store.tail = NULL;
		store.naming = true;
		pthread_mutex_unlock(&store.lock);
		name_kept(p);
		free(p);
		pthread_mutex_lock(&store.lock);
		store.naming = false;
	}
	pthread_mutex_unlock(&store.lock);
	return NULL;
}

extern int nm_bcast_cache_keep(uid_t uid, const void *data, uint64_t size,
			       unsigned mode, int parentfd, const char *leaf)
{
	pending_t *p = calloc(1, sizeof(*p));
	bool exec = mode & 0111;
	fs_ident_t was;
	int dirfd = -1, out = -1, rc = 0;

	if (!p)
		return -ENOMEM;
	was = fs_root();
	if ((rc = begin_entry(uid, size, &dirfd, p->tmp)))
		goto done;
	/* written as root, in a directory only root reaches; read-only and
	 * root's before the job's link to it exists */
	out = openat(dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		     O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto done;
	}
	rc = write_all(out, data, (size_t) size);
	if (!rc && fchmod(out, entry_mode(exec)))
		rc = -errno;
	if (close(out) && !rc)
		rc = -errno;
	if (!rc && linkat(dirfd, p->tmp, parentfd, leaf, 0))
		rc = -errno;
	if (rc) {
		unlinkat(dirfd, p->tmp, 0);
		goto done;
	}
	p->uid = uid;
	p->size = size;
	p->exec = exec;
	pthread_mutex_lock(&store.lock);
	if (store.tail)
		store.tail->next = p;
	else
		store.head = p;
	store.tail = p;
	pthread_cond_signal(&store.wake);
	pthread_mutex_unlock(&store.lock);
	p = NULL;
done:
	free(p);
	if (dirfd >= 0)
		close(dirfd);
	fs_back(was);
	return rc;
}

extern void nm_bcast_cache_settle(void)
{
	pthread_mutex_lock(&store.lock);
	while ((store.head || store.naming) && store.hasher.started &&
	       !store.hasher.stop)
		pthread_cond_wait(&store.idle, &store.lock);
	pthread_mutex_unlock(&store.lock);
}

extern int nm_bcast_cache_place(uid_t uid, const uint8_t sha[STORM_SHA256_LEN],
				uint64_t size, unsigned mode, int parentfd,
				const char *leaf)
{
	char name[ENTRY_NAME];
	bool exec = mode & 0111;
	struct stat st;
	ucache_t *u;
	fs_ident_t was;
	int fd = -1, rc = 0;

	name_of(sha, exec, name);
	was = fs_root();
	pthread_mutex_lock(&store.lock);
	if (store.cachefd < 0) {
		rc = -EOPNOTSUPP;
		goto done;
	}
	if (!(u = user(uid, false, &rc)))
		goto done;
	fd = openat(u->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? -ENOENT : -errno;
		if (errno == ELOOP)	/* a symlink: not ours */
			goto unfit;
		goto done;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		goto done;
	}
	if (!entry_ok(&st, exec, size))
		goto unfit;
	/* the very inode checked, as root: a user could not link it */
	if (futimens(fd, NULL) ||
	    linkat(fd, "", parentfd, leaf, AT_EMPTY_PATH))
		rc = -errno;
	goto done;
unfit:
	nm_error("bcast cache: uid %u: %s fails its checks (a regular file of root's, its mode, the size asked for); removed",
		 (unsigned) uid, name);
	if (!fstatat(u->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    !unlinkat(u->dirfd, name, 0) && S_ISREG(st.st_mode))
		u->bytes = u->bytes > (uint64_t) st.st_size ?
			   u->bytes - (uint64_t) st.st_size : 0;
	rc = -ENOENT;
done:
	pthread_mutex_unlock(&store.lock);
	if (fd >= 0)
		close(fd);
	fs_back(was);
	return rc;
}

/* Each user directory's uid, or only uid; fn on each.  caller holds the
 * lock; the sum of fn's counts or -errno */
static int each_user(uid_t uid, int (*fn)(uid_t, int, void *), void *arg)
{
	DIR *d;
	struct dirent *e;
	int n = 0, r;

	if (uid != NM_BCAST_CACHE_ALL) {
		char name[16];
		int fd;

		snprintf(name, sizeof(name), "%u", (unsigned) uid);
		fd = openat(store.cachefd, name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		r = fn(uid, fd, arg);
		close(fd);
		return r;
	}
	if (!(d = dir_at(store.cachefd)))
		return -errno;
	while ((e = readdir(d))) {
		uid_t u;
		int fd;

		if (!uid_name(e->d_name, &u))
			continue;
		fd = openat(store.cachefd, e->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = fn(u, fd, arg);
		close(fd);
		if (r < 0) {
			n = r;
			break;
		}
		n += r;
	}
	closedir(d);
	return n;
}

static int list_user(uid_t uid, int dirfd, void *arg)
{
	FILE *out = arg;
	DIR *d = dir_at(dirfd);
	struct dirent *e;
	struct stat st;
	bool exec;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!entry_name(e->d_name, &exec) ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		fprintf(out, "%u %.64s %" PRIu64 " %04o %lld\n", (unsigned) uid,
			e->d_name, (uint64_t) st.st_size,
			(unsigned) (st.st_mode & 07777),
			(long long) st.st_mtim.tv_sec);
		n++;
	}
	closedir(d);
	return n;
}

static int purge_user(uid_t uid, int dirfd, void *arg)
{
	ucache_t *u = find_user(uid);
	DIR *d = dir_at(dirfd);
	struct dirent *e;
	char name[16];
	bool exec;
	int n = 0;

	(void) arg;
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    !unlinkat(dirfd, e->d_name, 0) &&
		    entry_name(e->d_name, &exec))
			n++;
	closedir(d);
	snprintf(name, sizeof(name), "%u", (unsigned) uid);
	unlinkat(store.cachefd, name, AT_REMOVEDIR);
	if (u)
		forget_user(u);
	nm_info("bcast cache: uid %u: purged, entries removed: %d",
		(unsigned) uid, n);
	return n;
}

/* fn on uid's directory (or each user's), as root, under the lock */
static int on_users(uid_t uid, int (*fn)(uid_t, int, void *), void *arg)
{
	fs_ident_t was = fs_root();
	int n;

	pthread_mutex_lock(&store.lock);
	n = store.cachefd < 0 ? -EOPNOTSUPP : each_user(uid, fn, arg);
	pthread_mutex_unlock(&store.lock);
	fs_back(was);
	return n;
}

extern int nm_bcast_cache_list(uid_t uid, FILE *out)
{
	return on_users(uid, list_user, out);
}

extern int nm_bcast_cache_purge(uid_t uid)
{
	return on_users(uid, purge_user, NULL);
}

extern uint64_t nm_bcast_cache_bytes(uid_t uid)
{
	uint64_t bytes = 0;
	ucache_t *u;

	pthread_mutex_lock(&store.lock);
	if (store.cachefd >= 0 && (u = find_user(uid)))
		bytes = u->bytes;
	pthread_mutex_unlock(&store.lock);
	return bytes;
}

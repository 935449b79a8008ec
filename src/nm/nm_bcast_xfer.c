/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_xfer.c - the transfer table: each broadcast file on its way to
 * this node.
 *
 * A checked manifest (nm_bcast_auth.c) gets a slot and a hidden temporary
 * file of the final size in its destination (nm_bcast_dir.c), mapped so
 * that libstormmech copies every chunk once, straight into the node-local
 * tmpfs.  Only a committed transfer whose checksum matches is renamed into
 * place; anything else is unlinked.  A file is complete or absent.
 *
 * The fabric's callbacks look transfers up from libstormmech's progress
 * thread with its lock held, so the table's lock is only ever held for a
 * lookup or a change of state; the slow parts (checks, file system) run
 * on a slot in state PREPARING or FINISHING, which no one else touches.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nm_bcast_absent.h"
#include "nm_bcast_auth.h"
#include "nm_bcast_cache_ops.h"
#include "nm_bcast_dir.h"
#include "nm_bcast_xfer.h"
#include "src/common/storm_mutex.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_bundle.h"

struct nm_bcast_xfer {
	nm_bcast_xstate_t state;
	int root;
	uint64_t key;
	uint32_t job, step;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	uint64_t size, hash;
	int dirfd, fd;
	bool user_fs;		/* created with the user's fs identity */
	bool verified;		/* checksum already matched (the relay) */
	bool tree;		/* a bundle, extracted on commit */
	char name[256];
	char tmp[64];
	void *map;
	time_t started;
	char *attest;		/* the relay's job attestation (its own copy) */
};

static struct {
	const nm_t *nm;
	pthread_mutex_t lock;
	nm_bcast_xfer_t x[NM_BCAST_MAX_XFERS];
} xfer_table = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The destination of an empty file: libstormmech wants an address. */
static char zero_page[1];

extern void nm_bcast_xfer_init(const nm_t *nm)
{
	int rc;

	/* the progress thread takes it in the fabric's callbacks */
	if ((rc = storm_mutex_init_inherit(&xfer_table.lock)))
		nm_error("bcast: no priority inheritance for the transfers' lock: %s",
			 strerror(rc));
	xfer_table.nm = nm;
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++) {
		xfer_table.x[i].fd = -1;
		xfer_table.x[i].dirfd = -1;
	}
}

static void set_xstate(nm_bcast_xfer_t *x, nm_bcast_xstate_t state)
{
	pthread_mutex_lock(&xfer_table.lock);
	x->state = state;
	pthread_mutex_unlock(&xfer_table.lock);
}

static void xfer_close(nm_bcast_xfer_t *x, bool unlink_tmp)
{
	free(x->attest);
	x->attest = NULL;
	if (x->map && x->size)
		munmap(x->map, x->size);
	x->map = NULL;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
	if (x->dirfd >= 0) {
		if (unlink_tmp) {
			if (x->user_fs)
				nm_bcast_fs_user(x->uid, x->gid);
			unlinkat(x->dirfd, x->tmp, 0);
			if (x->user_fs)
				nm_bcast_fs_root();
		}
		close(x->dirfd);
	}
	x->dirfd = -1;
}

/* ----------------------------------------------------------- accept */
/* A free slot for (root, key), now PREPARING, or NULL. */
static nm_bcast_xfer_t *claim_slot(int root, uint64_t key)
{
	nm_bcast_xfer_t *x = NULL;

	pthread_mutex_lock(&xfer_table.lock);
	for (int i = 0; i < NM_BCAST_MAX_XFERS && !x; i++)
		if (xfer_table.x[i].state == NM_XFER_FREE)
			x = &xfer_table.x[i];
	if (x) {
		memset(x, 0, sizeof(*x));
		x->state = NM_XFER_PREPARING;
		x->root = root;
		x->key = key;
	}
	pthread_mutex_unlock(&xfer_table.lock);
	return x;
}

static void fill_slot(nm_bcast_xfer_t *x, const nm_bcast_manifest_t *m,
		      int dirfd, bool user_fs)
{
	x->job = m->job;
	x->step = m->step;
	x->uid = m->uid;
	x->gid = m->gid;
	x->mode = m->mode;
	x->size = m->size;
	x->hash = m->hash;
	x->user_fs = user_fs;
	x->tree = m->tree;
	x->started = time(NULL);
	snprintf(x->name, sizeof(x->name), "%s", m->name);
	snprintf(x->tmp, sizeof(x->tmp), NM_BCAST_TMP_PREFIX "%012" PRIx64,
		 x->key);
	x->dirfd = dirfd;
	x->fd = -1;
}

/* The temporary file: created (as the job's owner), allocated, mapped. */
static int prepare_file(nm_bcast_xfer_t *x, uid_t owner)
{
	int fd = openat(x->dirfd, x->tmp, O_RDWR | O_CREAT | O_EXCL |
			O_NOFOLLOW | O_CLOEXEC, 0600);

	x->fd = fd;
	if (fd < 0 || (!x->user_fs && fchown(fd, owner, x->uid == owner ?
					      x->gid : (gid_t) -1))) {
		nm_error("bcast: job %u: cannot create %s: %s", x->job, x->name,
			 strerror(errno));
		return STORM_BCAST_EIO;
	}
	if (!x->size)
		return STORM_BCAST_READY;
	/* Allocate now: a tmpfs that fills up under a shared mapping raises
	 * SIGBUS in the NM, an ENOSPC here is a clean refusal. */
	int rc = posix_fallocate(fd, 0, (off_t) x->size);

	if (rc) {
		nm_error("bcast: job %u: cannot allocate %" PRIu64 " bytes for %s: %s",
			 x->job, x->size, x->name, strerror(rc));
		return rc == ENOSPC ? STORM_BCAST_ENOSPC : STORM_BCAST_EIO;
	}
	/* Pre-fault: a first-touch fault per page costs more than the copy
	 * into it. */
	x->map = mmap(NULL, x->size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, fd, 0);
	if (x->map == MAP_FAILED) {
		x->map = NULL;
		nm_error("bcast: job %u: mmap %s: %s", x->job, x->name,
			 strerror(errno));
		return STORM_BCAST_EIO;
	}
	return STORM_BCAST_READY;
}

static void log_accepted(const nm_bcast_xfer_t *x, nm_bcast_xstate_t state,
			 bool attested)
{
	if (state == NM_XFER_READY)
		nm_info("bcast: job %u.%u: receiving %s (%" PRIu64 " bytes) from rank %d (job checked %s)",
			x->job, x->step, x->name, x->size, x->root,
			attested ? "by the relay" : "with slurmctld");
	else
		nm_info("bcast: job %u.%u: receiving %s (%" PRIu64 " bytes) from srun, to relay to the step's nodes",
			x->job, x->step, x->name, x->size);
}

extern int nm_bcast_xfer_accept(const char *cred, const char *attest,
				int root, uint64_t key,
				nm_bcast_xstate_t ready_state,
				nm_bcast_xfer_t **out)
{
	nm_bcast_grant_t g;
	nm_bcast_xfer_t *x = NULL;
	int dirfd = -1, st;
	bool user_fs = false;

	*out = NULL;
	if ((st = nm_bcast_authorize(cred, attest, root, key, &g)) !=
	    STORM_BCAST_READY)
		return st;
	st = nm_bcast_dir_dest(&g, &dirfd, &user_fs);
	if (st == STORM_BCAST_READY && !(x = claim_slot(root, key))) {
		nm_error("bcast: too many transfers in progress");
		st = STORM_BCAST_EIO;
	}
	if (x) {
		fill_slot(x, &g.m, dirfd, user_fs);
		dirfd = -1;
		if (ready_state == NM_XFER_RECEIVING)
			x->attest = nm_bcast_attest_make(&g);
		if ((st = prepare_file(x, g.owner)) == STORM_BCAST_READY) {
			set_xstate(x, ready_state);
		} else {
			xfer_close(x, true);
			set_xstate(x, NM_XFER_FREE);
			x = NULL;
		}
	}
	if (user_fs)
		nm_bcast_fs_root();
	if (dirfd >= 0)
		close(dirfd);
	if (x)
		log_accepted(x, ready_state, g.attested);
	nm_bcast_grant_free(&g);
	*out = x;
	return st;
}

/* ----------------------------------------------------------- finish */
extern bool nm_bcast_xfer_verify(nm_bcast_xfer_t *x)
{
	if (!x->verified)
		x->verified = storm_bcast_hash(x->size ? x->map : zero_page,
					       x->size) == x->hash;
	return x->verified;
}

/* What a node lacks of a bundle of references, as a bitmap. */
typedef struct lacked {
	uint8_t *bits;
	size_t len;
	bool lost;	/* out of memory: the relay learns nothing from us */
} lacked_t;

static void note_lacked(void *arg, uint64_t ordinal,
			const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
			unsigned mode)
{
	lacked_t *l = arg;

	(void) sha;
	(void) size;
	(void) mode;
	if (!l->lost && nm_bcast_absent_set(&l->bits, &l->len, ordinal))
		l->lost = true;
}

/* Tell the transfer's relay what this node lacks (storm_bcast.h), before
 * the node reports ABSENT; the relay's own node merges it in place.  A
 * report that does not arrive only makes srun send every file. */
static void report_lacked(const nm_bcast_xfer_t *x, const lacked_t *l)
{
	storm_set_t to, failed;
	int rc;

	if (l->lost || !l->len)
		return;
	if (x->root == xfer_table.nm->rank) {
		nm_bcast_absent_merge(x->key, l->bits, l->len);
		return;
	}
	storm_set_clear(&to);
	storm_set_add(&to, x->root);
	rc = storm_xfer_sync(xfer_table.nm->ctx, &to, l->bits, l->len,
			     STORM_BCAST_ABSENT_REPORT | x->key,
			     STORM_NO_EVENT, &failed);
	if (rc)
		nm_info("bcast: job %u: %s: cannot tell rank %d what this node lacks: %s",
			x->job, x->name, x->root, storm_strerror(rc));
}

/*
 * A verified bundle extracted into a hidden directory beside it, with the
 * user's file-system identity (what the user could not create, the NM
 * does not either), then renamed to the transfer's name, replacing an
 * older tree of that name at once; the bundle file goes.  References are
 * placed from the user's cache on this node and the files received are
 * kept in it (nm_bcast_cache_ops.h); a reference the cache does not hold
 * makes the whole tree ABSENT, and the relay is told which ones.  Returns
 * STORM_BCAST_DONE or why not; nothing of a failed extraction stays.
 */
static int extract_tree(nm_bcast_xfer_t *x)
{
	lacked_t lacked = { 0 };
	nm_bcast_cache_use_t use = { .uid = x->uid, .absent = note_lacked,
				     .arg = &lacked };
	char dir[64], err[512];
	int fd, rc, st = STORM_BCAST_DONE;

	snprintf(dir, sizeof(dir), NM_BCAST_TMP_PREFIX "d%012" PRIx64, x->key);
	nm_bcast_fs_user(x->uid, x->gid);
	if (mkdirat(x->dirfd, dir, 0700) ||
	    (fd = openat(x->dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			 O_CLOEXEC)) < 0) {
		nm_error("bcast: job %u: cannot create the directory for %s: %s",
			 x->job, x->name, strerror(errno));
		st = STORM_BCAST_EIO;
	} else {
		rc = storm_bundle_extract_ex(x->map, x->size, fd,
					     &nm_bcast_cache_ops, &use, err,
					     sizeof(err));
		if (rc == STORM_BUNDLE_ABSENT) {
			nm_info("bcast: job %u: %s: %" PRIu64 " of its files are not in this node's cache (%" PRIu64 " are): %s",
				x->job, x->name, use.missing, use.placed, err);
			st = STORM_BCAST_ABSENT;
			report_lacked(x, &lacked);
		} else if (rc) {
			nm_error("bcast: job %u: %s: %s", x->job, x->name, err);
			st = STORM_BCAST_EBADTREE;
		} else if (use.placed || use.kept) {
			nm_verbose("bcast: job %u: %s: %" PRIu64 " files (%" PRIu64 " bytes) from this node's cache, %" PRIu64 " received kept in it (%" PRIu64 " bytes)",
				   x->job, x->name, use.placed,
				   use.placed_bytes, use.kept, use.kept_bytes);
		}
		close(fd);
	}
	if (st == STORM_BCAST_DONE &&
	    renameat2(x->dirfd, dir, x->dirfd, x->name, RENAME_NOREPLACE) &&
	    (errno != EEXIST ||
	     renameat2(x->dirfd, dir, x->dirfd, x->name, RENAME_EXCHANGE))) {
		nm_error("bcast: job %u: cannot put %s in place: %s", x->job,
			 x->name, strerror(errno));
		st = STORM_BCAST_EIO;
	}
	if (st == STORM_BCAST_DONE)
		unlinkat(x->dirfd, x->tmp, 0);
	/* the failed extraction, or the tree the new one replaced: as root,
	 * since a tree may hold directories its owner cannot write to */
	nm_bcast_fs_root();
	nm_bcast_remove_at(x->dirfd, dir);
	if (x->user_fs)
		nm_bcast_fs_user(x->uid, x->gid);
	free(lacked.bits);
	return st;
}

extern int nm_bcast_xfer_finish(nm_bcast_xfer_t *x, bool commit)
{
	int st = STORM_BCAST_ABORTED;

	if (commit) {
		if (x->user_fs)
			nm_bcast_fs_user(x->uid, x->gid);
		if (!nm_bcast_xfer_verify(x)) {
			nm_error("bcast: job %u: %s: checksum mismatch, dropped",
				 x->job, x->name);
			st = STORM_BCAST_EBADMSG;
		} else if (x->tree) {
			st = extract_tree(x);
		} else if (fchmod(x->fd, x->mode ? x->mode : 0700) ||
			   renameat(x->dirfd, x->tmp, x->dirfd, x->name)) {
			nm_error("bcast: job %u: cannot put %s in place: %s",
				 x->job, x->name, strerror(errno));
			st = STORM_BCAST_EIO;
		} else {
			st = STORM_BCAST_DONE;
		}
		if (x->user_fs)
			nm_bcast_fs_root();
	}
	if (st != STORM_BCAST_DONE)
		nm_info("bcast: job %u: %s %s; temporary file removed", x->job,
			x->name, commit ? "refused" : "aborted");
	else
		nm_verbose("bcast: job %u.%u: %s complete (%" PRIu64 " bytes)",
			   x->job, x->step, x->name, x->size);
	xfer_close(x, st != STORM_BCAST_DONE);
	set_xstate(x, NM_XFER_FREE);
	return st;
}

extern void *nm_bcast_xfer_map(nm_bcast_xfer_t *x, uint64_t *size)
{
	*size = x->size;
	return x->size ? x->map : zero_page;
}

extern uint64_t nm_bcast_xfer_key(const nm_bcast_xfer_t *x)
{
	return x->key;
}

extern const char *nm_bcast_xfer_attest(const nm_bcast_xfer_t *x)
{
	return x->attest;
}

extern uid_t nm_bcast_xfer_uid(const nm_bcast_xfer_t *x)
{
	return x->uid;
}

extern uint32_t nm_bcast_xfer_job(const nm_bcast_xfer_t *x)
{
	return x->job;
}

/* ----------------------------------------------------------- lookups */
/* caller holds xfer_table.lock */
static nm_bcast_xfer_t *find_locked(int root, uint64_t key)
{
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++)
		if (xfer_table.x[i].state != NM_XFER_FREE &&
		    xfer_table.x[i].root == root && xfer_table.x[i].key == key)
			return &xfer_table.x[i];
	return NULL;
}

extern nm_bcast_xfer_t *nm_bcast_xfer_find(int root, uint64_t key)
{
	nm_bcast_xfer_t *x;

	pthread_mutex_lock(&xfer_table.lock);
	x = find_locked(root, key);
	pthread_mutex_unlock(&xfer_table.lock);
	return x;
}

extern void *nm_bcast_xfer_receive(int root, uint64_t key, uint64_t len)
{
	void *dst = NULL;
	nm_bcast_xfer_t *x;

	pthread_mutex_lock(&xfer_table.lock);
	x = find_locked(root, key);
	if (x && x->state == NM_XFER_READY && x->size == len) {
		x->state = NM_XFER_RECEIVING;
		dst = x->size ? x->map : zero_page;
	}
	pthread_mutex_unlock(&xfer_table.lock);
	return dst;
}

extern bool nm_bcast_xfer_received(const void *dst, int *root,
				   uint64_t *key)
{
	bool found = false;

	pthread_mutex_lock(&xfer_table.lock);
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++) {
		nm_bcast_xfer_t *x = &xfer_table.x[i];

		if (x->state == NM_XFER_RECEIVING &&
		    (dst == x->map || (!x->size && dst == zero_page))) {
			found = true;
			x->state = NM_XFER_FINISHING;
			*root = x->root;
			*key = x->key;
			break;
		}
	}
	pthread_mutex_unlock(&xfer_table.lock);
	return found;
}

extern void nm_bcast_xfer_expire(void)
{
	time_t now = time(NULL);
	time_t limit =
		2 * (time_t) (xfer_table.nm->conf.timeout_us / 1000000 + 1);

	pthread_mutex_lock(&xfer_table.lock);
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++) {
		nm_bcast_xfer_t *x = &xfer_table.x[i];

		if (x->state == NM_XFER_READY && now - x->started > limit) {
			x->state = NM_XFER_FINISHING;
			pthread_mutex_unlock(&xfer_table.lock);
			nm_info("bcast: job %u: %s never arrived; removed", x->job,
				x->name);
			xfer_close(x, true);
			pthread_mutex_lock(&xfer_table.lock);
			x->state = NM_XFER_FREE;
		}
	}
	pthread_mutex_unlock(&xfer_table.lock);
}

extern bool nm_bcast_xfer_busy(uint32_t job)
{
	bool busy = false;

	pthread_mutex_lock(&xfer_table.lock);
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++)
		if (xfer_table.x[i].state != NM_XFER_FREE &&
		    xfer_table.x[i].job == job)
			busy = true;
	pthread_mutex_unlock(&xfer_table.lock);
	return busy;
}

extern int nm_bcast_xfer_count(void)
{
	int n = 0;

	pthread_mutex_lock(&xfer_table.lock);
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++)
		if (xfer_table.x[i].state != NM_XFER_FREE)
			n++;
	pthread_mutex_unlock(&xfer_table.lock);
	return n;
}

extern void nm_bcast_xfer_fini(void)
{
	/* Nothing half-written survives the NM. */
	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++)
		if (xfer_table.x[i].state != NM_XFER_FREE) {
			xfer_close(&xfer_table.x[i], true);
			xfer_table.x[i].state = NM_XFER_FREE;
		}
}

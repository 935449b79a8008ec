/*
 * nm_bcast.c - the node manager's end of the STORM file broadcast.
 *
 * Protocol in src/common/storm_bcast.h.  In short: srun hands the file to
 * the node manager of the step's first node (the relay, nm_relay.c), which
 * multicasts a manifest (srun's munge credential); each NM checks it and
 * prepares a hidden temporary file of the final size, the relay multicasts
 * the file and the NM's destination callback hands libstormmech the
 * mapping of that file, so every chunk is copied once, straight into the
 * node-local tmpfs.  The relay keeps its own copy through the same checks
 * (nm_bcast_accept / nm_bcast_finish, nm_bcast.h).  Only a committed
 * transfer whose checksum matches is renamed into place; anything else is
 * unlinked.  A file is complete or absent.
 *
 * Threads: libstormmech calls the destination callbacks from its progress
 * thread with its lock held, so they only look things up in the table
 * below.  Everything slow (munge, slurmctld, file system) runs in this
 * module's worker thread, which reports through the fabric variables that
 * the relay reads with COMPARE-AND-WRITE, or in a relay thread for the
 * relay's own copy; check_lock keeps the two from checking at once.
 *
 * Authorization (storm-nm(8)): the munge credential gives the requesting
 * uid (munged vouches for it); slurmctld gives the job's owner and nodes
 * (slurm_load_job, cached per job), at the relay, which passes them on in
 * a munge credential of its own (the job attestation, below).  A broadcast
 * is accepted only for a job the uid owns (or root), that runs on this
 * node.  Files go to BcastDir/job_<id>/ (created by the NM, owned by the
 * user, 0700), named by a plain name (no '/', no leading '.'), opened
 * relative to the directory's fd with O_NOFOLLOW|O_EXCL.  A file with an
 * absolute destination (srun --bcast=/path) is created with the user's
 * file-system identity (setfsuid/setfsgid in the worker thread), so the
 * kernel applies the user's own permissions, as slurmd does for sbcast.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <munge.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "nm.h"
#include "nm_bcast.h"
#include "src/common/storm_bcast.h"

#define MAX_XFERS 64
#define JOB_CACHE 32
#define JOB_CACHE_TTL 30	/* s */
#define SWEEP_PERIOD 10		/* s */
#define SEEN_KEYS 1024

typedef enum { X_FREE = 0, X_PREPARING, X_READY, X_RECEIVING,
	       X_FINISHING } xstate_t;

typedef struct xfer {
	xstate_t state;
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
	char name[256];
	char tmp[64];
	void *map;
	time_t started;
	char *attest;		/* the relay's job attestation (its own copy) */
} xfer_t;

typedef enum { W_MANIFEST = 1, W_COMMIT, W_ABORT } work_kind_t;

typedef struct work {
	struct work *next;
	work_kind_t kind;
	int root;
	uint64_t key;
	size_t len;
	char *manifest;
} work_t;

/* A manifest or go-ahead buffer handed to libstormmech: the release
 * callback only gets the buffer back, so it carries its root and key. */
typedef struct mbuf {
	struct mbuf *next;
	int root;
	uint64_t key;
	bool go;	/* the go-ahead (STORM_BCAST_GO), not a manifest */
	char data[];
} mbuf_t;

typedef struct job_cache {
	uint32_t job;
	uid_t uid;
	bool on_node;
	bool running;
	time_t at;
	char *nodes;		/* the job's node list, as slurmctld gave it */
} job_cache_t;

static struct {
	nm_t *nm;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Manifests are checked by the worker and by relay threads: one at
	 * a time (the job cache, the replay cache, the fs identity dance). */
	pthread_mutex_t check_lock;
	pthread_t worker;
	bool worker_started;
	bool stop;
	work_t *head, *tail;
	mbuf_t *mbufs;
	xfer_t x[MAX_XFERS];
	job_cache_t jobs[JOB_CACHE];
	uint64_t seen[SEEN_KEYS];	/* replay cache of manifest keys */
	int seen_pos;
	int dirfd;			/* BcastDir */
	time_t last_sweep;
} B = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.check_lock = PTHREAD_MUTEX_INITIALIZER, .dirfd = -1 };

static char zero_page[1];

/* root: the transfer's relay, for the tasks that wait (nm_bcast_wait.c) */
static void set_state(int root, uint64_t key, int st)
{
	int var = storm_bcast_var(key);
	int rc = storm_var_set(B.nm->ctx, var, STORM_BCAST_VAL(key, st));

	if (rc)
		nm_error("bcast: cannot set variable %d: %s", var,
			 storm_strerror(rc));
	if (st != STORM_BCAST_READY)
		nm_bcast_wake(root, key, st);
}

/* caller holds B.lock */
static xfer_t *find_xfer(int root, uint64_t key)
{
	for (int i = 0; i < MAX_XFERS; i++)
		if (B.x[i].state != X_FREE && B.x[i].root == root &&
		    B.x[i].key == key)
			return &B.x[i];
	return NULL;
}

/* ------------------------------------------------ fabric callbacks */
/* Called by the progress thread with the fabric lock held: no blocking. */
static void *dest_cb(void *arg, int root, uint64_t offset, uint64_t len)
{
	void *dst = NULL;

	if (offset & (STORM_BCAST_MANIFEST | STORM_BCAST_GO)) {
		bool go = !(offset & STORM_BCAST_MANIFEST);
		mbuf_t *m;

		if (go ? len != 0 : len == 0 || len > STORM_BCAST_MAX_MANIFEST)
			return NULL;	/* out of range: dropped */
		m = calloc(1, sizeof(*m) + len + 1);
		if (!m)
			return NULL;
		m->root = root;
		m->key = offset & STORM_BCAST_KEY_MASK;
		m->go = go;
		pthread_mutex_lock(&B.lock);
		m->next = B.mbufs;
		B.mbufs = m;
		pthread_mutex_unlock(&B.lock);
		return m->data;
	}
	if (!(offset & STORM_BCAST_DATA))
		return NULL;	/* not ours: the global region applies */
	pthread_mutex_lock(&B.lock);
	xfer_t *x = find_xfer(root, offset & STORM_BCAST_KEY_MASK);
	if (x && x->state == X_READY && x->size == len) {
		x->state = X_RECEIVING;
		dst = x->size ? x->map : zero_page;
	}
	pthread_mutex_unlock(&B.lock);
	if (!dst)
		nm_error("bcast: refusing data from rank %d (key %" PRIx64
			 ", %" PRIu64 " bytes): no accepted manifest",
			 root, offset & STORM_BCAST_KEY_MASK, len);
	return dst;
}

static void enqueue(work_t *w)
{
	pthread_mutex_lock(&B.lock);
	if (B.tail)
		B.tail->next = w;
	else
		B.head = w;
	B.tail = w;
	pthread_cond_signal(&B.cond);
	pthread_mutex_unlock(&B.lock);
}

/*
 * Called when a transfer that used one of our buffers is over and no send
 * reads the buffer any more (libstormmech's dest_release).  The slow part
 * runs in the worker.  We need the root and offset back, so they are
 * found from the buffer.
 */
static void release_cb(void *arg, void *dst, uint64_t len, bool committed)
{
	work_t *w = calloc(1, sizeof(*w));
	mbuf_t *m = NULL;
	bool found = false;

	pthread_mutex_lock(&B.lock);
	if (B.stop) {
		/* shutting down: the NM's fini owns the buffers now */
		pthread_mutex_unlock(&B.lock);
		free(w);
		return;
	}
	for (mbuf_t **pp = &B.mbufs; *pp; pp = &(*pp)->next)
		if ((*pp)->data == dst) {
			m = *pp;
			*pp = m->next;
			break;
		}
	for (int i = 0; !m && i < MAX_XFERS; i++) {
		xfer_t *x = &B.x[i];

		if (x->state == X_RECEIVING &&
		    (dst == x->map || (!x->size && dst == zero_page))) {
			found = true;
			x->state = X_FINISHING;
			if (w) {
				w->kind = committed ? W_COMMIT : W_ABORT;
				w->root = x->root;
				w->key = x->key;
			}
			break;
		}
	}
	pthread_mutex_unlock(&B.lock);
	if (m && m->go) {
		/* nothing slow: answers the waiters without blocking */
		if (committed)
			nm_bcast_go(m->root, m->key);
		free(m);
		free(w);
		return;
	}
	if (m) {
		if (w && committed) {
			w->kind = W_MANIFEST;
			w->root = m->root;
			w->key = m->key;
			w->len = len;
			w->manifest = malloc(len + 1);
			if (w->manifest) {
				memcpy(w->manifest, m->data, len);
				w->manifest[len] = '\0';
				free(m);
				enqueue(w);
				return;
			}
		}
		free(m);
		free(w);
		return;
	}
	if (!found) {
		free(w);
		return;
	}
	if (w)
		enqueue(w);
	else
		nm_error("bcast: out of memory: a transfer's end is lost");
}

/* ------------------------------------------------------ job checks */
/* Owner, state and nodes of a job, from slurmctld (cached per job).
 * *nodes points into the cache: valid while the caller holds check_lock. */
static int job_check(uint32_t job, bool *on_node, bool *running,
		     uid_t *owner, const char **nodes)
{
	job_info_msg_t *msg = NULL;
	time_t now = time(NULL);
	job_cache_t *slot = &B.jobs[0];

	for (int i = 0; i < JOB_CACHE; i++) {
		job_cache_t *c = &B.jobs[i];

		if (c->job == job && now - c->at < JOB_CACHE_TTL && c->running) {
			*on_node = c->on_node;
			*running = c->running;
			*owner = c->uid;
			if (nodes)
				*nodes = c->nodes ? c->nodes : "";
			return 0;
		}
		if (c->at < slot->at)
			slot = c;
	}
	if (slurm_load_job(&msg, job, SHOW_ALL) != SLURM_SUCCESS ||
	    !msg || msg->record_count < 1) {
		int e = slurm_get_errno();

		if (msg)
			slurm_free_job_info_msg(msg);
		return e == ESLURM_INVALID_JOB_ID ? -ENOENT : -EIO;
	}
	slurm_job_info_t *j = &msg->job_array[0];
	uint32_t base = j->job_state & JOB_STATE_BASE;
	hostlist_t hl = j->nodes ? slurm_hostlist_create(j->nodes) : NULL;

	*owner = j->user_id;
	*running = base == JOB_RUNNING || base == JOB_SUSPENDED ||
		   (j->job_state & JOB_CONFIGURING);
	*on_node = hl && slurm_hostlist_find(hl, B.nm->node) >= 0;
	if (hl)
		slurm_hostlist_destroy(hl);
	free(slot->nodes);
	slot->nodes = j->nodes ? strdup(j->nodes) : NULL;
	slurm_free_job_info_msg(msg);
	slot->job = job;
	slot->uid = *owner;
	slot->on_node = *on_node;
	slot->running = *running;
	slot->at = now;
	if (nodes)
		*nodes = slot->nodes ? slot->nodes : "";
	return 0;
}

/* ---------------------------------------------------- file helpers */
/* A DIR stream over a copy of dirfd, from its start; dirfd stays open. */
static DIR *opendir_at(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	return d;
}

/* Remove everything under dirfd without following links. */
static void rm_tree_at(int dirfd)
{
	DIR *d = opendir_at(dirfd);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd, e->d_name, 0) == 0)
			continue;
		if (errno == EISDIR || errno == EPERM) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub >= 0) {
				rm_tree_at(sub);
				close(sub);
			}
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

static int remove_job_dir(uint32_t job, const char *why)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "job_%u", job);
	fd = openat(B.dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rm_tree_at(fd);
	close(fd);
	if (unlinkat(B.dirfd, name, AT_REMOVEDIR)) {
		int e = errno;

		nm_error("bcast: cannot remove %s/%s: %s", B.nm->conf.bcast_dir,
			 name, strerror(e));
		return -e;
	}
	nm_info("bcast: removed %s/%s (%s)", B.nm->conf.bcast_dir, name, why);
	return 0;
}

/* The job's directory, created on first use: owned by the job's user,
 * 0700.  Returns an fd or -errno. */
static int job_dir(uint32_t job, uid_t uid, gid_t gid)
{
	char name[32];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "job_%u", job);
	if (mkdirat(B.dirfd, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(B.dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (st.st_uid != uid && st.st_uid != 0) ||
	    fchown(fd, uid, gid) || fchmod(fd, 0700)) {
		int e = errno ? errno : EPERM;

		close(fd);
		return -e;
	}
	return fd;
}

/* Switch this thread's file-system identity (Linux: per thread with the
 * raw system call). */
static void fs_identity(uid_t uid, gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	syscall(SYS_setfsuid, uid);
}

static void fs_root(void)
{
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
}

static void xfer_close(xfer_t *x, bool unlink_tmp)
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
				fs_identity(x->uid, x->gid);
			unlinkat(x->dirfd, x->tmp, 0);
			if (x->user_fs)
				fs_root();
		}
		close(x->dirfd);
	}
	x->dirfd = -1;
}

/* -------------------------------------------------------- manifest */
typedef struct manifest {
	uint32_t job, step;
	uid_t uid;
	gid_t gid;
	uint64_t key, size, hash;
	unsigned mode;
	char dir[1024];		/* "-" (job directory) or an absolute dir */
	char name[256];
} manifest_t;

static int parse_payload(const char *p, manifest_t *m)
{
	unsigned long long key, size, hash;
	unsigned job, step, uid, gid, mode;
	int n = 0;

	if (sscanf(p, "storm-bcast-1 job=%u step=%u uid=%u gid=%u key=%llx "
		   "size=%llu mode=%o hash=%llx dir=%1023s name=%255s%n",
		   &job, &step, &uid, &gid, &key, &size, &mode, &hash, m->dir,
		   m->name, &n) != 10 || p[n] != '\0')
		return -EINVAL;
	m->job = job;
	m->step = step;
	m->uid = uid;
	m->gid = gid;
	m->key = key;
	m->size = size;
	m->hash = hash;
	m->mode = mode & 07777;
	if (!storm_bcast_name_ok(m->name) ||
	    (strcmp(m->dir, "-") && (m->dir[0] != '/' || strstr(m->dir, "/../") ||
				      strstr(m->dir, "/./"))))
		return -EINVAL;
	return 0;
}

static bool seen_key(int root, uint64_t key)
{
	uint64_t k = ((uint64_t) root << 48) ^ key;

	for (int i = 0; i < SEEN_KEYS; i++)
		if (B.seen[i] == k)
			return true;
	B.seen[B.seen_pos] = k;
	B.seen_pos = (B.seen_pos + 1) % SEEN_KEYS;
	return false;
}

/*
 * The relay's job attestation: a munge credential of root (the relay's
 * node manager) saying that slurmctld, asked for this transfer, showed it
 * job J of owner U on nodes N.  The other nodes take it instead of asking
 * slurmctld themselves: one lookup per broadcast, not one per node (at 16
 * nodes on one host those lookups were 20-80 ms of the manifest phase).
 * Only root can make one, and it names the transfer's key, which srun's
 * own credential binds to the job and uid.  A node that cannot use it
 * (absent, expired, not root's, for another transfer) asks slurmctld.
 */
static char *make_attest(uint64_t key, uint32_t job, uid_t owner,
			 const char *nodes)
{
	char *payload = NULL, *cred = NULL;
	munge_err_t e;

	if (asprintf(&payload, "storm-bcast-job-1 key=%" PRIx64 " job=%u owner=%u nodes=%s",
		     key, job, (unsigned) owner, nodes) < 0)
		return NULL;
	e = munge_encode(&cred, NULL, payload, (int) strlen(payload) + 1);
	free(payload);
	if (e != EMUNGE_SUCCESS) {
		nm_error("bcast: job %u: cannot make the job attestation (%s): every node asks slurmctld",
			 job, munge_strerror(e));
		free(cred);
		return NULL;
	}
	return cred;
}

static int check_attest(const char *att, int root, uint64_t key, uint32_t job,
			uid_t *owner, bool *on_node)
{
	void *payload = NULL;
	int plen = 0, n = 0, rc = -1;
	uid_t auid;
	gid_t agid;
	unsigned long long akey;
	unsigned ajob, aowner;
	const char *why = NULL;
	hostlist_t hl;
	munge_err_t e = munge_decode(att, NULL, &payload, &plen, &auid, &agid);

	/* a replay is expected: every node of the host decodes the same one */
	if (e != EMUNGE_SUCCESS && e != EMUNGE_CRED_REPLAYED)
		why = munge_strerror(e);
	else if (auid != 0)
		why = "not made by root";
	else if (!payload || plen <= 0 || ((char *) payload)[plen - 1] != '\0' ||
		 sscanf(payload, "storm-bcast-job-1 key=%llx job=%u owner=%u nodes=%n",
			&akey, &ajob, &aowner, &n) != 3 || !n)
		why = "malformed";
	else if (akey != key || ajob != job)
		why = "for another transfer";
	else if (!(hl = slurm_hostlist_create((char *) payload + n)))
		why = "bad node list";
	else {
		*on_node = slurm_hostlist_find(hl, B.nm->node) >= 0;
		*owner = aowner;
		slurm_hostlist_destroy(hl);
		rc = 0;
	}
	if (rc)
		nm_info("bcast: rank %d: the relay's job attestation is not usable (%s); asking slurmctld",
			root, why);
	free(payload);
	return rc;
}

/*
 * Check a manifest (srun's munge credential, and the relay's attestation
 * when attest is not NULL) for the transfer (root, key) and prepare this
 * node's temporary file.  Returns STORM_BCAST_READY with
 * *out in state `ready_state` (X_READY: the data comes over the fabric;
 * X_RECEIVING: the relay writes it itself), or the refusal state.
 */
static int check_manifest(const char *cred, const char *attest, int root,
			  uint64_t key, xstate_t ready_state, xfer_t **out)
{
	manifest_t m;
	void *payload = NULL;
	int plen = 0, st = STORM_BCAST_EPERM, fd = -1, dirfd = -1;
	uid_t muid;
	gid_t mgid;
	bool on_node = false, running = false, user_fs = false, attested = false;
	uid_t owner;
	const char *jnodes = NULL;
	munge_err_t e;
	xfer_t *x = NULL;
	struct statvfs vfs;

	e = munge_decode(cred, NULL, &payload, &plen, &muid, &mgid);
	/* Several NMs of one host share a munged (multiple-slurmd test
	 * clusters): as Slurm's auth/munge does, accept a replay and keep our
	 * own replay cache of keys instead. */
	if (e != EMUNGE_SUCCESS && e != EMUNGE_CRED_REPLAYED) {
		nm_error("bcast: rank %d: bad credential: %s", root,
			 munge_strerror(e));
		goto done;
	}
	if (!payload || plen <= 0 || ((char *) payload)[plen - 1] != '\0' ||
	    parse_payload(payload, &m)) {
		nm_error("bcast: rank %d: malformed manifest", root);
		goto done;
	}
	if ((m.key & STORM_BCAST_KEY_MASK) != key) {
		nm_error("bcast: rank %d: credential is for another transfer",
			 root);
		goto done;
	}
	if (seen_key(root, key)) {
		nm_error("bcast: rank %d: replayed manifest key %" PRIx64,
			 root, key);
		goto done;
	}
	if (m.uid != muid || (m.gid != mgid && muid != 0)) {
		nm_error("bcast: job %u: credential of uid %u claims uid %u",
			 m.job, (unsigned) muid, (unsigned) m.uid);
		goto done;
	}
	if (attest && !check_attest(attest, root, key, m.job, &owner, &on_node)) {
		running = true;	/* the relay's lookup found it running */
		attested = true;
	} else if (job_check(m.job, &on_node, &running, &owner, &jnodes)) {
		nm_error("bcast: job %u: cannot look it up in slurmctld", m.job);
		goto done;
	}
	if ((owner != muid && muid != 0) || !running || !on_node) {
		nm_error("bcast: refusing %s for job %u from uid %u: %s", m.name,
			 m.job, (unsigned) muid,
			 !running ? "job not running" :
			 !on_node ? "this node is not in the job's allocation" :
				    "uid does not own the job");
		goto done;
	}
	if (m.size > B.nm->conf.bcast_max_bytes) {
		nm_error("bcast: job %u: %s is %" PRIu64 " bytes, BcastMaxSize is %" PRIu64,
			 m.job, m.name, m.size, B.nm->conf.bcast_max_bytes);
		st = STORM_BCAST_EFBIG;
		goto done;
	}
	if (!strcmp(m.dir, "-")) {
		dirfd = job_dir(m.job, owner, m.uid == owner ? m.gid : (gid_t) -1);
		if (dirfd < 0) {
			nm_error("bcast: job %u: cannot create its directory in %s: %s",
				 m.job, B.nm->conf.bcast_dir, strerror(-dirfd));
			st = STORM_BCAST_EIO;
			goto done;
		}
	} else {
		user_fs = true;
		fs_identity(m.uid, m.gid);
		dirfd = open(m.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			nm_error("bcast: job %u: destination %s: %s", m.job,
				 m.dir, strerror(errno));
			st = STORM_BCAST_EIO;
			goto done;
		}
	}
	if (fstatvfs(dirfd, &vfs) == 0 &&
	    (uint64_t) vfs.f_bavail * vfs.f_frsize < m.size) {
		nm_error("bcast: job %u: %s (%" PRIu64 " bytes) does not fit in %s",
			 m.job, m.name, m.size, user_fs ? m.dir :
			 B.nm->conf.bcast_dir);
		st = STORM_BCAST_ENOSPC;
		goto done;
	}
	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_XFERS && !x; i++)
		if (B.x[i].state == X_FREE)
			x = &B.x[i];
	if (x) {
		memset(x, 0, sizeof(*x));
		x->state = X_PREPARING;
		x->root = root;
		x->key = key;
	}
	pthread_mutex_unlock(&B.lock);
	if (!x) {
		nm_error("bcast: too many transfers in progress");
		st = STORM_BCAST_EIO;
		goto done;
	}
	x->job = m.job;
	x->step = m.step;
	x->uid = m.uid;
	x->gid = m.gid;
	x->mode = m.mode;
	x->size = m.size;
	x->hash = m.hash;
	x->user_fs = user_fs;
	x->started = time(NULL);
	snprintf(x->name, sizeof(x->name), "%s", m.name);
	snprintf(x->tmp, sizeof(x->tmp), ".storm-%012" PRIx64, key);
	x->dirfd = dirfd;
	dirfd = -1;
	if (ready_state == X_RECEIVING && jnodes)
		x->attest = make_attest(key, m.job, owner, jnodes);
	fd = openat(x->dirfd, x->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	x->fd = fd;
	if (fd < 0 || (!user_fs && fchown(fd, owner, m.uid == owner ? m.gid :
							 (gid_t) -1))) {
		nm_error("bcast: job %u: cannot create %s: %s", m.job, x->name,
			 strerror(errno));
		st = STORM_BCAST_EIO;
		goto fail;
	}
	if (m.size) {
		/* Allocate now: a tmpfs that fills up under a shared mapping
		 * raises SIGBUS in the NM, an ENOSPC here is a clean refusal. */
		int rc = posix_fallocate(fd, 0, (off_t) m.size);

		if (rc) {
			nm_error("bcast: job %u: cannot allocate %" PRIu64 " bytes for %s: %s",
				 m.job, m.size, x->name, strerror(rc));
			st = rc == ENOSPC ? STORM_BCAST_ENOSPC : STORM_BCAST_EIO;
			goto fail;
		}
		/* Pre-fault: a first-touch fault per page costs more than
		 * the copy into it. */
		x->map = mmap(NULL, m.size, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_POPULATE, fd, 0);
		if (x->map == MAP_FAILED) {
			x->map = NULL;
			nm_error("bcast: job %u: mmap %s: %s", m.job, x->name,
				 strerror(errno));
			st = STORM_BCAST_EIO;
			goto fail;
		}
	}
	pthread_mutex_lock(&B.lock);
	x->state = ready_state;
	pthread_mutex_unlock(&B.lock);
	if (user_fs)
		fs_root();
	if (ready_state == X_READY)
		nm_info("bcast: job %u.%u: receiving %s (%" PRIu64 " bytes) from rank %d (job checked %s)",
			m.job, m.step, x->name, m.size, root,
			attested ? "by the relay" : "with slurmctld");
	else
		nm_info("bcast: job %u.%u: receiving %s (%" PRIu64 " bytes) from srun, to relay to the step's nodes",
			m.job, m.step, x->name, m.size);
	free(payload);
	*out = x;
	return STORM_BCAST_READY;
fail:
	xfer_close(x, true);
	pthread_mutex_lock(&B.lock);
	x->state = X_FREE;
	pthread_mutex_unlock(&B.lock);
done:
	if (user_fs)
		fs_root();
	if (dirfd >= 0)
		close(dirfd);
	free(payload);
	*out = NULL;
	return st;
}

static int accept_manifest(const char *cred, const char *attest, int root,
			   uint64_t key, xstate_t ready_state, xfer_t **out)
{
	int st;

	pthread_mutex_lock(&B.check_lock);
	st = check_manifest(cred, attest, root, key, ready_state, out);
	pthread_mutex_unlock(&B.check_lock);
	return st;
}

/* A manifest from the fabric: srun's credential, then (after a newline)
 * the relay's attestation if it made one. */
static void handle_manifest(work_t *w)
{
	xfer_t *x;
	uint64_t key = w->key & STORM_BCAST_KEY_MASK;
	char *attest = strchr(w->manifest, '\n');

	if (attest)
		*attest++ = '\0';
	set_state(w->root, key, accept_manifest(w->manifest, attest, w->root,
						key, X_READY, &x));
}

static bool hash_ok(xfer_t *x)
{
	if (!x->verified)
		x->verified = storm_bcast_hash(x->size ? x->map : zero_page,
					       x->size) == x->hash;
	return x->verified;
}

/* Commit (checksum, then rename into place) or abort (unlink) a transfer;
 * frees its slot.  Returns STORM_BCAST_DONE or why not. */
static int finish_xfer(xfer_t *x, bool commit)
{
	int st = STORM_BCAST_ABORTED;

	if (commit) {
		if (x->user_fs)
			fs_identity(x->uid, x->gid);
		if (!hash_ok(x)) {
			nm_error("bcast: job %u: %s: checksum mismatch, dropped",
				 x->job, x->name);
			st = STORM_BCAST_EBADMSG;
		} else if (fchmod(x->fd, x->mode ? x->mode : 0700) ||
			   renameat(x->dirfd, x->tmp, x->dirfd, x->name)) {
			nm_error("bcast: job %u: cannot put %s in place: %s",
				 x->job, x->name, strerror(errno));
			st = STORM_BCAST_EIO;
		} else {
			st = STORM_BCAST_DONE;
		}
		if (x->user_fs)
			fs_root();
	}
	if (st != STORM_BCAST_DONE)
		nm_info("bcast: job %u: %s %s; temporary file removed", x->job,
			x->name, commit ? "refused" : "aborted");
	else
		nm_verbose("bcast: job %u.%u: %s complete (%" PRIu64 " bytes)",
			   x->job, x->step, x->name, x->size);
	xfer_close(x, st != STORM_BCAST_DONE);
	pthread_mutex_lock(&B.lock);
	x->state = X_FREE;
	pthread_mutex_unlock(&B.lock);
	return st;
}

static void handle_end(work_t *w)
{
	xfer_t *x;

	pthread_mutex_lock(&B.lock);
	x = find_xfer(w->root, w->key);
	pthread_mutex_unlock(&B.lock);
	if (x)
		set_state(w->root, w->key, finish_xfer(x, w->kind == W_COMMIT));
}

/* ------------------------------------------------ the relay's own copy */
extern int nm_bcast_accept(const char *cred, uint64_t key,
			   nm_bcast_file_t **out)
{
	return accept_manifest(cred, NULL, B.nm->rank,
			       key & STORM_BCAST_KEY_MASK, X_RECEIVING, out);
}

extern void *nm_bcast_file_map(nm_bcast_file_t *x, uint64_t *size)
{
	*size = x->size;
	return x->size ? x->map : zero_page;
}

extern const char *nm_bcast_file_attest(nm_bcast_file_t *x)
{
	return x->attest;
}

extern uid_t nm_bcast_file_uid(nm_bcast_file_t *x)
{
	return x->uid;
}

extern bool nm_bcast_file_verify(nm_bcast_file_t *x)
{
	return hash_ok(x);
}

extern int nm_bcast_finish(nm_bcast_file_t *x, bool commit)
{
	uint64_t key = x->key;
	int st = finish_xfer(x, commit);

	set_state(B.nm->rank, key, st);	/* the tasks waiting on this node */
	return st;
}

/* ----------------------------------------------------------- sweep */
/* At start-up no transfer is in flight: temporaries left by an NM that
 * died (SIGKILL, node crash) are removed. */
static void remove_stale_tmp(void)
{
	DIR *d = opendir_at(B.dirfd);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned job;
		char c;
		DIR *jd;
		struct dirent *f;
		int jfd;

		if (sscanf(e->d_name, "job_%u%c", &job, &c) != 1)
			continue;
		jfd = openat(B.dirfd, e->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (jfd < 0 || !(jd = fdopendir(jfd))) {
			if (jfd >= 0)
				close(jfd);
			continue;
		}
		while ((f = readdir(jd)))
			if (!strncmp(f->d_name, ".storm-", 7) &&
			    !unlinkat(jfd, f->d_name, 0))
				nm_info("bcast: removed %s/%s/%s left by an earlier node manager",
					B.nm->conf.bcast_dir, e->d_name, f->d_name);
		closedir(jd);
	}
	closedir(d);
}

/* Remove job directories of jobs that no longer run on this node, and
 * prepared transfers that never received data. */
static void sweep(void)
{
	DIR *d;
	struct dirent *e;
	time_t now = time(NULL);

	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_XFERS; i++) {
		xfer_t *x = &B.x[i];

		if (x->state == X_READY &&
		    now - x->started > 2 * (time_t) (B.nm->conf.timeout_us /
						      1000000 + 1)) {
			x->state = X_FINISHING;
			pthread_mutex_unlock(&B.lock);
			nm_info("bcast: job %u: %s never arrived; removed", x->job,
				x->name);
			xfer_close(x, true);
			pthread_mutex_lock(&B.lock);
			x->state = X_FREE;
		}
	}
	pthread_mutex_unlock(&B.lock);

	d = opendir_at(B.dirfd);
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned job;
		char c;
		bool on_node = false, running = false;
		uid_t owner;
		bool busy = false;
		int rc;

		if (sscanf(e->d_name, "job_%u%c", &job, &c) != 1)
			continue;
		pthread_mutex_lock(&B.lock);
		for (int i = 0; i < MAX_XFERS; i++)
			if (B.x[i].state != X_FREE && B.x[i].job == job)
				busy = true;
		/* force a fresh answer from slurmctld */
		for (int i = 0; i < JOB_CACHE; i++)
			if (B.jobs[i].job == job)
				B.jobs[i].at = 0;
		pthread_mutex_unlock(&B.lock);
		if (busy)
			continue;
		pthread_mutex_lock(&B.check_lock);
		rc = job_check(job, &on_node, &running, &owner, NULL);
		pthread_mutex_unlock(&B.check_lock);
		if (rc == -ENOENT || (!rc && (!running || !on_node)))
			remove_job_dir(job, "job no longer runs here");
	}
	closedir(d);
}

static void *worker(void *arg)
{
	pthread_mutex_lock(&B.lock);
	while (!B.stop) {
		work_t *w = B.head;

		if (!w) {
			struct timespec ts;

			pthread_mutex_unlock(&B.lock);
			nm_bcast_wait_expire();
			pthread_mutex_lock(&B.lock);
			if (B.head || B.stop)
				continue;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&B.cond, &B.lock, &ts);
			if (!B.head && time(NULL) - B.last_sweep >= SWEEP_PERIOD) {
				B.last_sweep = time(NULL);
				pthread_mutex_unlock(&B.lock);
				sweep();
				pthread_mutex_lock(&B.lock);
			}
			continue;
		}
		B.head = w->next;
		if (!B.head)
			B.tail = NULL;
		pthread_mutex_unlock(&B.lock);
		if (w->kind == W_MANIFEST)
			handle_manifest(w);
		else
			handle_end(w);
		free(w->manifest);
		free(w);
		pthread_mutex_lock(&B.lock);
	}
	pthread_mutex_unlock(&B.lock);
	return NULL;
}

/* ---------------------------------------------------- control socket */
/* "bcast_cleanup <jobid>": the SPANK plugin's job epilog (root only). */
static int ctl_cleanup(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		       size_t outlen)
{
	unsigned job;
	char c;
	int rc;

	if (peer->uid != 0) {
		snprintf(out, outlen, "permission denied");
		return 1;
	}
	if (sscanf(args, "%u%c", &job, &c) != 1) {
		snprintf(out, outlen, "usage: bcast_cleanup JOBID");
		return 1;
	}
	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < JOB_CACHE; i++)
		if (B.jobs[i].job == job)
			B.jobs[i].at = 0;
	pthread_mutex_unlock(&B.lock);
	rc = remove_job_dir(job, "job epilog");
	if (rc) {
		snprintf(out, outlen, "%s", strerror(-rc));
		return 1;
	}
	return 0;
}

/* "bcast_status": transfers in progress, for tests and stormctl. */
static int ctl_status(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		      size_t outlen)
{
	size_t o = 0;
	int n = 0;

	pthread_mutex_lock(&B.lock);
	for (int i = 0; i < MAX_XFERS; i++)
		if (B.x[i].state != X_FREE)
			n++;
	o += snprintf(out, outlen, "transfers=%d", n);
	pthread_mutex_unlock(&B.lock);
	(void) o;
	return 0;
}

/* --------------------------------------------------------- module */
static int bcast_init(nm_t *nm)
{
	int rc;

	B.nm = nm;
	B.stop = false;
	for (int i = 0; i < MAX_XFERS; i++) {
		B.x[i].fd = -1;
		B.x[i].dirfd = -1;
	}
	B.dirfd = open(nm->conf.bcast_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (B.dirfd < 0) {
		rc = -errno;
		nm_error("bcast: cannot open BcastDir %s: %s", nm->conf.bcast_dir,
			 strerror(-rc));
		return rc;
	}
	remove_stale_tmp();
	if ((rc = pthread_create(&B.worker, NULL, worker, NULL))) {
		close(B.dirfd);
		B.dirfd = -1;
		return -rc;
	}
	B.worker_started = true;
	storm_set_dest_fn(nm->ctx, dest_cb, release_cb, nm);
	nm_ctl_register("bcast_cleanup", ctl_cleanup);
	nm_ctl_register("bcast_status", ctl_status);
	nm_bcast_wait_init();
	nm_info("bcast: receiving broadcasts into %s (BcastMaxSize=%" PRIu64 ")",
		nm->conf.bcast_dir, nm->conf.bcast_max_bytes);
	nm_bcast_dir_report(nm->conf.bcast_dir);
	return 0;
}

static void bcast_fini(nm_t *nm)
{
	/* No progress any more, so nothing writes into our mappings. */
	if (nm->ctx)
		storm_ctx_stop_progress(nm->ctx);
	pthread_mutex_lock(&B.lock);
	B.stop = true;
	pthread_cond_broadcast(&B.cond);
	pthread_mutex_unlock(&B.lock);
	if (B.worker_started)
		pthread_join(B.worker, NULL);
	B.worker_started = false;
	for (work_t *w = B.head, *n; w; w = n) {
		n = w->next;
		free(w->manifest);
		free(w);
	}
	B.head = B.tail = NULL;
	/* Nothing half-written survives the NM. */
	for (int i = 0; i < MAX_XFERS; i++)
		if (B.x[i].state != X_FREE) {
			xfer_close(&B.x[i], true);
			B.x[i].state = X_FREE;
		}
	if (B.dirfd >= 0)
		close(B.dirfd);
	B.dirfd = -1;
	nm_bcast_wait_fini();
}

const nm_module_t nm_bcast_module = {
	.name = "bcast",
	.init = bcast_init,
	.fini = bcast_fini,
};

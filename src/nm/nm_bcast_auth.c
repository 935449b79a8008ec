/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_auth.c - which user and job may receive what (storm-nm(8)).
 *
 * The munge credential gives the requesting uid (munged vouches for it);
 * slurmctld gives the job's owner and nodes (slurm_load_job, cached per
 * job), at the relay, which passes them on in a munge credential of its
 * own (the job attestation, below).  A broadcast is accepted only for a
 * job the uid owns (or root), that runs on this node.
 *
 * Checks run in the transfer worker and in relay threads: check_lock keeps
 * them one at a time, for the replay cache and the job cache.  The cache's
 * entries are also reset from the control socket (a job's epilog), which
 * must not wait for a slurmctld lookup: cache_lock guards the entries
 * alone, never across a lookup.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "nm_bcast_auth.h"
#include "src/common/storm_bcast.h"

#define JOB_CACHE 32
#define JOB_CACHE_TTL 30	/* s */
#define SEEN_KEYS 1024

typedef struct job_cache {
	uint32_t job;
	uid_t uid;
	bool on_node;
	bool running;
	time_t at;
	char *nodes;		/* the job's node list, as slurmctld gave it */
} job_cache_t;

static munge_err_t munge_decode_default(const char *cred, void **payload,
					int *len, uid_t *uid, gid_t *gid);
static munge_err_t munge_encode_default(char **cred, const void *payload,
					int len);
static int slurm_load_job_default(uint32_t job, nm_bcast_job_t *out);

static const nm_bcast_auth_ops_t default_ops = {
	.decode = munge_decode_default,
	.encode = munge_encode_default,
	.load_job = slurm_load_job_default,
};

static struct {
	const nm_t *nm;
	const nm_bcast_auth_ops_t *ops;
	pthread_mutex_t check_lock;
	pthread_mutex_t cache_lock;
	job_cache_t jobs[JOB_CACHE];
	uint64_t seen[SEEN_KEYS];	/* replay cache of manifest keys */
	int seen_pos;
} bcast_auth = { .ops = &default_ops, .check_lock = PTHREAD_MUTEX_INITIALIZER,
	.cache_lock = PTHREAD_MUTEX_INITIALIZER };

extern void nm_bcast_auth_init(const nm_t *nm, const nm_bcast_auth_ops_t *ops)
{
	bcast_auth.nm = nm;
	bcast_auth.ops = ops ? ops : &default_ops;
}

/* ------------------------------------------------- munge and slurmctld */
static munge_err_t munge_decode_default(const char *cred, void **payload,
					int *len, uid_t *uid, gid_t *gid)
{
	return munge_decode(cred, NULL, payload, len, uid, gid);
}

static munge_err_t munge_encode_default(char **cred, const void *payload,
					int len)
{
	return munge_encode(cred, NULL, payload, len);
}

static int slurm_load_job_default(uint32_t job, nm_bcast_job_t *out)
{
	job_info_msg_t *msg = NULL;
	slurm_job_info_t *j;
	uint32_t base;

	if (slurm_load_job(&msg, job, SHOW_ALL) != SLURM_SUCCESS ||
	    !msg || msg->record_count < 1) {
		int e = errno;

		if (msg)
			slurm_free_job_info_msg(msg);
		return e == ESLURM_INVALID_JOB_ID ? -ENOENT : -EIO;
	}
	j = &msg->job_array[0];
	base = j->job_state & JOB_STATE_BASE;
	out->owner = j->user_id;
	out->running = base == JOB_RUNNING || base == JOB_SUSPENDED ||
		       (j->job_state & JOB_CONFIGURING);
	out->nodes = j->nodes ? strdup(j->nodes) : NULL;
	slurm_free_job_info_msg(msg);
	return 0;
}

static bool on_this_node(const char *nodes)
{
	struct hostlist *hl = nodes ? slurm_hostlist_create(nodes) : NULL;
	bool found = hl && slurm_hostlist_find(hl, bcast_auth.nm->node) >= 0;

	if (hl)
		slurm_hostlist_destroy(hl);
	return found;
}

/* --------------------------------------------------------- job cache */
/* A fresh answer for the job from the cache, or the slot to refill. */
static job_cache_t *cache_find(uint32_t job, job_cache_t *hit)
{
	time_t now = time(NULL);
	job_cache_t *slot = &bcast_auth.jobs[0];

	pthread_mutex_lock(&bcast_auth.cache_lock);
	for (int i = 0; i < JOB_CACHE; i++) {
		job_cache_t *c = &bcast_auth.jobs[i];

		if (c->job == job && now - c->at < JOB_CACHE_TTL && c->running) {
			*hit = *c;
			pthread_mutex_unlock(&bcast_auth.cache_lock);
			return NULL;
		}
		if (c->at < slot->at)
			slot = c;
	}
	pthread_mutex_unlock(&bcast_auth.cache_lock);
	return slot;
}

/*
 * Owner, state and nodes of a job, from slurmctld (cached per job).
 * *nodes points into the cache: valid while the caller holds check_lock,
 * as only a lookup (under check_lock) replaces it.
 */
static int job_check(uint32_t job, bool *on_node, bool *running,
		     uid_t *owner, const char **nodes)
{
	job_cache_t hit, *slot = cache_find(job, &hit);
	nm_bcast_job_t j = { 0 };
	int rc;

	if (!slot) {
		*on_node = hit.on_node;
		*running = hit.running;
		*owner = hit.uid;
		if (nodes)
			*nodes = hit.nodes ? hit.nodes : "";
		return 0;
	}
	if ((rc = bcast_auth.ops->load_job(job, &j)))
		return rc;
	*owner = j.owner;
	*running = j.running;
	*on_node = on_this_node(j.nodes);
	pthread_mutex_lock(&bcast_auth.cache_lock);
	free(slot->nodes);
	slot->nodes = j.nodes;
	slot->job = job;
	slot->uid = *owner;
	slot->on_node = *on_node;
	slot->running = *running;
	slot->at = time(NULL);
	pthread_mutex_unlock(&bcast_auth.cache_lock);
	if (nodes)
		*nodes = slot->nodes ? slot->nodes : "";
	return 0;
}

extern void nm_bcast_job_forget(uint32_t job)
{
	pthread_mutex_lock(&bcast_auth.cache_lock);
	for (int i = 0; i < JOB_CACHE; i++)
		if (bcast_auth.jobs[i].job == job)
			bcast_auth.jobs[i].at = 0;
	pthread_mutex_unlock(&bcast_auth.cache_lock);
}

extern int nm_bcast_job_runs_here(uint32_t job)
{
	bool on_node = false, running = false;
	uid_t owner;
	int rc;

	pthread_mutex_lock(&bcast_auth.check_lock);
	rc = job_check(job, &on_node, &running, &owner, NULL);
	pthread_mutex_unlock(&bcast_auth.check_lock);
	if (rc == -ENOENT || (!rc && (!running || !on_node)))
		return 0;
	return rc ? -EIO : 1;
}

/* ---------------------------------------------------------- manifest */
static int parse_payload(const char *p, nm_bcast_manifest_t *m)
{
	unsigned long long key, size, hash;
	unsigned job, step, uid, gid, mode;
	int n = 0;

	if (sscanf(p, "storm-bcast-1 job=%u step=%u uid=%u gid=%u key=%llx "
		   "size=%llu mode=%o hash=%llx dir=%1023s name=%255s%n",
		   &job, &step, &uid, &gid, &key, &size, &mode, &hash, m->dir,
		   m->name, &n) != 10)
		return -EINVAL;
	m->tree = !strcmp(p + n, " " STORM_BCAST_KIND_TREE);
	if (p[n] != '\0' && !m->tree)
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

/* Has this (root, key) been seen?  Remembers it if not. */
static bool seen_key(int root, uint64_t key)
{
	uint64_t k = ((uint64_t) root << 48) ^ key;

	for (int i = 0; i < SEEN_KEYS; i++)
		if (bcast_auth.seen[i] == k)
			return true;
	bcast_auth.seen[bcast_auth.seen_pos] = k;
	bcast_auth.seen_pos = (bcast_auth.seen_pos + 1) % SEEN_KEYS;
	return false;
}

/*
 * srun's credential: vouched for by munged, well formed, for this
 * transfer, new, and claiming the uid (and, but for root, the gid) it
 * comes from.  Sets *muid to that uid.
 */
static int check_credential(const char *cred, int root, uint64_t key,
			    nm_bcast_manifest_t *m, uid_t *muid)
{
	void *payload = NULL;
	int plen = 0, rc = -EPERM;
	gid_t mgid;
	munge_err_t e = bcast_auth.ops->decode(cred, &payload, &plen, muid,
						&mgid);

	/* Several NMs of one host share a munged (multiple-slurmd test
	 * clusters): as Slurm's auth/munge does, accept a replay and keep our
	 * own replay cache of keys instead. */
	if (e != EMUNGE_SUCCESS && e != EMUNGE_CRED_REPLAYED)
		nm_error("bcast: rank %d: bad credential: %s", root,
			 munge_strerror(e));
	else if (!payload || plen <= 0 || ((char *) payload)[plen - 1] != '\0' ||
		 parse_payload(payload, m))
		nm_error("bcast: rank %d: malformed manifest", root);
	else if ((m->key & STORM_BCAST_KEY_MASK) != key)
		nm_error("bcast: rank %d: credential is for another transfer",
			 root);
	else if (seen_key(root, key))
		nm_error("bcast: rank %d: replayed manifest key %" PRIx64,
			 root, key);
	else if (m->uid != *muid || (m->gid != mgid && *muid != 0))
		nm_error("bcast: job %u: credential of uid %u claims uid %u",
			 m->job, (unsigned) *muid, (unsigned) m->uid);
	else
		rc = 0;
	free(payload);
	return rc;
}

/* --------------------------------------------------------- attestation */
/*
 * The relay's job attestation: a munge credential of root (the relay's
 * node manager) saying that slurmctld, asked for this transfer, showed it
 * job J of owner U on nodes N.  The other nodes take it instead of asking
 * slurmctld themselves: one lookup per broadcast, not one per node, which
 * on a large step is a visible part of the manifest phase.  Only root can
 * make one, and it names the transfer's key, which srun's own credential
 * binds to the job and uid.  A node that cannot use it (absent, expired,
 * not root's, for another transfer) asks slurmctld.
 */
extern char *nm_bcast_attest_make(const nm_bcast_grant_t *g)
{
	char *payload = NULL, *cred = NULL;
	munge_err_t e;

	if (!g->nodes)
		return NULL;
	if (asprintf(&payload, "storm-bcast-job-1 key=%" PRIx64 " job=%u owner=%u nodes=%s",
		     g->m.key & STORM_BCAST_KEY_MASK, g->m.job,
		     (unsigned) g->owner, g->nodes) < 0)
		return NULL;
	e = bcast_auth.ops->encode(&cred, payload, (int) strlen(payload) + 1);
	free(payload);
	if (e != EMUNGE_SUCCESS) {
		nm_error("bcast: job %u: cannot make the job attestation (%s): every node asks slurmctld",
			 g->m.job, munge_strerror(e));
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
	struct hostlist *hl;
	munge_err_t e = bcast_auth.ops->decode(att, &payload, &plen, &auid,
						&agid);

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
		*on_node = slurm_hostlist_find(hl, bcast_auth.nm->node) >= 0;
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

/* ------------------------------------------------------------- grant */
/* The job: owned by muid (or muid is root), running, on this node. */
static int check_job(const char *attest, int root, uint64_t key, uid_t muid,
		     nm_bcast_grant_t *g)
{
	bool on_node = false, running = false;
	const char *jnodes = NULL;
	const nm_bcast_manifest_t *m = &g->m;

	if (attest && !check_attest(attest, root, key, m->job, &g->owner,
				    &on_node)) {
		running = true;	/* the relay's lookup found it running */
		g->attested = true;
	} else if (job_check(m->job, &on_node, &running, &g->owner, &jnodes)) {
		nm_error("bcast: job %u: cannot look it up in slurmctld", m->job);
		return -EPERM;
	}
	if ((g->owner != muid && muid != 0) || !running || !on_node) {
		nm_error("bcast: refusing %s for job %u from uid %u: %s", m->name,
			 m->job, (unsigned) muid,
			 !running ? "job not running" :
			 !on_node ? "this node is not in the job's allocation" :
				    "uid does not own the job");
		return -EPERM;
	}
	if (jnodes && !(g->nodes = strdup(jnodes)))
		nm_error("bcast: job %u: out of memory: no job attestation",
			 m->job);
	return 0;
}

extern int nm_bcast_authorize(const char *cred, const char *attest, int root,
			      uint64_t key, nm_bcast_grant_t *g)
{
	int st = STORM_BCAST_EPERM;
	uid_t muid;

	memset(g, 0, sizeof(*g));
	pthread_mutex_lock(&bcast_auth.check_lock);
	if (check_credential(cred, root, key, &g->m, &muid) ||
	    check_job(attest, root, key, muid, g))
		goto done;
	if (g->m.size > bcast_auth.nm->conf.bcast_max_bytes) {
		nm_error("bcast: job %u: %s is %" PRIu64 " bytes, BcastMaxSize is %" PRIu64,
			 g->m.job, g->m.name, g->m.size,
			 bcast_auth.nm->conf.bcast_max_bytes);
		st = STORM_BCAST_EFBIG;
		goto done;
	}
	st = STORM_BCAST_READY;
done:
	pthread_mutex_unlock(&bcast_auth.check_lock);
	if (st != STORM_BCAST_READY)
		nm_bcast_grant_free(g);
	return st;
}

extern void nm_bcast_grant_free(nm_bcast_grant_t *g)
{
	free(g->nodes);
	memset(g, 0, sizeof(*g));
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_auth.h - which user and job may receive what: srun's manifest
 * credential, the relay's job attestation and the job cache
 * (nm_bcast_auth.c).
 */
#ifndef STORM_NM_BCAST_AUTH_H
#define STORM_NM_BCAST_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <munge.h>

#include "nm.h"

/* What srun's credential asks for: its munge payload, parsed. */
typedef struct nm_bcast_manifest {
	uint32_t job, step;
	uid_t uid;
	gid_t gid;
	uint64_t key, size, hash;
	unsigned mode;		/* permission bits only */
	char dir[1024];		/* "-" (job directory) or an absolute dir */
	char name[256];
	bool tree;		/* a bundle (storm_bundle.h), extracted into
				 * a directory of that name */
} nm_bcast_manifest_t;

/* A manifest that passed every check: what this node may create, for
 * whom. */
typedef struct nm_bcast_grant {
	nm_bcast_manifest_t m;
	uid_t owner;		/* the job's owner */
	bool attested;		/* the relay's attestation vouched for the job */
	char *nodes;		/* the job's nodes when slurmctld was asked,
				 * else NULL (nm_bcast_grant_free) */
} nm_bcast_grant_t;

/* A job as slurmctld shows it. */
typedef struct nm_bcast_job {
	uid_t owner;
	bool running;		/* running, suspended or configuring */
	char *nodes;		/* malloc'd node list, or NULL */
} nm_bcast_job_t;

/*
 * Where credentials and jobs come from: munged and slurmctld in the node
 * manager, stand-ins in the unit tests.  decode and encode follow
 * munge_decode(3) and munge_encode(3) without a context; load_job returns
 * 0, -ENOENT (no such job) or -EIO.
 */
typedef struct nm_bcast_auth_ops {
	munge_err_t (*decode)(const char *cred, void **payload, int *len,
			      uid_t *uid, gid_t *gid);
	munge_err_t (*encode)(char **cred, const void *payload, int len);
	int (*load_job)(uint32_t job, nm_bcast_job_t *out);
} nm_bcast_auth_ops_t;

/* nm gives this node's name and BcastMaxSize; ops NULL: munge and
 * slurmctld. */
extern void nm_bcast_auth_init(const nm_t *nm, const nm_bcast_auth_ops_t *ops);

/*
 * Check srun's credential (and the relay's attestation when attest is not
 * NULL) for the transfer (root, key): a credential munged vouches for,
 * naming this transfer, not seen before, for the uid it comes from, of a
 * job that uid owns (or root) running on this node, no larger than
 * BcastMaxSize.  Returns STORM_BCAST_READY with *g filled, or the
 * refusal (STORM_BCAST_EPERM, STORM_BCAST_EFBIG) with *g empty.
 */
extern int nm_bcast_authorize(const char *cred, const char *attest, int root,
			      uint64_t key, nm_bcast_grant_t *g);
extern void nm_bcast_grant_free(nm_bcast_grant_t *g);

/*
 * The relay's job attestation for a grant it checked with slurmctld (a
 * munge credential of root, see nm_bcast_auth.c), or NULL: the other nodes
 * then ask slurmctld themselves.
 */
extern char *nm_bcast_attest_make(const nm_bcast_grant_t *g);

/* Does the job still run on this node?  1 yes, 0 no (ended, gone, moved),
 * -EIO when slurmctld cannot tell.  Asks slurmctld afresh. */
extern int nm_bcast_job_runs_here(uint32_t job);
/* Forget what the job cache knows of a job (its epilog ran). */
extern void nm_bcast_job_forget(uint32_t job);

#endif /* STORM_NM_BCAST_AUTH_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast.c - the node manager's end of the STORM file broadcast: the
 * module that starts and stops it, its control commands, and the relay's
 * own copy.
 *
 * Protocol in src/common/storm_bcast.h.  In short: srun hands the file to
 * the node manager of the step's first node (the relay, nm_relay.c), which
 * multicasts a manifest (srun's munge credential); each NM checks it
 * (nm_bcast_auth.c) and prepares a hidden temporary file of the final size
 * (nm_bcast_xfer.c, nm_bcast_dir.c), the relay multicasts the file and the
 * NM's destination callback (nm_bcast_fabric.c) hands libstormmech the
 * mapping of that file.  The relay keeps its own copy through the same
 * checks (nm_bcast_accept / nm_bcast_finish, below).  Tasks may wait for
 * their node's copy (nm_bcast_wait.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nm.h"
#include "nm_bcast.h"
#include "nm_bcast_auth.h"
#include "nm_bcast_cache.h"
#include "nm_bcast_cache_ctl.h"
#include "nm_bcast_dir.h"
#include "nm_bcast_fabric.h"
#include "nm_bcast_wait.h"
#include "nm_bcast_xfer.h"
#include "src/common/storm_bcast.h"

static const nm_t *bcast_nm;

/* ------------------------------------------------ the relay's own copy */
extern int nm_bcast_accept(const char *cred, uint64_t key,
			   nm_bcast_file_t **out)
{
	return nm_bcast_xfer_accept(cred, NULL, bcast_nm->rank,
				    key & STORM_BCAST_KEY_MASK,
				    NM_XFER_RECEIVING, out);
}

extern void *nm_bcast_file_map(nm_bcast_file_t *f, uint64_t *size)
{
	return nm_bcast_xfer_map(f, size);
}

extern const char *nm_bcast_file_attest(nm_bcast_file_t *f)
{
	return nm_bcast_xfer_attest(f);
}

extern uid_t nm_bcast_file_uid(nm_bcast_file_t *f)
{
	return nm_bcast_xfer_uid(f);
}

extern uint32_t nm_bcast_file_job(nm_bcast_file_t *f)
{
	return nm_bcast_xfer_job(f);
}

extern bool nm_bcast_file_verify(nm_bcast_file_t *f)
{
	return nm_bcast_xfer_verify(f);
}

extern int nm_bcast_finish(nm_bcast_file_t *f, bool commit)
{
	uint64_t key = nm_bcast_xfer_key(f);
	int st = nm_bcast_xfer_finish(f, commit);

	/* the tasks waiting on this node */
	nm_bcast_publish(bcast_nm->rank, key, st);
	return st;
}

/* ---------------------------------------------------- control socket */
/* "bcast_cleanup <jobid>": the SPANK plugin's job epilog (root only). */
static int ctl_cleanup(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		       size_t outlen)
{
	unsigned job;
	char c;
	int rc;

	(void) nm;
	if (peer->uid != 0) {
		snprintf(out, outlen, "permission denied");
		return 1;
	}
	if (sscanf(args, "%u%c", &job, &c) != 1) {
		snprintf(out, outlen, "usage: bcast_cleanup JOBID");
		return 1;
	}
	nm_bcast_job_forget(job);
	rc = nm_bcast_job_dir_remove(job, "job epilog");
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
	(void) nm;
	(void) peer;
	(void) args;
	snprintf(out, outlen, "transfers=%d", nm_bcast_xfer_count());
	return 0;
}

/* --------------------------------------------------------- module */
static int bcast_init(nm_t *nm)
{
	int rc;

	bcast_nm = nm;
	nm_bcast_auth_init(nm, NULL);
	nm_bcast_xfer_init(nm);
	if ((rc = nm_bcast_dir_open(nm)))
		return rc;
	nm_bcast_wait_init();	/* before the worker and callbacks wake waiters */
	if ((rc = nm_bcast_fabric_start(nm))) {
		nm_bcast_dir_close();
		return rc;
	}
	nm_ctl_register("bcast_cleanup", ctl_cleanup);
	nm_ctl_register("bcast_status", ctl_status);
	/* a node without its cache still receives every file */
	if (nm_bcast_cache_init(nm->conf.bcast_dir, nm->conf.bcast_cache_bytes,
				NM_BCAST_CACHE_HOLD_S))
		nm_error("bcast: no cache across jobs on this node");
	nm_bcast_cache_ctl_register();
	nm_info("bcast: receiving broadcasts into %s (BcastMaxSize=%" PRIu64 ")",
		nm->conf.bcast_dir, nm->conf.bcast_max_bytes);
	nm_bcast_dir_report(nm->conf.bcast_dir);
	return 0;
}

static void bcast_fini(nm_t *nm)
{
	nm_bcast_fabric_stop(nm);
	nm_bcast_xfer_fini();
	nm_bcast_cache_fini();
	nm_bcast_dir_close();
	nm_bcast_wait_fini();
}

const nm_module_t nm_bcast_module = {
	.name = "bcast",
	.init = bcast_init,
	.fini = bcast_fini,
};

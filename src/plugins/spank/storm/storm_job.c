/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_job.c - the SPANK plugin in job script context (job prolog and
 * epilog, run by slurmd as root on every node of the job).
 *
 * At the end of a job, ask the node's manager to remove the job's
 * broadcast directory (BcastDir/job_<id>/).  The NM also sweeps, every few
 * seconds, the directories of jobs that no longer run on the node, so a
 * lost request (NM restarting) only delays the cleanup.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storm_spank.h"
#include "src/common/storm_nmctl.h"

extern int storm_job_epilog(spank_t sp, int ac, char **av)
{
	storm_conf_t conf;
	uint32_t job = 0;
	const char *node = getenv("SLURMD_NODENAME");
	char sock[4400], req[64], reply[512];
	int rc;

	if (storm_spank_load_conf(ac, av, "epilog", &conf, NULL, 0))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || !job)
		return 0;
	if (!node || !node[0]) {
		slurm_verbose("%s: epilog: no SLURMD_NODENAME; the node manager's sweep removes job %u's files",
			      STORM_SPANK_PREFIX, job);
		return 0;
	}
	storm_nm_paths(conf.bcast_dir, node, NULL, 0, sock, sizeof(sock));
	snprintf(req, sizeof(req), "bcast_cleanup %u", job);
	rc = storm_nm_request(sock, req, reply, sizeof(reply), 5000);
	if (rc)
		slurm_verbose("%s: epilog: node manager %s: %s; its sweep removes job %u's files",
			      STORM_SPANK_PREFIX, sock, strerror(-rc), job);
	else if (strncmp(reply, "ok", 2))
		slurm_error("%s: epilog: removing job %u's broadcast files: %s",
			    STORM_SPANK_PREFIX, job, reply);
	/* never fail the epilog: that would drain the node */
	return 0;
}

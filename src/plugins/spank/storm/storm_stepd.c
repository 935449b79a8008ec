/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_stepd.c - the SPANK plugin inside slurmstepd (remote context).
 *
 * BcastOverlap: srun launches the step while the STORM broadcast moves
 * its executable, with argv[0] already naming the node-local copy and
 * SLURM_STORM_BCAST_WAIT=<key>:<ms> in the step's environment.  Each task
 * waits here, as the user, just before exec, until this node's manager
 * says the file of that transfer is in place and every node of the step
 * holds its copy (the relay's go-ahead); a refusal, an abort or a
 * wait that runs out fails the task instead (srun also kills the step when
 * the broadcast fails), so no task executes a partial or an older file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storm_spank.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_nmctl.h"

extern int storm_stepd_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	slurm_verbose("%s: init in slurmstepd for %u.%u", STORM_SPANK_PREFIX,
		      job, step);
	return 0;
}

extern int storm_stepd_bcast_wait(spank_t sp, int ac, char **av, char *err,
				  size_t errlen)
{
	char val[128], sock[4200], req[128], reply[512];
	const char *node = getenv("SLURMD_NODENAME");
	unsigned long long key, ms;
	storm_conf_t conf;
	int n = 0, rc;

	if (spank_getenv(sp, STORM_BCAST_WAIT_ENV, val, sizeof(val)) !=
	    ESPANK_SUCCESS)
		return 1;
	/* the user's program does not need to see it */
	spank_unsetenv(sp, STORM_BCAST_WAIT_ENV);
	if (sscanf(val, "%llx:%llu%n", &key, &ms, &n) != 2 || val[n]) {
		snprintf(err, errlen, "malformed %s='%s'",
			 STORM_BCAST_WAIT_ENV, val);
		return -1;
	}
	if (!node || !node[0]) {
		snprintf(err, errlen, "no SLURMD_NODENAME: cannot find this node's manager to wait for the broadcast executable");
		return -1;
	}
	if (storm_spank_load_conf(ac, av, "slurmstepd", &conf, NULL, 0)) {
		snprintf(err, errlen, "no storm.conf: cannot wait for the broadcast executable");
		return -1;
	}
	storm_nm_paths(conf.bcast_dir, node, NULL, 0, sock, sizeof(sock));
	snprintf(req, sizeof(req), "bcast_wait %llx %llu", key, ms);
	reply[0] = '\0';
	rc = storm_nm_request(sock, req, reply, sizeof(reply),
			      (int) (ms < 3600000 ? ms : 3600000) + 1000);
	if (!rc && !strcmp(reply, "ok done"))
		return 0;
	snprintf(err, errlen, "the broadcast executable did not arrive on %s: %s",
		 node, rc ? strerror(-rc) :
		 !strncmp(reply, "error ", 6) ? reply + 6 :
		 reply[0] ? reply : "the node manager closed the connection");
	return -1;
}

extern int storm_stepd_task_init(spank_t sp, int ac, char **av)
{
	char err[1024];

	/* what the privileged part found, now that the task's stderr is
	 * the user's */
	if (storm_present_report(sp))
		return -1;
	if (storm_stepd_bcast_wait(sp, ac, av, err, sizeof(err)) < 0) {
		slurm_error("%s: %s", STORM_SPANK_PREFIX, err);
		return -1;
	}
	return storm_present_run_copy(sp);
}

extern int storm_stepd_exit(spank_t sp, int ac, char **av)
{
	return 0;
}

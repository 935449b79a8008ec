/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * launch_2411.c - the executable's hand-over for Slurm 24.11, where launch
 * plugins no longer exist (removed in 23.02): the SPANK plugin does in
 * srun what launch/storm does in 22.05, with the same code
 * (bcast_handover.c), and each task runs the node-local copy.
 *
 *  - srun, after its options (init_post_opt): decide, as launch/storm
 *    does; if STORM takes --bcast, clear srun's own flag so srun.c neither
 *    runs its bcast_file() nor rewrites argv[0] (srun_opts.h: SPANK has
 *    no access to srun's options); resolve and check the executable as
 *    srun does for --bcast, so a bad one stops srun before any allocation.
 *  - srun, once the step exists and before its tasks start
 *    (local_user_init): broadcast, waiting for every node to hold the
 *    file, or (BcastOverlap) start the broadcast and let the tasks wait
 *    for it on their nodes.  Either way the tasks' environment names the
 *    copy (STORM_BCAST_EXEC_ENV): set in srun's own environment, which
 *    srun merges into the step's after local_user_init (srun_job.c,
 *    pre_launch_srun_job()).
 *    A failure before the launch returns an error, so srun aborts the
 *    step and no task starts anywhere.
 *    BcastExecutable or SLURM_STORM_BCAST=yes (not --bcast): argv stays
 *    as typed and STORM_BCAST_ORIG_ENV names the resolved executable,
 *    over which each task lays the copy (storm_present.c); where that
 *    path is not on the node, or with --bcast:
 *  - each task, as the user before exec (task_init, after the wait of
 *    storm_stepd.c): prepend "/bin/sh -c 'exec COPY ...'" to its argv
 *    (spank_prepend_task_argv(), 23.11 on), so it executes the copy with
 *    the user's arguments, which stay as they were.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "src/common/storm_bcast.h"
#include "src/plugins/bcast/bcast_handover.h"
#include "srun_opts.h"
#include "storm_spank.h"

static storm_handover_t h;
static char step_name[64];
static char *exec_path;		/* the resolved executable */

/* The executable as srun resolves it for --bcast, checked. */
static char *_resolve(const char *cmd, char *err, size_t errlen)
{
	char *full = storm_srun_search_path(cmd);

	if (!full) {
		snprintf(err, errlen, "Can not execute %s", cmd);
		if (strchr(cmd, '/'))
			storm_handover_check(&h, cmd, err, errlen);
		return NULL;
	}
	switch (storm_handover_decide(&h, full, err, errlen)) {
	case 0:
		return full;
	case 1:			/* not broadcast, said why */
		snprintf(err, errlen, "%s", "");
		break;
	}
	free(full);
	return NULL;
}

extern int storm_launch_srun_post_opt(spank_t sp, int ac, char **av)
{
	storm_srun_opts_t o;
	char err[4096] = "no command";

	/* salloc and sbatch run the local context's init too, not srun's */
	if (!storm_srun_opts_get(&o))
		return 0;
	storm_handover_setup(&h, STORM_SPANK_PREFIX, o.slurm_conf,
			     o.bcast_flag, o.bcast_file, o.compress,
			     o.send_libs, o.bcast_exclude);
	if (h.active && o.multi_prog) {
		slurm_verbose("%s: --multi-prog: executables are not broadcast",
			      STORM_SPANK_PREFIX);
		h.active = false;
	}
	if (!h.active)
		return 0;
	/* srun.c must not run its own bcast_file() as well */
	if (!h.keep_path)
		storm_srun_opts_take_bcast();
	/* as srun does for --bcast: before any allocation or step exists */
	if (!o.command || !(exec_path = _resolve(o.command, err, sizeof(err)))) {
		if (!h.active)	/* stepped aside: the tasks run the original */
			return 0;
		slurm_error("%s: %s", STORM_SPANK_PREFIX, err);
		slurm_error("Can not execute %s", o.command ? o.command : "");
		return -1;
	}
	return 0;
}

/* The step's node list from slurmctld (SPANK's local context offers only
 * the node count); NULL when it cannot say (logged). */
static char *_step_nodes(uint32_t job, uint32_t step)
{
	job_step_info_response_msg_t *resp = NULL;
	char *nodes = NULL;

	if (slurm_get_job_steps((time_t) 0, job, step, &resp, SHOW_ALL) ||
	    !resp || resp->job_step_count < 1 || !resp->job_steps[0].nodes) {
		slurm_error("%s: %s: cannot find the step's nodes: %s",
			    STORM_SPANK_PREFIX, step_name,
			    slurm_strerror(errno));
	} else {
		nodes = strdup(resp->job_steps[0].nodes);
	}
	if (resp)
		slurm_free_job_step_info_response_msg(resp);
	return nodes;
}

/* BcastOverlap: the tasks were launched (or are being), so a failure
 * kills the step: its tasks never get past their wait. */
static void _overlap_failed(storm_handover_t *hv)
{
	storm_handover_say_failure(hv, step_name);
	if (storm_srun_kill_step(hv->req.job, hv->req.step))
		slurm_error("%s: %s: cannot kill the step: %s",
			    STORM_SPANK_PREFIX, step_name,
			    slurm_strerror(errno));
}

static int _setenv(void *arg, const char *name, const char *value)
{
	(void) arg;
	return setenv(name, value, 1);
}

extern int storm_launch_srun_local_user_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0;
	char *nodes = NULL, wait_val[64];
	int rc = -1;

	if (!h.active)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	snprintf(step_name, sizeof(step_name), "StepId=%u.%u", job, step);
	if (!(nodes = _step_nodes(job, step)) ||
	    storm_handover_prepare(&h, exec_path, job, step, nodes))
		goto done;
	if (h.overlap) {
		h.on_failure = _overlap_failed;
		if (storm_handover_start(&h, wait_val, sizeof(wait_val)) ||
		    setenv(STORM_BCAST_WAIT_ENV, wait_val, 1))
			goto done;
		slurm_verbose("%s: launching %s while the broadcast runs",
			      STORM_SPANK_PREFIX, step_name);
	} else if (storm_handover_run(&h)) {
		/* no task starts anywhere: srun aborts the step */
		storm_handover_say_failure(&h, step_name);
		goto done;
	} else {
		slurm_verbose("%s: %s: broadcast %s to %s as %s",
			      STORM_SPANK_PREFIX, step_name, exec_path, nodes,
			      h.remote);
	}
	/* spank_setenv() is for the remote context only; srun's environment
	 * becomes the step's */
	if (setenv(STORM_BCAST_EXEC_ENV, h.remote, 1) ||
	    (h.keep_path && setenv(STORM_BCAST_ORIG_ENV, exec_path, 1)) ||
	    storm_handover_env(&h, _setenv, NULL)) {
		slurm_error("%s: %s: cannot set %s", STORM_SPANK_PREFIX,
			    step_name, STORM_BCAST_EXEC_ENV);
		goto done;
	}
	rc = 0;
done:
	free(nodes);
	if (rc) {
		/* a started transfer is joined: nothing runs its file */
		storm_handover_done(&h);
		h.active = false;
	}
	return rc;
}

extern int storm_launch_srun_exit(spank_t sp, int ac, char **av)
{
	if (!h.active)
		return 0;
	if (h.threaded && !storm_handover_join(&h))
		slurm_verbose("%s: %s: broadcast %s to %s as %s",
			      STORM_SPANK_PREFIX, step_name, h.req.path,
			      h.nodes, h.remote);
	storm_handover_done(&h);
	free(h.dest);
	h.dest = NULL;
	free(exec_path);
	exec_path = NULL;
	return 0;
}

extern int storm_launch_task_exec(spank_t sp, int ac, char **av)
{
	char copy[4096];
	/* sh -c SCRIPT COPY ARGV0 ARGS...: $0 is the copy, $1 the user's
	 * command (dropped), the rest its arguments */
	const char *pre[] = { "/bin/sh", "-c", "shift; exec \"$0\" \"$@\"",
			      copy };

	if (spank_getenv(sp, STORM_BCAST_EXEC_ENV, copy, sizeof(copy)) !=
	    ESPANK_SUCCESS)
		return 0;
	/* the user's program does not need to see it */
	spank_unsetenv(sp, STORM_BCAST_EXEC_ENV);
	if (copy[0] != '/') {
		slurm_error("%s: malformed %s='%s'", STORM_SPANK_PREFIX,
			    STORM_BCAST_EXEC_ENV, copy);
		return -1;
	}
	if (spank_prepend_task_argv(sp, 4, pre) != ESPANK_SUCCESS) {
		slurm_error("%s: cannot direct the task to the broadcast copy %s",
			    STORM_SPANK_PREFIX, copy);
		return -1;
	}
	return 0;
}

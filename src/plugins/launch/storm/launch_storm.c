/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * launch_storm.c - srun's launch plugin for STORM.
 *
 * Wraps launch/slurm: step creation, I/O and task launch stay Slurm's; this
 * plugin is where srun hands executables and --bcast files to the STORM
 * broadcast, before the tasks are launched or (BcastOverlap) while they
 * are, each task then waiting for its node's copy before exec.
 *
 * It is installed as launch_slurm.so in the STORM PluginDir, which comes
 * before Slurm's own, so sites keep LaunchType=launch/slurm.  Any other
 * LaunchType changes Slurm's behaviour: srun only builds the MPIR debugger
 * table when LaunchType contains "slurm" (srun.c:392, else every task start
 * fails with "task_id too large"), sattach refuses to run unless it is
 * exactly "launch/slurm" (sattach.c:143), and slurmctld routes job signals
 * through srun instead of slurmd (job_mgr.c:16511, scancel/opt.c:188).
 * The stock plugin is therefore opened by absolute path from Slurm's own
 * plugin directory, never by PluginDir search, which would find us.
 */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/env.h"
#include "src/common/slurm_opt.h"
#include "src/srun/libsrun/launch.h"

#include "src/common/proc_args.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_conf.h"
#include "src/common/storm_wrap.h"

#include "src/plugins/bcast/bcast_handover.h"

const char plugin_name[] = "STORM launch plugin (wraps launch/slurm)";
const char plugin_type[] = "launch/slurm";	/* see above; logs say launch/storm */
#define PREFIX "launch/storm"
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static struct {
	int (*setup_srun_opt)(char **rest, slurm_opt_t *opt_local);
	int (*handle_multi_prog)(int command_pos, slurm_opt_t *opt_local);
	int (*create_job_step)(srun_job_t *job, bool use_all_cpus,
			       void (*signal_function)(int),
			       sig_atomic_t *destroy_job,
			       slurm_opt_t *opt_local);
	int (*step_launch)(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
			   uint32_t *global_rc,
			   slurm_step_launch_callbacks_t *step_callbacks,
			   slurm_opt_t *opt_local);
	int (*step_wait)(srun_job_t *job, bool got_alloc,
			 slurm_opt_t *opt_local);
	int (*step_terminate)(void);
	void (*print_status)(void);
	void (*fwd_signal)(int signal);
} base;

/* Same order as the struct above, as in srun's launch.c. */
static const char *const base_syms[] = {
	"launch_p_setup_srun_opt",
	"launch_p_handle_multi_prog_verify",
	"launch_p_create_job_step",
	"launch_p_step_launch",
	"launch_p_step_wait",
	"launch_p_step_terminate",
	"launch_p_print_status",
	"launch_p_fwd_signal",
};
static storm_wrap_t base_lib;

/*
 * The broadcast this srun takes over from Slurm: --bcast[=dest] (srun.c
 * would otherwise run its own bcast_file() after step creation), or every
 * executable with storm.conf BcastExecutable=yes.  SLURM_STORM_BCAST=no
 * leaves everything to stock Slurm (users, benchmarks); =yes broadcasts
 * the executable through STORM even without --bcast.  The decision and
 * the transfer are bcast_handover.c's, shared with the SPANK plugin that
 * does this from Slurm 23.02 on.
 */
static storm_handover_t bc;
static char *exec_path;		/* the resolved executable (keep_path) */

static void bcast_setup(slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;

	storm_handover_setup(&bc, PREFIX, slurm_conf.slurm_conf,
			     sropt->bcast_flag, sropt->bcast_file,
			     sropt->compress != COMPRESS_OFF, sropt->send_libs,
			     slurm_conf.bcast_exclude);
	/* srun.c must not run its own bcast_file() as well */
	if (bc.active)
		sropt->bcast_flag = false;
}

/* Resolve and check the executable as srun does for --bcast, before any
 * allocation or step exists (srun's own message, then exit).  With
 * --bcast, argv[0] becomes the resolved path, as in srun; otherwise it
 * stays as typed, for slurmstepd to resolve as without STORM. */
static void bcast_check_exec(int command_pos, slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	char err[4096], *full, *cmd;
	int rc;

	if (!bc.active)
		return;
	if (sropt->multi_prog || !sropt->argv || !sropt->argv[command_pos]) {
		verbose("%s: --multi-prog: executables are not broadcast", PREFIX);
		bc.active = false;
		return;
	}
	cmd = sropt->argv[command_pos];
	full = search_path(opt_local->chdir, cmd, true, X_OK, true);
	if (!full) {
		/* say why, as precisely as the file system tells */
		if (strchr(cmd, '/') &&
		    storm_handover_check(&bc, cmd, err, sizeof(err)))
			error("%s: %s", PREFIX, err);
		fatal("Can not execute %s", cmd);
	}
	rc = storm_handover_decide(&bc, full, err, sizeof(err));
	if (rc < 0) {
		error("%s: %s", PREFIX, err);
		fatal("Can not execute %s", cmd);
	}
	if (rc > 0) {		/* not broadcast, said why */
		xfree(full);
		return;
	}
	if (bc.keep_path) {
		exec_path = full;
		return;
	}
	xfree(sropt->argv[command_pos]);
	sropt->argv[command_pos] = full;
}

/* The step's node list, or NULL (logged). */
static const char *step_nodes(srun_job_t *job, slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	slurm_step_layout_t *layout = NULL;

	if (job->step_ctx && job->step_ctx->step_resp)
		layout = job->step_ctx->step_resp->step_layout;
	if (!layout || !layout->node_list || !sropt->argv || !sropt->argv[0]) {
		error("%s: %ps: no node list or command to broadcast", PREFIX,
		      &job->step_id);
		return NULL;
	}
	return layout->node_list;
}

static void say_failure(srun_job_t *job)
{
	char step[64];

	snprintf(step, sizeof(step), "StepId=%u.%u", job->step_id.job_id,
		 job->step_id.step_id);
	storm_handover_say_failure(&bc, step);
}

/* BcastOverlap: the thread says a failure at once (bcast_handover.c). */
static void overlap_failed(storm_handover_t *h)
{
	say_failure(h->arg);
}

/* Once the copy's name is known, before the launch: the tasks find it
 * through their environment and present it at the original path
 * (keep_path), or argv[0] names it (--bcast, as srun.c does after its own
 * bcast_file()). */
static int set_job_env(void *arg, const char *name, const char *value)
{
	srun_job_t *job = arg;

	return env_array_overwrite(&job->env, name, value) ? 0 : -1;
}

static void bcast_present(srun_job_t *job, slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;

	/* what travels with it: libraries, named files */
	if (storm_handover_env(&bc, set_job_env, job))
		error("%s: %ps: cannot set the tasks' environment", PREFIX,
		      &job->step_id);
	if (bc.keep_path) {
		env_array_overwrite(&job->env, STORM_BCAST_EXEC_ENV, bc.remote);
		env_array_overwrite(&job->env, STORM_BCAST_ORIG_ENV, exec_path);
		return;
	}
	xfree(sropt->argv[0]);
	sropt->argv[0] = xstrdup(bc.remote);
}

static void bcast_done(srun_job_t *job)
{
	verbose("%s: %ps: broadcast %s to %s as %s", PREFIX, &job->step_id,
		bc.req.path, bc.nodes, bc.remote);
}

/*
 * BcastOverlap: launch the tasks while the file travels.  argv[0] names
 * the node-local copy from the start; each task waits in the SPANK plugin
 * (slurmstepd, before exec) until its node manager says the file of this
 * transfer key is in place, so no task ever executes a partial or an
 * older file.  If the broadcast fails, srun says why as before and kills
 * the step: the tasks never get past their wait.  The step is killed once
 * the launch returns (killing it while the launch is in flight left srun
 * waiting for task exits that a cut node could not send).
 */
static int bcast_overlapped(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
			    uint32_t *global_rc,
			    slurm_step_launch_callbacks_t *step_callbacks,
			    slurm_opt_t *opt_local)
{
	char wait_val[64];
	int rc;

	bc.on_failure = overlap_failed;
	bc.arg = job;
	if (storm_handover_start(&bc, wait_val, sizeof(wait_val))) {
		/* nothing launched, no broadcast started */
		storm_handover_done(&bc);
		*global_rc = 1;
		return SLURM_ERROR;
	}
	env_array_overwrite(&job->env, STORM_BCAST_WAIT_ENV, wait_val);
	bcast_present(job, opt_local);
	verbose("%s: launching %ps through launch/slurm while the broadcast runs",
		PREFIX, &job->step_id);
	rc = base.step_launch(job, cio_fds, global_rc, step_callbacks,
			      opt_local);
	if (!storm_handover_join(&bc)) {
		bcast_done(job);
		storm_handover_done(&bc);
		return rc;
	}
	storm_handover_done(&bc);
	if (!rc && slurm_kill_job_step(job->step_id.job_id,
				       job->step_id.step_id, SIGKILL))
		error("%s: %ps: cannot kill the step: %s", PREFIX,
		      &job->step_id, slurm_strerror(errno));
	*global_rc = 1;
	/* when the tasks were launched, srun waits for them to go */
	return rc;
}

extern int init(void)
{
	char err[4096];

	Dl_info self;

	if (storm_wrap_open(&base_lib, NULL, SLURM_PLUGINDIR, "launch_slurm",
			    base_syms, (void **) &base,
			    sizeof(base_syms) / sizeof(base_syms[0]), err,
			    sizeof(err))) {
		error("%s: cannot wrap launch/slurm: %s", PREFIX, err);
		return SLURM_ERROR;
	}
	if (dladdr((void *) init, &self) && self.dli_fname &&
	    storm_same_file(self.dli_fname, base_lib.path)) {
		error("%s: %s is this plugin, not Slurm's launch/slurm; install the STORM plugins in their own directory",
		      PREFIX, base_lib.path);
		storm_wrap_close(&base_lib, false);
		return SLURM_ERROR;
	}
	verbose("%s: init: wrapping %s", PREFIX, base_lib.path);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	free(bc.dest);
	xfree(exec_path);
	storm_wrap_close(&base_lib, true);
	return SLURM_SUCCESS;
}

extern int launch_p_setup_srun_opt(char **rest, slurm_opt_t *opt_local)
{
	int rc = base.setup_srun_opt(rest, opt_local);

	bcast_setup(opt_local);
	return rc;
}

extern int launch_p_handle_multi_prog_verify(int command_pos,
					     slurm_opt_t *opt_local)
{
	int rc = base.handle_multi_prog(command_pos, opt_local);

	bcast_check_exec(command_pos, opt_local);
	return rc;
}

extern int launch_p_create_job_step(srun_job_t *job, bool use_all_cpus,
				    void (*signal_function)(int),
				    sig_atomic_t *destroy_job,
				    slurm_opt_t *opt_local)
{
	return base.create_job_step(job, use_all_cpus, signal_function,
				    destroy_job, opt_local);
}

extern int launch_p_step_launch(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
				uint32_t *global_rc,
				slurm_step_launch_callbacks_t *step_callbacks,
				slurm_opt_t *opt_local)
{
	const char *nodes;

	if (bc.active) {
		if (!(nodes = step_nodes(job, opt_local)) ||
		    storm_handover_prepare(&bc, bc.keep_path ? exec_path :
					   opt_local->srun_opt->argv[0],
					   job->step_id.job_id,
					   job->step_id.step_id, nodes)) {
			storm_handover_done(&bc);
			*global_rc = 1;
			return SLURM_ERROR;
		}
		if (bc.overlap)
			return bcast_overlapped(job, cio_fds, global_rc,
						step_callbacks, opt_local);
		if (storm_handover_run(&bc)) {
			/* no task starts anywhere; srun completes the step */
			say_failure(job);
			storm_handover_done(&bc);
			*global_rc = 1;
			return SLURM_ERROR;
		}
		bcast_present(job, opt_local);
		bcast_done(job);
		storm_handover_done(&bc);
	}
	verbose("%s: launching %ps through launch/slurm", PREFIX, &job->step_id);
	return base.step_launch(job, cio_fds, global_rc, step_callbacks,
				opt_local);
}

extern int launch_p_step_wait(srun_job_t *job, bool got_alloc,
			      slurm_opt_t *opt_local)
{
	return base.step_wait(job, got_alloc, opt_local);
}

extern int launch_p_step_terminate(void)
{
	return base.step_terminate();
}

extern void launch_p_print_status(void)
{
	base.print_status();
}

extern void launch_p_fwd_signal(int signal)
{
	base.fwd_signal(signal);
}

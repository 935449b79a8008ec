/*
 * launch_storm.c - srun's launch plugin for STORM.
 *
 * Wraps launch/slurm: step creation, I/O and task launch stay Slurm's; this
 * plugin is where srun hands executables and --bcast files to the STORM
 * broadcast before the tasks start.
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

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/slurm_opt.h"
#include "src/srun/libsrun/launch.h"

#include "src/common/storm_wrap.h"

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
	storm_wrap_close(&base_lib, true);
	return SLURM_SUCCESS;
}

extern int launch_p_setup_srun_opt(char **rest, slurm_opt_t *opt_local)
{
	return base.setup_srun_opt(rest, opt_local);
}

extern int launch_p_handle_multi_prog_verify(int command_pos,
					     slurm_opt_t *opt_local)
{
	return base.handle_multi_prog(command_pos, opt_local);
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

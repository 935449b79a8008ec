/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun_opts_2411.c - srun_opts.h for Slurm 24.11: srun's `opt` and
 * `sropt` (src/srun/opt.c, exported by the srun binary), found at run
 * time because slurmd and slurmstepd load this plugin too and have none.
 */
#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"
#include "src/common/proc_args.h"
#include "src/common/read_config.h"
#include "src/common/slurm_opt.h"
#include "src/common/xmalloc.h"

#include "srun_opts.h"

static slurm_opt_t *_opt(void)
{
	slurm_opt_t *opt = dlsym(RTLD_DEFAULT, "opt");

	return opt && opt->srun_opt ? opt : NULL;
}

extern bool storm_srun_opts_get(storm_srun_opts_t *o)
{
	slurm_opt_t *opt = _opt();

	memset(o, 0, sizeof(*o));
	if (!opt)
		return false;
	o->bcast_flag = opt->srun_opt->bcast_flag;
	o->bcast_file = opt->srun_opt->bcast_file;
	o->multi_prog = opt->srun_opt->multi_prog;
	o->compress = opt->srun_opt->compress != COMPRESS_OFF;
	o->send_libs = opt->srun_opt->send_libs;
	o->bcast_exclude = slurm_conf.bcast_exclude;
	o->chdir = opt->chdir;
	o->slurm_conf = slurm_conf.slurm_conf;
	o->command = opt->argc > 0 && opt->argv ? opt->argv[0] : NULL;
	return true;
}

extern void storm_srun_opts_take_bcast(void)
{
	slurm_opt_t *opt = _opt();

	if (opt)
		opt->srun_opt->bcast_flag = false;
}

extern char *storm_srun_search_path(const char *cmd)
{
	slurm_opt_t *opt = _opt();
	char *x = search_path(opt ? opt->chdir : NULL, (char *) cmd, true,
			      X_OK, true);
	char *full = x ? strdup(x) : NULL;

	xfree(x);
	return full;
}

extern int storm_srun_kill_step(uint32_t job, uint32_t step)
{
	return slurm_kill_job_step(job, step, SIGKILL, 0) ? -1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_spank.h - the STORM SPANK plugin, one file per Slurm context
 * (pyxis layout): storm_spank.c dispatches on spank_context().
 */
#ifndef STORM_SPANK_H
#define STORM_SPANK_H

#include <stddef.h>

#include <slurm/spank.h>

#include "src/common/storm_conf.h"

#define STORM_SPANK_PREFIX "spank/storm"

/* Load storm.conf for this context; logs and returns -1 on error.
 * path (if not NULL) receives the file's path. */
extern int storm_spank_load_conf(int ac, char **av, const char *ctx,
				 storm_conf_t *conf, char *path, size_t len);

extern int storm_slurmd_init(spank_t sp, int ac, char **av);
extern int storm_slurmd_exit(spank_t sp, int ac, char **av);
extern int storm_srun_init(spank_t sp, int ac, char **av);
extern int storm_srun_local_user_init(spank_t sp, int ac, char **av);
extern int storm_stepd_init(spank_t sp, int ac, char **av);
extern int storm_stepd_task_init(spank_t sp, int ac, char **av);
extern int storm_stepd_task_privileged(spank_t sp, int ac, char **av);

/* BcastOverlap: wait for this node's copy (STORM_BCAST_WAIT_ENV, then
 * unset): 0 in place, 1 nothing to wait for, -1 with err. */
extern int storm_stepd_bcast_wait(spank_t sp, int ac, char **av, char *err,
				  size_t errlen);

/* storm_present.c: the broadcast copy at the executable's original path.
 * report: in task_init, say (and fail on) what the privileged part met;
 * -1 fails the task.  run_copy: where the original is not on the node,
 * direct the task to the copy (22.05; launch_2411.c from 23.02). */
extern int storm_present_report(spank_t sp);
extern int storm_present_run_copy(spank_t sp);
extern int storm_stepd_exit(spank_t sp, int ac, char **av);
extern int storm_job_epilog(spank_t sp, int ac, char **av);

/* The executable's hand-over in srun and its exec on the nodes, where
 * launch plugins are gone (23.02 on): one file per Slurm version
 * (launch_MMmm.c), built with STORM_SPANK_HANDOVER defined.  Where they
 * remain (22.05) launch/storm does it, and the plugin calls none of
 * these. */
extern int storm_launch_srun_post_opt(spank_t sp, int ac, char **av);
extern int storm_launch_srun_local_user_init(spank_t sp, int ac, char **av);
extern int storm_launch_srun_exit(spank_t sp, int ac, char **av);
extern int storm_launch_task_exec(spank_t sp, int ac, char **av);

#endif

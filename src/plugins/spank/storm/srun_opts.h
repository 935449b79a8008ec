/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun_opts.h - srun's options as the SPANK plugin needs them (launch
 * plugins could read them; SPANK cannot), from srun's exported globals
 * with one Slurm version's layout (srun_opts_MMmm.c).  Only in srun.
 */
#ifndef STORM_SRUN_OPTS_H
#define STORM_SRUN_OPTS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct storm_srun_opts {
	bool bcast_flag;	/* --bcast */
	const char *bcast_file;	/* --bcast=PATH, or NULL */
	bool multi_prog;	/* --multi-prog */
	bool compress;		/* --compress */
	bool send_libs;		/* --send-libs, BcastParameters=send_libs */
	const char *bcast_exclude;	/* slurm.conf BcastExclude */
	const char *chdir;	/* --chdir, or srun's directory */
	const char *slurm_conf;	/* the slurm.conf srun read */
	const char *command;	/* the command (argv[0] of the tasks) */
} storm_srun_opts_t;

/* Fill o; false when this process is not srun (salloc, sbatch). */
extern bool storm_srun_opts_get(storm_srun_opts_t *o);
/* Clear --bcast, so srun neither broadcasts nor rewrites argv[0]. */
extern void storm_srun_opts_take_bcast(void);
/* cmd resolved as srun resolves it for --bcast (malloc'ed), or NULL. */
extern char *storm_srun_search_path(const char *cmd);
/* SIGKILL to a step; 0 or -1 (errno). */
extern int storm_srun_kill_step(uint32_t job, uint32_t step);

#endif

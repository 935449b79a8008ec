/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_srun.c - the SPANK plugin inside srun (local context).
 */
#include <stdint.h>

#include "storm_spank.h"

extern int storm_srun_init(spank_t sp, int ac, char **av)
{
	storm_conf_t conf;

	if (storm_spank_load_conf(ac, av, "srun", &conf, NULL, 0))
		return 0;
	slurm_verbose("%s: init in srun", STORM_SPANK_PREFIX);
	return 0;
}

/* Runs once the step exists and srun's own options are in effect. */
extern int storm_srun_local_user_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	slurm_verbose("%s: srun step %u.%u ready to launch", STORM_SPANK_PREFIX,
		      job, step);
	return 0;
}

/*
 * storm_stepd.c - the SPANK plugin inside slurmstepd (remote context).
 */
#include <stdint.h>

#include "storm_spank.h"

extern int storm_stepd_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	slurm_verbose("%s: init in slurmstepd for %u.%u", STORM_SPANK_PREFIX,
		      job, step);
	return 0;
}

extern int storm_stepd_task_init(spank_t sp, int ac, char **av)
{
	return 0;
}

extern int storm_stepd_exit(spank_t sp, int ac, char **av)
{
	return 0;
}

/*
 * launch_2205.c - the executable's hand-over for Slurm 22.05: launch/storm
 * (src/plugins/launch/storm) does it in srun and rewrites argv[0] to the
 * node-local copy, so the SPANK plugin has nothing to add (launch_2411.c
 * is where it does, for versions without launch plugins).
 */
#include "storm_spank.h"

extern int storm_launch_srun_post_opt(spank_t sp, int ac, char **av)
{
	return 0;
}

extern int storm_launch_srun_local_user_init(spank_t sp, int ac, char **av)
{
	return 0;
}

extern int storm_launch_srun_exit(spank_t sp, int ac, char **av)
{
	return 0;
}

extern int storm_launch_task_exec(spank_t sp, int ac, char **av)
{
	return 0;
}

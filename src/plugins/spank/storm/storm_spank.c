/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_spank.c - SPANK entry points; each context's work lives in its own
 * file (storm_slurmd.c, storm_srun.c, storm_stepd.c, storm_present.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storm_spank.h"

SPANK_PLUGIN(storm, 1);

/*
 * The storm.conf path: "conf=PATH" in plugstack.conf wins, then
 * $STORM_CONF, then storm.conf beside $SLURM_CONF, then /etc/slurm.
 * (SPANK offers no access to slurmd's -f argument.)
 */
extern int storm_spank_load_conf(int ac, char **av, const char *ctx,
				 storm_conf_t *conf, char *path_out, size_t len)
{
	char path[4096], err[STORM_CONF_ERRLEN];
	const char *explicit = NULL;

	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "conf=", 5))
			explicit = av[i] + 5;
	if (explicit)
		snprintf(path, sizeof(path), "%s", explicit);
	else
		storm_conf_path(getenv("SLURM_CONF"), path, sizeof(path));

	if (path_out)
		snprintf(path_out, len, "%s", path);
	if (storm_conf_load(path, true, conf, err, sizeof(err))) {
		slurm_error("%s: %s: %s; STORM features are off in this %s",
			    STORM_SPANK_PREFIX, ctx, err, ctx);
		return -1;
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_SLURMD:
		return storm_slurmd_init(sp, ac, av);
	case S_CTX_LOCAL:
		return storm_srun_init(sp, ac, av);
	case S_CTX_REMOTE:
		return storm_stepd_init(sp, ac, av);
	case S_CTX_ALLOCATOR:
		slurm_verbose("%s: init in allocator context", STORM_SPANK_PREFIX);
		return 0;
	default:
		return 0;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
#ifdef STORM_SPANK_HANDOVER
	if (spank_context() == S_CTX_LOCAL)
		return storm_launch_srun_post_opt(sp, ac, av);
#endif
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	storm_srun_local_user_init(sp, ac, av);
#ifdef STORM_SPANK_HANDOVER
	return storm_launch_srun_local_user_init(sp, ac, av);
#else
	return 0;
#endif
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	return storm_stepd_task_privileged(sp, ac, av);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (storm_stepd_task_init(sp, ac, av))
		return -1;
#ifdef STORM_SPANK_HANDOVER
	return storm_launch_task_exec(sp, ac, av);
#else
	return 0;
#endif
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return storm_job_epilog(sp, ac, av);
}

int slurm_spank_slurmd_exit(spank_t sp, int ac, char **av)
{
	return storm_slurmd_exit(sp, ac, av);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() == S_CTX_REMOTE)
		return storm_stepd_exit(sp, ac, av);
#ifdef STORM_SPANK_HANDOVER
	if (spank_context() == S_CTX_LOCAL)
		return storm_launch_srun_exit(sp, ac, av);
#endif
	return 0;
}

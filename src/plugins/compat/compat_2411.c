/*
 * compat_2411.c - compat.h for Slurm 24.11.
 */
#include "config.h"

#include <stdlib.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "compat.h"

const char storm_compat_slurm_version[] = SLURM_VERSION_STRING;

extern bool storm_compat_set_pend_reason(job_record_t *job_ptr,
					 const char *text)
{
	/* select_nodes() replaces any reason by WAIT_RESOURCES and frees
	 * state_desc after a failed selection: say it in the log instead */
	verbose("select/cons_tres_storm: %pJ pends: %s", job_ptr, text);
	return false;
}

extern void storm_compat_clear_pend_reason(job_record_t *job_ptr)
{
}

extern bool storm_compat_ctld_reexec(void)
{
	return getenv("SLURMCTLD_RECONF") != NULL;
}

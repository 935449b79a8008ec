/*
 * compat.h - what the STORM plugins need that differs between Slurm
 * versions.  One implementation per version (compat_MMmm.c, chosen by
 * configure); the plugins call these instead of testing versions.
 */
#ifndef STORM_COMPAT_H
#define STORM_COMPAT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/slurmctld/slurmctld.h"

/* The Slurm version these plugins were built for, "MM.mm.u". */
extern const char storm_compat_slurm_version[];

/*
 * A pending reason of STORM's own (text) for squeue.  22.05 keeps a
 * select-owned reason (WAIT_BLOCK_MAX_ERR) across a failed selection;
 * 24.11 resets every reason to "Resources" (node_scheduler.c,
 * select_nodes()), so there the reason is only logged.  Returns whether
 * squeue will show it.
 */
extern bool storm_compat_set_pend_reason(job_record_t *job_ptr,
					 const char *text);
/* Forget a reason set above (each selection derives it afresh). */
extern void storm_compat_clear_pend_reason(job_record_t *job_ptr);

/*
 * Whether this slurmctld is the new process of an 'scontrol reconfigure':
 * from 23.11 on slurmctld re-executes itself to reconfigure (controller.c,
 * SLURMCTLD_RECONF in the new process's environment), so plugins start
 * afresh and keep nothing in memory; 22.05 reconfigures in place.
 */
extern bool storm_compat_ctld_reexec(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pend_reasons.h - STORM's own reasons for pending jobs, shown by squeue.
 * One implementation per Slurm version (pend_reasons_MMmm.c, chosen by
 * configure), linked into select/cons_tres_storm only.
 */
#ifndef STORM_PEND_REASONS_H
#define STORM_PEND_REASONS_H

#include "src/slurmctld/slurmctld.h"

/*
 * Why job_ptr pends, in STORM's words (text), for squeue.  Called with the
 * job write lock held, from a failed selection.  22.05 keeps a
 * select-owned reason (WAIT_BLOCK_MAX_ERR) across select_nodes(); 24.11
 * resets every reason after a failed selection (node_scheduler.c), so
 * there the text is kept here and put back as the job's description by
 * a thread of this plugin (storm_pend_reasons_start()).
 */
extern void storm_pend_reason_set(job_record_t *job_ptr, const char *text);
/* Forget a reason set above (each selection derives it afresh). */
extern void storm_pend_reason_clear(job_record_t *job_ptr);

/* In slurmctld, what keeps the reasons shown; a no-op where not needed. */
extern int storm_pend_reasons_start(void);
extern void storm_pend_reasons_stop(void);

#endif

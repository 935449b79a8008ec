/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pend_reasons_2205.c - pend_reasons.h for Slurm 22.05: select_nodes()
 * keeps a select-owned (BlueGene-era) reason, so the job carries it.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "pend_reasons.h"

extern void storm_pend_reason_set(job_record_t *job_ptr, const char *text)
{
	job_ptr->state_reason = WAIT_BLOCK_MAX_ERR;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(text);
}

extern void storm_pend_reason_clear(job_record_t *job_ptr)
{
	if (job_ptr->state_reason == WAIT_BLOCK_MAX_ERR) {
		job_ptr->state_reason = WAIT_NO_REASON;
		xfree(job_ptr->state_desc);
	}
}

extern int storm_pend_reasons_start(void)
{
	return SLURM_SUCCESS;
}

extern void storm_pend_reasons_stop(void)
{
}

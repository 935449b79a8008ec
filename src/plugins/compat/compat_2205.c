/*
 * compat_2205.c - compat.h for Slurm 22.05.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "compat.h"

const char storm_compat_slurm_version[] = SLURM_VERSION_STRING;

extern bool storm_compat_set_pend_reason(job_record_t *job_ptr,
					 const char *text)
{
	/* kept by select_nodes() as a select-owned (BlueGene-era) reason */
	job_ptr->state_reason = WAIT_BLOCK_MAX_ERR;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(text);
	return true;
}

extern void storm_compat_clear_pend_reason(job_record_t *job_ptr)
{
	if (job_ptr->state_reason == WAIT_BLOCK_MAX_ERR) {
		job_ptr->state_reason = WAIT_NO_REASON;
		xfree(job_ptr->state_desc);
	}
}

extern bool storm_compat_ctld_reexec(void)
{
	/* 22.05 reconfigures in place: init() runs only at start */
	return false;
}

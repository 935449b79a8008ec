/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_failsafe.c - fail open: the gang switch never leaves a job frozen or
 * idle-class for want of a machine manager or a node manager
 * (nm_failsafe.h lists where).
 *
 * Why fail open: a job switched out by a scheduler that is gone would wait
 * forever; running unswitched only shares the CPUs the way Slurm's
 * oversubscription would until the strobes are back.
 */
#include <stdint.h>

#include <slurm/slurm.h>

#include "nm.h"
#include "nm_cgroup.h"
#include "nm_failsafe.h"

/* Checked a little after the fail-safe would fire, so that a check on the
 * dot does not miss it by a timer's rounding. */
#define NM_FAILSAFE_SLACK_NS 1000000ULL

void nm_failsafe_start(nm_failsafe_t *fs, uint64_t now_ns)
{
	fs->last_strobe_ns = now_ns;
}

void nm_failsafe_strobe(nm_failsafe_t *fs, uint64_t now_ns, uint64_t epoch)
{
	if (fs->open) {
		nm_info("gang: strobe is back (epoch %llu); switching again",
			(unsigned long long) epoch);
		fs->open = false;
	}
	fs->last_strobe_ns = now_ns;
}

bool nm_failsafe_check(nm_failsafe_t *fs, uint64_t now_ns,
		       uint64_t failsafe_ns, nm_failsafe_thaw_f thaw, void *arg)
{
	int n;

	if (fs->open || now_ns - fs->last_strobe_ns <= failsafe_ns)
		return false;
	n = thaw(arg);
	fs->open = true;
	fs->nevents++;
	nm_info("gang: fail-safe: no strobe for %llu ms, thawed %d job(s); they run unswitched until the machine manager is back",
		(unsigned long long) ((now_ns - fs->last_strobe_ns) / 1000000),
		n);
	return true;
}

uint64_t nm_failsafe_due(const nm_failsafe_t *fs, uint64_t failsafe_ns)
{
	if (fs->open)
		return UINT64_MAX;
	return fs->last_strobe_ns + failsafe_ns + NM_FAILSAFE_SLACK_NS;
}

/* Did Slurm suspend this job?  False when slurmctld cannot say: the
 * caller then thaws it (fail open). */
static bool slurm_suspended(uint32_t job_id)
{
	job_info_msg_t *msg = NULL;
	bool suspended = false;

	if (slurm_load_job(&msg, job_id, SHOW_ALL) != SLURM_SUCCESS || !msg)
		return false;
	for (uint32_t i = 0; i < msg->record_count; i++)
		if (msg->job_array[i].job_id == job_id &&
		    (msg->job_array[i].job_state & JOB_STATE_BASE) ==
		    JOB_SUSPENDED)
			suspended = true;
	slurm_free_job_info_msg(msg);
	return suspended;
}

void nm_failsafe_recover(void)
{
	int n;

	if ((n = nm_cg_thaw_orphans(slurm_suspended)))
		nm_info("gang: thawed %d job(s) an earlier node manager left frozen", n);
	if ((n = nm_cg_idle_cleanup()))
		nm_info("gang: %d job(s) an earlier node manager left idle-class run at normal priority again", n);
}

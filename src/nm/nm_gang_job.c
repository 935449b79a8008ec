/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang_job.c - one job of the gang table on this node: its cgroups
 * (v1: its step cgroups, found by scanning its freezer directory; v2: its
 * job-level cgroup) and its switching, by freezing or, for the flexible
 * policy and a gang job's batch step, by making it idle-class (cpu.idle).
 * nm_cgroup.c says which files and why; nm_gang.c decides when.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_gang.h"
#include "src/common/storm_time.h"
#include "nm.h"
#include "nm_cgroup.h"
#include "nm_gang_job.h"
#include "nm_watchdog.h"

/* Tell the watchdog whether this job is ours to release if strobes stop
 * (switched out by us, not held by Slurm). */
static void publish(nm_gang_job_t *j)
{
	nm_watchdog_switched(j->job_id, j->uid,
			     !j->held && (j->frozen || j->idle), &j->watch_slot);
}

/* An absent job cgroup (the job is still starting here) is looked for
 * again at the first strobe after this; on a timer rather than every few
 * strobes, which at 120 s quanta meant 16 minutes. */
#define NM_GANG_RETRY_NS 50000000ULL

void nm_gang_job_init(nm_gang_job_t *j, uint32_t job_id, uint32_t uid)
{
	memset(j, 0, sizeof(*j));
	j->job_id = job_id;
	j->uid = uid;
	j->fd = -1;
	j->dir_fd = -1;
	j->watch_slot = -1;
}

bool nm_gang_job_present(const nm_gang_job_t *j)
{
	return j->fd >= 0 || j->dir_fd >= 0;
}

static void close_job(nm_gang_job_t *j)
{
	if (j->fd >= 0)
		close(j->fd);
	if (j->dir_fd >= 0)
		close(j->dir_fd);
	for (int i = 0; i < j->nsteps; i++)
		close(j->steps[i].fd);
	j->fd = j->dir_fd = -1;
	j->nsteps = 0;
	j->batch = false;
}

void nm_gang_job_release(nm_gang_job_t *j)
{
	close_job(j);
	free(j->steps);
	j->steps = NULL;
	j->capsteps = 0;
	nm_cg_idle_close(j->cpu);
	j->cpu = NULL;
	nm_watchdog_forget(j->job_id, &j->watch_slot);
}

/* The job is gone from this node (its cgroup went): forget its cgroups,
 * look again later (a job that had not started here yet comes back). */
void nm_gang_job_left(nm_gang_job_t *j, int rc)
{
	nm_verbose("gang: job %u: its cgroup is gone (%s); the job left this node",
		   j->job_id, strerror(-rc));
	close_job(j);
	j->frozen = false;
	publish(j);
	j->retry_ns = storm_mono_ns() + NM_GANG_RETRY_NS;
}

/* v1: is this step frozen with the others?  The batch step only where it
 * cannot be made idle-class instead (see nm_cgroup.c for why). */
static bool step_freezes(const nm_gang_job_t *j, const nm_gang_step_t *s)
{
	return !s->batch || j->no_idle || j->how != STORM_GANG_SWITCH_FREEZE;
}

static void remove_step(nm_gang_job_t *j, int i)
{
	close(j->steps[i].fd);
	j->steps[i] = j->steps[--j->nsteps];
}

static void step_found(const char *name, void *arg)
{
	nm_gang_job_t *j = arg;
	nm_gang_step_t *s;
	int fd;

	for (int i = 0; i < j->nsteps; i++) {
		if (!strcmp(j->steps[i].name, name)) {
			j->steps[i].seen = true;
			j->batch |= j->steps[i].batch;
			return;
		}
	}
	if (j->nsteps == j->capsteps) {
		int cap = j->capsteps ? j->capsteps * 2 : 4;
		nm_gang_step_t *n = realloc(j->steps, cap * sizeof(*n));

		if (!n)
			return;		/* the next scan tries again */
		j->steps = n;
		j->capsteps = cap;
	}
	if ((fd = nm_cg_step_open(j->dir_fd, name)) < 0)
		return;			/* ending already, or the next scan */
	s = &j->steps[j->nsteps++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->fd = fd;
	s->seen = true;
	s->batch = !strcmp(name, "step_batch");
	j->batch |= s->batch;
	/* a step that started while its job is out of its slots joins it */
	if (j->frozen && step_freezes(j, s))
		(void) nm_cg_write(fd, true);
}

/* v1: bring the job's steps up to date, if the last look is older than
 * `every` ns; 0, or -errno when the job's cgroup is gone. */
int nm_gang_job_scan(nm_gang_job_t *j, uint64_t every)
{
	uint64_t now = storm_mono_ns();
	int rc;

	if (j->dir_fd < 0 || now - j->scan_ns < every)
		return 0;
	j->scan_ns = now;
	j->batch = false;
	for (int i = 0; i < j->nsteps; i++)
		j->steps[i].seen = false;
	if ((rc = nm_cg_job_steps(j->dir_fd, step_found, j)) < 0)
		return rc;
	for (int i = 0; i < j->nsteps;) {
		if (!j->steps[i].seen) {
			remove_step(j, i);
			continue;
		}
		i++;
	}
	return 0;
}

/* Find the job's cgroups on this node; retried later if absent. */
void nm_gang_job_open(nm_gang_job_t *j, uint64_t now)
{
	int fd;

	if (nm_cg_version() == 1) {
		if ((fd = nm_cg_job_dir_open(j->job_id, j->uid)) >= 0) {
			j->dir_fd = fd;
			j->scan_ns = 0;
			if (nm_gang_job_scan(j, 0)) {
				close_job(j);
				fd = -1;
			}
		}
	} else {
		fd = j->fd = nm_cg_job_open(j->job_id, j->uid);
	}
	if (fd < 0)
		j->retry_ns = now + NM_GANG_RETRY_NS;
}

static void count_thaw(const nm_gang_job_t *j, nm_gang_counts_t *c)
{
	uint64_t d = storm_mono_ns() - j->frozen_ns;
	/* the schedule may have changed while it was frozen: the longer of
	 * the two is what the job could be kept out for */
	uint64_t bound = j->frozen_long_ns > c->long_ns ? j->frozen_long_ns :
							   c->long_ns;

	if (d > c->freeze_max_ns)
		c->freeze_max_ns = d;
	if (bound && d > bound)
		c->freezes_long++;
	if (c->failsafe_ns && d > c->failsafe_ns)
		c->freezes_over_failsafe++;
}

/* Freeze or thaw one job: v1 its steps, v2 the job level.  A vanished
 * cgroup means the job (v2), or one of its steps (v1), ended here. */
void nm_gang_job_set_frozen(nm_gang_job_t *j, bool frozen,
			    nm_gang_counts_t *c)
{
	int rc;

	if (!nm_gang_job_present(j) || (j->frozen == frozen && !j->stale))
		return;
	if (frozen && !j->held)		/* known before it is true */
		nm_watchdog_switched(j->job_id, j->uid, true, &j->watch_slot);
	if (j->dir_fd >= 0) {
		if (frozen && (rc = nm_gang_job_scan(j, NM_GANG_SCAN_NS))) {
			nm_gang_job_left(j, rc);
			return;
		}
		for (int i = 0; i < j->nsteps;) {
			nm_gang_step_t *s = &j->steps[i];

			if (step_freezes(j, s) &&
			    (rc = nm_cg_write(s->fd, frozen))) {
				nm_debug("gang: job %u: %s of %s failed (%s); the step ended",
					 j->job_id, frozen ? "freeze" : "thaw",
					 s->name, strerror(-rc));
				remove_step(j, i);
				continue;
			}
			i++;
		}
	} else if ((rc = nm_cg_write(j->fd, frozen))) {
		nm_gang_job_left(j, rc);
		return;
	}
	if (frozen && !j->frozen) {
		j->frozen_ns = storm_mono_ns();
		j->frozen_long_ns = c->long_ns;
	}
	else if (!frozen && j->frozen)
		count_thaw(j, c);
	j->frozen = frozen;
	j->stale = false;
	publish(j);
	if (frozen)
		c->freezes++;
	else
		c->thaws++;
}

/*
 * Idle-class outside its slots: flexible jobs, and gang jobs' batch steps
 * (v1).  Its processes are (re)collected when it is demoted, at most every
 * NM_GANG_SYNC_NS, so a new step's tasks are demoted within that.
 */
#define NM_GANG_SYNC_NS 100000000ULL

void nm_gang_job_set_idle(nm_gang_job_t *j, bool idle, nm_gang_counts_t *c)
{
	if (!j->cpu || j->idle == idle)
		return;
	if (idle) {
		uint64_t now = storm_mono_ns();

		if (!j->held)		/* known before it is true */
			nm_watchdog_switched(j->job_id, j->uid, true, &j->watch_slot);
		if (now - j->synced_ns > NM_GANG_SYNC_NS) {
			nm_cg_idle_sync(j->cpu, j->how == STORM_GANG_SWITCH_FREEZE);
			j->synced_ns = now;
		}
	}
	if (nm_cg_idle_write(j->cpu, idle)) {
		nm_verbose("gang: job %u: cpu.idle write failed (%m); it is switched by freezing",
			   j->job_id);
		nm_cg_idle_close(j->cpu);
		j->cpu = NULL;
		j->idle = false;
		j->no_idle = true;
		j->stale = true;	/* its batch step freezes from now on */
		publish(j);
		return;
	}
	j->idle = idle;
	publish(j);
	if (idle)
		c->idles++;
}

/* Has the job its cpu.idle open?  Opened at the first need; where it is
 * missing the job is frozen instead, and the NM says so once per job. */
static bool has_cpu_idle(nm_gang_job_t *j)
{
	if (j->no_idle || !nm_gang_job_present(j))
		return false;
	if (!j->cpu && !(j->cpu = nm_cg_idle_open(j->job_id, j->uid))) {
		nm_info("gang: job %u: no cpu.idle on this node (%m); its %s is switched by freezing",
			j->job_id, j->how == STORM_GANG_SWITCH_IDLE ?
			"flexible policy" : "batch step");
		j->no_idle = true;
		return false;
	}
	return true;
}

/*
 * A gang job's batch step (v1) is idle-class for as long as the job shares
 * its nodes, in its slots too: set once, not at every switch (a cpu.idle
 * write per quantum cost measurably at 2 ms).  Outside its slots it so
 * gets only what the running slot leaves, and in them it runs beside its
 * own job's steps; a job script mostly waits for srun.
 */
static bool batch_idle(nm_gang_job_t *j)
{
	return j->batch && j->how == STORM_GANG_SWITCH_FREEZE &&
	       j->mask != STORM_GANG_ALL_SLOTS && has_cpu_idle(j);
}

/* Out of its slots: flexible jobs idle-class, gang jobs frozen (v1: but
 * the batch step).  Freeze first, then demote the rest. */
void nm_gang_job_switch_out(nm_gang_job_t *j, nm_gang_counts_t *c)
{
	if (j->how == STORM_GANG_SWITCH_IDLE && has_cpu_idle(j)) {
		nm_gang_job_set_frozen(j, false, c);
		nm_gang_job_set_idle(j, true, c);
		return;
	}
	nm_gang_job_set_frozen(j, true, c);
	nm_gang_job_set_idle(j, batch_idle(j), c);
}

void nm_gang_job_switch_in(nm_gang_job_t *j, nm_gang_counts_t *c)
{
	nm_gang_job_set_idle(j, batch_idle(j), c);
	nm_gang_job_set_frozen(j, false, c);
}

/*
 * Slurm suspended the job (scontrol suspend; the table says "hold"): it is
 * Slurm's until it resumes.  v1: Slurm froze the same step cgroups we
 * switch, so its freeze may have landed while ours held them, and a thaw
 * of ours since would have resumed them: each step is frozen once more,
 * then none is counted ours.  v2: our job-level freeze goes; Slurm's
 * step-level one stays.
 */
void nm_gang_job_hold(nm_gang_job_t *j, nm_gang_counts_t *c)
{
	if (j->held)
		return;
	nm_gang_job_set_idle(j, false, c);
	if (j->dir_fd >= 0) {
		(void) nm_gang_job_scan(j, 0);
		for (int i = 0; i < j->nsteps; i++)
			(void) nm_cg_write(j->steps[i].fd, true);
		j->frozen = false;
	} else {
		nm_gang_job_set_frozen(j, false, c);
	}
	j->held = true;
	publish(j);
	if (nm_gang_job_present(j))
		nm_info("gang: job %u suspended by Slurm: not switched until it resumes",
			j->job_id);
}

/* Resumed by Slurm: its cgroups are written afresh at the next switch
 * (Slurm thawed them; a late hold of ours may have frozen them since). */
void nm_gang_job_unhold(nm_gang_job_t *j)
{
	if (!j->held)
		return;
	j->held = false;
	if (!nm_gang_job_present(j))
		return;
	j->frozen = true;
	j->stale = true;
	publish(j);
	nm_info("gang: job %u resumed by Slurm: switched again", j->job_id);
}

/* A job's word in the "gang" line. */
const char *nm_gang_job_state(const nm_gang_job_t *j)
{
	if (!nm_gang_job_present(j))
		return "absent";
	if (j->held)
		return "held";
	if (j->frozen)
		return "frozen";
	if (j->idle && j->how == STORM_GANG_SWITCH_IDLE)
		return "idle";
	return "running";
}


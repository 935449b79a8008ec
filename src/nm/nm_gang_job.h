/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang_job.h - one job of the gang table on this node (nm_gang_job.c):
 * its cgroups, found and followed as its steps come and go, and how it
 * is switched out of its slots and back in.  nm_gang.c keeps the table
 * of them and decides when; the caller serializes.
 */
#ifndef STORM_NM_GANG_JOB_H
#define STORM_NM_GANG_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "nm_cgroup.h"

/* v1: a step a job starts has a cgroup of its own, unfrozen: a freeze
 * looks for new steps, but at most this often per job, and while a job is
 * frozen the watcher looks this often, so a step started outside its
 * job's slots runs at most this long beside the other slot.  Not at every
 * freeze: an open and read of the job's cgroup.procs at every freeze (the
 * stepd look this replaced) was measurably part of a node manager's CPU
 * at 20 ms quanta, and a directory read is the same kind of work. */
#define NM_GANG_SCAN_MS 100
#define NM_GANG_SCAN_NS (NM_GANG_SCAN_MS * 1000000ULL)

/* A step cgroup of a job (v1). */
typedef struct nm_gang_step {
	char name[48];		/* "step_0", "step_batch", ... */
	int fd;			/* its freezer.state */
	bool batch;
	bool seen;		/* found by the last scan */
} nm_gang_step_t;

/* A job of the gang table on this node. */
typedef struct nm_gang_job {
	uint32_t job_id, uid, mask;
	uint32_t how;		/* STORM_GANG_SWITCH_* from the table */
	int fd;			/* v2: job-level freeze control; or -1 */
	int dir_fd;		/* v1: its freezer directory; or -1 */
	nm_gang_step_t *steps;	/* v1: its step cgroups here */
	int nsteps, capsteps;
	bool batch;		/* v1: its batch step is on this node */
	bool frozen;		/* switched out by us (frozen steps) */
	uint64_t frozen_ns;	/* since when (CLOCK_MONOTONIC) */
	uint64_t frozen_long_ns;	/* the counts' long_ns then */
	bool stale;		/* frozen may not be true: write it next time */
	nm_cg_idle_t *cpu;	/* its cpu.idle (flexible; gang: the batch
				 * step's), NULL if none */
	bool idle;		/* made idle-class by us */
	bool no_idle;		/* cpu.idle unavailable: freeze instead */
	bool held;		/* suspended by Slurm: left to Slurm */
	uint64_t synced_ns;	/* last move of its processes (v1) */
	uint64_t scan_ns;	/* last look for its steps (v1) */
	bool listed;		/* in the current table */
	uint64_t retry_ns;	/* look for its cgroup again after this */
	int watch_slot;		/* its slot in the watchdog's page, or -1 */
} nm_gang_job_t;

/* What the switches did, for the "gang" ctl line.  A freeze is long when
 * it lasted over long_ns, twice what the schedule in force keeps a job
 * out ((slots - 1) quanta; nm_gang.c sets it): a late strobe or a slow
 * thaw.  One that lasted over failsafe_ns broke the promise that no job
 * stays frozen longer than FailSafe without strobes. */
typedef struct nm_gang_counts {
	uint64_t freezes, thaws, idles;
	uint64_t long_ns, freezes_long, freeze_max_ns;
	uint64_t failsafe_ns, freezes_over_failsafe;
} nm_gang_counts_t;

/* A job not opened yet: no cgroup, not switched. */
extern void nm_gang_job_init(nm_gang_job_t *j, uint32_t job_id, uint32_t uid);
/* Close its cgroups and free what it holds (not j itself). */
extern void nm_gang_job_release(nm_gang_job_t *j);
/* Are its cgroups open on this node? */
extern bool nm_gang_job_present(const nm_gang_job_t *j);
/* Find its cgroups; if absent, looked for again after a while (retry_ns). */
extern void nm_gang_job_open(nm_gang_job_t *j, uint64_t now);
/* Its cgroup went (rc: the -errno that said so): forget, look again later. */
extern void nm_gang_job_left(nm_gang_job_t *j, int rc);
/* v1: its steps brought up to date if the last look is older than every
 * ns; 0, or -errno when the job's cgroup is gone. */
extern int nm_gang_job_scan(nm_gang_job_t *j, uint64_t every);
extern void nm_gang_job_set_frozen(nm_gang_job_t *j, bool frozen,
				   nm_gang_counts_t *c);
extern void nm_gang_job_set_idle(nm_gang_job_t *j, bool idle,
				 nm_gang_counts_t *c);
/* Out of its slots / into them (the policy the table says). */
extern void nm_gang_job_switch_out(nm_gang_job_t *j, nm_gang_counts_t *c);
extern void nm_gang_job_switch_in(nm_gang_job_t *j, nm_gang_counts_t *c);
/* Slurm suspended it / resumed it: left to Slurm meanwhile. */
extern void nm_gang_job_hold(nm_gang_job_t *j, nm_gang_counts_t *c);
extern void nm_gang_job_unhold(nm_gang_job_t *j);
/* Its word in the "gang" ctl line: absent, held, frozen, idle, running. */
extern const char *nm_gang_job_state(const nm_gang_job_t *j);

#endif /* STORM_NM_GANG_JOB_H */

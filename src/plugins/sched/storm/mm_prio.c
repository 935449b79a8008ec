/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_prio.c - the Machine Manager thread's scheduling priority.
 *
 * The thread is SCHED_FIFO (MM_STROBE_PRIO) only while it drives the
 * fabric: the confirm, the strobe, the probe and the sleep to the
 * boundary, where it waits on nothing but the fabric and the clock.  At
 * normal priority each of those wake-ups (three or four a quantum) queued
 * behind the job a node had just thawed, and the period stretched well
 * past the quantum once the nodes switched at COMMIT.  It is back at
 * normal priority whenever it takes slurmctld's locks, drains a node or
 * writes a file: with the whole thread real-time, slurmctld can hang at
 * start-up on a busy host (the thread waits on a lock whose holder never
 * runs).  But only then: a quantum that needs none of that (all but
 * the one that rebuilds every 100 ms and the one that writes the status
 * file every second) stays real-time throughout.  Dropping and raising the
 * priority around that work every quantum cost six sched_setscheduler
 * calls a quantum, and each drop let a busy job preempt the thread, which
 * made slurmctld's CPU time and context switches climb at short quanta.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "mm_prio.h"

extern void mm_prio_set(mm_t *mm, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	int rc;

	if (mm->prio == prio)
		return;
	mm->prio = prio;
	rc = pthread_setschedparam(pthread_self(),
				   prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (rc && prio && !mm->prio_warned) {
		mm->prio_warned = true;
		verbose("%s: no SCHED_FIFO for the strobe thread (%s); quanta will be late on a busy host",
			MM_PREFIX, strerror(rc));
	}
}

extern bool mm_strobe_switches(const mm_t *mm)
{
	return mm->matrix.nslots > 1 || mm->table.dirty;
}

/*
 * Real time only while strobes switch something: a heartbeat that is a few
 * milliseconds late on a busy host harms nothing, and raising and lowering
 * the priority around each one cost three sched_setscheduler calls a
 * heartbeat.
 */
extern void mm_prio_rt(mm_t *mm, bool on)
{
	mm_prio_set(mm, on && mm_strobe_switches(mm) ? MM_STROBE_PRIO : 0);
}

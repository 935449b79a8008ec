/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_prio.h - the Machine Manager thread's scheduling priority.
 *
 * The thread drives the fabric itself (no progress thread: each handoff to
 * one cost slurmctld two context switches per message, most of its CPU at
 * millisecond quanta); the heartbeat listener (mm_listener.h) adds one
 * progress pass a tick, a sixteenth of SuspectTime.
 */
#ifndef STORM_MM_PRIO_H
#define STORM_MM_PRIO_H

#include <stdbool.h>

#include "mm_state.h"

/*
 * While it strobes, the thread runs SCHED_FIFO above the node managers'
 * threads (40, 41), so that on a host it shares with node managers a
 * strobe reaches all its tree children before the first of them preempts
 * it: below them, the switch skew across nodes grew measurably.
 */
#define MM_STROBE_PRIO 50
/*
 * While it waits for a strobe's acknowledgements it is below the node
 * managers: the nodes switch as the strobe reaches them, and on a shared
 * host each acknowledgement that woke the thread above them preempted a
 * node in the middle of its switch, doubling the switch skew.
 */
#define MM_ACK_WAIT_PRIO 30

/* SCHED_FIFO at prio, or SCHED_OTHER for 0; a no-op when already so. */
extern void mm_prio_set(mm_t *mm, int prio);
/* The next strobe can switch something: more than one slot, or a new job
 * table to deliver.  Otherwise it is a heartbeat. */
extern bool mm_strobe_switches(const mm_t *mm);
/* Real time (on) or not, as mm_prio.c explains. */
extern void mm_prio_rt(mm_t *mm, bool on);

#endif /* STORM_MM_PRIO_H */

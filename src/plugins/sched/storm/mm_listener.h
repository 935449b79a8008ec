/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_listener.h - the Machine Manager's listener: a thread of its own that
 * hears the node managers' heartbeats and drains a node silent for
 * SuspectTime, whatever the MM thread (mm_gang.c) is doing.
 *
 * The MM thread cannot do both: one fabric operation that includes a node
 * just going silent waits out its timeout (up to twice half of SuspectTime
 * for a confirmation), and it takes slurmctld's locks at normal priority,
 * where a host busy with jobs runs it late; a heartbeat then waits in the
 * socket and the silence is counted from when it was taken in, not from
 * when it came.  The listener can be held up too (slurmctld stopped, the
 * host stalled, this thread blocked in the fabric's progress or on a
 * lock): such a stall is nobody's silence, and every silence restarts
 * after it (mm_silence.h).  The listener runs SCHED_FIFO (MM_LISTENER_PRIO), wakes
 * every mm_listener_tick_ns(), drives the fabric's progress itself (a
 * storm_progress() pass, thread-safe: stormmech has one lock per ctx and
 * wakes the MM thread if the pass finished what it waits for), and counts
 * silence from each beat as it is taken in (mm_silence.h).  It publishes
 * each node's silence and quiet flag in mm_node_t's atomics, where the MM
 * thread reads them (quiet nodes are left out of every operation), and
 * drains through mm_faults_drain_silent() at normal priority, holding
 * nothing the MM thread needs.
 */
#ifndef STORM_MM_LISTENER_H
#define STORM_MM_LISTENER_H

#include <stdint.h>

#include "mm_state.h"

/*
 * Above every job and every normal-priority thread of slurmctld; below the
 * node managers' switch and progress threads (41, 40) and the MM's strobe
 * (mm_prio.h), which on a host shared with node managers must not be
 * preempted in the middle of a switch.  Its wake-ups are short.
 */
#define MM_LISTENER_PRIO 35

/* How often it listens: a sixteenth of SuspectTime (a quarter of the
 * heartbeats' interval), at most every millisecond and at least every
 * 50 ms, so that a stop is quick at long SuspectTimes. */
extern uint64_t mm_listener_tick_ns(uint64_t suspect_time_us);

/* After the fabric opened (mm->ctx, mm->nodes): 0, or -1 (logged). */
extern int mm_listener_start(mm_t *mm);
/* Before it closes: joins the thread and frees its state. */
extern void mm_listener_stop(mm_t *mm);

#endif /* STORM_MM_LISTENER_H */

/*
 * mm_heartbeat.h - the Machine Manager hears the node managers: their
 * heartbeats (storm_report.h, written into this MM's region every
 * storm_conf_beat_us()) and their acknowledgements.  What a node has been
 * silent for, counted here, is what mm_faults.c drains on after
 * SuspectTime, at any Timeslice and StrobeInterval: the heartbeats come
 * whether the strobes are frequent, rare or absent.
 */
#ifndef STORM_MM_HEARTBEAT_H
#define STORM_MM_HEARTBEAT_H

#include <stdint.h>

#include "src/common/storm_report.h"

#include "mm_state.h"

/* Take in what arrived and count each node's silence since the last call;
 * at most once a millisecond (cheap to call every quantum). */
extern void mm_heartbeat_listen(mm_t *mm);
/* Node i was heard (an acknowledgement) now. */
extern void mm_heartbeat_heard(mm_t *mm, int i);
/* A sleep due at due ended at woke: oversleeping by much means the host
 * stalled, and that time is not counted as any node's silence. */
extern void mm_heartbeat_slept(mm_t *mm, uint64_t due, uint64_t woke);
/* How often this thread must listen while it sleeps, so that the
 * silence it counts is no coarser than an eighth of SuspectTime. */
extern uint64_t mm_heartbeat_listen_ns(const mm_t *mm);
/* Node i's last report in this MM's region, or NULL (none or torn). */
extern const storm_node_report_t *mm_heartbeat_report(const mm_t *mm, int i);

#endif /* STORM_MM_HEARTBEAT_H */

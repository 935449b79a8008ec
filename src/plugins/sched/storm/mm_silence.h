/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_silence.h - how long each node manager has been silent, and what
 * follows from it: quiet (left out of every fabric operation) at half of
 * SuspectTime, due to be drained at SuspectTime, unless the silence may be
 * the controller's own.
 *
 * Silence is what the listener saw, not what the clock says: it is counted
 * only over time in which the listener was observing.  A pass that comes
 * more than mm_silence_stall_ns() after the one before (the listener
 * descheduled, blocked in the fabric's progress or on a lock, slurmctld or
 * the whole host stopped) is a stall, and every silence restarts from the
 * end of that pass, once what was queued meanwhile is taken in.  And a node
 * is due only when some other node was heard SuspectTime after it: a
 * silence that every node shares is the controller's (nobody heard: nobody
 * is drained, however long it lasts).  The episode ends only when some
 * node is heard after it began, and is forgiven then: every silence
 * restarts, so a node not back yet is due SuspectTime later at the
 * earliest (the nodes come back one by one).
 *
 * Pure bookkeeping over times the caller gives (CLOCK_MONOTONIC ns): no
 * fabric, no Slurm, no clock of its own, so that the rules are tested
 * without a cluster (testsuite/unit/test_mm_silence.c).  The Machine
 * Manager's listener thread (mm_listener.c) is its only user.
 */
#ifndef STORM_MM_SILENCE_H
#define STORM_MM_SILENCE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mm_silence_node {
	uint64_t heard_ns;	/* when last heard; 0: never */
	uint64_t silent_ns;	/* observed silence at the last tick */
	bool quiet;		/* observed silence over half of SuspectTime */
} mm_silence_node_t;

typedef struct mm_silence {
	uint64_t suspect_ns;	/* SuspectTime */
	uint64_t stall_limit_ns; /* passes further apart: a stall */
	uint64_t last_tick_ns;	/* 0 before the first tick */
	uint64_t watch_from_ns;	/* silence counts from here at the earliest */
	uint64_t newest_ns;	/* the newest heard_ns of any node */
	uint64_t stall_ns;	/* the last stall's length, for the log */
	bool all_silent;	/* nobody heard: no drains */
	uint64_t all_silent_ns;	/* ... since this tick */
	uint64_t heard_again_ns; /* the last such episode ended then */
	int heard_nodes;	/* nodes heard at least once */
	int nnodes;
	mm_silence_node_t *nodes;
} mm_silence_t;

/* What a tick found, for the caller to log. */
enum {
	MM_SILENCE_NOBODY = 1,		/* nobody heard: nobody drained */
	MM_SILENCE_FORGIVEN = 2,	/* heard again: every silence restarts */
	MM_SILENCE_STALL = 4,		/* not observed for stall_ns: ditto */
};

/*
 * How far apart two passes of a listener that runs every tick_ns may be
 * before the time between them is not counted: three ticks (a real-time
 * thread is late by microseconds; one that fell back to normal priority
 * by a scheduler slice), but at least 20 ms or a quarter of SuspectTime
 * if less, so that short ticks do not call every slice a stall.
 */
extern uint64_t mm_silence_stall_ns(uint64_t suspect_ns, uint64_t tick_ns);

/* 0, or -1 when out of memory. */
extern int mm_silence_init(mm_silence_t *s, int nnodes, uint64_t suspect_ns,
			   uint64_t tick_ns);
extern void mm_silence_free(mm_silence_t *s);
/* Node i was heard at t: a new heartbeat, or an acknowledgement. */
extern void mm_silence_heard(mm_silence_t *s, int i, uint64_t t);
/* A pass ended at now, with everything that arrived taken in: count the
 * silences; MM_SILENCE_* flags. */
extern unsigned mm_silence_tick(mm_silence_t *s, uint64_t now);
/* Node i is silent over SuspectTime, observed, and somebody else was heard
 * SuspectTime after it. */
extern bool mm_silence_due(const mm_silence_t *s, int i);

#endif /* STORM_MM_SILENCE_H */

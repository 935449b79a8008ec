/*
 * mm_silence.h - how long each node manager has been silent, and what
 * follows from it: quiet (left out of every fabric operation) at half of
 * SuspectTime, due to be drained at SuspectTime, unless nobody is heard.
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
	bool heard_new;		/* heard since the last tick */
	uint64_t silent_ns;	/* silence counted since heard_ns */
	bool quiet;		/* silent over half of SuspectTime */
} mm_silence_node_t;

typedef struct mm_silence {
	uint64_t suspect_ns;	/* SuspectTime */
	uint64_t last_tick_ns;	/* 0 before the first tick */
	uint64_t stalled_ns;	/* oversleeping since then */
	bool all_silent;	/* nobody heard: no drains */
	int nnodes;
	mm_silence_node_t *nodes;
} mm_silence_t;

/* What a tick found, for the caller to log. */
enum {
	MM_SILENCE_NOBODY = 1,		/* nobody heard: nobody drained */
	MM_SILENCE_FORGIVEN = 2,	/* heard again: every silence reset */
};

/* A sleep this much past its deadline was the host's stall, not the
 * nodes' silence: a real-time thread wakes within microseconds. */
#define MM_SILENCE_STALL_NS 20000000ULL

/* 0, or -1 when out of memory. */
extern int mm_silence_init(mm_silence_t *s, int nnodes, uint64_t suspect_ns);
extern void mm_silence_free(mm_silence_t *s);
/* Node i was heard at t: a new heartbeat, or an acknowledgement. */
extern void mm_silence_heard(mm_silence_t *s, int i, uint64_t t);
/* A sleep due at due ended at woke. */
extern void mm_silence_slept(mm_silence_t *s, uint64_t due, uint64_t woke);
/* Count everyone's silence up to now; MM_SILENCE_* flags. */
extern unsigned mm_silence_tick(mm_silence_t *s, uint64_t now);
/* Node i is silent over SuspectTime and somebody else is heard. */
extern bool mm_silence_due(const mm_silence_t *s, int i);

#endif /* STORM_MM_SILENCE_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang_plan.h - the node manager's switching decisions, as arithmetic:
 * how to take a strobe (at its announced instant or on arrival), which
 * switches it leaves to time and when, which of them is due, and how long
 * the watcher may sleep.
 *
 * Pure: functions of the times and the strobe the caller gives
 * (CLOCK_MONOTONIC ns unless said otherwise), no clock of their own, no
 * lock, no log, no fabric, so that the rules are tested without a cluster
 * (testsuite/unit/test_nm_gang_plan.c).  nm_gang.c does the switching
 * they decide, under its lock.
 */
#ifndef STORM_NM_GANG_PLAN_H
#define STORM_NM_GANG_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "src/common/storm_gang.h"

/* The watcher's sleep: the fail-safe check at the soonest and at the
 * latest (while a job is frozen, the next look for its new steps). */
#define NM_GANG_WAIT_MIN_MS 5
#define NM_GANG_WAIT_MAX_MS 250

/*
 * The switches a strobe leaves to the node: `left` more, the next to slot
 * `slot` (switch `q` of the strobe; q 0 is the strobe's own, at its
 * announced instant) at due_ns; after the strobe's own switch the next is
 * gap_ns later, then one every q_ns (the quantum).
 */
typedef struct nm_gang_subs {
	uint32_t left;
	uint32_t slot;
	uint32_t q;
	uint64_t due_ns;
	uint64_t q_ns;
	uint64_t gap_ns;
} nm_gang_subs_t;

/* What to do with a strobe on its arrival. */
typedef enum nm_gang_take {
	NM_GANG_TAKE_NOW,	/* switch to its slot at once */
	NM_GANG_TAKE_LATE,	/* at once, and count it: its instant passed */
	NM_GANG_TAKE_AT,	/* at its instant: subs.due_ns, q 0 */
} nm_gang_take_t;

/*
 * How to take a strobe: STORM_GANG_AT_ARRIVAL when it names no instant
 * (SwitchAt=arrival), STORM_GANG_AT_FALLBACK when this node's clock offset
 * to the Machine Manager is unknown or more uncertain than the quantum
 * allows (storm_clock_usable()), else STORM_GANG_AT_ANNOUNCED.
 */
extern uint32_t nm_gang_plan_mode(const storm_gang_strobe_t *s,
				  bool offset_known, uint64_t uncert_ns);

/*
 * A strobe arrived at recv_ns (this node's CLOCK_REALTIME, as its clock
 * offset counts) = recv_mono (CLOCK_MONOTONIC), to be taken in mode with
 * clock offset off_ns: whether to switch now, and in *subs the switches
 * left to time.  A strobe that cannot keep an instant (on arrival, or one
 * slot: nothing time-shares) switches now.
 */
extern nm_gang_take_t nm_gang_plan_strobe(const storm_gang_strobe_t *s,
					  uint32_t mode, int64_t off_ns,
					  uint64_t recv_ns, uint64_t recv_mono,
					  nm_gang_subs_t *subs);

/*
 * The timed switch due at now, if any: true with its slot and index in the
 * strobe, *subs moved on past it.  A thread late by more than a quantum
 * jumps to the slot the other nodes are in, but never over the strobe's
 * own switch (it may bring a new table).  nslots: the strobe's (0 as 1).
 */
extern bool nm_gang_plan_next_switch(nm_gang_subs_t *subs, uint32_t nslots,
				     uint64_t now, uint32_t *slot,
				     uint32_t *q);

/*
 * When the watcher wakes next (ns): when the fail-safe would fire
 * (failsafe_due), within NM_GANG_WAIT_MIN_MS of now at the soonest and
 * max_ms at the latest, or at the next timed switch if that is sooner.
 */
extern uint64_t nm_gang_plan_deadline(uint64_t now, uint64_t failsafe_due,
				      uint64_t max_ms,
				      const nm_gang_subs_t *subs);

/* A job switched out longer than this was out of its turn (the counts'
 * long freezes): two full rounds of the other slots; 0 with one slot. */
extern uint64_t nm_gang_plan_long_ns(const storm_gang_strobe_t *s);

/*
 * How long without a strobe before the fail-safe opens, after strobe s with
 * FailSafe failsafe_ns: FailSafe, or, for a strobe whose quanta outlast
 * half of FailSafe (a stopping Machine Manager's handover, HandoverTime;
 * StrobeInterval is never that long), FailSafe after its last quantum.
 */
extern uint64_t nm_gang_plan_failsafe_ns(const storm_gang_strobe_t *s,
					 uint64_t failsafe_ns);

#endif /* STORM_NM_GANG_PLAN_H */

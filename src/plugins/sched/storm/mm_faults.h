/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_faults.h - the Machine Manager's fault detection: which node managers
 * acknowledge, which are suspects, which are out of the strobe set, and
 * draining in Slurm those that miss SuspectQuanta quanta in a row or are
 * silent (no heartbeat, no acknowledgement) for SuspectTime: the latter
 * found by the listener thread (mm_listener.h).  What counts and when a
 * node is drained are the rules of mm_fault_rules.h; this file gathers
 * their inputs and acts on them.
 */
#ifndef STORM_MM_FAULTS_H
#define STORM_MM_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "src/stormmech/stormmech.h"

#include "mm_state.h"

/* One-node COMPARE-AND-WRITE (applied >= want): 1 acked, 0 not, <0 an
 * error; *us (if not NULL) its round trip. */
extern int mm_faults_probe(mm_t *mm, int rank, uint64_t want, uint64_t *us);
/* Node i answered (it is no suspect), or missed a quantum (why). */
extern void mm_faults_acked(mm_t *mm, int i);
extern void mm_faults_missed(mm_t *mm, int i, const char *why);
/* Would a probe of a dead node still let the next strobe reach the nodes
 * before their FailSafe opens (mm_rules_probe_fits())? */
extern bool mm_faults_probe_fits(const mm_t *mm, uint64_t now);
/* The nodes an operation lost (storm_op_lost(), storm_caw_lost()): each
 * that does not answer alone, or cannot be asked in time
 * (mm_faults_probe_fits()), leaves the strobe set; true if any did. */
extern bool mm_faults_sort_out(mm_t *mm, const storm_set_t *lost,
			       const char *why);
/* Did every live node apply the previous strobe (mm->epoch)? */
extern void mm_faults_confirm(mm_t *mm);
/* Nodes out of the strobe set: count the quantum, and see whether they
 * answer again: at once when heard again, else every second (a restarted
 * node manager).  Then the quantum is tallied (mm_rules_quantum_end()):
 * once a quantum, before mm_faults_to_drain(). */
extern void mm_faults_watch_dead(mm_t *mm, uint64_t now);
/* A node mm_faults_drain() would drain now (it takes slurmctld's locks). */
extern bool mm_faults_to_drain(mm_t *mm);
/* Drain in Slurm the nodes that missed SuspectQuanta quanta (the MM
 * thread). */
extern void mm_faults_drain(mm_t *mm);
/* Drain node i, silent for silent_ns (the listener thread, at normal
 * priority, holding nothing), unless it is drained already. */
extern void mm_faults_drain_silent(mm_t *mm, int i, uint64_t silent_ns,
				   uint64_t suspect_us);
/* The MM thread: nodes the listener drained leave the strobe set. */
extern void mm_faults_take_out(mm_t *mm);
/* One live node's acknowledgement latency, round robin. */
extern void mm_faults_probe_latency(mm_t *mm);

#endif /* STORM_MM_FAULTS_H */

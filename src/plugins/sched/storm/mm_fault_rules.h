/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_fault_rules.h - the Machine Manager's suspect and drain rules: which
 * missed quanta count against a node, when it is drained for them, when
 * the controller's side is the likelier fault and nobody is drained, and
 * when a node out of the strobe set is probed.
 *
 * A missed quantum counts against a node only once another node answered
 * after it: when every node stops answering at once (every node manager
 * stopped, a switch rebooting, the controller's link cut), the misses are
 * nobody's, however long that lasts.  And nobody is drained for missed
 * quanta while the listener hears no node at all, nor for SuspectTime
 * after it hears one again: the nodes come back one by one, and those not
 * back yet fell silent with everybody else.  A single dead node among
 * live ones is drained as before, after SuspectQuanta quanta in which the
 * others answered (or SuspectTime of silence, the listener's rule,
 * mm_silence.h).
 *
 * Plain inputs to decisions: no locks, no fabric, no Slurm, no globals and
 * no clock of its own.  mm_faults.c gathers the inputs (the MM thread's
 * counters, the listener's verdicts) and acts on the answers;
 * testsuite/unit/test_mm_fault_rules.c tests the rules without a cluster.
 */
#ifndef STORM_MM_FAULT_RULES_H
#define STORM_MM_FAULT_RULES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A node out of the strobe set is probed as soon as it is heard again
 * after it was taken out, then after MM_PROBE_FIRST_NS, doubling to
 * MM_PROBE_DEAD_NS while it is heard but does not answer (a link that
 * works one way only: each probe holds the MM thread for the ack timeout);
 * and once every MM_PROBE_DEAD_NS if it is not heard at all.  A node
 * manager that stalled past the ack timeout must be back in the strobes
 * well before its FailSafe opens, and FailSafe may be as short as the
 * probe period was.
 */
#define MM_PROBE_DEAD_NS 1000000000ULL
#define MM_PROBE_FIRST_NS 100000000ULL
/* Failed probes in a row after which a node's connection is forgotten. */
#define MM_PROBE_FORGET 10
/* A node manager that never answered this MM may still be starting (slurmd
 * starts it): it gets this long before it is called dead. */
#define MM_START_GRACE_NS 60000000000ULL

typedef struct mm_rules_conf {
	uint32_t suspect_quanta;	/* SuspectQuanta */
	uint64_t suspect_ns;		/* SuspectTime */
} mm_rules_conf_t;

/*
 * The MM thread's count of answers (acknowledgements, answered probes): a
 * quantum in which some node answered is an answered quantum, and a node's
 * misses count only up to the answered quanta since its first one.
 */
typedef struct mm_rules_tally {
	uint64_t acks;		/* answers taken */
	uint64_t acks_tallied;	/* ... at the end of the last quantum */
	uint64_t quanta;	/* quanta in which some node answered */
	int answering;		/* nodes that ever answered this MM */
} mm_rules_tally_t;

/* One node, as the MM thread sees it when it judges it. */
typedef struct mm_rules_node {
	bool drained;		/* drained by this MM already */
	bool acked_once;	/* answered this MM at least once */
	uint32_t misses;	/* quanta in a row without an answer */
	uint64_t miss_quanta;	/* the tally's quanta at its first miss */
	uint64_t heard_ns;	/* the listener's: last heard; 0 never */
	uint64_t silent_ns;	/* the listener's: observed silence */
} mm_rules_node_t;

/* The cluster as a whole. */
typedef struct mm_rules_cluster {
	const mm_rules_tally_t *tally;
	bool nobody_heard;	/* the listener hears no node at all */
	uint64_t heard_again_ns; /* ... heard one again then; 0 never */
	uint64_t since_start_ns; /* this MM has run this long */
} mm_rules_cluster_t;

/* A node answered; first: its first answer to this MM. */
extern void mm_rules_answered(mm_rules_tally_t *t, bool first);
/* A node missed a quantum: *misses grows, and *miss_quanta says when the
 * first of them was. */
extern void mm_rules_missed(const mm_rules_tally_t *t, uint32_t *misses,
			    uint64_t *miss_quanta);
/* The MM thread's quantum ended (once a quantum, before it judges). */
extern void mm_rules_quantum_end(mm_rules_tally_t *t);

/* The misses that count against the node: those another node answered
 * after (all of them when fewer than two nodes ever answered: there is
 * nobody to compare with). */
extern uint32_t mm_rules_misses(const mm_rules_node_t *n,
				const mm_rules_cluster_t *c);
/* Nobody heard, or heard again less than SuspectTime ago: no drain for
 * missed quanta now (at now, CLOCK_MONOTONIC ns). */
extern bool mm_rules_controller_side(const mm_rules_conf_t *conf,
				     const mm_rules_cluster_t *c,
				     uint64_t now);
/* Heard once, then silent for over SuspectTime as the listener counted. */
extern bool mm_rules_silent(const mm_rules_conf_t *conf,
			    const mm_rules_node_t *n);
/* To drain now for its missed quanta: SuspectQuanta of them count, it
 * answered this MM once (or MM_START_GRACE_NS passed), it is not drained
 * yet, and the fault is not the controller's side. */
extern bool mm_rules_suspect(const mm_rules_conf_t *conf,
			     const mm_rules_node_t *n,
			     const mm_rules_cluster_t *c, uint64_t now);
/* When a node heard but not answering is probed next, after its failed-th
 * failed probe in a row (failed >= 1). */
extern uint64_t mm_rules_probe_backoff_ns(uint32_t failed);
/* A node out of the strobe set: probe it now?  quiet: left out of every
 * operation (it would only make the probe wait out its timeout); heard:
 * heard since it was taken out or last failed a probe; periodic: the
 * once-a-second probe of every dead node is due. */
extern bool mm_rules_probe_now(bool quiet, bool heard, uint64_t next_probe_ns,
			       bool periodic, uint64_t now);
/*
 * May the MM thread probe a node that may be dead now?  A probe is a
 * one-node COMPARE-AND-WRITE whose serializer is that node, so a dead one
 * holds the thread for twice the ack timeout (probe_ns); the next strobe,
 * a quantum (q_ns) after it, must still reach the nodes before their
 * FailSafe opens, counted from the last strobe they all took (reached_ns;
 * 0: none yet, so no fail-safe to open).
 */
extern bool mm_rules_probe_fits(uint64_t now, uint64_t reached_ns,
				uint64_t failsafe_ns, uint64_t q_ns,
				uint64_t probe_ns);
/* After this many failed probes in a row, forget its connection. */
extern bool mm_rules_forget_peer(uint32_t failed_probes);

#endif /* STORM_MM_FAULT_RULES_H */

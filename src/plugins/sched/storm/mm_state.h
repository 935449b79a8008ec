/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_state.h - the Machine Manager's state: one struct, mm_t, that the
 * thread (mm_gang.c) passes to each of its parts.
 */
#ifndef STORM_MM_STATE_H
#define STORM_MM_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "src/common/storm_conf.h"
#include "src/common/storm_hist.h"
#include "src/common/storm_now.h"
#include "src/common/storm_time.h"
#include "src/stormmech/stormmech.h"

#include "mm_fault_rules.h"
#include "mm_matrix.h"

#define MM_PREFIX "sched/storm: mm"

/*
 * A node as the MM thread (mm_gang.c) and the listener thread
 * (mm_listener.c) see it.  The atomics are all they share about a node;
 * every other field is the MM thread's alone.
 */
typedef struct mm_node {
	bool live;		/* in the strobe set */
	/* drained by us, until it answers again or is resumed; set (claimed)
	 * by whichever thread drains it, before it takes slurmctld's lock */
	atomic_bool drained;
	bool acked_once;	/* has acknowledged this MM at least once */
	uint32_t failed_probes;	/* while out of the strobe set */
	uint64_t out_ns;	/* taken out (or last failed a probe) then */
	uint64_t next_probe_ns;	/* heard since out_ns: probed from then */
	uint32_t misses;	/* consecutive quanta without an ack */
	uint64_t miss_quanta;	/* answered quanta at the first of them */
	uint64_t ack_us;	/* last one-node COMPARE-AND-WRITE round trip */
	uint64_t last_ack_ns;
	/* The MM thread's last acknowledgement from it (CLOCK_MONOTONIC):
	 * heard, for the listener. */
	_Atomic uint64_t ack_heard_ns;
	/* The listener's verdicts (mm_listener.h): when it was last heard (a
	 * new heartbeat or an acknowledgement; 0 never), its silence since,
	 * and quiet: silent over half of SuspectTime, left out of every
	 * operation until heard again. */
	_Atomic uint64_t heard_ns;
	_Atomic uint64_t silent_ns;
	atomic_bool quiet;
	/* Drained by the listener for its silence: the MM thread takes it
	 * out of the strobe set (mm_faults_take_out()). */
	atomic_bool silence_drained;
	/* Drained in Slurm by this MM, until it is resumed (mm_return.c);
	 * set after slurmctld's locks were released, then (mm_jobs.c: a
	 * sample of Slurm's nodes older than that may not show the drain). */
	atomic_bool drain_ours;
	_Atomic uint64_t drain_ours_ns;
	uint64_t answering_since;	/* answering without a miss since */
} mm_node_t;

/* Moving averages, histograms and counters, for the status file. */
typedef struct mm_stats {
	uint64_t strobe_us, caw_us, period_us;
	storm_hist_t strobe_hist, caw_hist;	/* every strobe, confirmation */
	uint64_t late;			/* strobes applied late */
	uint64_t confirm_timeouts;
	_Atomic uint64_t drains;	/* nodes this MM drained (both threads) */
	uint64_t returns;		/* ... and returned to service */
} mm_stats_t;

/* The steps of a quantum (mm_gang.c), for the log of a late strobe. */
enum { MM_STEP_PROBE, MM_STEP_CONFIRM, MM_STEP_REBUILD, MM_STEP_STROBE,
       MM_STEP_STATUS, MM_STEP_SLEEP, MM_STEPS };

/* When each periodic step last ran (CLOCK_MONOTONIC ns). */
typedef struct mm_clock {
	uint64_t next;			/* the next quantum boundary */
	uint64_t last_status, last_probe, last_ack_probe;
	uint64_t last_sampler_try;	/* the sampler could not start */
	uint64_t last_start;		/* of the last strobe */
	uint64_t last_reached;		/* the last strobe every node in the
					 * set took, sent then */
	uint32_t last_span;
	bool last_switching;		/* more than one slot then */
	int rr;				/* the node last probed for latency */
	uint64_t step_ns[MM_STEPS];	/* what each step last took */
	/* ... and of the last confirmation step: its COMPARE-AND-WRITE, the
	 * one-node probes (mm_faults_probe()), the drains and returns */
	uint64_t confirm_caw_ns, probes_ns, slurm_ns;
	uint64_t gap_logged_ns;		/* the last late strobe logged */
	uint64_t gaps_unlogged;		/* ... and those since, unlogged */
} mm_clock_t;

typedef struct mm {
	/* Shared with slurmctld's threads, under mutex. */
	pthread_mutex_t mutex;
	pthread_cond_t wake;
	pthread_t tid;
	bool started, stopping;
	storm_conf_t conf_next;
	uint64_t conf_next_gen;

	/* The thread's own. */
	storm_conf_t conf;
	uint64_t conf_gen;
	storm_ctx_t *ctx;
	int ack_timeout_ms;		/* ctx's (mm_fabric.c) */
	int nnodes;
	char **node_names;		/* copies, for drain and status */
	char **node_addrs;
	mm_node_t *nodes;
	mm_matrix_t matrix;
	mm_table_t table;
	int cur_slot;
	/* The strobe being served covers span quanta from span_start
	 * (CLOCK_MONOTONIC); cur_slot is its first.  span > 1 only with
	 * StrobeInterval. */
	uint32_t span;
	uint64_t span_start;
	uint64_t epoch, mm_id;
	uint64_t jobs_left;		/* jobs seen end or suspend: the nodes
					 * get the table at once */
	mm_stats_t stats;
	uint64_t nquanta;
	bool last_heartbeat;		/* the last strobe was a heartbeat */
	uint64_t confirm_pause_until;
	uint64_t start_ns;
	struct mm_offsets *offsets;	/* clock offsets, the lead: mm_offset.c */
	struct mm_listener *listener;	/* the heartbeats' thread: mm_listener.c */
	struct mm_sampler *sampler;	/* Slurm's jobs' thread: mm_sampler.c */
	mm_rules_tally_t tally;		/* answered quanta (mm_fault_rules.h) */
	/* The listener's view of the whole cluster (mm_silence.h): no node
	 * heard at all, and when one was heard again after that. */
	atomic_bool nobody_heard;
	_Atomic uint64_t heard_again_ns;
	/* Bumped by the listener when a quiet node is heard again: it may
	 * have missed a job table, so everyone gets it again. */
	_Atomic uint64_t back_gen;
	uint64_t back_seen;
	int prio;			/* the thread's: 0 normal, -1 unknown */
	bool prio_warned;
	mm_clock_t clk;
	storm_now_writer_t now;		/* the last strobe, for readers */
} mm_t;

#endif /* STORM_MM_STATE_H */

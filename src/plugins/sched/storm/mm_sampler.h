/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_sampler.h - Slurm's running jobs, copied under slurmctld's read locks
 * by a thread of their own, so that the Machine Manager's strobe thread
 * never waits for those locks.
 *
 * A slurmctld thread that holds a write lock (a step being created, a job
 * ending, a scheduling pass) can hold it for a second on a loaded host,
 * and a reader waits that long.  The strobe thread must not: while it
 * waits no strobe goes out, and every node manager's fail-safe opens.  So
 * the sampler takes the locks at normal priority every MM_SAMPLE_NS and
 * leaves its copy where the strobe thread takes it without waiting
 * (mm_jobs.c places what it finds).  A job that starts or ends reaches
 * the matrix one sample later than it did, at most MM_SAMPLE_NS.
 *
 * The thread runs while the Machine Manager's does (mm_gang.c starts it
 * before the first quantum and stops it after the last).
 */
#ifndef STORM_MM_SAMPLER_H
#define STORM_MM_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "mm_state.h"

#define MM_SAMPLE_NS 100000000ULL

/* One running or suspended job of Slurm's, as the sample saw it. */
typedef struct mm_sample_job {
	uint32_t job_id, user_id;
	bool suspended;
	char *part;		/* its partition's name; NULL: none */
	int nbits;		/* bits in nodes: Slurm's node count */
	uint64_t *nodes;	/* its nodes by Slurm's node index (= rank) */
	mm_job_label_t label;	/* the user resolved after the locks */
} mm_sample_job_t;

typedef struct mm_sample {
	int njobs;
	mm_sample_job_t *jobs;
	int nnodes;		/* Slurm's node count at the sample */
	/* a bit per node index: drained in Slurm, or no record */
	uint64_t *drained;
	uint64_t locked_ns;	/* when it had them (CLOCK_MONOTONIC) */
} mm_sample_t;

/* Start the thread; its first sample is taken at once.  0, or -1 logged. */
extern int mm_sampler_start(mm_t *mm);
/* Join the thread and free what it left. */
extern void mm_sampler_stop(mm_t *mm);
/* The newest sample not taken yet, or NULL; never waits for the sampler
 * at work.  The caller owns it (mm_sample_free()). */
extern mm_sample_t *mm_sampler_take(mm_t *mm);
/* Whether node index i was drained (or had no record) in the sample. */
extern bool mm_sample_drained(const mm_sample_t *s, int i);
extern void mm_sample_free(mm_sample_t *s);

#endif /* STORM_MM_SAMPLER_H */

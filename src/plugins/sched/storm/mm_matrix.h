/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_matrix.h - the Machine Manager's Ousterhout matrix, over plain data.
 *
 * Rows are slots, columns nodes.  Each running job of a Policy=gang or
 * flexible partition keeps the slot it got when it started (so a job never
 * moves while it runs); a new job takes the lowest slot where none of its
 * nodes is taken.  Slots left empty by ended jobs then disappear (the
 * others keep their order).  Slots are filled Ousterhout-style: in slot t a
 * job of another slot also runs if none of its nodes is used by slot t's
 * jobs or by another job already filled in.  A job that shares no node with
 * any other job runs in every slot, so MPL 1 never freezes anything.  The
 * result goes to the node managers as one slot mask per job (storm_gang.h).
 *
 * No Slurm headers and no locks: mm_jobs.c copies what it needs from
 * Slurm's job list into the jobs here, so that this can be unit tested.
 */
#ifndef STORM_MM_MATRIX_H
#define STORM_MM_MATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/common/storm_conf.h"
#include "src/common/storm_gang.h"
#include "src/common/storm_status.h"

/* Slots a mask can name; a job that finds none free runs unswitched. */
#define MM_MAX_SLOTS 32

/*
 * What the status file shows of a job for people, as the sampler last
 * copied it from Slurm's record (mm_sampler.c).  The strobe thread renders
 * the status: it must take no slurmctld lock and make no NSS lookup, since
 * either can wait for seconds while no strobe goes out.
 */
typedef struct mm_job_label {
	char name[STORM_STATUS_JOBNAMELEN];	/* "" when none */
	char user[STORM_STATUS_NAMELEN];	/* "" when not resolved */
	uint32_t cpus;				/* allocated */
} mm_job_label_t;

typedef struct mm_job {
	uint32_t job_id, uid;
	mm_job_label_t label;
	int slot;		/* -1: none */
	uint32_t mask;		/* bit s: runs in slot s */
	bool gang;		/* switched: Policy=gang or flexible */
	bool held;		/* suspended by Slurm: no slot, not switched */
	uint32_t how;		/* STORM_GANG_SWITCH_*: freeze or idle */
	bool seen;		/* in Slurm's job list at the last look */
	bool seen_policy;	/* how and gang were set */
	uint64_t *nodes;	/* bit k: node rank k (malloc) */
	int nbits;		/* bits in nodes */
} mm_job_t;

typedef struct mm_matrix {
	mm_job_t *jobs;
	int njobs, capjobs;
	int nslots;		/* after compaction: slots 0..nslots-1 */
} mm_matrix_t;

/* Told of each job mm_matrix_place() looked at: its new slot, or -1 when
 * it found none free (it then runs unswitched: gang is cleared). */
typedef void (*mm_matrix_place_f)(void *arg, const mm_job_t *job);

/* The table the node managers get, and its generation. */
typedef struct mm_table {
	storm_gang_table_t *t;	/* NULL before the first build */
	size_t len;
	uint64_t gen;
	bool dirty;		/* built but not sent yet */
} mm_table_t;

/* Takes a slot: a gang or flexible job that Slurm has not suspended. */
extern bool mm_job_switched(const mm_job_t *j);
extern bool mm_job_has_node(const mm_job_t *j, int k);
extern bool mm_job_overlap(const mm_job_t *a, const mm_job_t *b);
/* Copy a node bitmap of nbits bits (words of 64); 1 if it changed, 0 if
 * not, -ENOMEM (the job keeps its old nodes). */
extern int mm_job_set_nodes(mm_job_t *j, const uint64_t *words, int nbits);
/*
 * A job's policy, from its partition; true if that changed how it is
 * switched.  *announce is set when the job already had a policy (the
 * caller logs the change).
 */
extern bool mm_job_apply_policy(mm_job_t *j, storm_policy_t pol,
				bool *announce);
/* What the status file says the job runs under. */
extern const char *mm_job_policy_str(const mm_job_t *j);

extern mm_job_t *mm_matrix_find(mm_matrix_t *m, uint32_t job_id);
/* A new job without slot or nodes; NULL on ENOMEM. */
extern mm_job_t *mm_matrix_add(mm_matrix_t *m, uint32_t job_id,
			       uint32_t uid);
/* Remove jobs[i]; the last job takes its place. */
extern void mm_matrix_drop(mm_matrix_t *m, int i);
extern void mm_matrix_free(mm_matrix_t *m);

/* New switched jobs take the lowest slot free on all their nodes; jobs
 * that are not switched lose theirs. */
extern void mm_matrix_place(mm_matrix_t *m, mm_matrix_place_f cb,
			    void *arg);
/* Slots no switched job holds disappear; the others keep their order. */
extern void mm_matrix_compact(mm_matrix_t *m);
/* Each job's mask: its own slot, plus every slot it fills without a
 * clash; STORM_GANG_ALL_SLOTS for a job that runs in all of them. */
extern void mm_matrix_fill(mm_matrix_t *m);
/* The three above, in order. */
extern void mm_matrix_update(mm_matrix_t *m, mm_matrix_place_f cb,
			     void *arg);
/* Every job in every slot (the MM stopping: nothing stays frozen). */
extern void mm_matrix_release_all(mm_matrix_t *m);

/* The slot a strobe covering span quanta after cur's leads to. */
extern int mm_matrix_next_slot(int cur, uint32_t span, int nslots);

/* The job table from the matrix: 1 and a new generation (dirty) when it
 * differs from tab's, 0 when it does not, -ENOMEM. */
extern int mm_table_build(mm_table_t *tab, const mm_matrix_t *m);
/* Free the table; the generation count goes on. */
extern void mm_table_free(mm_table_t *tab);

#endif /* STORM_MM_MATRIX_H */

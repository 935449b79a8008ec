/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_jobs.h - the Machine Manager's look at Slurm's running jobs: the
 * sampler's copies (mm_sampler.h) placed into the plain matrix
 * (mm_matrix.h).
 */
#ifndef STORM_MM_JOBS_H
#define STORM_MM_JOBS_H

#include <stdbool.h>

#include "mm_state.h"

/*
 * The sampler's newest copy of Slurm's running and suspended jobs into
 * mm->matrix and, when any started, ended, moved or changed policy, place
 * them again; true when the matrix changed.  False at once when there is
 * no new copy: it never waits for slurmctld's locks.
 */
extern bool mm_jobs_rebuild(mm_t *mm);
/* The job table from the matrix (a new generation only if it differs). */
extern void mm_jobs_build_table(mm_t *mm);

#endif /* STORM_MM_JOBS_H */

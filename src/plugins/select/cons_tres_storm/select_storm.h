/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * select_storm.h - between STORM's selection logic (select_cons_tres_storm.c,
 * the same for every Slurm version) and the select_p_* entry points of one
 * Slurm version (select_ops_MMmm.c), which wrap select/cons_tres.
 */
#ifndef SELECT_STORM_H
#define SELECT_STORM_H

#include <stdbool.h>
#include <stdint.h>

#include "src/common/bitstring.h"
#include "src/slurmctld/slurmctld.h"

extern const char plugin_type[];
extern const uint32_t plugin_id;

/* One cons_tres job_test of the job on nodes (the version's other
 * arguments are in arg); SLURM_SUCCESS with nodes narrowed to the choice. */
typedef int (*storm_select_try_f)(bitstr_t *nodes, uint32_t max_nodes,
				  uint32_t req_nodes, void *arg);

/* After cons_tres is wrapped (base_path: its file). */
extern int storm_select_init(const char *base_path);
extern void storm_select_fini(void);
/* slurmctld (re)started with these jobs (a list of job_record_t). */
extern void storm_select_jobs_restored(struct xlist *job_list);
/* job_test (run_now: SELECT_MODE_RUN_NOW, not a will-run or test-only
 * probe): STORM's time-slot and memory admission and buddy placement
 * around cons_tres (try). */
extern int storm_select_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
				 uint32_t min_nodes, uint32_t max_nodes,
				 uint32_t req_nodes, bool run_now,
				 storm_select_try_f try, void *arg);
/* cons_tres accepted job_begin / job_resume. */
extern void storm_select_job_began(job_record_t *job_ptr);
/* job_fini / job_suspend (why says which). */
extern void storm_select_job_ended(job_record_t *job_ptr, const char *why);
extern void storm_select_reconfigure(void);

#endif

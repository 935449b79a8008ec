/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_jobs.c - Slurm's running jobs into the Machine Manager's matrix.
 *
 * Slurm keeps the jobs RUNNING: nothing here calls job_suspend().  Jobs
 * Slurm suspended itself (scontrol suspend) stay in the table, held: no
 * slot, and the node managers leave them to Slurm's own freeze of their
 * steps (see nm_cgroup.c for why the node managers must be told).
 */
#include "config.h"

#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"

#include "mm_jobs.h"
#include "mm_sampler.h"

/* The job's record in the matrix, added if new (*changed). */
static mm_job_t *job_entry(mm_t *mm, const mm_sample_job_t *sj, bool *changed)
{
	mm_job_t *j = mm_matrix_find(&mm->matrix, sj->job_id);

	if (j)
		return j;
	j = mm_matrix_add(&mm->matrix, sj->job_id, sj->user_id);
	if (!j)
		error("%s: no memory for JobId=%u", MM_PREFIX, sj->job_id);
	else
		*changed = true;
	return j;
}

/* One running or suspended job of Slurm's: true if its entry changed. */
static bool place_job(mm_t *mm, const mm_sample_job_t *sj)
{
	bool changed = false, announce;
	storm_policy_t pol = storm_conf_part_policy(&mm->conf, sj->part);
	mm_job_t *j = job_entry(mm, sj, &changed);
	int rc;

	if (!j)
		return false;
	rc = mm_job_set_nodes(j, sj->nodes, sj->nbits);
	if (rc < 0)
		error("%s: no memory for JobId=%u's nodes", MM_PREFIX,
		      sj->job_id);
	else if (rc)
		changed = true;
	if (mm_job_apply_policy(j, pol, &announce))
		changed = true;
	if (announce)
		info("%s: JobId=%u now runs under Policy=%s", MM_PREFIX,
		     j->job_id, storm_policy_str(pol));
	if (j->held != sj->suspended) {
		j->held = !j->held;
		j->slot = -1;	/* a resumed job takes a new one */
		if (j->held)
			mm->jobs_left++;
		changed = true;
	}
	j->label = sj->label;	/* for people only: not a change */
	j->seen = true;
	return changed;
}

/*
 * A node this MM drained that Slurm no longer has drained was resumed by an
 * administrator: it may be drained again, if it is still silent or still
 * misses strobes.
 */
static void note_resumed(mm_t *mm, const mm_sample_t *s)
{
	for (int i = 0; i < mm->nnodes; i++) {
		mm_node_t *n = &mm->nodes[i];

		/* drain_ours: set once Slurm drained it (drained is set before,
		 * by whichever thread drains: mm_faults.c); a sample from
		 * before that may not show the drain yet */
		if (!n->drain_ours || s->locked_ns <= n->drain_ours_ns ||
		    mm_sample_drained(s, i))
			continue;
		if (n->drained)
			info("%s: %s was resumed; it is drained again if it still does not answer",
			     MM_PREFIX, mm->node_names[i]);
		n->drained = false;
		n->drain_ours = false;	/* nothing left to return */
	}
}

/* The sample's jobs into the matrix; true if anything changed. */
static bool place_sample(mm_t *mm, const mm_sample_t *s)
{
	bool changed = false;

	note_resumed(mm, s);
	for (int i = 0; i < s->njobs; i++)
		if (place_job(mm, &s->jobs[i]))
			changed = true;
	return changed;
}

/* Jobs Slurm no longer runs leave the matrix; true if any did. */
static bool drop_unseen(mm_t *mm)
{
	mm_matrix_t *m = &mm->matrix;
	bool changed = false;

	for (int i = 0; i < m->njobs;) {
		if (!m->jobs[i].seen) {
			debug("%s: JobId=%u left slot %d", MM_PREFIX,
			      m->jobs[i].job_id, m->jobs[i].slot);
			mm_matrix_drop(m, i);
			mm->jobs_left++;
			changed = true;
			continue;
		}
		i++;
	}
	return changed;
}

static void log_placement(void *arg, const mm_job_t *j)
{
	if (j->slot < 0)
		error("%s: JobId=%u finds no free slot among %d; it runs unswitched",
		      MM_PREFIX, j->job_id, MM_MAX_SLOTS);
	else
		debug("%s: JobId=%u takes slot %d", MM_PREFIX, j->job_id,
		      j->slot);
}

extern bool mm_jobs_rebuild(mm_t *mm)
{
	mm_sample_t *s = mm_sampler_take(mm);
	bool changed;

	if (!s)
		return false;	/* no new sample: nothing new to place */
	for (int i = 0; i < mm->matrix.njobs; i++)
		mm->matrix.jobs[i].seen = false;
	changed = place_sample(mm, s);
	mm_sample_free(s);
	if (drop_unseen(mm))
		changed = true;
	if (!changed)
		return false;
	mm_matrix_update(&mm->matrix, log_placement, NULL);
	if (mm->cur_slot >= mm->matrix.nslots)
		mm->cur_slot = 0;
	return true;
}

extern void mm_jobs_build_table(mm_t *mm)
{
	if (mm_table_build(&mm->table, &mm->matrix) < 0)
		error("%s: no memory for the job table; the node managers keep the last one",
		      MM_PREFIX);
}

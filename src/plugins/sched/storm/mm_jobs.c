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
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "mm_jobs.h"

/* A job's node bitmap as plain words in mm->scratch; its bit count. */
static int copy_nodes(mm_t *mm, bitstr_t *b)
{
	int nbits = (int) bit_size(b), words = (nbits + 63) / 64;
	int64_t first = bit_ffs(b), last = bit_fls(b);

	if (words > mm->scratch_words) {
		xrecalloc(mm->scratch, words, sizeof(uint64_t));
		mm->scratch_words = words;
	}
	memset(mm->scratch, 0, (size_t) words * sizeof(uint64_t));
	for (int64_t k = first; k >= 0 && k <= last; k++)
		if (bit_test(b, k))
			mm->scratch[k / 64] |= 1ULL << (k % 64);
	return nbits;
}

/* The job's record in the matrix, added if new (*changed). */
static mm_job_t *job_entry(mm_t *mm, job_record_t *jp, bool *changed)
{
	mm_job_t *j = mm_matrix_find(&mm->matrix, jp->job_id);

	if (j)
		return j;
	j = mm_matrix_add(&mm->matrix, jp->job_id, jp->user_id);
	if (!j)
		error("%s: no memory for JobId=%u", MM_PREFIX, jp->job_id);
	else
		*changed = true;
	return j;
}

/* One running or suspended job of Slurm's: true if its entry changed. */
static bool sample_job(mm_t *mm, job_record_t *jp)
{
	bool changed = false, announce;
	const char *part = jp->part_ptr ? jp->part_ptr->name : NULL;
	storm_policy_t pol = storm_conf_part_policy(&mm->conf, part);
	mm_job_t *j = job_entry(mm, jp, &changed);
	int nbits, rc;

	if (!j)
		return false;
	nbits = copy_nodes(mm, jp->node_bitmap);
	rc = mm_job_set_nodes(j, mm->scratch, nbits);
	if (rc < 0)
		error("%s: no memory for JobId=%u's nodes", MM_PREFIX,
		      jp->job_id);
	else if (rc)
		changed = true;
	if (mm_job_apply_policy(j, pol, &announce))
		changed = true;
	if (announce)
		info("%s: JobId=%u now runs under Policy=%s", MM_PREFIX,
		     j->job_id, storm_policy_str(pol));
	if (j->held != IS_JOB_SUSPENDED(jp)) {
		j->held = !j->held;
		j->slot = -1;	/* a resumed job takes a new one */
		if (j->held)
			mm->jobs_left++;
		changed = true;
	}
	j->seen = true;
	return changed;
}

/*
 * A node this MM drained that Slurm no longer has drained was resumed by an
 * administrator: it may be drained again, if it is still silent or still
 * misses strobes.  Under slurmctld's node read lock.
 */
static void note_resumed(mm_t *mm)
{
	for (int i = 0; i < mm->nnodes; i++) {
		mm_node_t *n = &mm->nodes[i];
		node_record_t *nr;

		/* drain_ours: set once Slurm drained it (drained is set before,
		 * by whichever thread drains: mm_faults.c) */
		if (!n->drain_ours)
			continue;
		nr = find_node_record(mm->node_names[i]);
		if (!nr || IS_NODE_DRAIN(nr))
			continue;
		if (n->drained)
			info("%s: %s was resumed; it is drained again if it still does not answer",
			     MM_PREFIX, mm->node_names[i]);
		n->drained = false;
		n->drain_ours = false;	/* nothing left to return */
	}
}

/* Walk Slurm's job list under its read locks; true if anything changed. */
static bool sample_jobs(mm_t *mm)
{
	slurmctld_lock_t job_read = { .conf = READ_LOCK, .job = READ_LOCK,
				      .node = READ_LOCK, .part = READ_LOCK };
	bool changed = false;

	lock_slurmctld(job_read);
	note_resumed(mm);
	if (job_list) {
		struct listIterator *it = list_iterator_create(job_list);
		job_record_t *jp;

		while ((jp = list_next(it))) {
			if (!(IS_JOB_RUNNING(jp) || IS_JOB_SUSPENDED(jp)) ||
			    !jp->node_bitmap)
				continue;
			if (sample_job(mm, jp))
				changed = true;
		}
		list_iterator_destroy(it);
	}
	unlock_slurmctld(job_read);
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
	bool changed;

	for (int i = 0; i < mm->matrix.njobs; i++)
		mm->matrix.jobs[i].seen = false;
	changed = sample_jobs(mm);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_sampler.c - the thread that copies Slurm's running jobs
 * (mm_sampler.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_deadline.h"

#include "mm_sampler.h"

/* A sample whose locks took this long is logged (at most once in
 * MM_SAMPLER_LOG_NS): what the strobe thread no longer waits for. */
#define MM_SAMPLER_SLOW_NS 200000000ULL
#define MM_SAMPLER_LOG_NS 10000000000ULL

typedef struct mm_sampler {
	pthread_t tid;
	pthread_mutex_t lock;	/* ready and stop: held for a swap only */
	pthread_cond_t wake;
	bool stop;
	mm_sample_t *ready;	/* the newest sample, not taken yet */
	uint64_t slow_logged_ns;
	uint64_t slow_unlogged;
} mm_sampler_t;

extern void mm_sample_free(mm_sample_t *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->njobs; i++) {
		xfree(s->jobs[i].part);
		xfree(s->jobs[i].nodes);
	}
	xfree(s->jobs);
	xfree(s->drained);
	xfree(s);
}

extern bool mm_sample_drained(const mm_sample_t *s, int i)
{
	if (i < 0 || i >= s->nnodes)
		return true;	/* no record */
	return s->drained[i / 64] & (1ULL << (i % 64));
}

/* A bitmap of Slurm's as plain words. */
static uint64_t *copy_bits(bitstr_t *b, int *nbits)
{
	int n = (int) bit_size(b);
	uint64_t *w = xcalloc((n + 63) / 64 + 1, sizeof(uint64_t));
	int64_t first = bit_ffs(b), last = bit_fls(b);

	for (int64_t k = first; k >= 0 && k <= last; k++)
		if (bit_test(b, k))
			w[k / 64] |= 1ULL << (k % 64);
	*nbits = n;
	return w;
}

static void copy_job(mm_sample_job_t *sj, job_record_t *jp)
{
	sj->job_id = jp->job_id;
	sj->user_id = jp->user_id;
	sj->suspended = IS_JOB_SUSPENDED(jp);
	sj->part = jp->part_ptr && jp->part_ptr->name ?
		   xstrdup(jp->part_ptr->name) : NULL;
	sj->nodes = copy_bits(jp->node_bitmap, &sj->nbits);
	snprintf(sj->label.name, sizeof(sj->label.name), "%s",
		 jp->name ? jp->name : "");
	sj->label.cpus = jp->total_cpus;
}

/* After the locks: a user's name can take an NSS lookup (LDAP, sssd),
 * which no slurmctld lock should wait for; cached after the first. */
static void name_users(mm_sample_t *s)
{
	for (int i = 0; i < s->njobs; i++) {
		mm_sample_job_t *sj = &s->jobs[i];
		char *user = uid_to_string_cached((uid_t) sj->user_id);

		snprintf(sj->label.user, sizeof(sj->label.user), "%s",
			 user ? user : "");
	}
}

/* Under slurmctld's read locks: the running and suspended jobs, and which
 * nodes are drained. */
static void copy_locked(mm_sample_t *s)
{
	int cap = job_list ? list_count(job_list) : 0;

	s->nnodes = node_record_count;
	s->drained = xcalloc(s->nnodes / 64 + 1, sizeof(uint64_t));
	for (int i = 0; i < s->nnodes; i++) {
		node_record_t *nr = node_record_table_ptr[i];

		if (!nr || IS_NODE_DRAIN(nr))
			s->drained[i / 64] |= 1ULL << (i % 64);
	}
	if (cap <= 0)
		return;
	s->jobs = xcalloc(cap, sizeof(*s->jobs));
	struct listIterator *it = list_iterator_create(job_list);
	job_record_t *jp;

	while ((jp = list_next(it)) && s->njobs < cap) {
		if (!(IS_JOB_RUNNING(jp) || IS_JOB_SUSPENDED(jp)) ||
		    !jp->node_bitmap)
			continue;
		copy_job(&s->jobs[s->njobs++], jp);
	}
	list_iterator_destroy(it);
}

static void note_slow(mm_sampler_t *sp, uint64_t wait_ns, uint64_t now)
{
	if (wait_ns < MM_SAMPLER_SLOW_NS)
		return;
	if (sp->slow_logged_ns && now - sp->slow_logged_ns < MM_SAMPLER_LOG_NS) {
		sp->slow_unlogged++;
		return;
	}
	verbose("%s: slurmctld's locks took %" PRIu64 " ms to give the job list (%" PRIu64 " more such waits since the last line); strobes went on meanwhile",
		MM_PREFIX, wait_ns / 1000000, sp->slow_unlogged);
	sp->slow_logged_ns = now;
	sp->slow_unlogged = 0;
}

static mm_sample_t *take_sample(mm_sampler_t *sp)
{
	slurmctld_lock_t job_read = { .conf = READ_LOCK, .job = READ_LOCK,
				      .node = READ_LOCK, .part = READ_LOCK };
	mm_sample_t *s = xmalloc(sizeof(*s));
	uint64_t t0 = storm_mono_ns(), t1;

	lock_slurmctld(job_read);
	t1 = storm_mono_ns();
	copy_locked(s);
	unlock_slurmctld(job_read);
	name_users(s);
	s->locked_ns = t1;
	note_slow(sp, t1 - t0, t1);
	return s;
}

static void *sampler_main(void *arg)
{
	mm_sampler_t *sp = arg;

	pthread_mutex_lock(&sp->lock);
	while (!sp->stop) {
		mm_sample_t *s, *old;

		pthread_mutex_unlock(&sp->lock);
		s = take_sample(sp);
		pthread_mutex_lock(&sp->lock);
		old = sp->ready;
		sp->ready = s;
		pthread_mutex_unlock(&sp->lock);
		mm_sample_free(old);	/* never taken: superseded */
		pthread_mutex_lock(&sp->lock);
		storm_wait_unless_stopped(&sp->wake, &sp->lock, &sp->stop,
					  MM_SAMPLE_NS / 1000);
	}
	pthread_mutex_unlock(&sp->lock);
	return NULL;
}

extern int mm_sampler_start(mm_t *mm)
{
	mm_sampler_t *sp = xmalloc(sizeof(*sp));
	int rc;

	pthread_mutex_init(&sp->lock, NULL);
	if ((rc = storm_cond_init_monotonic(&sp->wake))) {
		error("%s: cannot start the job sampler: %s", MM_PREFIX,
		      strerror(rc));
		pthread_mutex_destroy(&sp->lock);
		xfree(sp);
		return -1;
	}
	if ((rc = pthread_create(&sp->tid, NULL, sampler_main, sp))) {
		error("%s: cannot start the job sampler: %s", MM_PREFIX,
		      strerror(rc));
		pthread_cond_destroy(&sp->wake);
		pthread_mutex_destroy(&sp->lock);
		xfree(sp);
		return -1;
	}
	mm->sampler = sp;
	return 0;
}

extern void mm_sampler_stop(mm_t *mm)
{
	mm_sampler_t *sp = mm->sampler;

	if (!sp)
		return;
	pthread_mutex_lock(&sp->lock);
	sp->stop = true;
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
	pthread_join(sp->tid, NULL);
	mm_sample_free(sp->ready);
	pthread_cond_destroy(&sp->wake);
	pthread_mutex_destroy(&sp->lock);
	xfree(sp);
	mm->sampler = NULL;
}

extern mm_sample_t *mm_sampler_take(mm_t *mm)
{
	mm_sampler_t *sp = mm->sampler;
	mm_sample_t *s;

	/* the sampler holds the mutex for a swap, but at normal priority on
	 * a busy host it may be preempted holding it: try again next time */
	if (!sp || pthread_mutex_trylock(&sp->lock))
		return NULL;
	s = sp->ready;
	sp->ready = NULL;
	pthread_mutex_unlock(&sp->lock);
	return s;
}

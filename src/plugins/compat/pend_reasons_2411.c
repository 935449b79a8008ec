/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pend_reasons_2411.c - pend_reasons.h for Slurm 24.11.
 *
 * select_nodes() sets WAIT_RESOURCES and frees the job's description after
 * every failed selection, whatever the select plugin said.  STORM's reason
 * is kept here by job id and a thread puts it back as the description
 * (what squeue's %R shows) a moment later, while the job still pends for
 * that plain reason; each selection derives the reason afresh.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "src/common/storm_deadline.h"
#include "pend_reasons.h"

/* How soon a reason Slurm reset is shown again. */
#define RESTAMP_US 250000

typedef struct {
	uint32_t job_id;
	char *text;
} reason_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static reason_t *reasons;
static int nreasons, capreasons;
static bool stopping, started;
static pthread_t thread;

/* With lock held. */
static int _find(uint32_t job_id)
{
	for (int i = 0; i < nreasons; i++)
		if (reasons[i].job_id == job_id)
			return i;
	return -1;
}

/* With lock held. */
static void _del(int i)
{
	xfree(reasons[i].text);
	reasons[i] = reasons[--nreasons];
}

extern void storm_pend_reason_set(job_record_t *job_ptr, const char *text)
{
	int i;

	verbose("select/cons_tres_storm: %pJ pends: %s", job_ptr, text);
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(text);
	slurm_mutex_lock(&lock);
	if ((i = _find(job_ptr->job_id)) < 0) {
		if (nreasons == capreasons) {
			capreasons = capreasons ? 2 * capreasons : 16;
			xrecalloc(reasons, capreasons, sizeof(*reasons));
		}
		i = nreasons++;
		reasons[i].job_id = job_ptr->job_id;
	}
	xfree(reasons[i].text);
	reasons[i].text = xstrdup(text);
	slurm_mutex_unlock(&lock);
}

extern void storm_pend_reason_clear(job_record_t *job_ptr)
{
	int i;

	slurm_mutex_lock(&lock);
	if ((i = _find(job_ptr->job_id)) >= 0) {
		if (job_ptr->state_desc &&
		    !xstrcmp(job_ptr->state_desc, reasons[i].text))
			xfree(job_ptr->state_desc);
		_del(i);
	}
	slurm_mutex_unlock(&lock);
}

/* Put every kept reason back where Slurm replaced it by its own. */
static void _restamp(void)
{
	slurmctld_lock_t job_write = { .job = WRITE_LOCK };

	lock_slurmctld(job_write);
	slurm_mutex_lock(&lock);
	for (int i = 0; i < nreasons; ) {
		job_record_t *job_ptr = find_job_record(reasons[i].job_id);

		if (!job_ptr || !IS_JOB_PENDING(job_ptr)) {
			_del(i);
			continue;
		}
		if (job_ptr->state_reason == WAIT_RESOURCES &&
		    xstrcmp(job_ptr->state_desc, reasons[i].text)) {
			debug2("select/cons_tres_storm: %pJ pends for %s, not %s",
			       job_ptr, reasons[i].text,
			       job_ptr->state_desc ? job_ptr->state_desc :
			       "Resources");
			xfree(job_ptr->state_desc);
			job_ptr->state_desc = xstrdup(reasons[i].text);
		}
		i++;
	}
	slurm_mutex_unlock(&lock);
	unlock_slurmctld(job_write);
}

static void *_restamp_loop(void *arg)
{
	(void) arg;
	slurm_mutex_lock(&lock);
	while (!stopping) {
		storm_wait_unless_stopped(&wake, &lock, &stopping, RESTAMP_US);
		if (stopping || !nreasons)
			continue;
		/* the job lock comes first, as in storm_pend_reason_set() */
		slurm_mutex_unlock(&lock);
		_restamp();
		slurm_mutex_lock(&lock);
	}
	slurm_mutex_unlock(&lock);
	return NULL;
}

extern int storm_pend_reasons_start(void)
{
	int rc;

	if (!running_in_slurmctld() || started)
		return SLURM_SUCCESS;
	if ((rc = storm_cond_init_monotonic(&wake))) {
		error("select/cons_tres_storm: pending reasons: %s", strerror(rc));
		return SLURM_ERROR;
	}
	stopping = false;
	if ((rc = pthread_create(&thread, NULL, _restamp_loop, NULL))) {
		error("select/cons_tres_storm: cannot start the pending reasons' thread: %s",
		      strerror(rc));
		pthread_cond_destroy(&wake);
		return SLURM_ERROR;
	}
	started = true;
	verbose("select/cons_tres_storm: keeping STORM's pending reasons shown in squeue");
	return SLURM_SUCCESS;
}

extern void storm_pend_reasons_stop(void)
{
	if (!started)
		return;
	slurm_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&wake);
	slurm_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	pthread_cond_destroy(&wake);
	started = false;
	slurm_mutex_lock(&lock);
	while (nreasons)
		_del(0);
	xfree(reasons);
	capreasons = 0;
	slurm_mutex_unlock(&lock);
}

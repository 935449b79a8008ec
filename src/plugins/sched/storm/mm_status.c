/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_status.c - the Machine Manager's status file, through storm_status.h,
 * and its last strobe's file, through storm_now.h.
 *
 * The strobe loop renders the status into memory, which takes as long as
 * formatting it; a thread of its own writes it to StateSaveLocation.  A
 * file write can take seconds on a loaded host (a busy disk, writeback),
 * and a Machine Manager that waited for it would send no strobe for that
 * long: the nodes' fail-safe would take over.  The writer keeps only the
 * newest rendering, so a slow disk delays the file, never the switches.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "src/common/storm_report.h"
#include "src/common/storm_status.h"
#include "src/common/storm_deadline.h"
#include "src/common/storm_thread.h"

#include "src/common/storm_gang.h"

#include "mm_offset.h"
#include "mm_heartbeat.h"
#include "mm_status.h"

static void fill_hdr(const mm_t *mm, storm_status_hdr_t *h)
{
	int nle;
	const uint64_t *le = storm_hist_latency_le_us(&nle);

	memset(h, 0, sizeof(*h));
	h->version = STORM_STATUS_VERSION;
	h->written = (int64_t) time(NULL);
	h->mm_id = mm->mm_id;
	h->epoch = mm->epoch;
	h->slot = mm->cur_slot;
	h->nslots = mm->matrix.nslots;
	h->quantum_us = mm->conf.timeslice_us;
	h->period_us = mm->stats.period_us;
	h->strobe_us = mm->stats.strobe_us;
	h->confirm_us = mm->stats.caw_us;
	h->late_quanta = mm->stats.late;
	h->confirm_timeouts = mm->stats.confirm_timeouts;
	h->quanta = mm->nquanta;
	h->table_gen = mm->table.gen;
	h->suspect_quanta = mm->conf.suspect_quanta;
	h->failsafe_us = mm->conf.failsafe_us;
	snprintf(h->provider, sizeof(h->provider), "%s", mm->conf.provider);
	h->nnodes = mm->nnodes;
	h->quanta_per_strobe = mm->span;
	h->suspect_time_us = mm->conf.suspect_time_us;
	h->drains = mm->stats.drains;
	h->returns = mm->stats.returns;
	snprintf(h->switch_at, sizeof(h->switch_at), "%s",
		 mm->conf.switch_at_arrival ? "arrival" : "announced");
	h->lead_us = mm_offset_lead_ns(mm) / 1000;
	storm_status_hist_set(&h->strobe_hist_us, &mm->stats.strobe_hist, le,
			      nle);
	storm_status_hist_set(&h->confirm_hist_us, &mm->stats.caw_hist, le,
			      nle);
	if (mm->ctx) {
		storm_stats_t st;

		storm_ctx_stats(mm->ctx, &st);
		h->rejected_mm = STORM_REPORT_FABRIC_REFUSED(st);
	}
}

/* What node i last reported with its heartbeat (storm_report.h): the
 * messages it refused, its fail-safe and its switch lag. */
static void fill_report(const mm_t *mm, int i, storm_status_node_t *n)
{
	const storm_node_report_t *r = mm_heartbeat_report(mm, i);

	if (!r)
		return;
	for (int k = 0; k < STORM_REJECT_KINDS; k++)
		n->rejected[k] = r->rejected[k];
	n->failsafe_events = r->failsafe_events;
	n->failsafe_open = r->failsafe_open ? 1 : 0;
	n->has_lag = r->has_lag != 0;
	n->switch_lag_us = r->switch_lag_us;
}

/* What node i last replied to a clock request (mm_offset.c). */
static void fill_clock(const mm_t *mm, int i, storm_status_node_t *n)
{
	static const char *const mode[] = {
		[STORM_GANG_AT_NONE] = "none",
		[STORM_GANG_AT_ANNOUNCED] = "announced",
		[STORM_GANG_AT_ARRIVAL] = "arrival",
		[STORM_GANG_AT_FALLBACK] = "fallback",
	};
	const mm_offset_node_t *o = mm_offset_node(mm, i);

	n->clock_uncert_us = -1;
	snprintf(n->switch_at, sizeof(n->switch_at), "none");
	if (!o || !o->replied)
		return;
	n->late_switches = o->late;
	if (o->mode <= STORM_GANG_AT_FALLBACK)
		snprintf(n->switch_at, sizeof(n->switch_at), "%s",
			 mode[o->mode]);
	if (o->uncert_ns) {
		n->clock_offset_us = o->offset_ns / 1000;
		n->clock_uncert_us = (int64_t) ((o->uncert_ns + 999) / 1000);
	}
}

static void fill_node(const mm_t *mm, int i, storm_status_node_t *n)
{
	const mm_node_t *mn = &mm->nodes[i];

	memset(n, 0, sizeof(*n));
	n->rank = i;
	snprintf(n->name, sizeof(n->name), "%s", mm->node_names[i]);
	snprintf(n->state, sizeof(n->state), "%s",
		 mn->drained ? "drained" : mn->live ? "live" : "unreachable");
	n->ack_us = mn->ack_us;
	n->misses = mn->misses;
	/* as the listener counts it: a host's stall is no node's silence */
	n->silent_ms = mn->heard_ns ? (int64_t) (mn->silent_ns / 1000000) : -1;
	fill_report(mm, i, n);
	fill_clock(mm, i, n);
}

static void fill_job(const mm_t *mm, const mm_job_t *j, storm_status_job_t *s)
{
	storm_set_t set;

	storm_set_clear(&set);
	for (int k = 0; k < mm->nnodes; k++)
		if (mm_job_has_node(j, k))
			storm_set_add(&set, k);
	s->job_id = j->job_id;
	s->slot = mm_job_switched(j) ? j->slot : -1;
	s->mask = j->mask;
	storm_set_format(&set, s->nodes, sizeof(s->nodes));
	snprintf(s->policy, sizeof(s->policy), "%s", mm_job_policy_str(j));
	/* the sampler's copy (mm_matrix.h): no slurmctld lock taken here */
	snprintf(s->name, sizeof(s->name), "%s", j->label.name);
	snprintf(s->user, sizeof(s->user), "%s", j->label.user);
	s->cpus = j->label.cpus;
}

/* The reports in the MM's region, where the node managers write them. */
static const uint8_t *report_region(const mm_t *mm, size_t *size)
{
	*size = 0;
	return mm->ctx ? storm_region_ptr(mm->ctx, size) : NULL;
}

static void ranks_format(const uint64_t *bits, char *out, size_t len)
{
	storm_set_t set;

	memcpy(set.bits, bits, sizeof(set.bits));
	storm_set_format(&set, out, len);
}

/* Relay i's latest broadcast (storm_report.h) as a status line; false when
 * node i never relayed one. */
static bool fill_bcast(const mm_t *mm, int i, storm_status_bcast_t *b)
{
	storm_relay_report_t r;
	size_t size;
	const uint8_t *region = report_region(mm, &size);
	int nle;
	const uint64_t *le = storm_hist_bcast_le_us(&nle);

	if (!region || i >= STORM_REPORT_MAX_RANKS ||
	    storm_relay_report_off(i) + sizeof(r) > size)
		return false;
	/* a copy: the relay may be writing the next one meanwhile (a torn
	 * record shows at worst one report stale fields) */
	memcpy(&r, region + storm_relay_report_off(i), sizeof(r));
	if (r.magic != STORM_RELAY_REPORT_MAGIC || r.rank != (uint32_t) i)
		return false;
	memset(b, 0, sizeof(*b));
	b->relay = i;
	snprintf(b->name, sizeof(b->name), "%s", mm->node_names[i]);
	b->key = r.key;
	b->job_id = r.job_id;
	snprintf(b->phase, sizeof(b->phase), "%s", storm_relay_phase_str(r.phase));
	b->size = r.size;
	b->received = r.received;
	b->nnodes = r.nnodes;
	b->start_us = r.start_us;
	b->elapsed_us = r.elapsed_us;
	ranks_format(r.ready, b->ready, sizeof(b->ready));
	ranks_format(r.done, b->done, sizeof(b->done));
	b->count = r.count;
	b->failed = r.failed;
	b->bytes = r.bytes;
	storm_status_hist_set(&b->dur_hist_us, &r.dur, le, nle);
	return true;
}

/*
 * The CPU the jobs used, as the live nodes last reported it
 * (storm_report.h, storm_usage_report_t), summed per job.  A drained or
 * unreachable node's last report is left out: it may be long stale.
 */
static void job_usage(const mm_t *mm, storm_status_job_t *s, int njobs)
{
	size_t size;
	const uint8_t *region = report_region(mm, &size);
	storm_usage_report_t r;

	if (!region)
		return;
	for (int i = 0; i < mm->nnodes && i < STORM_REPORT_MAX_RANKS; i++) {
		const mm_node_t *mn = &mm->nodes[i];

		if (!mn->live || mn->drained ||
		    storm_usage_report_off(i) + sizeof(r) > size)
			continue;
		/* a copy: the node may be writing the next one meanwhile */
		memcpy(&r, region + storm_usage_report_off(i), sizeof(r));
		if (r.magic != STORM_USAGE_REPORT_MAGIC ||
		    r.rank != (uint32_t) i || r.njobs > STORM_USAGE_MAX_JOBS)
			continue;
		for (uint32_t k = 0; k < r.njobs; k++)
			for (int j = 0; j < njobs; j++)
				if (s[j].job_id == r.jobs[k].job_id) {
					s[j].cpu_m += r.jobs[k].cpu_m;
					s[j].has_cpu = true;
				}
	}
}

static void print_all(const mm_t *mm, FILE *fp)
{
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t *s = xcalloc(mm->matrix.njobs + 1, sizeof(*s));
	storm_status_bcast_t *b;

	fill_hdr(mm, &h);
	storm_status_fprint_hdr(fp, &h);
	for (int i = 0; i < mm->nnodes; i++) {
		fill_node(mm, i, &n);
		storm_status_fprint_node(fp, &n);
	}
	for (int i = 0; i < mm->matrix.njobs; i++)
		fill_job(mm, &mm->matrix.jobs[i], &s[i]);
	job_usage(mm, s, mm->matrix.njobs);
	for (int i = 0; i < mm->matrix.njobs; i++)
		storm_status_fprint_job(fp, &s[i]);
	xfree(s);
	b = xmalloc(sizeof(*b));
	for (int i = 0; i < mm->nnodes; i++)
		if (fill_bcast(mm, i, b))
			storm_status_fprint_bcast(fp, b);
	xfree(b);
}

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	storm_thread_t thread;
	char *pending;		/* the newest rendering not yet written */
	size_t len;
} writer = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.thread = STORM_THREAD_INIT("storm-mm-status", &writer.lock,
				   &writer.wake),
};

/* buf to StateSaveLocation/storm-mm.status (through a temporary file
 * renamed into place); failures at debug level: the next second tries
 * again. */
static void write_file(const char *buf, size_t len)
{
	char *path;
	FILE *fp;
	int rc;

	if (!slurm_conf.state_save_location)
		return;
	path = xstrdup_printf("%s/%s", slurm_conf.state_save_location,
			      STORM_STATUS_FILE);
	fp = storm_status_begin(path);
	if (!fp) {
		debug("%s: cannot write %s.tmp: %m", MM_PREFIX, path);
	} else {
		fwrite(buf, 1, len, fp);
		rc = storm_status_commit(fp, path);
		if (rc)
			debug("%s: cannot write %s: %s", MM_PREFIX, path,
			      strerror(-rc));
	}
	xfree(path);
}

/* Take the pending rendering, under writer.lock; NULL when none. */
static char *take_pending(size_t *len)
{
	char *buf = writer.pending;

	*len = writer.len;
	writer.pending = NULL;
	writer.len = 0;
	return buf;
}

static void *writer_main(void *arg)
{
	char *buf;
	size_t len;

	(void) arg;
	/* the Machine Manager runs real-time; a file write must not */
	storm_thread_sched_self(SCHED_OTHER, 0);
	pthread_mutex_lock(&writer.lock);
	for (;;) {
		while (!writer.pending && !writer.thread.stop)
			storm_thread_wait(&writer.thread, 1000000);
		buf = take_pending(&len);
		if (!buf && writer.thread.stop)
			break;
		pthread_mutex_unlock(&writer.lock);
		write_file(buf, len);
		free(buf);
		pthread_mutex_lock(&writer.lock);
	}
	pthread_mutex_unlock(&writer.lock);
	return NULL;
}

extern void mm_status_write(const mm_t *mm)
{
	char *buf = NULL, *old;
	size_t len = 0, oldlen;
	FILE *fp;

	if (!slurm_conf.state_save_location)
		return;
	if (!(fp = open_memstream(&buf, &len))) {
		debug("%s: cannot render the status: %m", MM_PREFIX);
		return;
	}
	print_all(mm, fp);
	if (fclose(fp)) {
		free(buf);
		return;
	}
	if (!writer.thread.started) {
		write_file(buf, len);
		free(buf);
		return;
	}
	pthread_mutex_lock(&writer.lock);
	old = take_pending(&oldlen);
	writer.pending = buf;
	writer.len = len;
	pthread_cond_broadcast(&writer.wake);
	pthread_mutex_unlock(&writer.lock);
	free(old);	/* never written: a newer one replaces it */
}

extern void mm_status_writer_start(void)
{
	int rc;

	if (writer.thread.started)
		return;
	storm_cond_init_monotonic(&writer.wake);
	if ((rc = storm_thread_start(&writer.thread, writer_main, NULL)))
		error("%s: cannot start the status writer: %s; the Machine Manager writes the status file itself",
		      MM_PREFIX, strerror(rc));
}

extern void mm_status_writer_stop(void)
{
	/* the thread writes what is pending before it ends */
	storm_thread_stop(&writer.thread);
}

extern void mm_status_now_open(mm_t *mm)
{
	char *path;
	int rc;

	if (mm->now.page || !slurm_conf.state_save_location)
		return;
	path = xstrdup_printf("%s/%s", slurm_conf.state_save_location,
			      STORM_NOW_FILE);
	rc = storm_now_open(&mm->now, path);
	if (rc)
		error("%s: cannot create %s: %s; views show the running slot once a second",
		      MM_PREFIX, path, strerror(-rc));
	xfree(path);
}

extern void mm_status_now_close(mm_t *mm)
{
	storm_now_close(&mm->now);
}

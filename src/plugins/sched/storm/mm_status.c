/*
 * mm_status.c - the Machine Manager's status file, through storm_status.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_report.h"
#include "src/common/storm_status.h"

#include "src/common/storm_gang.h"

#include "mm_offset.h"
#include "mm_heartbeat.h"
#include "mm_status.h"

static void fill_hdr(const mm_t *mm, storm_status_hdr_t *h)
{
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
	if (mm->ctx) {
		storm_stats_t st;

		storm_ctx_stats(mm->ctx, &st);
		h->rejected_mm = STORM_REPORT_FABRIC_REFUSED(st);
	}
}

/* What node i last reported of the messages it refused (storm_report.h). */
static void fill_rejected(const mm_t *mm, int i, storm_status_node_t *n)
{
	const storm_node_report_t *r = mm_heartbeat_report(mm, i);

	if (!r)
		return;
	for (int k = 0; k < STORM_REJECT_KINDS; k++)
		n->rejected[k] = r->rejected[k];
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
	n->silent_ms = mn->heard_once ?
		       (int64_t) ((mm_now_ns(CLOCK_MONOTONIC) -
				   mn->last_heard_ns) / 1000000) : -1;
	fill_rejected(mm, i, n);
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
}

static void print_all(const mm_t *mm, FILE *fp)
{
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t *s = xmalloc(sizeof(*s));

	fill_hdr(mm, &h);
	storm_status_fprint_hdr(fp, &h);
	for (int i = 0; i < mm->nnodes; i++) {
		fill_node(mm, i, &n);
		storm_status_fprint_node(fp, &n);
	}
	for (int i = 0; i < mm->matrix.njobs; i++) {
		fill_job(mm, &mm->matrix.jobs[i], s);
		storm_status_fprint_job(fp, s);
	}
	xfree(s);
}

extern void mm_status_write(const mm_t *mm)
{
	char *path = NULL;
	FILE *fp;
	int rc;

	if (!slurm_conf.state_save_location)
		return;
	path = xstrdup_printf("%s/%s", slurm_conf.state_save_location,
			      STORM_STATUS_FILE);
	fp = storm_status_begin(path);
	if (!fp) {
		debug("%s: cannot write %s.tmp: %m", MM_PREFIX, path);
		goto done;
	}
	print_all(mm, fp);
	rc = storm_status_commit(fp, path);
	if (rc)
		debug("%s: cannot write %s: %s", MM_PREFIX, path,
		      strerror(-rc));
done:
	xfree(path);
}

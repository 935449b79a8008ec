/*
 * nm_heartbeat.c - the heartbeat to the Machine Manager (nm_heartbeat.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nm_gang.h"
#include "nm_heartbeat.h"
#include "src/common/storm_deadline.h"
#include "nm_reject.h"

/*
 * Below the gang thread (41) and the fabric's progress thread (40): a
 * switch or a message in flight comes first, but no job of any user, which
 * runs at normal priority, can keep a heartbeat from going out.
 */
#define NM_HEARTBEAT_RT_PRIO 30

/*
 * Heartbeats in flight at once.  A beat whose connection broke (the
 * Machine Manager rejoined the fabric, its host restarted) waits for its
 * acknowledgement up to Timeout, 5 s by default: far beyond SuspectTime.
 * The next beats must not wait behind it, or a live node is drained for
 * one lost message; each goes out in a buffer of its own, since an op
 * reads its source until it completes.
 */
#define NM_HEARTBEAT_SLOTS 8

typedef struct {
	storm_node_report_t rep;	/* what its op sends */
	storm_op_t *op;			/* NULL: free */
} beat_slot_t;

static struct {
	pthread_t tid;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	uint64_t beat;			/* the last beat's value */
	beat_slot_t slot[NM_HEARTBEAT_SLOTS];
	uint64_t skipped;		/* beats not sent: every slot in flight */
	uint64_t overlapped;		/* sent while an earlier one was */
	/* the gang module's, as last read (report_gang()) */
	uint64_t fs_events;
	bool fs_open, has_lag;
	int64_t lag_us;
} heartbeat = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

/* Free the slots whose op completed; a free slot, or NULL if none, and
 * whether some op is still in flight. */
static beat_slot_t *free_slot(bool *in_flight)
{
	beat_slot_t *found = NULL;

	*in_flight = false;
	for (int i = 0; i < NM_HEARTBEAT_SLOTS; i++) {
		beat_slot_t *b = &heartbeat.slot[i];

		if (b->op && storm_op_test(b->op, NULL) == -EAGAIN) {
			*in_flight = true;
			continue;
		}
		if (b->op)
			storm_op_free(b->op);
		b->op = NULL;
		if (!found)
			found = b;
	}
	return found;
}

/* What the gang module knows for the report: its fail-safe and switch
 * lag, as last read (zero and none before the module started).  Called
 * with heartbeat.lock held. */
static void report_gang(storm_node_report_t *rep)
{
	uint64_t events = 0;
	int64_t lag_us = 0;
	bool open = false, has = false;

	if (nm_gang_failsafe(&events, &open)) {
		heartbeat.fs_events = events;
		heartbeat.fs_open = open;
	}
	if (nm_gang_switch_lag(&has, &lag_us)) {
		heartbeat.has_lag = has;
		heartbeat.lag_us = has ? lag_us : 0;
	}
	rep->failsafe_events = heartbeat.fs_events;
	rep->failsafe_open = heartbeat.fs_open;
	rep->has_lag = heartbeat.has_lag;
	rep->switch_lag_us = heartbeat.lag_us;
}

static void beat(nm_t *nm)
{
	storm_set_t mm;
	beat_slot_t *b;
	bool in_flight;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_REPORT_MAX_RANKS)
		return;
	if (!(b = free_slot(&in_flight))) {
		heartbeat.skipped++;
		return;
	}
	heartbeat.overlapped += in_flight;
	b->rep.magic = STORM_REPORT_MAGIC;
	b->rep.rank = (uint32_t) nm->rank;
	b->rep.beat = ++heartbeat.beat;
	nm_reject_counts(nm, b->rep.rejected);
	report_gang(&b->rep);
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer(nm->ctx, &mm, &b->rep, sizeof(b->rep),
			storm_report_off(nm->rank), STORM_NO_EVENT,
			STORM_NO_EVENT, &b->op);
	if (rc) {
		b->op = NULL;
		nm_debug("heartbeat to the machine manager: %s",
			 storm_strerror(rc));
	}
}

static void *heartbeat_thread(void *arg)
{
	nm_t *nm = arg;
	struct sched_param sp = { .sched_priority = NM_HEARTBEAT_RT_PRIO };

	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		nm_info("heartbeat: no SCHED_FIFO (%s): under load a live node may look silent to the machine manager",
			strerror(errno));
	pthread_mutex_lock(&heartbeat.lock);
	while (!heartbeat.stop) {
		beat(nm);
		/* read each time: a reconfiguration may change SuspectTime */
		storm_wait_unless_stopped(&heartbeat.wake, &heartbeat.lock,
					  &heartbeat.stop,
					  storm_conf_beat_us(&nm->conf));
	}
	pthread_mutex_unlock(&heartbeat.lock);
	return NULL;
}

static int heartbeat_init(nm_t *nm)
{
	int rc;

	pthread_cond_destroy(&heartbeat.wake);
	if ((rc = storm_cond_init_monotonic(&heartbeat.wake)))
		return -rc;
	/* a restarted node manager starts elsewhere than where it left */
	heartbeat.beat = ((uint64_t) getpid() << 32) ^ (uint64_t) time(NULL);
	heartbeat.stop = false;
	rc = pthread_create(&heartbeat.tid, NULL, heartbeat_thread, nm);
	if (rc)
		return -rc;
	heartbeat.started = true;
	nm_info("heartbeat: to the machine manager every %llu us (SuspectTime=%llu us)",
		(unsigned long long) storm_conf_beat_us(&nm->conf),
		(unsigned long long) nm->conf.suspect_time_us);
	return 0;
}

static void heartbeat_fini(nm_t *nm)
{
	(void) nm;
	if (!heartbeat.started)
		return;
	pthread_mutex_lock(&heartbeat.lock);
	heartbeat.stop = true;
	pthread_cond_signal(&heartbeat.wake);
	pthread_mutex_unlock(&heartbeat.lock);
	pthread_join(heartbeat.tid, NULL);
	heartbeat.started = false;
	/* the fabric closes after the modules; reports still in flight
	 * are abandoned with their ops */
	for (int i = 0; i < NM_HEARTBEAT_SLOTS; i++) {
		if (heartbeat.slot[i].op)
			storm_op_free(heartbeat.slot[i].op);
		heartbeat.slot[i].op = NULL;
	}
	if (heartbeat.skipped || heartbeat.overlapped)
		nm_info("heartbeat: %llu beats sent while an earlier one was still in flight, %llu skipped with %d in flight",
			(unsigned long long) heartbeat.overlapped,
			(unsigned long long) heartbeat.skipped,
			NM_HEARTBEAT_SLOTS);
}

const nm_module_t nm_heartbeat_module = {
	.name = "heartbeat",
	.init = heartbeat_init,
	.fini = heartbeat_fini,
};

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

#include "nm_heartbeat.h"
#include "nm_reject.h"

/*
 * Below the gang thread (41) and the fabric's progress thread (40): a
 * switch or a message in flight comes first, but no job of any user, which
 * runs at normal priority, can keep a heartbeat from going out.
 */
#define NM_HEARTBEAT_RT_PRIO 30

static struct {
	pthread_t tid;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	storm_node_report_t rep;	/* what the op in flight sends */
	storm_op_t *op;
	uint64_t skipped;		/* beats not sent: the last in flight */
} H = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

/* The last report is done (or there is none): may the buffer change?  A
 * report towards a Machine Manager that does not answer stays in flight
 * up to the fabric's Timeout; the beats meanwhile are skipped. */
static bool report_free(void)
{
	if (H.op && storm_op_test(H.op, NULL) == -EAGAIN)
		return false;
	if (H.op)
		storm_op_free(H.op);
	H.op = NULL;
	return true;
}

static void beat(nm_t *nm)
{
	storm_set_t mm;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_REPORT_MAX_RANKS)
		return;
	if (!report_free()) {
		H.skipped++;
		return;
	}
	H.rep.magic = STORM_REPORT_MAGIC;
	H.rep.rank = (uint32_t) nm->rank;
	H.rep.beat++;
	nm_reject_counts(nm, H.rep.rejected);
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer(nm->ctx, &mm, &H.rep, sizeof(H.rep),
			storm_report_off(nm->rank), STORM_NO_EVENT,
			STORM_NO_EVENT, &H.op);
	if (rc) {
		H.op = NULL;
		nm_debug("heartbeat to the machine manager: %s",
			 storm_strerror(rc));
	}
}

static void deadline_after(uint64_t us, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t) (us / 1000000);
	ts->tv_nsec += (long) (us % 1000000) * 1000;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *heartbeat_thread(void *arg)
{
	nm_t *nm = arg;
	struct sched_param sp = { .sched_priority = NM_HEARTBEAT_RT_PRIO };
	struct timespec ts;

	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		nm_info("heartbeat: no SCHED_FIFO (%s): under load a live node may look silent to the machine manager",
			strerror(errno));
	pthread_mutex_lock(&H.lock);
	while (!H.stop) {
		beat(nm);
		/* read each time: a reconfiguration may change SuspectTime */
		deadline_after(storm_conf_beat_us(&nm->conf), &ts);
		while (!H.stop &&
		       pthread_cond_timedwait(&H.wake, &H.lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&H.lock);
	return NULL;
}

static int heartbeat_init(nm_t *nm)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&H.wake);
	pthread_cond_init(&H.wake, &ca);
	pthread_condattr_destroy(&ca);
	/* a restarted node manager starts elsewhere than where it left */
	H.rep.beat = ((uint64_t) getpid() << 32) ^ (uint64_t) time(NULL);
	H.stop = false;
	rc = pthread_create(&H.tid, NULL, heartbeat_thread, nm);
	if (rc)
		return -rc;
	H.started = true;
	nm_info("heartbeat: to the machine manager every %llu us (SuspectTime=%llu us)",
		(unsigned long long) storm_conf_beat_us(&nm->conf),
		(unsigned long long) nm->conf.suspect_time_us);
	return 0;
}

static void heartbeat_fini(nm_t *nm)
{
	(void) nm;
	if (!H.started)
		return;
	pthread_mutex_lock(&H.lock);
	H.stop = true;
	pthread_cond_signal(&H.wake);
	pthread_mutex_unlock(&H.lock);
	pthread_join(H.tid, NULL);
	H.started = false;
	if (H.op) {
		/* the fabric closes after the modules; a report still in
		 * flight is abandoned with its op */
		storm_op_free(H.op);
		H.op = NULL;
	}
	if (H.skipped)
		nm_info("heartbeat: %llu beats skipped while the previous one was in flight",
			(unsigned long long) H.skipped);
}

const nm_module_t nm_heartbeat_module = {
	.name = "heartbeat",
	.init = heartbeat_init,
	.fini = heartbeat_fini,
};

/*
 * nm_usage.c - the CPU this node's jobs use, for the Machine Manager
 * (storm_report.h, storm_usage_report_t; nm_usage.h).
 *
 * A thread of its own at normal priority, every NM_USAGE_MS: it asks the
 * gang module which jobs of the table have cgroups here, reads each one's
 * CPU time (nm_cg_usage.c), and sends what each used since the last
 * reading, in thousandths of a CPU, to the MM's region.  Reading cgroups
 * and /proc is file I/O that has no place in the real-time threads (the
 * gang switch, the heartbeat); and a figure measured here is the jobs' own
 * use, which the controller host could not see otherwise (slurmctld hears
 * of a job's CPU time only when a step ends).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_report.h"

#include "nm_cg_usage.h"
#include "nm_gang.h"
#include "src/common/storm_deadline.h"
#include "nm_usage.h"

/* The gang lock is busy during a switch: a few tries, a little apart. */
#define NM_USAGE_TRIES 50
#define NM_USAGE_TRY_US 2000

typedef struct {
	uint32_t job_id;
	uint64_t cpu_ns;		/* as last read */
	uint64_t at_ns;			/* when (CLOCK_MONOTONIC) */
} seen_t;

static struct {
	pthread_t tid;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	seen_t seen[STORM_USAGE_MAX_JOBS];
	int nseen;
	storm_usage_report_t out;	/* what the op in flight sends */
	storm_op_t *op;
} usage = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* The jobs here, or -1 when the gang module never let us look. */
static int jobs_here(uint32_t *ids, uint32_t *uids)
{
	for (int t = 0; t < NM_USAGE_TRIES; t++) {
		int n = nm_gang_jobs_here(ids, uids, STORM_USAGE_MAX_JOBS);

		if (n >= 0)
			return n;
		usleep(NM_USAGE_TRY_US);
	}
	return -1;
}

/* Thousandths of a CPU job used since its last reading, or false on its
 * first (nothing to compare with).  A fall in the sum (a process that
 * ended, nm_cg_usage.c) reads as no use, never as negative. */
static bool rate(uint32_t job_id, uint64_t cpu_ns, uint64_t now,
		 const seen_t *old, int nold, uint32_t *cpu_m)
{
	for (int i = 0; i < nold; i++) {
		uint64_t dt = now - old[i].at_ns;

		if (old[i].job_id != job_id || !dt)
			continue;
		*cpu_m = cpu_ns <= old[i].cpu_ns ? 0 :
			 (uint32_t) ((cpu_ns - old[i].cpu_ns) * 1000 / dt);
		return true;
	}
	return false;
}

/* Measure the jobs into usage.out; false when there is nothing to send. */
static bool measure(nm_t *nm)
{
	uint32_t ids[STORM_USAGE_MAX_JOBS], uids[STORM_USAGE_MAX_JOBS];
	seen_t old[STORM_USAGE_MAX_JOBS];
	int nold = usage.nseen, n = jobs_here(ids, uids);
	uint64_t now = mono_ns();

	if (n < 0)
		return false;
	memcpy(old, usage.seen, sizeof(old));
	usage.nseen = 0;
	usage.out.njobs = 0;
	for (int i = 0; i < n; i++) {
		uint64_t ns;
		uint32_t m;

		if (nm_cg_job_cpu_ns(ids[i], uids[i], &ns))
			continue;	/* not started here yet, or gone */
		usage.seen[usage.nseen++] = (seen_t) { ids[i], ns, now };
		if (!rate(ids[i], ns, now, old, nold, &m))
			continue;
		usage.out.jobs[usage.out.njobs].job_id = ids[i];
		usage.out.jobs[usage.out.njobs++].cpu_m = m;
	}
	usage.out.magic = STORM_USAGE_REPORT_MAGIC;
	usage.out.rank = (uint32_t) nm->rank;
	usage.out.seq++;
	usage.out.window_ms = NM_USAGE_MS;
	return true;
}

static void report(nm_t *nm)
{
	storm_set_t mm;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_REPORT_MAX_RANKS)
		return;
	/* the buffer is the op's source until it completes: a report still
	 * in flight (a busy MM) is not overwritten, this reading skipped */
	if (usage.op && storm_op_test(usage.op, NULL) == -EAGAIN)
		return;
	if (usage.op)
		storm_op_free(usage.op);
	usage.op = NULL;
	if (!measure(nm))
		return;
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer(nm->ctx, &mm, &usage.out, sizeof(usage.out),
			storm_usage_report_off(nm->rank), STORM_NO_EVENT,
			STORM_NO_EVENT, &usage.op);
	if (rc) {
		usage.op = NULL;
		nm_debug("usage report to the machine manager: %s",
			 storm_strerror(rc));
	}
}

static void *usage_thread(void *arg)
{
	nm_t *nm = arg;
	struct sched_param sp = { .sched_priority = 0 };

	/* file reads: never in the real-time class, whatever started us */
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	pthread_mutex_lock(&usage.lock);
	while (!usage.stop) {
		pthread_mutex_unlock(&usage.lock);
		report(nm);
		pthread_mutex_lock(&usage.lock);
		storm_wait_unless_stopped(&usage.wake, &usage.lock, &usage.stop,
				       (uint64_t) NM_USAGE_MS * 1000);
	}
	pthread_mutex_unlock(&usage.lock);
	return NULL;
}

static int usage_init(nm_t *nm)
{
	int rc;

	pthread_cond_destroy(&usage.wake);
	if ((rc = storm_cond_init_monotonic(&usage.wake)))
		return -rc;
	usage.stop = false;
	usage.nseen = 0;
	rc = pthread_create(&usage.tid, NULL, usage_thread, nm);
	if (rc)
		return -rc;
	usage.started = true;
	return 0;
}

static void usage_fini(nm_t *nm)
{
	(void) nm;
	if (!usage.started)
		return;
	pthread_mutex_lock(&usage.lock);
	usage.stop = true;
	pthread_cond_signal(&usage.wake);
	pthread_mutex_unlock(&usage.lock);
	pthread_join(usage.tid, NULL);
	usage.started = false;
	/* the fabric closes after the modules: a report in flight is
	 * abandoned with its op */
	if (usage.op)
		storm_op_free(usage.op);
	usage.op = NULL;
}

const nm_module_t nm_usage_module = {
	.name = "usage",
	.init = usage_init,
	.fini = usage_fini,
};

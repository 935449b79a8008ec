/*
 * nm_relay_report.c - this relay's broadcasts, reported to the Machine
 * Manager (nm_relay_report.h).  One record: the broadcast in flight that
 * started last, else the last one that ended; several at once keep only
 * the newest in view (the totals, kept in that record across broadcasts,
 * count them all).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "nm_relay_report.h"

static struct {
	pthread_mutex_t lock;
	storm_relay_report_t cur;	/* under lock */
	uint64_t start_mono_us;		/* of cur */
	/* the control loop's own */
	storm_relay_report_t out;	/* what the op in flight sends */
	storm_op_t *op;
	uint64_t sent_seq;
	uint64_t last_send_ms;
} relay_report = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* The record of key, or NULL when a newer broadcast took the view. */
static storm_relay_report_t *mine(uint64_t key)
{
	return relay_report.cur.magic && relay_report.cur.key == key ?
	       &relay_report.cur : NULL;
}

static void touch(storm_relay_report_t *r)
{
	if (r->phase < STORM_RELAY_DONE)
		r->elapsed_us = now_us(CLOCK_MONOTONIC) -
				relay_report.start_mono_us;
	r->seq++;
}

extern void nm_relay_report_begin(uint64_t key, uint32_t job, uint64_t size,
				  int nnodes)
{
	storm_relay_report_t *r = &relay_report.cur;
	uint64_t seq;

	pthread_mutex_lock(&relay_report.lock);
	seq = r->seq;
	r->magic = STORM_RELAY_REPORT_MAGIC;
	r->key = key;
	r->job_id = job;
	r->phase = STORM_RELAY_MANIFEST;
	r->nnodes = (uint32_t) nnodes;
	r->size = size;
	r->received = 0;
	r->start_us = (int64_t) now_us(CLOCK_REALTIME);
	r->elapsed_us = 0;
	memset(r->ready, 0, sizeof(r->ready));
	memset(r->done, 0, sizeof(r->done));
	r->count++;
	r->seq = seq + 1;
	relay_report.start_mono_us = now_us(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&relay_report.lock);
}

extern void nm_relay_report_phase(uint64_t key, enum storm_relay_phase phase)
{
	storm_relay_report_t *r;

	pthread_mutex_lock(&relay_report.lock);
	if ((r = mine(key))) {
		r->phase = phase;
		touch(r);
	}
	pthread_mutex_unlock(&relay_report.lock);
}

extern void nm_relay_report_received(uint64_t key, uint64_t got)
{
	storm_relay_report_t *r;

	pthread_mutex_lock(&relay_report.lock);
	if ((r = mine(key))) {
		r->received = got;
		touch(r);
	}
	pthread_mutex_unlock(&relay_report.lock);
}

extern void nm_relay_report_nodes(uint64_t key, const storm_set_t *ready,
				  const storm_set_t *done)
{
	storm_relay_report_t *r;

	pthread_mutex_lock(&relay_report.lock);
	if ((r = mine(key))) {
		if (ready)
			memcpy(r->ready, ready->bits, sizeof(r->ready));
		if (done)
			memcpy(r->done, done->bits, sizeof(r->done));
		touch(r);
	}
	pthread_mutex_unlock(&relay_report.lock);
}

extern void nm_relay_report_end(uint64_t key, uint64_t size, bool ok,
				uint64_t elapsed_us)
{
	storm_relay_report_t *r;
	int n;
	const uint64_t *le = storm_hist_bcast_le_us(&n);

	pthread_mutex_lock(&relay_report.lock);
	/* kept in the record across broadcasts, like the totals; counted
	 * whether or not a newer broadcast took the view */
	storm_hist_observe(&relay_report.cur.dur, le, n, elapsed_us);
	if (ok)
		relay_report.cur.bytes += size;
	else
		relay_report.cur.failed++;
	if ((r = mine(key))) {
		touch(r);
		r->phase = ok ? STORM_RELAY_DONE : STORM_RELAY_FAILED;
	}
	pthread_mutex_unlock(&relay_report.lock);
}

/* The last report is done (or there is none): may the buffer change? */
static bool send_free(void)
{
	if (relay_report.op && storm_op_test(relay_report.op, NULL) == -EAGAIN)
		return false;
	if (relay_report.op)
		storm_op_free(relay_report.op);
	relay_report.op = NULL;
	return true;
}

extern void nm_relay_report_tick(nm_t *nm)
{
	uint64_t now_ms = now_us(CLOCK_MONOTONIC) / 1000;
	storm_set_t mm;
	bool due;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_REPORT_MAX_RANKS || !send_free())
		return;
	pthread_mutex_lock(&relay_report.lock);
	due = relay_report.cur.magic &&
	      relay_report.cur.seq != relay_report.sent_seq &&
	      (relay_report.cur.phase >= STORM_RELAY_DONE ||
	       now_ms - relay_report.last_send_ms >= NM_RELAY_REPORT_MS);
	if (due) {
		if (relay_report.cur.phase < STORM_RELAY_DONE)
			relay_report.cur.elapsed_us = now_us(CLOCK_MONOTONIC) -
						      relay_report.start_mono_us;
		relay_report.out = relay_report.cur;
		relay_report.out.rank = (uint32_t) nm->rank;
	}
	pthread_mutex_unlock(&relay_report.lock);
	if (!due)
		return;
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer(nm->ctx, &mm, &relay_report.out,
			sizeof(relay_report.out),
			storm_relay_report_off(nm->rank), STORM_NO_EVENT,
			STORM_NO_EVENT, &relay_report.op);
	if (rc) {
		relay_report.op = NULL;
		nm_debug("broadcast report to the machine manager: %s",
			 storm_strerror(rc));
		return;
	}
	relay_report.sent_seq = relay_report.out.seq;
	relay_report.last_send_ms = now_ms;
}

extern void nm_relay_report_fini(void)
{
	if (relay_report.op)
		storm_op_free(relay_report.op);
	relay_report.op = NULL;
}

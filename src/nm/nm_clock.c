/*
 * nm_clock.c - this node's clock offset to the Machine Manager
 * (nm_clock.h).
 *
 * The MM asks one node at a time (storm_gang.h "clock"); the request
 * arrives on the progress thread, which stamps it, and the gang watcher
 * thread (real-time) answers, so the node's hold between t2 and t3 is a
 * real-time wake-up, and excluded from the delay anyway.  Why not the
 * strobe's own timestamps: the strobe goes down the tree, relayed by other
 * node managers, while an answer goes straight to the MM; that asymmetry
 * would bias a leaf's offset by half the relay's time, which on a shared
 * host is as large as the skew we remove.  Request and reply here each go
 * straight between the MM and the node, on arrival.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/storm_mutex.h"
#include "src/common/storm_clock.h"
#include "nm_clock.h"

#define NM_CLOCK_TEST_MAX_US 10000000LL

static struct {
	int64_t test_offset_ns;		/* NM_CLOCK_TEST_ENV, else 0 */
	pthread_mutex_t lock;
	storm_clock_filter_t filter;
	bool pending;			/* a request to answer */
	uint64_t req_seq, req_t1, req_t2;
	uint64_t last_seq, last_t1, last_t2, last_t3;	/* last reply */
	bool last_used;			/* its sample is in the filter */
	/* The reply in flight (the watcher's only). */
	storm_gang_clock_rep_t rep;
	storm_op_t *rep_op;
} clock_sync = { .lock = PTHREAD_MUTEX_INITIALIZER };

extern void nm_clock_init(void)
{
	const char *v = getenv(NM_CLOCK_TEST_ENV);
	char *end;
	long long us;
	int rc;

	/* the progress thread's strobe callback and the status share it */
	if ((rc = storm_mutex_init_inherit(&clock_sync.lock)))
		nm_error("gang: no priority inheritance for the clock's lock: %s",
			 strerror(rc));
	storm_clock_filter_init(&clock_sync.filter);
	if (!v || !*v)
		return;
	errno = 0;
	us = strtoll(v, &end, 10);
	if (errno || *end || us < -NM_CLOCK_TEST_MAX_US ||
	    us > NM_CLOCK_TEST_MAX_US) {
		nm_error("gang: %s=%s is not microseconds within +-%lld; ignored",
			 NM_CLOCK_TEST_ENV, v, NM_CLOCK_TEST_MAX_US);
		return;
	}
	clock_sync.test_offset_ns = us * 1000;
	nm_info("gang: test clock offset %lld us (%s; never on a real node)",
		us, NM_CLOCK_TEST_ENV);
}

extern uint64_t nm_clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec +
	       (uint64_t) clock_sync.test_offset_ns;
}

extern bool nm_clock_request(nm_t *nm, const storm_gang_clock_req_t *r,
			     uint64_t t2)
{
	storm_clock_sample_t s;

	if (r->magic != STORM_GANG_MAGIC || r->seq != r->seq_check ||
	    r->rank != (uint32_t) nm->rank)
		return false;
	pthread_mutex_lock(&clock_sync.lock);
	if (!clock_sync.last_used && r->prev_seq &&
	    r->prev_seq == clock_sync.last_seq && r->prev_t4 &&
	    !storm_clock_sample(clock_sync.last_t1, clock_sync.last_t2,
				clock_sync.last_t3, r->prev_t4, &s)) {
		storm_clock_filter_add(&clock_sync.filter, &s);
		clock_sync.last_used = true;
	}
	clock_sync.pending = true;
	clock_sync.req_seq = r->seq;
	clock_sync.req_t1 = r->t1;
	clock_sync.req_t2 = t2;
	pthread_mutex_unlock(&clock_sync.lock);
	return true;
}

extern bool nm_clock_estimate(int64_t *offset_ns, uint64_t *uncert_ns)
{
	bool ok;

	pthread_mutex_lock(&clock_sync.lock);
	ok = storm_clock_filter_best(&clock_sync.filter, offset_ns, uncert_ns);
	pthread_mutex_unlock(&clock_sync.lock);
	return ok;
}

/* The last reply went (or there is none): may the buffer change? */
static bool reply_free(void)
{
	if (clock_sync.rep_op &&
	    storm_op_test(clock_sync.rep_op, NULL) == -EAGAIN)
		return false;
	if (clock_sync.rep_op)
		storm_op_free(clock_sync.rep_op);
	clock_sync.rep_op = NULL;
	return true;
}

extern void nm_clock_reply(nm_t *nm, uint64_t late, uint32_t mode)
{
	storm_gang_clock_rep_t *rep = &clock_sync.rep;
	storm_set_t mm;
	int64_t off = 0;
	uint64_t unc = 0;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_GANG_CLOCK_MAX_RANKS || !reply_free())
		return;
	pthread_mutex_lock(&clock_sync.lock);
	if (!clock_sync.pending) {
		pthread_mutex_unlock(&clock_sync.lock);
		return;
	}
	clock_sync.pending = false;
	if (!storm_clock_filter_best(&clock_sync.filter, &off, &unc))
		off = 0, unc = 0;
	memset(rep, 0, sizeof(*rep));
	rep->magic = STORM_GANG_MAGIC;
	rep->rank = (uint32_t) nm->rank;
	rep->seq = clock_sync.req_seq;
	rep->t1 = clock_sync.req_t1;
	rep->t2 = clock_sync.req_t2;
	rep->offset_ns = off;
	rep->uncert_ns = unc;
	rep->late = late;
	rep->mode = mode;
	rep->t3 = nm_clock_now();
	clock_sync.last_seq = rep->seq;
	clock_sync.last_t1 = rep->t1;
	clock_sync.last_t2 = rep->t2;
	clock_sync.last_t3 = rep->t3;
	clock_sync.last_used = false;
	pthread_mutex_unlock(&clock_sync.lock);
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer_flags(nm->ctx, &mm, rep, sizeof(*rep),
			      storm_gang_clock_off(nm->rank), STORM_NO_EVENT,
			      STORM_GANG_EV_CLOCK, STORM_XFER_ON_ARRIVAL,
			      &clock_sync.rep_op);
	if (rc) {
		clock_sync.rep_op = NULL;
		nm_debug("gang: clock reply to the machine manager: %s",
			 storm_strerror(rc));
	}
}

extern void nm_clock_fini(void)
{
	if (clock_sync.rep_op)
		storm_op_free(clock_sync.rep_op);
	clock_sync.rep_op = NULL;
}

/*
 * nm_bcast_wait.c - tasks that wait on their node for a broadcast file
 * (storm.conf BcastOverlap).
 *
 * With BcastOverlap srun launches the step while the file travels; each
 * task, in the SPANK plugin before exec, asks its node manager
 * "bcast_wait <key> <ms>" on the control socket.  It is answered "ok done"
 * once this node's copy of that transfer is in place *and* the relay's
 * go-ahead has come (every node of the step holds its copy: a task must
 * not start when another node failed), "error <why>" at once when this
 * node refused the file or it was aborted, and an error when the wait runs
 * out.  The control socket serves one request at a time, so a waiter's
 * connection is kept here and answered from whichever thread ends the
 * transfer or brings the go-ahead.
 *
 * Outcomes are remembered by key in a small ring, so a task that asks
 * after its file arrived is answered at once, and the answer never depends
 * on a fabric variable that a later transfer may reuse.  Any user may
 * wait: the answer only says whether a transfer of that (random 48-bit)
 * key ended on this node.  The go-ahead counts only from the transfer's
 * own root (the relay that sent the file).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nm.h"
#include "nm_bcast_wait.h"
#include "src/common/storm_mutex.h"
#include "src/common/storm_deadline.h"
#include "src/common/storm_bcast.h"

#define MAX_WAITERS 256
#define OUTCOMES 256
#define ST_EXPIRED (-1)
#define ST_STOPPING (-2)

typedef struct waiter {
	int fd;
	uint64_t key;
	struct timespec deadline;	/* CLOCK_MONOTONIC */
} waiter_t;

static struct {
	pthread_mutex_t lock;
	waiter_t w[MAX_WAITERS];
	int n;
	struct outcome {
		uint64_t key;
		int root;	/* the relay, -1 until known */
		int st;		/* this node's final state, 0 until known */
		bool go;	/* the relay's go-ahead came */
	} done[OUTCOMES];
	int done_pos;
} waiters = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool due(const struct timespec *dl, const struct timespec *now)
{
	return now->tv_sec > dl->tv_sec ||
	       (now->tv_sec == dl->tv_sec && now->tv_nsec >= dl->tv_nsec);
}

/* The key's outcome, or a new one when create (overwriting the oldest);
 * caller holds waiters.lock. */
static struct outcome *outcome(uint64_t key, bool create)
{
	struct outcome *o;

	for (int i = 0; i < OUTCOMES; i++)
		if (waiters.done[i].key == key)
			return &waiters.done[i];
	if (!create)
		return NULL;
	o = &waiters.done[waiters.done_pos];
	waiters.done_pos = (waiters.done_pos + 1) % OUTCOMES;
	*o = (struct outcome) { .key = key, .root = -1 };
	return o;
}

/* The answer a waiter gets now, or 0: wait on.  A refusal or abort is
 * final at once; a complete copy only with the go-ahead. */
static int verdict(const struct outcome *o)
{
	if (!o || !o->st)
		return 0;
	if (o->st != STORM_BCAST_DONE)
		return o->st;
	return o->go ? STORM_BCAST_DONE : 0;
}

static void answer(char *out, size_t len, int st)
{
	if (st == STORM_BCAST_DONE)
		snprintf(out, len, "done");
	else if (st == ST_EXPIRED)
		snprintf(out, len, "the broadcast did not complete on every node within the wait");
	else if (st == ST_STOPPING)
		snprintf(out, len, "the node manager is stopping");
	else
		snprintf(out, len, "%s", storm_bcast_state_str(st));
}

/* Reply on a kept connection and close it (never blocks: the peer may be
 * gone, then the reply is simply lost). */
static void reply(int fd, int st)
{
	char text[256], msg[300];

	answer(text, sizeof(text), st);
	snprintf(msg, sizeof(msg), "%s %s",
		 st == STORM_BCAST_DONE ? "ok" : "error", text);
	(void) send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* Answer the waiters that match: by key (st >= 0), past their deadline
 * (ST_EXPIRED) or all (ST_STOPPING).  Caller holds waiters.lock. */
static void release(uint64_t key, int st)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	for (int i = 0; i < waiters.n;) {
		waiter_t *w = &waiters.w[i];

		if (st == ST_STOPPING || (st == ST_EXPIRED && due(&w->deadline, &now)) ||
		    (st > 0 && w->key == key)) {
			reply(w->fd, st);
			*w = waiters.w[--waiters.n];
		} else {
			i++;
		}
	}
}

/* Caller holds waiters.lock. */
static void settle(struct outcome *o)
{
	int v = verdict(o);

	if (v)
		release(o->key, v);
}

extern void nm_bcast_wake(int root, uint64_t key, int st)
{
	struct outcome *o;

	key &= STORM_BCAST_KEY_MASK;
	pthread_mutex_lock(&waiters.lock);
	o = outcome(key, true);
	if (o->root >= 0 && o->root != root)
		o->go = false;	/* a go-ahead from another rank: not ours */
	o->root = root;
	o->st = st;
	settle(o);
	pthread_mutex_unlock(&waiters.lock);
}

extern void nm_bcast_go(int root, uint64_t key)
{
	struct outcome *o;

	key &= STORM_BCAST_KEY_MASK;
	pthread_mutex_lock(&waiters.lock);
	/* The go-ahead may overtake this node's own record of the copy: the
	 * relay reads the fabric variable, set just before nm_bcast_wake. */
	o = outcome(key, true);
	if (o->root >= 0 && o->root != root) {
		pthread_mutex_unlock(&waiters.lock);
		nm_error("bcast: go-ahead for transfer %" PRIx64 " from rank %d, whose relay is rank %d: ignored",
			 key, root, o->root);
		return;
	}
	o->root = root;
	o->go = true;
	settle(o);
	pthread_mutex_unlock(&waiters.lock);
}

extern void nm_bcast_wait_expire(void)
{
	pthread_mutex_lock(&waiters.lock);
	release(0, ST_EXPIRED);
	pthread_mutex_unlock(&waiters.lock);
}

extern void nm_bcast_wait_fini(void)
{
	pthread_mutex_lock(&waiters.lock);
	release(0, ST_STOPPING);
	pthread_mutex_unlock(&waiters.lock);
}

/* "bcast_wait <key hex> <ms>" */
static int ctl_wait(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		    size_t outlen)
{
	unsigned long long key, ms;
	int st, n = 0;
	waiter_t *w;

	(void) nm;
	if (sscanf(args, "%llx %llu%n", &key, &ms, &n) != 2 || args[n] ||
	    !(key & STORM_BCAST_KEY_MASK) || ms > 3600 * 1000ULL) {
		snprintf(out, outlen, "usage: bcast_wait <key hex> <ms, at most one hour>");
		return 1;
	}
	key &= STORM_BCAST_KEY_MASK;
	pthread_mutex_lock(&waiters.lock);
	if ((st = verdict(outcome(key, false)))) {
		pthread_mutex_unlock(&waiters.lock);
		answer(out, outlen, st);
		return st != STORM_BCAST_DONE;
	}
	if (waiters.n == MAX_WAITERS) {
		pthread_mutex_unlock(&waiters.lock);
		snprintf(out, outlen, "too many tasks waiting for broadcasts on this node");
		return 1;
	}
	w = &waiters.w[waiters.n++];
	w->fd = peer->fd;
	w->key = key;
	storm_deadline_after_us((uint64_t) ms * 1000, &w->deadline);
	pthread_mutex_unlock(&waiters.lock);
	nm_debug("bcast: pid %d waits for transfer %llx", (int) peer->pid, key);
	return NM_CTL_KEPT;
}

extern void nm_bcast_wait_init(void)
{
	int rc;

	/* the progress thread wakes waiters from the fabric's callbacks */
	if ((rc = storm_mutex_init_inherit(&waiters.lock)))
		nm_error("bcast: no priority inheritance for the waiters' lock: %s",
			 strerror(rc));
	nm_ctl_register("bcast_wait", ctl_wait);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_fabric.c - the broadcast on the fabric (protocol in
 * src/common/storm_bcast.h).
 *
 * The relay multicasts a manifest (srun's munge credential, then its job
 * attestation), each node checks it and prepares its file, the relay
 * multicasts the data and then the go-ahead.  libstormmech calls the
 * destination callbacks from its progress thread with its lock held, so
 * they only take buffers and look transfers up.  Everything slow (munge,
 * slurmctld, file system) runs in this module's worker thread, which
 * reports through the fabric variables that the relay reads with
 * COMPARE-AND-WRITE.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nm_bcast_absent.h"
#include "nm_bcast_dir.h"
#include "nm_bcast_fabric.h"
#include "nm_bcast_wait.h"
#include "nm_bcast_xfer.h"
#include "src/common/storm_mutex.h"
#include "src/common/storm_thread.h"
#include "src/common/storm_bcast.h"

#define SWEEP_PERIOD 10		/* s */

typedef enum { W_MANIFEST = 1, W_COMMIT, W_ABORT } work_kind_t;

typedef struct work {
	struct work *next;
	work_kind_t kind;
	int root;
	uint64_t key;
	size_t len;
	char *manifest;
} work_t;

/* A manifest, go-ahead or absent-report buffer handed to libstormmech:
 * the release callback only gets the buffer back, so it carries its
 * root, key and kind. */
typedef enum { M_MANIFEST, M_GO, M_ABSENT } mbuf_kind_t;
typedef struct mbuf {
	struct mbuf *next;
	int root;
	uint64_t key;
	mbuf_kind_t kind;
	char data[];
} mbuf_t;

static struct {
	nm_t *nm;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	storm_thread_t worker;
	work_t *head, *tail;
	mbuf_t *mbufs;
	time_t last_sweep;
} bcast_fabric = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.worker = STORM_THREAD_INIT("storm-nm-bcast", &bcast_fabric.lock,
				    &bcast_fabric.cond),
};

extern void nm_bcast_publish(int root, uint64_t key, int st)
{
	int var = storm_bcast_var(key);
	int rc = storm_var_set(bcast_fabric.nm->ctx, var,
			       STORM_BCAST_VAL(key, st));

	if (rc)
		nm_error("bcast: cannot set variable %d: %s", var,
			 storm_strerror(rc));
	if (st != STORM_BCAST_READY)
		nm_bcast_wake(root, key, st);
}

/* ------------------------------------------------ fabric callbacks */
/* A buffer for a manifest, the go-ahead or an absent report, or NULL
 * (dropped). */
static void *take_mbuf(int root, uint64_t offset, uint64_t len)
{
	mbuf_kind_t kind = offset & STORM_BCAST_MANIFEST ? M_MANIFEST :
			   offset & STORM_BCAST_GO ? M_GO : M_ABSENT;
	mbuf_t *m;

	if (kind == M_GO ? len != 0 :
	    len == 0 || len > (kind == M_MANIFEST ? STORM_BCAST_MAX_MANIFEST :
			       NM_BCAST_ABSENT_MAX_BYTES))
		return NULL;	/* out of range: dropped */
	m = calloc(1, sizeof(*m) + len + 1);
	if (!m)
		return NULL;
	m->root = root;
	m->key = offset & STORM_BCAST_KEY_MASK;
	m->kind = kind;
	pthread_mutex_lock(&bcast_fabric.lock);
	m->next = bcast_fabric.mbufs;
	bcast_fabric.mbufs = m;
	pthread_mutex_unlock(&bcast_fabric.lock);
	return m->data;
}

/* Called by the progress thread with the fabric lock held: no blocking. */
static void *dest_cb(void *arg, int root, uint64_t offset, uint64_t len)
{
	uint64_t key = offset & STORM_BCAST_KEY_MASK;
	void *dst;

	(void) arg;
	if (offset & (STORM_BCAST_MANIFEST | STORM_BCAST_GO |
		      STORM_BCAST_ABSENT_REPORT))
		return take_mbuf(root, offset, len);
	if (!(offset & STORM_BCAST_DATA))
		return NULL;	/* not ours: the global region applies */
	dst = nm_bcast_xfer_receive(root, key, len);
	if (!dst)
		nm_error("bcast: refusing data from rank %d (key %" PRIx64
			 ", %" PRIu64 " bytes): no accepted manifest",
			 root, key, len);
	return dst;
}

static void enqueue(work_t *w)
{
	pthread_mutex_lock(&bcast_fabric.lock);
	if (bcast_fabric.tail)
		bcast_fabric.tail->next = w;
	else
		bcast_fabric.head = w;
	bcast_fabric.tail = w;
	pthread_cond_signal(&bcast_fabric.cond);
	pthread_mutex_unlock(&bcast_fabric.lock);
}

/* Our buffer at dst, unlinked from the list; caller holds bcast_fabric.lock. */
static mbuf_t *unlink_mbuf(const void *dst)
{
	for (mbuf_t **pp = &bcast_fabric.mbufs; *pp; pp = &(*pp)->next)
		if ((*pp)->data == dst) {
			mbuf_t *m = *pp;

			*pp = m->next;
			return m;
		}
	return NULL;
}

/* A manifest, go-ahead or absent report has arrived (or not:
 * !committed); frees m. */
static void mbuf_released(mbuf_t *m, uint64_t len, bool committed)
{
	work_t *w;

	if (m->kind == M_GO) {
		/* nothing slow: answers the waiters without blocking */
		if (committed)
			nm_bcast_go(m->root, m->key);
	} else if (m->kind == M_ABSENT) {
		if (committed)
			nm_bcast_absent_merge(m->key, m->data, (size_t) len);
	} else if (committed && (w = calloc(1, sizeof(*w)))) {
		w->kind = W_MANIFEST;
		w->root = m->root;
		w->key = m->key;
		w->len = len;
		w->manifest = malloc(len + 1);
		if (w->manifest) {
			memcpy(w->manifest, m->data, len);
			w->manifest[len] = '\0';
			enqueue(w);
		} else {
			free(w);
		}
	}
	free(m);
}

/*
 * Called when a transfer that used one of our buffers is over and no send
 * reads the buffer any more (libstormmech's dest_release).  The slow part
 * runs in the worker.  We need the root and offset back, so they are
 * found from the buffer.
 */
static void release_cb(void *arg, void *dst, uint64_t len, bool committed)
{
	work_t *w;
	mbuf_t *m;
	int root;
	uint64_t key;

	(void) arg;
	pthread_mutex_lock(&bcast_fabric.lock);
	if (storm_thread_stopping(&bcast_fabric.worker)) {
		/* shutting down: the NM's fini owns the buffers now */
		pthread_mutex_unlock(&bcast_fabric.lock);
		return;
	}
	m = unlink_mbuf(dst);
	pthread_mutex_unlock(&bcast_fabric.lock);
	if (m) {
		mbuf_released(m, len, committed);
		return;
	}
	if (!nm_bcast_xfer_received(dst, &root, &key))
		return;
	if (!(w = calloc(1, sizeof(*w)))) {
		nm_error("bcast: out of memory: a transfer's end is lost");
		return;
	}
	w->kind = committed ? W_COMMIT : W_ABORT;
	w->root = root;
	w->key = key;
	enqueue(w);
}

/* ----------------------------------------------------------- worker */
/* A manifest from the fabric: srun's credential, then (after a newline)
 * the relay's attestation if it made one. */
static void handle_manifest(work_t *w)
{
	nm_bcast_xfer_t *x;
	uint64_t key = w->key & STORM_BCAST_KEY_MASK;
	char *attest = strchr(w->manifest, '\n');

	if (attest)
		*attest++ = '\0';
	nm_bcast_publish(w->root, key,
			 nm_bcast_xfer_accept(w->manifest, attest, w->root, key,
					      NM_XFER_READY, &x));
}

static void handle_end(work_t *w)
{
	nm_bcast_xfer_t *x = nm_bcast_xfer_find(w->root, w->key);

	if (x)
		nm_bcast_publish(w->root, w->key,
				 nm_bcast_xfer_finish(x, w->kind == W_COMMIT));
}

/* Nothing queued: answer the waits that ran out, wait a second for work,
 * sweep BcastDir now and then.  Called and returns with bcast_fabric.lock
 * held. */
static void idle(void)
{
	struct timespec ts;

	pthread_mutex_unlock(&bcast_fabric.lock);
	nm_bcast_wait_expire();
	pthread_mutex_lock(&bcast_fabric.lock);
	if (bcast_fabric.head || storm_thread_stopping(&bcast_fabric.worker))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	pthread_cond_timedwait(&bcast_fabric.cond, &bcast_fabric.lock, &ts);
	if (!bcast_fabric.head &&
	    time(NULL) - bcast_fabric.last_sweep >= SWEEP_PERIOD) {
		bcast_fabric.last_sweep = time(NULL);
		pthread_mutex_unlock(&bcast_fabric.lock);
		nm_bcast_sweep();
		pthread_mutex_lock(&bcast_fabric.lock);
	}
}

static void *worker(void *arg)
{
	(void) arg;
	pthread_mutex_lock(&bcast_fabric.lock);
	while (!storm_thread_stopping(&bcast_fabric.worker)) {
		work_t *w = bcast_fabric.head;

		if (!w) {
			idle();
			continue;
		}
		bcast_fabric.head = w->next;
		if (!bcast_fabric.head)
			bcast_fabric.tail = NULL;
		pthread_mutex_unlock(&bcast_fabric.lock);
		if (w->kind == W_MANIFEST)
			handle_manifest(w);
		else
			handle_end(w);
		free(w->manifest);
		free(w);
		pthread_mutex_lock(&bcast_fabric.lock);
	}
	pthread_mutex_unlock(&bcast_fabric.lock);
	return NULL;
}

/* ------------------------------------------------------ start, stop */
extern int nm_bcast_fabric_start(nm_t *nm)
{
	int rc;

	bcast_fabric.nm = nm;
	/* shared by the progress thread (the callbacks, under the fabric
	 * lock) and the worker, which runs at normal priority */
	if ((rc = storm_mutex_init_inherit(&bcast_fabric.lock)))
		return -rc;
	if ((rc = storm_thread_start(&bcast_fabric.worker, worker, NULL)))
		return -rc;
	storm_set_dest_fn(nm->ctx, dest_cb, release_cb, nm);
	return 0;
}

extern void nm_bcast_fabric_stop(nm_t *nm)
{
	/* No progress any more, so nothing writes into our mappings. */
	if (nm->ctx)
		storm_ctx_stop_progress(nm->ctx);
	storm_thread_stop(&bcast_fabric.worker);
	for (work_t *w = bcast_fabric.head, *n; w; w = n) {
		n = w->next;
		free(w->manifest);
		free(w);
	}
	bcast_fabric.head = bcast_fabric.tail = NULL;
}

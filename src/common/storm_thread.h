/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_thread.h - a long-lived thread with a stop flag: started once,
 * stopped and joined once, by the module that owns it.
 *
 * The node manager's modules each run a thread that loops until told to
 * stop: it waits on the module's condition variable under the module's
 * lock (woken when stop is set), or polls and reads the flag without a
 * lock.  Stopping sets the flag (under the lock when there is one, so a
 * waiter cannot miss it between its test and its wait), wakes the
 * condition variable, and joins.  Slurm-free; no logging: the owner says
 * what a failure means for it.
 */
#ifndef STORM_THREAD_H
#define STORM_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct storm_thread {
	/* the owner's, set before the start and kept */
	const char *name;	/* the thread's name (at most 15 chars), or NULL */
	pthread_mutex_t *lock;	/* guards stop; NULL: stop is read lock-free */
	pthread_cond_t *wake;	/* broadcast when stop is set, or NULL */
	/* storm_thread_*()'s */
	bool stop;
	bool started;
	pthread_t tid;
} storm_thread_t;

#define STORM_THREAD_INIT(n, l, w) { .name = (n), .lock = (l), .wake = (w) }

/* Clear the stop flag and start fn(arg) in a thread; 0 or a positive
 * errno (nothing started). */
extern int storm_thread_start(storm_thread_t *t, void *(*fn)(void *),
			      void *arg);

/* Set the stop flag, wake the thread and join it (the flag is set even
 * when no thread runs).  The caller must not hold t->lock. */
extern void storm_thread_stop(storm_thread_t *t);

/* From the thread, with t->lock held: wait up to us on t->wake (made by
 * storm_cond_init_monotonic()) or until the stop.  Spurious wake-ups wait
 * on. */
extern void storm_thread_wait(storm_thread_t *t, uint64_t us);

/* Has the owner asked the thread to stop?  Under t->lock when there is
 * one; any time when there is none. */
extern bool storm_thread_stopping(const storm_thread_t *t);

/* The calling thread's scheduling: policy SCHED_FIFO at prio, or
 * SCHED_OTHER (prio 0) for a thread that must never run real-time
 * whatever started it.  0 or a positive errno; the owner decides whether
 * a refusal is worth a log line. */
extern int storm_thread_sched_self(int policy, int prio);

#endif /* STORM_THREAD_H */

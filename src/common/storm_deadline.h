/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_deadline.h - timed waits (the node manager's threads, the plugins'): a deadline on the
 * monotonic clock and a condition variable that waits on that clock, so
 * that no wait stretches or shrinks when the wall clock is set.
 */
#ifndef STORM_DEADLINE_H
#define STORM_DEADLINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* *ts = now (CLOCK_MONOTONIC) + us, for pthread_cond_timedwait() on a
 * condition variable from storm_cond_init_monotonic(). */
extern void storm_deadline_after_us(uint64_t us, struct timespec *ts);

/* With `lock` held: wait `us` on `cond` (from storm_cond_init_monotonic()),
 * returning early once *stop is set (by a thread that sets it under
 * `lock` and signals `cond`); spurious wake-ups wait on. */
extern void storm_wait_unless_stopped(pthread_cond_t *cond, pthread_mutex_t *lock,
				   const bool *stop, uint64_t us);

/* pthread_cond_init() on CLOCK_MONOTONIC; 0 or a positive errno. */
extern int storm_cond_init_monotonic(pthread_cond_t *cond);

#endif /* STORM_DEADLINE_H */

/*
 * nm_deadline.h - the node manager's timed waits: a deadline on the
 * monotonic clock and a condition variable that waits on that clock, so
 * that no wait stretches or shrinks when the wall clock is set.
 */
#ifndef STORM_NM_DEADLINE_H
#define STORM_NM_DEADLINE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* *ts = now (CLOCK_MONOTONIC) + us, for pthread_cond_timedwait() on a
 * condition variable from nm_cond_init_monotonic(). */
extern void nm_deadline_after_us(uint64_t us, struct timespec *ts);

/* pthread_cond_init() on CLOCK_MONOTONIC; 0 or a positive errno. */
extern int nm_cond_init_monotonic(pthread_cond_t *cond);

#endif /* STORM_NM_DEADLINE_H */

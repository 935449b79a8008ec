/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_deadline.c - storm_deadline.h: monotonic deadlines and condition
 * variables.
 */
#include <errno.h>

#include "storm_deadline.h"

extern void storm_deadline_after_us(uint64_t us, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t) (us / 1000000);
	ts->tv_nsec += (long) (us % 1000000) * 1000;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

extern void storm_wait_unless_stopped(pthread_cond_t *cond, pthread_mutex_t *lock,
				   const bool *stop, uint64_t us)
{
	struct timespec ts;

	storm_deadline_after_us(us, &ts);
	while (!*stop && pthread_cond_timedwait(cond, lock, &ts) != ETIMEDOUT)
		;
}

extern int storm_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;
	int rc;

	if ((rc = pthread_condattr_init(&ca)))
		return rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}

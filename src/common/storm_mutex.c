/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_mutex.c - priority-inheriting mutexes (storm_mutex.h).
 */
#include "storm_mutex.h"

extern int storm_mutex_init_inherit(pthread_mutex_t *m)
{
	pthread_mutexattr_t ma;
	int rc;

	if ((rc = pthread_mutexattr_init(&ma)))
		return rc;
	rc = pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	if (!rc)
		rc = pthread_mutex_init(m, &ma);
	pthread_mutexattr_destroy(&ma);
	return rc;
}

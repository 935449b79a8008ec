/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_thread.c - long-lived threads with a stop flag (storm_thread.h).
 */
#include <sched.h>

#include "storm_deadline.h"
#include "storm_thread.h"

extern int storm_thread_start(storm_thread_t *t, void *(*fn)(void *),
			      void *arg)
{
	int rc;

	if (t->started)
		return 0;
	__atomic_store_n(&t->stop, false, __ATOMIC_RELEASE);
	if ((rc = pthread_create(&t->tid, NULL, fn, arg)))
		return rc;
	/* a name only helps ps and gdb: a refusal changes nothing */
	if (t->name)
		(void) pthread_setname_np(t->tid, t->name);
	t->started = true;
	return 0;
}

extern void storm_thread_stop(storm_thread_t *t)
{
	/* the flag is set even with no thread: the owner may read it too */
	if (t->lock)
		pthread_mutex_lock(t->lock);
	__atomic_store_n(&t->stop, true, __ATOMIC_RELEASE);
	if (t->wake)
		pthread_cond_broadcast(t->wake);
	if (t->lock)
		pthread_mutex_unlock(t->lock);
	if (!t->started)
		return;
	pthread_join(t->tid, NULL);
	t->started = false;
}

extern void storm_thread_wait(storm_thread_t *t, uint64_t us)
{
	storm_wait_unless_stopped(t->wake, t->lock, &t->stop, us);
}

extern bool storm_thread_stopping(const storm_thread_t *t)
{
	return __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE);
}

extern int storm_thread_sched_self(int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return pthread_setschedparam(pthread_self(), policy, &sp);
}

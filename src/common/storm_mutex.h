/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_mutex.h - mutexes that real-time threads share with normal ones.
 *
 * A SCHED_FIFO thread that waits on a mutex a SCHED_OTHER thread holds
 * must lend the holder its priority.  Otherwise, on a host whose cores are
 * busy with jobs, the holder waits for the scheduler (tens to hundreds of
 * milliseconds) and the real-time thread waits with it, and so does every
 * thread that waits on a lock the real-time thread holds: a node manager's
 * progress thread holds the fabric lock while it calls the broadcast's
 * callbacks, and the heartbeat needs that lock.
 */
#ifndef STORM_MUTEX_H
#define STORM_MUTEX_H

#include <pthread.h>

/* pthread_mutex_init() with PTHREAD_PRIO_INHERIT: 0 or a positive errno.
 * Only on a mutex that no thread holds or waits on. */
extern int storm_mutex_init_inherit(pthread_mutex_t *m);

#endif /* STORM_MUTEX_H */

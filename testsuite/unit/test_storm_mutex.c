/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_mutex.c - priority-inheriting mutexes (src/common/storm_mutex.c):
 * a normal thread holding one while a SCHED_FIFO thread waits on it runs
 * at the waiter's priority, as the kernel reports it; with a plain mutex
 * it does not (the check can fail).  Needs SCHED_FIFO (root): without it
 * the test says so and passes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_mutex.h"

#include "check_run.h"

#define WAITER_PRIO 10

static pthread_mutex_t m;
static sem_t held, release;
static _Atomic pid_t holder_tid;

static void *holder(void *arg)
{
	(void) arg;
	holder_tid = (pid_t) syscall(SYS_gettid);
	pthread_mutex_lock(&m);
	sem_post(&held);
	sem_wait(&release);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *waiter(void *arg)
{
	(void) arg;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return NULL;
}

/* The kernel's priority of a thread of ours (/proc .../stat, field 18):
 * 0 to 39 for normal threads, -2 and below for real-time ones. */
static int kernel_prio(pid_t tid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	int prio = 999;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_ptr_nonnull(p = strrchr(buf, ')'));
	/* after ')': state (3), then fields 4..17, then priority (18) */
	ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %d",
				&prio), 1);
	return prio;
}

/* The holder's lowest kernel priority seen within ms while a SCHED_FIFO
 * thread waits on m, or 999 if this host refuses SCHED_FIFO. */
static int holder_prio_while_waited(int ms)
{
	pthread_t h, w;
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = WAITER_PRIO };
	int best = 999, rc;

	sem_init(&held, 0, 0);
	sem_init(&release, 0, 0);
	ck_assert_int_eq(pthread_create(&h, NULL, holder, NULL), 0);
	sem_wait(&held);
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	rc = pthread_create(&w, &a, waiter, NULL);
	pthread_attr_destroy(&a);
	if (rc == EPERM) {
		sem_post(&release);
		pthread_join(h, NULL);
		return 999;
	}
	ck_assert_int_eq(rc, 0);
	for (int i = 0; i < ms && best >= 0; i++) {
		int p = kernel_prio(holder_tid);

		if (p < best)
			best = p;
		usleep(1000);
	}
	sem_post(&release);
	pthread_join(w, NULL);
	pthread_join(h, NULL);
	sem_destroy(&held);
	sem_destroy(&release);
	return best;
}

START_TEST(holder_runs_at_the_waiters_priority)
{
	int prio;

	ck_assert_int_eq(storm_mutex_init_inherit(&m), 0);
	prio = holder_prio_while_waited(2000);
	pthread_mutex_destroy(&m);
	if (prio == 999) {
		printf("test_storm_mutex: SCHED_FIFO refused here: not checked\n");
		return;
	}
	/* SCHED_FIFO 10 is kernel priority -11 */
	ck_assert_int_eq(prio, -1 - WAITER_PRIO);
}
END_TEST

START_TEST(a_plain_mutex_lends_nothing)
{
	int prio;

	ck_assert_int_eq(pthread_mutex_init(&m, NULL), 0);
	prio = holder_prio_while_waited(200);
	pthread_mutex_destroy(&m);
	if (prio == 999)
		return;
	ck_assert_int_ge(prio, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("storm_mutex");
	TCase *tc = tcase_create("inherit");

	tcase_add_test(tc, holder_runs_at_the_waiters_priority);
	tcase_add_test(tc, a_plain_mutex_lends_nothing);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}

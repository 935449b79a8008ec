/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_thread.c - long-lived threads with a stop flag
 * (src/common/storm_thread.c): a thread that waits on its owner's
 * condition variable is woken and joined by a stop, one that polls the
 * flag lock-free ends too, a stop with no thread only sets the flag, a
 * second start while running starts nothing, a restart clears the flag,
 * and the thread carries its name.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_deadline.h"
#include "src/common/storm_thread.h"

#include "check_run.h"

/* Far longer than any test runs: a stop that failed to wake the thread
 * would hang the test rather than pass by the timeout. */
#define LONG_WAIT_US (3600ULL * 1000000ULL)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static storm_thread_t waiter = STORM_THREAD_INIT("storm-test", &lock, &wake);
static atomic_int rounds, started;

/* Waits on the owner's condition variable, as the node manager's threads
 * do, for far longer than the test. */
static void *wait_main(void *arg)
{
	(void) arg;
	pthread_mutex_lock(&lock);
	atomic_fetch_add(&started, 1);
	while (!storm_thread_stopping(&waiter)) {
		atomic_fetch_add(&rounds, 1);
		storm_thread_wait(&waiter, LONG_WAIT_US);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void wait_started(int n)
{
	while (atomic_load(&started) < n)
		usleep(1000);
}

START_TEST(stop_wakes_a_waiting_thread_and_joins_it)
{
	char name[16] = "";

	ck_assert_int_eq(storm_cond_init_monotonic(&wake), 0);
	atomic_store(&started, 0);
	ck_assert_int_eq(storm_thread_start(&waiter, wait_main, NULL), 0);
	ck_assert(waiter.started);
	ck_assert_int_eq(pthread_getname_np(waiter.tid, name, sizeof(name)),
			 0);
	ck_assert_str_eq(name, "storm-test");
	wait_started(1);
	storm_thread_stop(&waiter);	/* returns only once joined */
	ck_assert(!waiter.started);
	ck_assert(storm_thread_stopping(&waiter));
}
END_TEST

START_TEST(restart_clears_the_flag)
{
	ck_assert_int_eq(storm_cond_init_monotonic(&wake), 0);
	atomic_store(&started, 0);
	atomic_store(&rounds, 0);
	for (int i = 1; i <= 3; i++) {
		ck_assert_int_eq(storm_thread_start(&waiter, wait_main, NULL),
				 0);
		wait_started(i);
		storm_thread_stop(&waiter);
	}
	/* each run waited at least once: the flag was clear at its start */
	ck_assert_int_ge(atomic_load(&rounds), 3);
}
END_TEST

START_TEST(second_start_starts_nothing)
{
	ck_assert_int_eq(storm_cond_init_monotonic(&wake), 0);
	atomic_store(&started, 0);
	ck_assert_int_eq(storm_thread_start(&waiter, wait_main, NULL), 0);
	wait_started(1);
	ck_assert_int_eq(storm_thread_start(&waiter, wait_main, NULL), 0);
	storm_thread_stop(&waiter);
	usleep(20000);
	ck_assert_int_eq(atomic_load(&started), 1);
}
END_TEST

static storm_thread_t poller = STORM_THREAD_INIT(NULL, NULL, NULL);

/* Polls the flag with no lock, as the relay's door does. */
static void *poll_main(void *arg)
{
	atomic_int *polls = arg;

	while (!storm_thread_stopping(&poller)) {
		atomic_fetch_add(polls, 1);
		usleep(1000);
	}
	return NULL;
}

START_TEST(lock_free_poller_ends)
{
	atomic_int polls = 0;

	ck_assert_int_eq(storm_thread_start(&poller, poll_main, &polls), 0);
	while (atomic_load(&polls) < 2)
		usleep(1000);
	storm_thread_stop(&poller);
	ck_assert(!poller.started);
}
END_TEST

START_TEST(stop_without_a_thread_sets_the_flag)
{
	storm_thread_t t = STORM_THREAD_INIT(NULL, &lock, NULL);

	storm_thread_stop(&t);
	ck_assert(storm_thread_stopping(&t));
	ck_assert(!t.started);
}
END_TEST

START_TEST(normal_scheduling_is_always_allowed)
{
	ck_assert_int_eq(storm_thread_sched_self(SCHED_OTHER, 0), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_thread");
	TCase *tc = tcase_create("thread");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stop_wakes_a_waiting_thread_and_joins_it);
	tcase_add_test(tc, restart_clears_the_flag);
	tcase_add_test(tc, second_start_starts_nothing);
	tcase_add_test(tc, lock_free_poller_ends);
	tcase_add_test(tc, stop_without_a_thread_sets_the_flag);
	tcase_add_test(tc, normal_scheduling_is_always_allowed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_signals.c - the handlers a library loaded with libfabric installs
 * at load time, found by their address and replaced (sm_signals.c).
 *
 * This program links libfabric; where its PSM provider brings
 * libinfinipath in (Debian's build does), that library holds the faults
 * and SIGABRT when main starts: the real case, not a stand-in.  (SIGTERM
 * and SIGINT are Check's by then: its runner catches them.)
 */
#include <check.h>
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "stormmech.h"

#include "../check_run.h"

static volatile sig_atomic_t got;

static void mine(int sig)
{
	got = sig;
}

static bool psm_loaded(void)
{
	void *h = dlopen("libinfinipath.so.4", RTLD_NOW | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != NULL;
}

static void *handler(int sig)
{
	struct sigaction sa;

	ck_assert_int_eq(sigaction(sig, NULL, &sa), 0);
	return (sa.sa_flags & SA_SIGINFO) ? (void *) sa.sa_sigaction :
					    (void *) sa.sa_handler;
}

static void want_mine_for_term(int sig, struct sigaction *act, void *arg)
{
	(*(int *) arg)++;
	if (sig == SIGABRT)
		act->sa_handler = mine;
}

START_TEST(the_library_holds_what_it_took)
{
	if (!psm_loaded()) {
		printf("libinfinipath not loaded with libfabric here: nothing taken\n");
		ck_assert(!storm_signal_taken(SIGSEGV));
		return;
	}
	ck_assert(storm_signal_taken(SIGABRT));
	ck_assert(storm_signal_taken(SIGSEGV));
	/* neither the default, nor a handler of this program */
	ck_assert(!storm_signal_taken(SIGUSR1));
	signal(SIGUSR2, mine);
	ck_assert(!storm_signal_taken(SIGUSR2));
}
END_TEST

START_TEST(reclaim_installs_what_the_program_wants)
{
	uint64_t mask = 0;
	int asked = 0;
	bool loaded = psm_loaded();

	ck_assert_int_eq(storm_signals_reclaim(want_mine_for_term, &asked,
					       &mask), 0);
	if (loaded) {
		ck_assert(mask & (1ull << SIGABRT));
		ck_assert(mask & (1ull << SIGSEGV));
		ck_assert(mask & (1ull << SIGBUS));
	}
	ck_assert_int_eq(asked, __builtin_popcountll(mask));
	for (int sig = 1; sig < 32; sig++)
		ck_assert_msg(!storm_signal_taken(sig), "signal %d", sig);
	if (loaded) {
		ck_assert(handler(SIGABRT) == (void *) mine);
		ck_assert(handler(SIGSEGV) == (void *) SIG_DFL);
		raise(SIGABRT);
		ck_assert_int_eq(got, SIGABRT);
	}
	/* once taken back, nothing is left to take */
	ck_assert_int_eq(storm_signals_reclaim(NULL, NULL, &mask), 0);
	ck_assert(mask == 0);
}
END_TEST

START_TEST(a_handler_of_the_program_is_left_alone)
{
	uint64_t mask = 0;

	signal(SIGBUS, mine);
	ck_assert_int_eq(storm_signals_reclaim(NULL, NULL, &mask), 0);
	ck_assert(!(mask & (1ull << SIGBUS)));
	ck_assert(handler(SIGBUS) == (void *) mine);
	if (psm_loaded()) {
		ck_assert(mask & (1ull << SIGSEGV));
		ck_assert(handler(SIGSEGV) == (void *) SIG_DFL);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("signals");

	/* libfabric loaded as a daemon loads it, not dropped by --as-needed */
	printf("libfabric %u.%u\n", FI_MAJOR(fi_version()),
	       FI_MINOR(fi_version()));
	TCase *tc = tcase_create("reclaim");

	/* each test in a child of its own, forked with the library's
	 * handlers still in place */
	tcase_add_test(tc, the_library_holds_what_it_took);
	tcase_add_test(tc, reclaim_installs_what_the_program_wants);
	tcase_add_test(tc, a_handler_of_the_program_is_left_alone);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}

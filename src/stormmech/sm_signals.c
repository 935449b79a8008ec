/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_signals.c - take back the signals that a library loaded with libfabric
 * took at load time (stormmech.h: storm_signals_reclaim()).
 *
 * Which library a handler belongs to is read from its address (dladdr), so
 * that a handler the program or another library installed is never
 * touched, whatever was loaded first.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "stormmech.h"

/* The PSM providers' libraries: libinfinipath's constructor catches the
 * signals below to print a backtrace and exit(1). */
static const char *const takers[] = {
	"libinfinipath.", "libpsm_infinipath.", "libpsm2.",
};

/* Every signal one of them is known to take, and the ones a future
 * version might: the synchronous faults and the usual stop requests. */
static const int watched[] = {
	SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGABRT, SIGSEGV, SIGBUS, SIGILL,
	SIGFPE,
};

static void *handler_of(const struct sigaction *sa)
{
	if (sa->sa_flags & SA_SIGINFO)
		return (void *) sa->sa_sigaction;
	return (void *) sa->sa_handler;
}

bool storm_signal_taken(int sig)
{
	struct sigaction sa;
	const char *base;
	void *h;
	Dl_info di;

	if (sigaction(sig, NULL, &sa))
		return false;
	h = handler_of(&sa);
	if (h == (void *) SIG_DFL || h == (void *) SIG_IGN)
		return false;
	if (!dladdr(h, &di) || !di.dli_fname)
		return false;
	base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	for (size_t i = 0; i < sizeof(takers) / sizeof(takers[0]); i++)
		if (!strncmp(base, takers[i], strlen(takers[i])))
			return true;
	return false;
}

int storm_signals_reclaim(storm_signal_want_f want, void *arg,
			  uint64_t *reclaimed)
{
	uint64_t mask = 0;

	for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) {
		int sig = watched[i];
		struct sigaction act;

		if (!storm_signal_taken(sig))
			continue;
		memset(&act, 0, sizeof(act));
		act.sa_handler = SIG_DFL;
		sigemptyset(&act.sa_mask);
		if (want)
			want(sig, &act, arg);
		if (sigaction(sig, &act, NULL))
			return -errno;
		mask |= 1ull << sig;
	}
	if (reclaimed)
		*reclaimed = mask;
	return 0;
}

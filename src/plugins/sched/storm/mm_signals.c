/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_signals.c - slurmctld's signal handlers back (mm_signals.h).
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "src/stormmech/stormmech.h"

#include "mm_signals.h"
#include "mm_state.h"

/*
 * slurmctld catches the stop requests and SIGABRT the way it catches
 * SIGHUP: Slurm 24.11 with one connection-manager handler for all of them
 * (it forwards the signal's number), 22.05 with them blocked and read by
 * sigwait() in a thread, their disposition left the default, as SIGHUP's
 * is.  So each gets SIGHUP's action, which was theirs before the load.
 * A fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) gets the default: a core.
 */
static void want(int sig, struct sigaction *act, void *arg)
{
	(void) arg;
	switch (sig) {
	case SIGINT: case SIGTERM: case SIGQUIT: case SIGABRT:
		if (!storm_signal_taken(SIGHUP))
			(void) sigaction(SIGHUP, NULL, act);
		break;
	default:
		break;
	}
}

static const char *name_of(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGQUIT: return "SIGQUIT";
	case SIGHUP: return "SIGHUP";
	case SIGABRT: return "SIGABRT";
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	default: return "another signal";
	}
}

extern void mm_signals_reclaim(void)
{
	uint64_t mask = 0;
	char *names = NULL;
	int rc;

	if ((rc = storm_signals_reclaim(want, NULL, &mask))) {
		error("%s: cannot take slurmctld's signal handlers back from the library loaded with libfabric: %s; a SIGTERM may end slurmctld without its shutdown",
		      MM_PREFIX, strerror(-rc));
		return;
	}
	if (!mask)
		return;
	for (int sig = 1; sig < 64; sig++)
		if (mask & (1ull << sig))
			xstrfmtcat(names, "%s%s", names ? "," : "",
				   name_of(sig));
	verbose("%s: took back %s from a library loaded with libfabric (libinfinipath exits the process on them)",
		MM_PREFIX, names);
	xfree(names);
}

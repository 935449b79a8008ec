/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_failsafe.h - the node manager's fault handling for gang scheduling:
 * it fails open.  A job is never left frozen or idle-class because the
 * machine manager, the fabric or a node manager died:
 *
 *   - no strobe for FailSafe: every job this NM switched out runs again
 *     (nm_failsafe_check, from nm_gang.c's watcher thread) and stays
 *     unswitched until a strobe comes back (nm_failsafe_strobe);
 *   - at start: job cgroups an earlier NM of this node left frozen or
 *     idle-class are restored, but those of jobs Slurm suspended
 *     (nm_failsafe_recover);
 *   - at exit: nm_gang.c thaws every job it switched;
 *   - when the NM itself is killed or stopped: its watchdog process
 *     releases what it had switched out (nm_watchdog.h).
 *
 * The other faults a node sees are handled where they happen: a job whose
 * cgroup vanished is forgotten and looked for again (nm_gang.c), the relay
 * names the nodes that do not answer (nm_relay.c), and every fabric wait
 * is bounded by the library's timeout (src/stormmech/stormmech.h).
 *
 * Not thread-safe by itself: the caller serializes (nm_gang.c's lock).
 */
#ifndef STORM_NM_FAILSAFE_H
#define STORM_NM_FAILSAFE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct nm_failsafe {
	uint64_t last_strobe_ns;	/* CLOCK_MONOTONIC */
	uint64_t nevents;		/* how often it opened */
	bool open;			/* thawed all for lack of strobes */
} nm_failsafe_t;

/* Undo every switch of this NM; returns how many jobs it undid. */
typedef int (*nm_failsafe_thaw_f)(void *arg);

/* The watch starts now, as if a strobe had just come. */
extern void nm_failsafe_start(nm_failsafe_t *fs, uint64_t now_ns);
/* A strobe of this epoch came at now_ns: it closes an open fail-safe. */
extern void nm_failsafe_strobe(nm_failsafe_t *fs, uint64_t now_ns,
			       uint64_t epoch);
/* No strobe for failsafe_ns: thaw(arg), and the fail-safe is open until
 * the next strobe.  True when it opened at this call. */
extern bool nm_failsafe_check(nm_failsafe_t *fs, uint64_t now_ns,
			      uint64_t failsafe_ns, nm_failsafe_thaw_f thaw,
			      void *arg);
/* When (CLOCK_MONOTONIC) the next check can open it; UINT64_MAX while it
 * is open. */
extern uint64_t nm_failsafe_due(const nm_failsafe_t *fs, uint64_t failsafe_ns);
/* At start: restore what an earlier NM of this node left switched out,
 * asking slurmctld which jobs Slurm suspended. */
extern void nm_failsafe_recover(void);

#endif /* STORM_NM_FAILSAFE_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_watchdog.h - fail open without the node manager: a small process
 * forked at start that outlives a killed or stopped node manager and
 * thaws what it had switched out once no strobe has been handled for
 * FailSafe.
 *
 * Why a process of its own: the node manager's own fail-safe
 * (nm_failsafe.h) runs inside it, so a node manager that is SIGKILLed or
 * SIGSTOPped leaves its jobs frozen until something starts a new one, and
 * slurmd, which would, may be dead or stopped too.  The watchdog shares a
 * page with the node manager: the time of the last strobe handled and the
 * jobs the node manager switched out itself (never those Slurm suspended).
 * It wakes about once per FailSafe while strobes flow, and exits once the
 * node manager is gone and nothing it switched is left.
 */
#ifndef STORM_NM_WATCHDOG_H
#define STORM_NM_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

#include "nm.h"

/* Fork the watchdog; before any thread exists.  0 or -errno. */
extern int nm_watchdog_start(nm_t *nm);
/* A strobe was handled at now_ns (CLOCK_MONOTONIC); FailSafe as it
 * applies now. */
extern void nm_watchdog_strobe(uint64_t now_ns, uint64_t failsafe_ns);
/* Whether the node manager has this job switched out (frozen or
 * idle-class) by itself.  *hint is the caller's memory of the job's slot
 * (-1 at first), so that a switch does not search the page. */
extern void nm_watchdog_switched(uint32_t job_id, uint32_t uid, bool out,
				 int *hint);
/* The job left the node manager's table: its slot is free again. */
extern void nm_watchdog_forget(uint32_t job_id, int *hint);
/* A clean exit: the node manager thaws what it switched; the watchdog
 * goes. */
extern void nm_watchdog_stop(void);
/* The watchdog's pid, or 0. */
extern int nm_watchdog_pid(void);

#endif /* STORM_NM_WATCHDOG_H */

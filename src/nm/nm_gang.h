/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang.h - the node manager's gang-scheduling module (nm_gang.c): it
 * switches the jobs of this node on the Machine Manager's strobe.
 */
#ifndef STORM_NM_GANG_H
#define STORM_NM_GANG_H

#include <stdbool.h>
#include <stdint.h>

#include "nm.h"

extern const nm_module_t nm_gang_module;

/*
 * For the heartbeat's report to the Machine Manager (nm_heartbeat.c), from
 * any thread.  Neither waits for the gang lock: a heartbeat must not wait
 * behind a switch in progress.  Each returns false, setting nothing, when
 * the module did not start or the lock is busy; the caller keeps what it
 * had.
 *
 * nm_gang_failsafe: how often the fail-safe opened, and whether it is open
 * now.
 * nm_gang_switch_lag: the median, over the last NM_GANG_LAG_STROBES
 * strobes, of the time from the Machine Manager's send (its
 * CLOCK_REALTIME stamp in the strobe) to this node's switch being done
 * (its own clock): with synchronized clocks, how late this node switches;
 * the spread over nodes is the switch skew.  *has is false before the
 * first strobe.
 */
extern bool nm_gang_failsafe(uint64_t *nevents, bool *open);
extern bool nm_gang_switch_lag(bool *has, int64_t *lag_us);

#define NM_GANG_LAG_STROBES 64

/* For the usage report (nm_usage.c), from any thread, without waiting for
 * the gang lock: the jobs of the table whose cgroups are on this node, at
 * most max of them, into ids and uids.  How many, or -1 when the module did
 * not start or the lock is busy (ask again later). */
extern int nm_gang_jobs_here(uint32_t *ids, uint32_t *uids, int max);

#endif /* STORM_NM_GANG_H */

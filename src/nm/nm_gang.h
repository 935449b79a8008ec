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

/* The fail-safe, for the report to the Machine Manager (nm_reject.c): how
 * often it opened, and whether it is open now.  Any thread. */
extern void nm_gang_failsafe(uint64_t *nevents, bool *open);

/* The median, over the last NM_GANG_LAG_STROBES strobes, of the time from
 * the Machine Manager's send (its CLOCK_REALTIME stamp in the strobe) to
 * this node's switch being done (its own): with synchronized clocks, how
 * late this node switches; the spread over nodes is the switch skew.
 * False before the first strobe.  Any thread. */
extern bool nm_gang_switch_lag(int64_t *lag_us);

#define NM_GANG_LAG_STROBES 64

#endif /* STORM_NM_GANG_H */

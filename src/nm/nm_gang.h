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

#endif /* STORM_NM_GANG_H */

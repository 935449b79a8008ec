/*
 * nm_gang.h - the node manager's gang-scheduling module (nm_gang.c): it
 * switches the jobs of this node on the Machine Manager's strobe.
 */
#ifndef STORM_NM_GANG_H
#define STORM_NM_GANG_H

#include "nm.h"

extern const nm_module_t nm_gang_module;

#endif /* STORM_NM_GANG_H */

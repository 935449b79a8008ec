/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compat.h - what the STORM plugins need that differs between Slurm
 * versions.  One implementation per version (compat_MMmm.c, chosen by
 * configure) holds only what differs; compat.c what does not.  The
 * plugins call these instead of testing versions.
 */
#ifndef STORM_COMPAT_H
#define STORM_COMPAT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/slurmctld/slurmctld.h"

/* The Slurm version these plugins were built for, "MM.mm.u". */
extern const char storm_compat_slurm_version[];

/*
 * Whether this slurmctld is the new process of an 'scontrol reconfigure':
 * from 23.11 on slurmctld re-executes itself to reconfigure (controller.c,
 * SLURMCTLD_RECONF in the new process's environment), so plugins start
 * afresh and keep nothing in memory; 22.05 reconfigures in place.
 */
extern bool storm_compat_ctld_reexec(void);

#endif

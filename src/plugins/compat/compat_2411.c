/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compat_2411.c - compat.h for Slurm 24.11.
 */
#include "config.h"

#include <stdlib.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "compat.h"

extern bool storm_compat_ctld_reexec(void)
{
	return getenv("SLURMCTLD_RECONF") != NULL;
}

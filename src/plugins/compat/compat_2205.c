/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compat_2205.c - compat.h for Slurm 22.05.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"

#include "compat.h"

extern bool storm_compat_ctld_reexec(void)
{
	/* 22.05 reconfigures in place: init() runs only at start */
	return false;
}

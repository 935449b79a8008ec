/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compat.c - the part of compat.h that is the same for every Slurm
 * version: the version itself, from the headers built against.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"

#include "compat.h"

const char storm_compat_slurm_version[] = SLURM_VERSION_STRING;

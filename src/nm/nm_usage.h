/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_usage.h - the usage report: the CPU this node's jobs use, sent to
 * the Machine Manager about once a second (nm_usage.c).
 */
#ifndef STORM_NM_USAGE_H
#define STORM_NM_USAGE_H

#include "nm.h"

extern const nm_module_t nm_usage_module;

/* How often the jobs are measured and the report sent. */
#define NM_USAGE_MS 1000

#endif /* STORM_NM_USAGE_H */

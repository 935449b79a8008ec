/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_cg_usage.h - the CPU time a job used on this node, from its cgroup
 * (nm_cg_usage.c says how, per cgroup version).
 */
#ifndef STORM_NM_CG_USAGE_H
#define STORM_NM_CG_USAGE_H

#include <stdint.h>

/* The CPU time (ns) the job's processes on this node used so far, into
 * *ns: 0 or -errno (-ENOENT: no cgroup here).  Needs nm_cg_init(). */
extern int nm_cg_job_cpu_ns(uint32_t job_id, uint32_t uid, uint64_t *ns);

#endif /* STORM_NM_CG_USAGE_H */

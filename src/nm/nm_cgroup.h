/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_cgroup.h - freeze, thaw and demote a job's cgroups on this node,
 * cgroup v1 or v2 (nm_cgroup.c says which files and why).
 */
#ifndef STORM_NM_CGROUP_H
#define STORM_NM_CGROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "nm.h"

/* Pick cgroup v1 or v2 as Slurm does; 0 or -errno. */
extern int nm_cg_init(nm_t *nm);
extern int nm_cg_version(void);
/* The job's cgroup directory on this node (v1: its freezer cgroup, v2:
 * the job's), into buf: 0 or -errno (-ENOENT: no cgroup here). */
extern int nm_cg_job_dir(uint32_t job_id, uint32_t uid, char *buf,
			 size_t len);
/* v2: open the job-level freeze control of a job on this node: fd or
 * -errno (-ENOENT: the job has no cgroup here). */
extern int nm_cg_job_open(uint32_t job_id, uint32_t uid);
/* Freeze or thaw through an fd from nm_cg_job_open or nm_cg_step_open:
 * 0 or -errno. */
extern int nm_cg_write(int fd, bool frozen);
/* v1: the job's freezer directory: fd or -errno (-ENOTSUP under v2). */
extern int nm_cg_job_dir_open(uint32_t job_id, uint32_t uid);
/* v1: fn(name, arg) for each step cgroup ("step_0", "step_batch", ...) of
 * the job; how many, or -errno (-ENOENT: the job's cgroup is gone). */
typedef void (*nm_cg_step_fn)(const char *name, void *arg);
extern int nm_cg_job_steps(int dir_fd, nm_cg_step_fn fn, void *arg);
/* v1: a step's freeze control: fd or -errno. */
extern int nm_cg_step_open(int dir_fd, const char *step);
/* One job runs normally again: thawed and not idle-class, from the
 * cgroups alone; how many cgroups changed. */
extern int nm_cg_job_release(uint32_t job_id, uint32_t uid);
/* Thaw what a previous NM left frozen, but the steps of jobs that
 * suspended() says Slurm suspended; returns how many were thawed. */
extern int nm_cg_thaw_orphans(bool (*suspended)(uint32_t job_id));

/* The flexible policy: a job's cpu.idle (NULL: not available here). */
typedef struct nm_cg_idle nm_cg_idle_t;
extern nm_cg_idle_t *nm_cg_idle_open(uint32_t job_id, uint32_t uid);
/* Put the job's processes (its batch step's alone, with batch_only) under
 * it (v1); how many were moved. */
extern int nm_cg_idle_sync(nm_cg_idle_t *c, bool batch_only);
extern int nm_cg_idle_write(nm_cg_idle_t *c, bool idle);
/* Normal priority again, then release (v1: remove the cgroup if empty). */
extern void nm_cg_idle_close(nm_cg_idle_t *c);
/* Clear what an earlier NM left idle-class; returns how many. */
extern int nm_cg_idle_cleanup(void);

#endif /* STORM_NM_CGROUP_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_dir.h - BcastDir on this node: job directories, the sweep of
 * what ended jobs and dead node managers left there, the destination of a
 * granted file, and what backs BcastDir (nm_bcast_dir.c).
 */
#ifndef STORM_NM_BCAST_DIR_H
#define STORM_NM_BCAST_DIR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "nm.h"
#include "nm_bcast_auth.h"

/* Temporary files are hidden under this prefix until committed. */
#define NM_BCAST_TMP_PREFIX ".storm-"

/* Open BcastDir (nm->conf.bcast_dir) and remove the temporary files an
 * earlier node manager left in it; 0 or -errno (logged). */
extern int nm_bcast_dir_open(const nm_t *nm);
extern void nm_bcast_dir_close(void);

/*
 * The directory a granted file goes to, opened: its job's directory
 * (created on first use, owned by the job's user, 0700), or an absolute
 * destination opened with the user's file-system identity; then *user_fs
 * is set and this thread keeps that identity until nm_bcast_fs_root(), so
 * the file is created as the user.  Refuses a file that does not fit.
 * Returns STORM_BCAST_READY with *dirfd, or STORM_BCAST_EIO/ENOSPC.
 */
extern int nm_bcast_dir_dest(const nm_bcast_grant_t *g, int *dirfd,
			     bool *user_fs);

/* Remove BcastDir/job_<job> and all under it; 0 or -errno. */
extern int nm_bcast_job_dir_remove(uint32_t job, const char *why);

/* Remove job directories of jobs that no longer run on this node, and
 * prepared transfers that never received data. */
extern void nm_bcast_sweep(void);

/* Remove everything under dirfd without following links; dirfd stays. */
extern void nm_bcast_rm_tree_at(int dirfd);
/* Remove name in dirfd, a file or a whole tree, links not followed; 0 or
 * -errno. */
extern int nm_bcast_remove_at(int dirfd, const char *name);

/* This thread's file-system identity (Linux: per thread with the raw
 * system call): the user's, or back to root. */

extern void nm_bcast_fs_user(uid_t uid, gid_t gid);
extern void nm_bcast_fs_root(void);

/*
 * What backs BcastDir: nm_bcast_dir_report() logs it once.
 * nm_mount_of() finds the mount holding an absolute, resolved path in a
 * mountinfo table (fstype and super-options; -ENOENT if none);
 * nm_tmpfs_huge() says whether a tmpfs with those options gets huge pages
 * for its files, given the sysfs shmem_enabled line (or NULL).
 */
extern void nm_bcast_dir_report(const char *dir);
extern int nm_mount_of(FILE *mountinfo, const char *path, char *fstype,
		       size_t fslen, char *opts, size_t optlen);
extern bool nm_tmpfs_huge(const char *opts, const char *shmem_enabled);

#endif /* STORM_NM_BCAST_DIR_H */

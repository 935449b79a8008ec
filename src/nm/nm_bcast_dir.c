/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_dir.c - BcastDir on this node.
 *
 * Files go to BcastDir/job_<id>/ (created by the NM, owned by the user,
 * 0700), opened relative to the directory's fd, never through a path a
 * user could swap for a link.  A file with an absolute destination (srun
 * --bcast=/path) is created with the user's file-system identity
 * (setfsuid/setfsgid in the checking thread), so the kernel applies the
 * user's own permissions, as slurmd does for sbcast.  Job directories go
 * with their job (the epilog, or the sweep when the epilog never came),
 * and temporary files with the node manager that made them.
 *
 * What backs BcastDir is said once at start-up.  The broadcast's cost on
 * a node is mostly the RAM disk's: every file is allocated and populated
 * before its data comes, then written.  With 4 KiB pages that is one page
 * fault and clear per 4 KiB; on a tmpfs mounted with huge=within_size it
 * is one per 2 MiB, which shortens a launch's transfer visibly.  On a disk
 * file system each file also pays block allocation.  An admin sees which
 * case a node is in from the node manager's log, without reading mount
 * tables.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nm_bcast_dir.h"
#include "nm_bcast_xfer.h"
#include "src/common/storm_bcast.h"

#define SHMEM_ENABLED "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

static struct {
	const nm_t *nm;
	int dirfd;			/* BcastDir */
} bcast_dir = { .dirfd = -1 };

/* ------------------------------------------------------ fs identity */
extern void nm_bcast_fs_user(uid_t uid, gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	syscall(SYS_setfsuid, uid);
}

extern void nm_bcast_fs_root(void)
{
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
}

/* ------------------------------------------------------ directories */
/* A DIR stream over a copy of dirfd, from its start; dirfd stays open. */
static DIR *opendir_at(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	return d;
}

extern void nm_bcast_rm_tree_at(int dirfd)
{
	DIR *d = opendir_at(dirfd);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd, e->d_name, 0) == 0)
			continue;
		if (errno == EISDIR || errno == EPERM) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);

			if (sub >= 0) {
				nm_bcast_rm_tree_at(sub);
				close(sub);
			}
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

extern int nm_bcast_remove_at(int dirfd, const char *name)
{
	int fd;

	if (!unlinkat(dirfd, name, 0))
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return -errno;
	nm_bcast_rm_tree_at(fd);
	close(fd);
	return unlinkat(dirfd, name, AT_REMOVEDIR) ? -errno : 0;
}

extern int nm_bcast_job_dir_remove(uint32_t job, const char *why)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "job_%u", job);
	fd = openat(bcast_dir.dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	nm_bcast_rm_tree_at(fd);
	close(fd);
	if (unlinkat(bcast_dir.dirfd, name, AT_REMOVEDIR)) {
		int e = errno;

		nm_error("bcast: cannot remove %s/%s: %s",
			 bcast_dir.nm->conf.bcast_dir, name, strerror(e));
		return -e;
	}
	nm_info("bcast: removed %s/%s (%s)", bcast_dir.nm->conf.bcast_dir, name,
		why);
	return 0;
}

/* The job's directory, created on first use: owned by the job's user,
 * 0700.  Returns an fd or -errno. */
static int job_dir(uint32_t job, uid_t uid, gid_t gid)
{
	char name[32];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "job_%u", job);
	if (mkdirat(bcast_dir.dirfd, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(bcast_dir.dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (st.st_uid != uid && st.st_uid != 0) ||
	    fchown(fd, uid, gid) || fchmod(fd, 0700)) {
		int e = errno ? errno : EPERM;

		close(fd);
		return -e;
	}
	return fd;
}

extern int nm_bcast_dir_dest(const nm_bcast_grant_t *g, int *dirfd,
			     bool *user_fs)
{
	const nm_bcast_manifest_t *m = &g->m;
	struct statvfs vfs;
	int fd;

	*dirfd = -1;
	*user_fs = false;
	if (!strcmp(m->dir, "-")) {
		fd = job_dir(m->job, g->owner,
			     m->uid == g->owner ? m->gid : (gid_t) -1);
		if (fd < 0) {
			nm_error("bcast: job %u: cannot create its directory in %s: %s",
				 m->job, bcast_dir.nm->conf.bcast_dir,
				 strerror(-fd));
			return STORM_BCAST_EIO;
		}
	} else {
		*user_fs = true;
		nm_bcast_fs_user(m->uid, m->gid);
		fd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			nm_error("bcast: job %u: destination %s: %s", m->job,
				 m->dir, strerror(errno));
			return STORM_BCAST_EIO;
		}
	}
	/* a bundle and what it holds exist side by side until it is
	 * extracted */
	if (fstatvfs(fd, &vfs) == 0 &&
	    (uint64_t) vfs.f_bavail * vfs.f_frsize <
	    (m->tree ? 2 * m->size : m->size)) {
		nm_error("bcast: job %u: %s (%" PRIu64 " bytes) does not fit in %s",
			 m->job, m->name, m->size, *user_fs ? m->dir :
			 bcast_dir.nm->conf.bcast_dir);
		close(fd);
		return STORM_BCAST_ENOSPC;
	}
	*dirfd = fd;
	return STORM_BCAST_READY;
}

/* ------------------------------------------------------------ sweep */
/* The job id of a BcastDir entry named job_<id>, or false. */
static bool job_entry(const char *name, unsigned *job)
{
	char c;

	return sscanf(name, "job_%u%c", job, &c) == 1;
}

/* At start-up no transfer is in flight: temporaries left by an NM that
 * died (SIGKILL, node crash) are removed. */
static void remove_stale_tmp(void)
{
	DIR *d = opendir_at(bcast_dir.dirfd);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned job;
		DIR *jd;
		struct dirent *f;
		int jfd;

		if (!job_entry(e->d_name, &job))
			continue;
		jfd = openat(bcast_dir.dirfd, e->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (jfd < 0 || !(jd = fdopendir(jfd))) {
			if (jfd >= 0)
				close(jfd);
			continue;
		}
		while ((f = readdir(jd)))
			if (!strncmp(f->d_name, NM_BCAST_TMP_PREFIX,
				     strlen(NM_BCAST_TMP_PREFIX)) &&
			    !nm_bcast_remove_at(jfd, f->d_name))
				nm_info("bcast: removed %s/%s/%s left by an earlier node manager",
					bcast_dir.nm->conf.bcast_dir, e->d_name,
					f->d_name);
		closedir(jd);
	}
	closedir(d);
}

extern void nm_bcast_sweep(void)
{
	DIR *d;
	struct dirent *e;

	nm_bcast_xfer_expire();
	d = opendir_at(bcast_dir.dirfd);
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned job;

		if (!job_entry(e->d_name, &job))
			continue;
		/* force a fresh answer from slurmctld */
		nm_bcast_job_forget(job);
		if (nm_bcast_xfer_busy(job))
			continue;
		if (nm_bcast_job_runs_here(job) == 0)
			nm_bcast_job_dir_remove(job, "job no longer runs here");
	}
	closedir(d);
}

extern int nm_bcast_dir_open(const nm_t *nm)
{
	int rc;

	bcast_dir.nm = nm;
	bcast_dir.dirfd = open(nm->conf.bcast_dir,
			       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bcast_dir.dirfd < 0) {
		rc = -errno;
		nm_error("bcast: cannot open BcastDir %s: %s", nm->conf.bcast_dir,
			 strerror(-rc));
		return rc;
	}
	remove_stale_tmp();
	return 0;
}

extern void nm_bcast_dir_close(void)
{
	if (bcast_dir.dirfd >= 0)
		close(bcast_dir.dirfd);
	bcast_dir.dirfd = -1;
}

/* ------------------------------------------------ what backs BcastDir */
/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' &&
		    p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*o++ = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 +
				       (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

/* Is mount point mp a prefix of path at a component boundary? */
static bool covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (!strcmp(mp, "/"))
		return path[0] == '/';
	return !strncmp(mp, path, n) && (path[n] == '\0' || path[n] == '/');
}

static void copy(char *dst, size_t len, const char *src)
{
	if (len) {
		strncpy(dst, src, len - 1);
		dst[len - 1] = '\0';
	}
}

extern int nm_mount_of(FILE *mountinfo, const char *path, char *fstype,
		       size_t fslen, char *opts, size_t optlen)
{
	char line[8192];
	size_t best = 0;
	int rc = -ENOENT;

	while (fgets(line, sizeof(line), mountinfo)) {
		char *f[64], *save = NULL, *tok;
		int n = 0, sep = -1;

		for (tok = strtok_r(line, " \n", &save); tok && n < 64;
		     tok = strtok_r(NULL, " \n", &save))
			f[n++] = tok;
		/* id parent maj:min root mountpoint options [optional...] -
		 * fstype source super-options */
		for (int i = 6; i < n; i++)
			if (!strcmp(f[i], "-")) {
				sep = i;
				break;
			}
		if (sep < 0 || sep + 1 >= n)
			continue;
		unescape(f[4]);
		/* >=: a later mount on the same point hides the earlier */
		if (!covers(f[4], path) || strlen(f[4]) < best)
			continue;
		best = strlen(f[4]);
		copy(fstype, fslen, f[sep + 1]);
		copy(opts, optlen, sep + 3 < n ? f[sep + 3] : "");
		rc = 0;
	}
	return rc;
}

extern bool nm_tmpfs_huge(const char *opts, const char *shmem_enabled)
{
	char buf[1024], val[32] = "", *save = NULL;

	/* The sysfs knob's [deny] and [force] override every mount. */
	if (shmem_enabled && strstr(shmem_enabled, "[deny]"))
		return false;
	if (shmem_enabled && strstr(shmem_enabled, "[force]"))
		return true;
	copy(buf, sizeof(buf), opts);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save))
		if (!strncmp(o, "huge=", 5))
			copy(val, sizeof(val), o + 5);
	/* huge=advise needs madvise(MADV_HUGEPAGE), which we do not make */
	return !strcmp(val, "within_size") || !strcmp(val, "always");
}

extern void nm_bcast_dir_report(const char *dir)
{
	char real[PATH_MAX], fstype[64], opts[1024], shmem[128] = "";
	FILE *fp;
	int rc;

	if (!realpath(dir, real))
		return;
	if (!(fp = fopen("/proc/self/mountinfo", "re")))
		return;
	rc = nm_mount_of(fp, real, fstype, sizeof(fstype), opts, sizeof(opts));
	fclose(fp);
	if (rc)
		return;
	if (strcmp(fstype, "tmpfs")) {
		nm_info("bcast: BcastDir %s is on %s, not a RAM disk (tmpfs): every broadcast file also costs that file system's block allocation",
			dir, fstype);
		return;
	}
	if ((fp = fopen(SHMEM_ENABLED, "re"))) {
		if (!fgets(shmem, sizeof(shmem), fp))
			shmem[0] = '\0';
		fclose(fp);
	}
	if (nm_tmpfs_huge(opts, shmem))
		nm_info("bcast: BcastDir %s is a tmpfs with huge pages", dir);
	else
		nm_info("bcast: BcastDir %s is a tmpfs with small pages; mounted with huge=within_size, broadcasts allocate and fill files far faster (storm.conf(5), BcastDir)",
			dir);
}

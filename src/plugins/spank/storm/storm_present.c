/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_present.c - a broadcast executable seen at its original path.
 *
 * With BcastExecutable=yes or SLURM_STORM_BCAST=yes (not --bcast), srun
 * leaves the task's argv as the user typed it and names the node-local
 * copy (STORM_BCAST_EXEC_ENV) and the path it resolved the command to
 * (STORM_BCAST_ORIG_ENV).  Each task, as root in slurmstepd's child just
 * before it becomes the user (task_init_privileged, after any
 * job_container join), enters a mount namespace of its own, makes every
 * mount in it private, so nothing reaches the node's own mount table, and
 * binds the copy read-only over the original file (its symlinks
 * followed, as exec follows them).  slurmstepd then resolves and executes
 * argv[0] exactly as without STORM: argv[0], $0, /proc/self/exe, $ORIGIN
 * in RPATH, a venv's pyvenv.cfg and files beside the program are what they
 * would be, while the bytes come from the node-local copy.  The
 * namespace belongs to the task and its children and goes with them.
 *
 * Where the original path is not a file on the node (it exists only
 * where srun ran), nothing can be laid over it without touching the
 * node's file systems: the task runs the copy from its own path, as
 * before and as stock srun --bcast does; without the copy it could not
 * run at all.  Where the namespace or the mount fails, the task runs the
 * original and says why on its stderr (the node's first task).
 *
 * What travels with the executable (bcast_tree.h: its libraries, the
 * files a user names) comes as one directory whose entries mirror their
 * absolute paths (STORM_BCAST_TREE_ENV) and a list of the paths to lay
 * them over (STORM_BCAST_BINDS_ENV): each that this node has is bound the
 * same way, a directory as a whole, so the loader, $ORIGIN and the
 * program's own paths read the node's copies without a change of path.
 * A path this node lacks stays absent, as without STORM.
 *
 * BcastOverlap: the mount must come after the file is in place, so such a
 * task waits for its node's copy here, as root, rather than in task_init.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "storm_spank.h"
#include "src/common/storm_bcast.h"

/* What the privileged part leaves for task_init, where the task's stderr
 * is the user's (the same process: slurmstepd's child for this task). */
static char fail_msg[1024];	/* the task fails with this */
static char note_msg[2048];	/* the task runs on, having said this */

/* path opened O_PATH with the file-system identity of the user (a root-
 * squashed file system refuses root), else root's; -1 with errno. */
static int _open_as_user(spank_t sp, const char *path)
{
	uid_t uid = 0;
	gid_t gid = 0;
	int fd, e;

	if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_GID, &gid) == ESPANK_SUCCESS && uid) {
		setfsgid(gid);
		setfsuid(uid);
		fd = open(path, O_PATH | O_CLOEXEC);
		e = errno;
		setfsuid(0);
		setfsgid(0);
		if (fd >= 0 || e != EACCES) {
			errno = e;
			return fd;
		}
	}
	return open(path, O_PATH | O_CLOEXEC);
}

/* Whether this task has entered a mount namespace of its own. */
typedef enum { NS_NONE, NS_PRIVATE, NS_FAILED } ns_state_t;

/* This task's own mount namespace, every mount in it private so that
 * nothing reaches the node's mount table; entered once.  A namespace that
 * could not be made private stays refused for every later bind: a mount
 * there could propagate to the node.  0, or -1 with err. */
static int _own_namespace(ns_state_t *ns, char *err, size_t len)
{
	if (*ns == NS_PRIVATE)
		return 0;
	if (*ns == NS_FAILED) {
		snprintf(err, len, "no private mount namespace");
		return -1;
	}
	*ns = NS_FAILED;
	if (unshare(CLONE_NEWNS)) {
		snprintf(err, len, "no mount namespace of its own: %s",
			 strerror(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		snprintf(err, len, "cannot make its mounts private: %s",
			 strerror(errno));
		return -1;
	}
	*ns = NS_PRIVATE;
	return 0;
}

/* The copy bound read-only over orig (a file or a directory) in the
 * task's namespace; 0, or -1 with err. */
static int _bind(spank_t sp, ns_state_t *ns, const char *copy, const char *orig,
		 char *err, size_t len)
{
	unsigned long ro = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
			   MS_NODEV;
	char target[64];
	struct statvfs vfs;
	int fd;

	if (_own_namespace(ns, err, len))
		return -1;
	/* opened in the new namespace: a mount point must belong to it */
	if ((fd = _open_as_user(sp, orig)) < 0) {
		snprintf(err, len, "%s", strerror(errno));
		return -1;
	}
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	if (mount(copy, target, NULL, MS_BIND, NULL)) {
		snprintf(err, len, "cannot bind the copy over it: %s",
			 strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	/* read-only takes a remount of the new mount itself, which a fresh
	 * lookup of the path now reaches */
	if ((fd = _open_as_user(sp, orig)) < 0) {
		snprintf(err, len, "not found after the bind: %s",
			 strerror(errno));
		return -1;
	}
	if (!statvfs(copy, &vfs) && (vfs.f_flag & ST_NOEXEC))
		ro |= MS_NOEXEC;
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	if (mount(NULL, target, NULL, ro, NULL)) {
		snprintf(err, len, "cannot make the copy read-only: %s",
			 strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* orig is on this node (symlinks followed, as the user) as a regular
 * file, or as a directory when dir_ok. */
static bool _on_node(spank_t sp, const char *orig, bool dir_ok)
{
	struct stat st;
	int fd = _open_as_user(sp, orig);
	bool ok;

	if (fd < 0)
		return false;
	ok = !fstat(fd, &st) &&
	     (S_ISREG(st.st_mode) || (dir_ok && S_ISDIR(st.st_mode)));
	close(fd);
	return ok;
}

/* Say once, from the node's first task, what runs from its own path. */
static void _note(spank_t sp, const char *orig, const char *what,
		  const char *err)
{
	const char *node = getenv("SLURMD_NODENAME");
	size_t l = strlen(note_msg);
	int task = 0;

	slurm_verbose("%s: %s: %s", STORM_SPANK_PREFIX, orig, err);
	spank_get_item(sp, S_TASK_ID, &task);
	if (task || l >= sizeof(note_msg) - 1)
		return;
	snprintf(note_msg + l, sizeof(note_msg) - l,
		 "%s%s: on %.64s the broadcast copy of %.1024s cannot be put at its path (%.256s); the tasks %s",
		 l ? "\n" : "", STORM_SPANK_PREFIX, node ? node : "this node",
		 orig, err, what);
}

/* The executable: its copy over orig, or (not on the node) run from the
 * copy's own path. */
static void _present_exec(spank_t sp, ns_state_t *ns, const char *copy,
			  const char *orig)
{
	char err[256];

	if (!_on_node(sp, orig, false)) {
		/* STORM_BCAST_EXEC_ENV stays: storm_present_run_copy() */
		slurm_verbose("%s: %s is not on this node: the task runs the broadcast copy %s",
			      STORM_SPANK_PREFIX, orig, copy);
		return;
	}
	spank_unsetenv(sp, STORM_BCAST_EXEC_ENV);
	if (!_bind(sp, ns, copy, orig, err, sizeof(err)))
		slurm_verbose("%s: the broadcast copy %s is at %s for this task",
			      STORM_SPANK_PREFIX, copy, orig);
	else	/* the original is there: run it rather than change it */
		_note(sp, orig, "run the original", err);
}

/* The bundle's copies (tree/<path>) over each of the ':'-separated paths
 * in binds that this node has; a path it lacks stays absent, as it would
 * be without STORM. */
static void _present_tree(spank_t sp, ns_state_t *ns, const char *tree,
			  char *binds)
{
	char *save = NULL, *orig, copy[8192], err[256];
	int n = 0;

	for (orig = strtok_r(binds, ":", &save); orig;
	     orig = strtok_r(NULL, ":", &save)) {
		if (orig[0] != '/' || !_on_node(sp, orig, true)) {
			slurm_verbose("%s: %s is not on this node: not presented",
				      STORM_SPANK_PREFIX, orig);
			continue;
		}
		snprintf(copy, sizeof(copy), "%s%s", tree, orig);
		if (_bind(sp, ns, copy, orig, err, sizeof(err)))
			_note(sp, orig, "read the original", err);
		else
			n++;
	}
	slurm_verbose("%s: %d broadcast files and directories from %s are at their paths for this task",
		      STORM_SPANK_PREFIX, n, tree);
}

extern int storm_stepd_task_privileged(spank_t sp, int ac, char **av)
{
	char orig[4096], copy[4096], tree[4096], *binds = NULL;
	bool has_orig, has_tree;
	ns_state_t ns = NS_NONE;
	size_t blen = 256 * 1024;

	has_orig = spank_getenv(sp, STORM_BCAST_ORIG_ENV, orig,
				sizeof(orig)) == ESPANK_SUCCESS;
	has_tree = spank_getenv(sp, STORM_BCAST_TREE_ENV, tree,
				sizeof(tree)) == ESPANK_SUCCESS;
	if (!has_orig && !has_tree)
		return 0;
	spank_unsetenv(sp, STORM_BCAST_ORIG_ENV);
	spank_unsetenv(sp, STORM_BCAST_TREE_ENV);
	if (has_tree && (!(binds = malloc(blen)) ||
			 spank_getenv(sp, STORM_BCAST_BINDS_ENV, binds, blen) !=
			 ESPANK_SUCCESS || tree[0] != '/')) {
		snprintf(fail_msg, sizeof(fail_msg), "malformed or missing %s or %s",
			 STORM_BCAST_TREE_ENV, STORM_BCAST_BINDS_ENV);
		goto out;
	}
	spank_unsetenv(sp, STORM_BCAST_BINDS_ENV);
	if (has_orig &&
	    (spank_getenv(sp, STORM_BCAST_EXEC_ENV, copy, sizeof(copy)) !=
	     ESPANK_SUCCESS || copy[0] != '/' || orig[0] != '/')) {
		snprintf(fail_msg, sizeof(fail_msg), "malformed %s or %s",
			 STORM_BCAST_EXEC_ENV, STORM_BCAST_ORIG_ENV);
		goto out;
	}
	/* the mounts come after the files are in place */
	if (storm_stepd_bcast_wait(sp, ac, av, fail_msg,
				   sizeof(fail_msg)) < 0)
		goto out;
	fail_msg[0] = '\0';
	if (has_orig)
		_present_exec(sp, &ns, copy, orig);
	if (has_tree)
		_present_tree(sp, &ns, tree, binds);
out:
	free(binds);
	return 0;
}

extern int storm_present_report(spank_t sp)
{
	(void) sp;
	if (note_msg[0])
		slurm_error("%s", note_msg);
	if (fail_msg[0]) {
		slurm_error("%s: %s", STORM_SPANK_PREFIX, fail_msg);
		return -1;
	}
	return 0;
}

extern int storm_present_run_copy(spank_t sp)
{
#ifdef STORM_SPANK_HANDOVER
	/* launch_2411.c prepends the copy to the task's argv */
	(void) sp;
	return 0;
#else
	char copy[4096], *dup, **argv = NULL;
	int argc = 0;

	if (spank_getenv(sp, STORM_BCAST_EXEC_ENV, copy, sizeof(copy)) !=
	    ESPANK_SUCCESS)
		return 0;
	spank_unsetenv(sp, STORM_BCAST_EXEC_ENV);
	/* 22.05 offers no call to change the task's command; the task's
	 * argv is the step's (slurmstepd_job.c), which this process, the
	 * task's own, executes next.  argv[0] names the copy, as srun
	 * --bcast has it. */
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    argc < 1 || !argv || !(dup = strdup(copy))) {
		slurm_error("%s: cannot direct the task to the broadcast copy %s",
			    STORM_SPANK_PREFIX, copy);
		return -1;
	}
	argv[0] = dup;
	return 0;
#endif
}

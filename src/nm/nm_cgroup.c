/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_cgroup.c - freeze and thaw a job's cgroups, cgroup v1 or v2.
 *
 * The NM writes the cgroups that Slurm's own cgroup plugins create, so
 * nothing has to register tasks with the NM.
 *
 *   v1 (proctrack/cgroup): each step of the job but its batch step,
 *      <mnt>/freezer/slurm_<node>/uid_<uid>/job_<id>/step_<s>
 *      freezer.state <- FROZEN | THAWED
 *   v2 (cgroup/v2, built with --enable-multiple-slurmd as Debian does):
 *      the job, <mnt>/system.slice/<node>_slurmstepd.scope/job_<id>, or
 *      <mnt>/system.slice/slurmstepd.scope/job_<id>
 *      cgroup.freeze <- 1 | 0
 *
 * Why the steps, and not the batch step (v1): freezing a process that
 * sleeps where the kernel cannot freeze it in place (a shell in wait4,
 * srun's poll and pipe threads) wakes it into the refrigerator, and
 * thawing wakes it again.  A job script's shell and srun sleep like that
 * the whole job, so freezing them costs every quantum several wake-ups on
 * the job's first node, which at millisecond quanta is a visible share of
 * the job's CPU; leaving the batch step alone takes most of that away.  The
 * batch step is made idle-class outside the job's slots instead
 * (nm_gang_job.c), which costs a sleeping process nothing.  And the job's
 * slurmstepds, which Slurm keeps in the job's own cgroup, are never
 * frozen.
 *
 * Slurm's own suspend (scontrol suspend) freezes the same step cgroups
 * (cgroup_p_step_suspend, src/plugins/cgroup/v1/cgroup_v1.c): the machine
 * manager marks a suspended job "held" in the table, and the NM then
 * freezes its steps once and leaves them to Slurm (nm_gang_job.c).  v2 still
 * freezes the job level, which composes with Slurm's step-level suspend
 * by itself (cgroup.freeze is per cgroup, the effective state inherited),
 * and freezes the job's slurmstepds with it.
 *
 * The version is chosen the way Slurm does (src/common/cgroup.c):
 * CgroupPlugin in cgroup.conf beside slurm.conf, else autodetect from the
 * file system type of /sys/fs/cgroup.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "nm.h"
#include "nm_cgroup.h"

static int cg_version;		/* 1 or 2 */
static char cg_mnt[1024] = "/sys/fs/cgroup";
static char cg_node[64];

/* Read CgroupPlugin and CgroupMountpoint from cgroup.conf, if any. */
static void read_cgroup_conf(const char *slurm_conf, char *plugin,
			     size_t plen)
{
	char path[4200], line[1024];
	const char *slash = strrchr(slurm_conf, '/');
	FILE *fp;

	plugin[0] = '\0';
	if (slash)
		snprintf(path, sizeof(path), "%.*s/cgroup.conf",
			 (int) (slash - slurm_conf), slurm_conf);
	else
		snprintf(path, sizeof(path), "/etc/slurm/cgroup.conf");
	fp = fopen(path, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *p = line, *eq, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || !(eq = strchr(p, '=')))
			continue;
		*eq++ = '\0';
		end = eq + strcspn(eq, " \t\r\n#");
		*end = '\0';
		if (!strcasecmp(p, "CgroupPlugin"))
			snprintf(plugin, plen, "%s", eq);
		else if (!strcasecmp(p, "CgroupMountpoint") && *eq)
			snprintf(cg_mnt, sizeof(cg_mnt), "%s", eq);
	}
	fclose(fp);
}

static int autodetect(void)
{
	struct statfs fs;

	if (statfs("/sys/fs/cgroup/", &fs) < 0)
		return -1;
	if (fs.f_type == CGROUP2_SUPER_MAGIC)
		return 2;
	if (fs.f_type == TMPFS_MAGIC) {
		if (statfs("/sys/fs/cgroup/systemd/", &fs) == 0 &&
		    fs.f_type == CGROUP2_SUPER_MAGIC)
			return 2;
		return 1;
	}
	return -1;
}

extern int nm_cg_init(nm_t *nm)
{
	char plugin[64];

	snprintf(cg_node, sizeof(cg_node), "%s", nm->node);
	read_cgroup_conf(nm->slurm_conf, plugin, sizeof(plugin));
	if (!strcmp(plugin, "cgroup/v1"))
		cg_version = 1;
	else if (!strcmp(plugin, "cgroup/v2"))
		cg_version = 2;
	else
		cg_version = autodetect();
	if (cg_version < 0) {
		nm_error("gang: cannot tell the cgroup version of %s", cg_mnt);
		return -ENOTSUP;
	}
	nm_info("gang: switching jobs through cgroup v%d under %s%s",
		cg_version, cg_mnt, cg_version == 1 ? "/freezer" : "");
	return 0;
}

extern int nm_cg_version(void)
{
	return cg_version;
}

/* v1: the job's freezer cgroup, as proctrack/cgroup names it, then tail. */
static void v1_job_path(uint32_t job_id, uint32_t uid, const char *tail,
			char *buf, size_t len)
{
	snprintf(buf, len, "%s/freezer/slurm_%s/uid_%u/job_%u%s", cg_mnt,
		 cg_node, uid, job_id, tail);
}

/* v2: the scope cgroup/v2 puts this node's jobs in, then tail: the
 * node's own (several slurmd on one host) when named, else the plain one.
 * Callers try named first. */
static void v2_scope_path(bool named, const char *tail, char *buf, size_t len)
{
	if (named)
		snprintf(buf, len, "%s/system.slice/%s_slurmstepd.scope/%s",
			 cg_mnt, cg_node, tail);
	else
		snprintf(buf, len, "%s/system.slice/slurmstepd.scope/%s",
			 cg_mnt, tail);
}

/* The job's freeze-control file; 0 if it exists. */
static int job_ctl_path(uint32_t job_id, uint32_t uid, char *buf, size_t len)
{
	char tail[64];
	struct stat st;

	if (cg_version == 1) {
		v1_job_path(job_id, uid, "/freezer.state", buf, len);
		return stat(buf, &st) ? -errno : 0;
	}
	snprintf(tail, sizeof(tail), "job_%u/cgroup.freeze", job_id);
	v2_scope_path(true, tail, buf, len);
	if (!stat(buf, &st))
		return 0;
	v2_scope_path(false, tail, buf, len);
	return stat(buf, &st) ? -errno : 0;
}

extern int nm_cg_job_dir(uint32_t job_id, uint32_t uid, char *buf, size_t len)
{
	char tail[64];
	struct stat st;

	if (cg_version == 1) {
		v1_job_path(job_id, uid, "", buf, len);
		return stat(buf, &st) ? -errno : 0;
	}
	snprintf(tail, sizeof(tail), "job_%u", job_id);
	v2_scope_path(true, tail, buf, len);
	if (!stat(buf, &st))
		return 0;
	v2_scope_path(false, tail, buf, len);
	return stat(buf, &st) ? -errno : 0;
}

extern int nm_cg_job_open(uint32_t job_id, uint32_t uid)
{
	char path[2048];
	int fd, rc;

	if ((rc = job_ctl_path(job_id, uid, path, sizeof(path))))
		return rc;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

extern int nm_cg_write(int fd, bool frozen)
{
	const char *v;
	ssize_t n;

	if (cg_version == 1)
		v = frozen ? "FROZEN" : "THAWED";
	else
		v = frozen ? "1" : "0";
	n = pwrite(fd, v, strlen(v), 0);
	return n < 0 ? -errno : 0;
}

/* v1: the job's freezer directory, for its steps: fd or -errno. */
extern int nm_cg_job_dir_open(uint32_t job_id, uint32_t uid)
{
	char path[2048];
	int fd;

	if (cg_version != 1)
		return -ENOTSUP;
	v1_job_path(job_id, uid, "", path, sizeof(path));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * The job's step cgroups, read afresh: fn(name, arg) for each step_*
 * directory.  Returns how many, or -errno (-ENOENT: the job's cgroup is
 * gone, the job ended here).  The directory is read through a duplicate
 * so that its position starts at 0 every time.
 */
extern int nm_cg_job_steps(int dir_fd, nm_cg_step_fn fn, void *arg)
{
	struct dirent *de;
	DIR *d;
	int fd, n = 0;

	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "step_", 5) || de->d_type != DT_DIR)
			continue;
		fn(de->d_name, arg);
		n++;
	}
	closedir(d);
	/* a removed cgroup may still read, empty, through our fd: tell it
	 * from a job with no step yet */
	if (!n && faccessat(dir_fd, "freezer.state", F_OK, 0))
		return -errno;
	return n;
}

/* v1: a step's freezer.state, opened for writing: fd or -errno. */
extern int nm_cg_step_open(int dir_fd, const char *step)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%s/freezer.state", step);
	fd = openat(dir_fd, path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Is path's cgroup frozen by a write to it (not through an ancestor)? */
static bool self_frozen(const char *path)
{
	const char *self = cg_version == 1 ? "freezer.self_freezing" :
					     "cgroup.freeze";
	char file[4200], v[32] = "";
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/%s", path, self);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, v, sizeof(v) - 1);
	close(fd);
	return n > 0 && v[0] == '1';
}

/* Thaw path's cgroup if it is self-frozen; true if it was. */
static bool thaw_self_frozen(const char *path)
{
	const char *ctl = cg_version == 1 ? "freezer.state" : "cgroup.freeze";
	char file[4200];
	bool thawed = false;
	int fd;

	if (!self_frozen(path))
		return false;
	snprintf(file, sizeof(file), "%s/%s", path, ctl);
	if ((fd = open(file, O_WRONLY | O_CLOEXEC)) < 0)
		return false;
	if (!nm_cg_write(fd, false)) {
		nm_info("gang: thawed %s", path);
		thawed = true;
	}
	close(fd);
	return thawed;
}

static void cpu_root(char *buf, size_t len);

/* Write "0" to path's cpu.idle if it has one; true if written. */
static bool idle_off(const char *dir)
{
	char p[4200];
	bool done;
	int fd;

	snprintf(p, sizeof(p), "%s/cpu.idle", dir);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return false;
	done = write(fd, "0", 1) == 1;
	close(fd);
	return done;
}

/*
 * Run one job normally again, whatever switched it out: its self-frozen
 * step cgroups (v1) or job cgroup (v2) thawed, its cpu.idle cleared.  No
 * state of the caller is needed, so a process that outlives the node
 * manager can do it (nm_watchdog.c).  Returns how many cgroups changed.
 */
extern int nm_cg_job_release(uint32_t job_id, uint32_t uid)
{
	char job[2048], pat[2100], cpu[1300];
	glob_t g;
	int n = 0;

	if (cg_version == 1) {
		v1_job_path(job_id, uid, "", job, sizeof(job));
		snprintf(pat, sizeof(pat), "%s/step_*", job);
		if (!glob(pat, GLOB_ONLYDIR, NULL, &g)) {
			for (size_t i = 0; i < g.gl_pathc; i++)
				n += thaw_self_frozen(g.gl_pathv[i]);
			globfree(&g);
		}
		cpu_root(cpu, sizeof(cpu));
		snprintf(job, sizeof(job), "%s/job_%u", cpu, job_id);
		return n + idle_off(job);
	}
	if (job_ctl_path(job_id, uid, job, sizeof(job)))
		return 0;
	*strrchr(job, '/') = '\0';
	n += thaw_self_frozen(job);
	return n + idle_off(job);
}

/*
 * At start: thaw what a previous NM of this node may have left frozen when
 * it died (SIGKILL).  Job-level cgroups: only an NM freezes those (v2, and
 * v1 before the NM froze steps).  v1 step cgroups: Slurm's suspend freezes
 * them too, so those of a job that suspended(job_id) says Slurm suspended
 * stay as they are (a job whose state cannot be had is thawed: a job is
 * never left frozen because a node manager died).
 */
extern int nm_cg_thaw_orphans(bool (*suspended)(uint32_t job_id))
{
	char pat[2048];
	glob_t g;
	int thawed = 0, rc;

	/* v2: this node's scope only; with several slurmd on one host the
	 * others' jobs are their node managers' */
	if (cg_version == 1)
		snprintf(pat, sizeof(pat), "%s/freezer/slurm_%s/uid_*/job_*",
			 cg_mnt, cg_node);
	else
		v2_scope_path(true, "job_*", pat, sizeof(pat));
	rc = glob(pat, GLOB_ONLYDIR, NULL, &g);
	if (rc == GLOB_NOMATCH && cg_version != 1) {
		globfree(&g);
		v2_scope_path(false, "job_*", pat, sizeof(pat));
		rc = glob(pat, GLOB_ONLYDIR, NULL, &g);
	}
	if (rc)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *job = strrchr(g.gl_pathv[i], '/') + 1;
		char spat[4200];
		glob_t sg;
		bool frozen_steps = false;

		thawed += thaw_self_frozen(g.gl_pathv[i]);
		if (cg_version != 1)
			continue;
		snprintf(spat, sizeof(spat), "%s/step_*", g.gl_pathv[i]);
		if (glob(spat, GLOB_ONLYDIR, NULL, &sg))
			continue;
		for (size_t k = 0; k < sg.gl_pathc && !frozen_steps; k++)
			frozen_steps = self_frozen(sg.gl_pathv[k]);
		if (frozen_steps &&
		    !suspended((uint32_t) strtoul(job + 4, NULL, 10)))
			for (size_t k = 0; k < sg.gl_pathc; k++)
				thawed += thaw_self_frozen(sg.gl_pathv[k]);
		globfree(&sg);
	}
	globfree(&g);
	return thawed;
}

/*
 * The flexible policy's switch: cpu.idle.  A job outside its slot is not
 * frozen but made an idle-class group (SCHED_IDLE for the whole job), so
 * it only gets a CPU the running slot leaves idle.  One write per job.
 *
 *   v1: Slurm creates no cpu-controller cgroups, so the NM keeps its own,
 *       <mnt>/cpu/storm_<node>/job_<id>, and moves the job's tasks (read
 *       from its steps' freezer cgroups) into it; processes a new step
 *       starts are picked up at the job's next demotion.  The slurmstepds
 *       stay at normal priority: everything that talks to a stepd (sstat,
 *       a step launch, signals) would otherwise wait behind the running
 *       slot.  Gang jobs use it for their batch step alone.
 *   v2: the job's own cgroup has cpu.idle when Slurm enabled the cpu
 *       controller; nothing to move.
 * Without cpu.idle the caller falls back to freezing (gang behaviour).
 */
#define NM_CG_MOVED_MAX 256

struct nm_cg_idle {
	int fd;			/* cpu.idle */
	uint32_t job_id, uid;
	bool own_dir;		/* v1: our directory, removed at close */
	char dir[2048];
	int nmoved;
	pid_t moved[NM_CG_MOVED_MAX];
};

static void cpu_root(char *buf, size_t len)
{
	snprintf(buf, len, "%s/cpu/storm_%s", cg_mnt, cg_node);
}

extern nm_cg_idle_t *nm_cg_idle_open(uint32_t job_id, uint32_t uid)
{
	nm_cg_idle_t *c = calloc(1, sizeof(*c));
	char path[1200], ctl[2048], idle[2100];

	if (!c)
		return NULL;
	c->job_id = job_id;
	c->uid = uid;
	if (cg_version == 1) {
		cpu_root(path, sizeof(path));
		if (mkdir(path, 0755) && errno != EEXIST)
			goto fail;
		snprintf(c->dir, sizeof(c->dir), "%s/job_%u", path, job_id);
		if (mkdir(c->dir, 0755) && errno != EEXIST)
			goto fail;
		c->own_dir = true;
	} else {
		if (job_ctl_path(job_id, uid, ctl, sizeof(ctl)))
			goto fail;
		*strrchr(ctl, '/') = '\0';
		snprintf(c->dir, sizeof(c->dir), "%s", ctl);
	}
	snprintf(idle, sizeof(idle), "%s/cpu.idle", c->dir);
	c->fd = open(idle, O_WRONLY | O_CLOEXEC);
	if (c->fd < 0)
		goto fail;
	return c;
fail:
	if (c->own_dir)
		(void) rmdir(c->dir);
	free(c);
	return NULL;
}

static bool was_moved(nm_cg_idle_t *c, pid_t pid)
{
	for (int i = 0; i < c->nmoved; i++)
		if (c->moved[i] == pid)
			return true;
	return false;
}

/* v1: move the job's processes not yet moved (those of its batch step
 * only, with batch_only); returns how many moved. */
extern int nm_cg_idle_sync(nm_cg_idle_t *c, bool batch_only)
{
	char pat[2048], procs[2100];
	glob_t g;
	int n = 0, fd;

	if (!c->own_dir)
		return 0;
	v1_job_path(c->job_id, c->uid, batch_only ? "/step_batch/cgroup.procs" :
						    "/step_*/cgroup.procs",
		    pat, sizeof(pat));
	if (glob(pat, 0, NULL, &g))
		return 0;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", c->dir);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	for (size_t i = 0; fd >= 0 && i < g.gl_pathc; i++) {
		FILE *fp = fopen(g.gl_pathv[i], "r");
		long pid;

		if (!fp)
			continue;
		while (fscanf(fp, "%ld", &pid) == 1) {
			char v[24];
			int len;

			if (was_moved(c, (pid_t) pid))
				continue;
			len = snprintf(v, sizeof(v), "%ld", pid);
			if (pwrite(fd, v, len, 0) == len) {
				n++;
				if (c->nmoved == NM_CG_MOVED_MAX)
					c->nmoved = 0;	/* forget: rewrites are harmless */
				c->moved[c->nmoved++] = (pid_t) pid;
			}
		}
		fclose(fp);
	}
	if (fd >= 0)
		close(fd);
	globfree(&g);
	return n;
}

extern int nm_cg_idle_write(nm_cg_idle_t *c, bool idle)
{
	ssize_t n = pwrite(c->fd, idle ? "1" : "0", 1, 0);

	return n < 0 ? -errno : 0;
}

/* Back to normal priority; v1: our directory goes once it is empty (its
 * processes ended) -- else it stays, at cpu.idle 0, and a later NM start
 * removes it (nm_cg_idle_cleanup). */
extern void nm_cg_idle_close(nm_cg_idle_t *c)
{
	if (!c)
		return;
	(void) nm_cg_idle_write(c, false);
	close(c->fd);
	if (c->own_dir)
		(void) rmdir(c->dir);
	free(c);
}

/* At start: no job stays idle-class because an earlier NM died. */
extern int nm_cg_idle_cleanup(void)
{
	char pat[1300], root[1200];
	glob_t g;
	int n = 0;

	if (cg_version != 1)
		return 0;
	cpu_root(root, sizeof(root));
	snprintf(pat, sizeof(pat), "%s/job_*", root);
	if (!glob(pat, GLOB_ONLYDIR, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char p[4200];
			int fd;

			snprintf(p, sizeof(p), "%s/cpu.idle", g.gl_pathv[i]);
			if ((fd = open(p, O_WRONLY | O_CLOEXEC)) >= 0) {
				if (write(fd, "0", 1) == 1)
					n++;
				close(fd);
			}
			(void) rmdir(g.gl_pathv[i]);
		}
		globfree(&g);
	}
	(void) rmdir(root);
	return n;
}

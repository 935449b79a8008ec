/*
 * nm_cgroup.c - freeze and thaw a job's cgroup, cgroup v1 or v2.
 *
 * The NM switches whole jobs: it writes the job-level cgroup that Slurm's
 * own cgroup plugins create, so every step of the job (batch script,
 * srun steps, extern step) stops and starts together, and nothing has to
 * register tasks with the NM.
 *
 *   v1 (proctrack/cgroup): <mnt>/freezer/slurm_<node>/uid_<uid>/job_<id>
 *      freezer.state <- FROZEN | THAWED
 *   v2 (cgroup/v2, built with --enable-multiple-slurmd as Debian does):
 *      <mnt>/system.slice/<node>_slurmstepd.scope/job_<id>, or
 *      <mnt>/system.slice/slurmstepd.scope/job_<id>
 *      cgroup.freeze <- 1 | 0
 *
 * Why the job level: Slurm's own suspend (scontrol suspend, and the stock
 * gang scheduler) freezes the *step* cgroups under proctrack/cgroup.  In
 * v1 a cgroup is frozen while it or any ancestor is self-frozen, and in v2
 * cgroup.freeze is per cgroup with the effective state inherited, so our
 * job-level freeze and Slurm's step-level suspend compose: thawing the job
 * never resumes a step Slurm suspended.
 *
 * The version is chosen the way Slurm does (src/common/cgroup.c):
 * CgroupPlugin in cgroup.conf beside slurm.conf, else autodetect from the
 * file system type of /sys/fs/cgroup.
 */
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
#include "nm_gang.h"

static int cg_version;		/* 1 or 2 */
static char cg_mnt[1024] = "/sys/fs/cgroup";
static char cg_node[64];
static int root_procs_fd = -1;	/* v1: the freezer root's cgroup.procs */

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
	if (cg_version == 1 && root_procs_fd < 0) {
		char path[1100];

		snprintf(path, sizeof(path), "%s/freezer/cgroup.procs", cg_mnt);
		root_procs_fd = open(path, O_WRONLY | O_CLOEXEC);
		if (root_procs_fd < 0)
			nm_error("gang: cannot open %s (%m); a job's slurmstepds will be frozen with it (sstat, step launches and signals to it wait for its slot)",
				 path);
	}
	return 0;
}

extern void nm_cg_fini(void)
{
	if (root_procs_fd >= 0)
		close(root_procs_fd);
	root_procs_fd = -1;
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

/* The job's freeze-control file; 0 if it exists. */
static int job_ctl_path(uint32_t job_id, uint32_t uid, char *buf, size_t len)
{
	struct stat st;

	if (cg_version == 1) {
		v1_job_path(job_id, uid, "/freezer.state", buf, len);
		return stat(buf, &st) ? -errno : 0;
	}
	snprintf(buf, len, "%s/system.slice/%s_slurmstepd.scope/job_%u/cgroup.freeze",
		 cg_mnt, cg_node, job_id);
	if (!stat(buf, &st))
		return 0;
	snprintf(buf, len, "%s/system.slice/slurmstepd.scope/job_%u/cgroup.freeze",
		 cg_mnt, job_id);
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

/*
 * Keep a job's slurmstepds out of its freeze (v1).  Slurm puts each
 * slurmstepd in the job's freezer cgroup, not in the step's, so that its
 * own step-level suspend never stops the stepd (cgroup_p_step_addto in
 * src/plugins/cgroup/v1/cgroup_v1.c).  The NM freezes the job level, which
 * would stop them too, and then everything that talks to a stepd (sstat,
 * a new step's launch, signals, slurmd's health checks) waits for the
 * job's slot: measured with 30 s quanta, sstat failed after its 10 s
 * timeout and `srun --jobid` waited 19 s.  So the slurmstepds among the
 * direct members of the job's cgroup (is_slurmstepd tells them from the
 * tasks they have just forked) move to the hierarchy's root, where Slurm
 * moves a stepd itself before it removes the job's cgroups
 * (_remove_cg_subsystem).  Tasks stay in
 * their step cgroups, and a process moved into a thawed cgroup is thawed.
 * v2 keeps the stepd under the job (job_X/step_Y/slurm_processes) and is
 * left as it is.
 */
extern int nm_cg_job_dir_open(uint32_t job_id, uint32_t uid)
{
	char path[2048];
	int fd;

	if (cg_version != 1 || root_procs_fd < 0)
		return -ENOTSUP;
	v1_job_path(job_id, uid, "", path, sizeof(path));
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Name and parent from /proc/<pid>/stat ("pid (comm) state ppid ..."),
 * one read; false if the process is gone. */
static bool proc_stat(long pid, char *comm, size_t clen, long *ppid)
{
	char path[64], buf[512], *lp, *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the last ')' ends it */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || sscanf(rp + 1, " %*c %ld", ppid) != 1)
		return false;
	snprintf(comm, clen, "%.*s", (int) (rp - lp - 1), lp + 1);
	return true;
}

/*
 * A stepd, not one of its children: a task or batch script that a stepd
 * has forked but not yet exec'd or put in its step cgroup is also named
 * slurmstepd and sits, for that moment, directly in the job's cgroup.
 * Moving such a child would race the stepd's own move of it into the step
 * (our write can land after theirs) and leave the task outside every
 * Slurm cgroup: untracked and unkillable by Slurm.  A stepd's parent is
 * never a stepd (slurmd double-forks it).
 */
static bool is_slurmstepd(long pid)
{
	char comm[32];
	long ppid, pppid;

	if (!proc_stat(pid, comm, sizeof(comm), &ppid) ||
	    strcmp(comm, "slurmstepd") || ppid <= 0)
		return false;
	return !proc_stat(ppid, comm, sizeof(comm), &pppid) ||
	       strcmp(comm, "slurmstepd");
}

extern int nm_cg_release_stepds(int dir_fd, uint32_t job_id)
{
	char buf[4096], *p, *end;
	ssize_t n;
	int moved = 0, fd;

	/* Opened for every look: v1 keeps the pid list it built at an
	 * open file's first read while the file is read again within a
	 * second, so a kept fd would never show a new stepd. */
	fd = openat(dir_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);
		char v[24];
		int len;

		if (end == p)
			break;
		if (pid <= 0 || !is_slurmstepd(pid))
			continue;
		len = snprintf(v, sizeof(v), "%ld", pid);
		if (write(root_procs_fd, v, len) != len) {
			nm_error("gang: job %u: cannot move slurmstepd %ld out of the job's freezer cgroup: %m",
				 job_id, pid);
			continue;
		}
		nm_verbose("gang: job %u: slurmstepd %ld moved out of the job's freezer cgroup",
			   job_id, pid);
		moved++;
	}
	return moved;
}

/*
 * Thaw every job-level cgroup of this node that is self-frozen: a previous
 * NM of this node may have died (SIGKILL) with jobs frozen, and only the
 * NM ever freezes the job level, so this thaws nothing Slurm froze.
 */
extern int nm_cg_thaw_orphans(void)
{
	char pat[2048];
	glob_t g;
	int thawed = 0;

	if (cg_version == 1)
		snprintf(pat, sizeof(pat), "%s/freezer/slurm_%s/uid_*/job_*",
			 cg_mnt, cg_node);
	else
		snprintf(pat, sizeof(pat), "%s/system.slice/*slurmstepd.scope/job_*",
			 cg_mnt);
	if (glob(pat, GLOB_ONLYDIR, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char path[4200], v[32] = "";
		const char *self = cg_version == 1 ? "freezer.self_freezing" :
						     "cgroup.freeze";
		const char *ctl = cg_version == 1 ? "freezer.state" :
						    "cgroup.freeze";
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", g.gl_pathv[i], self);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, v, sizeof(v) - 1);
		close(fd);
		if (n <= 0 || v[0] != '1')
			continue;
		snprintf(path, sizeof(path), "%s/%s", g.gl_pathv[i], ctl);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!nm_cg_write(fd, false)) {
			nm_info("gang: thawed %s, left frozen by an earlier node manager",
				g.gl_pathv[i]);
			thawed++;
		}
		close(fd);
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
 *       stay at normal priority, for the reason nm_cg_release_stepds()
 *       gives.
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

/* v1: move the job's processes not yet moved; returns how many moved. */
extern int nm_cg_idle_sync(nm_cg_idle_t *c)
{
	char pat[2048], procs[2100];
	glob_t g;
	int n = 0, fd;

	if (!c->own_dir)
		return 0;
	v1_job_path(c->job_id, c->uid, "/step_*/cgroup.procs", pat,
		    sizeof(pat));
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

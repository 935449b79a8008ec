/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_cgroup.c - the node manager's switch against real cgroups.
 *
 * v1, a freezer hierarchy laid out as proctrack/cgroup lays it out: the
 * job's steps are found, one step freezes without its job or its batch
 * step, and at start a frozen step is thawed unless Slurm suspended its
 * job.  v2, the job cgroup where Slurm's cgroup/v2 puts it (the hybrid
 * host's "unified" mount stands in for /sys/fs/cgroup): the job freezes
 * through cgroup.freeze, and at start the node manager thaws its own
 * node's frozen jobs and leaves another node's alone.  And a job's CPU
 * time (nm_cg_usage.c, v1): it grows while a process of one of its steps
 * spins, and keeps what a child reaped inside the job used.
 *
 * Needs root and either hierarchy; what is missing is skipped (77 if
 * both are).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "src/nm/nm.h"
#include "src/nm/nm_cg_usage.h"
#include "src/nm/nm_cgroup.h"

#include "check_run.h"

#define FREEZER "/sys/fs/cgroup/freezer"
#define JOB_ID 7
#define USAGE_JOB_ID 8

static char etc[] = "/tmp/storm-ut-cg.XXXXXX";
static char node[32], uid_dir[512], job_dir[600], step0[700], batch[700];

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	ck_assert_msg(fp != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_ge(fputs(text, fp), 0);
	ck_assert_int_eq(fclose(fp), 0);
}

static void join_cgroup(const char *dir, pid_t pid)
{
	char path[800], v[24];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(v, sizeof(v), "%d", (int) pid);
	write_file(path, v);
}

/* A cgroup's freezer.state, waiting out FREEZING (a frozen task must
 * reach the refrigerator first). */
static void state_of(const char *dir, char *buf, size_t len)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/freezer.state", dir);
	for (int tries = 0; tries < 500; tries++) {
		FILE *fp = fopen(path, "r");

		ck_assert_ptr_nonnull(fp);
		ck_assert_ptr_nonnull(fgets(buf, (int) len, fp));
		fclose(fp);
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, "FREEZING"))
			return;
		usleep(10000);
	}
}

/* A process named name that waits to be killed; with child, it first
 * forks one more (inheriting the name), whose pid it sends down fd. */
static pid_t spawn(const char *name, bool child, int *child_pid)
{
	int fds[2];
	pid_t pid, gc = 0;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* gone with the test, even when an assertion ends it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, name);
		if (child) {
			gc = fork();
			if (gc == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				for (;;)
					pause();
			}
		}
		if (write(fds[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &gc, sizeof(gc)), sizeof(gc));
	close(fds[0]);
	if (child_pid)
		*child_pid = gc;
	return pid;
}

/* The node manager's cgroup side, told by a cgroup.conf beside
 * slurm.conf to use cgroup/vVERSION mounted at mnt. */
static void init_nm(int version, const char *mnt)
{
	char path[400], text[200];
	nm_t nm;

	memset(&nm, 0, sizeof(nm));
	ck_assert_ptr_nonnull(mkdtemp(etc));
	snprintf(path, sizeof(path), "%s/cgroup.conf", etc);
	snprintf(text, sizeof(text), "CgroupPlugin=cgroup/v%d\nCgroupMountpoint=%s\n",
		 version, mnt);
	write_file(path, text);
	snprintf(nm.slurm_conf, sizeof(nm.slurm_conf), "%s/slurm.conf", etc);
	snprintf(nm.node, sizeof(nm.node), "%s", node);
	ck_assert_int_eq(nm_cg_init(&nm), 0);
	ck_assert_int_eq(nm_cg_version(), version);
	/* read once, at init: nothing of it stays behind in /tmp */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(etc), 0);
}

static void setup(void)
{
	char path[400];

	init_nm(1, "/sys/fs/cgroup");
	snprintf(path, sizeof(path), FREEZER "/slurm_%s", node);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(uid_dir, sizeof(uid_dir), "%s/uid_0", path);
	ck_assert_int_eq(mkdir(uid_dir, 0755), 0);
	snprintf(job_dir, sizeof(job_dir), "%s/job_%d", uid_dir, JOB_ID);
	ck_assert_int_eq(mkdir(job_dir, 0755), 0);
	snprintf(step0, sizeof(step0), "%s/step_0", job_dir);
	ck_assert_int_eq(mkdir(step0, 0755), 0);
	snprintf(batch, sizeof(batch), "%s/step_batch", job_dir);
	ck_assert_int_eq(mkdir(batch, 0755), 0);
}

static int nfound, found_batch, found_step0;

static void found(const char *name, void *arg)
{
	(void) arg;
	nfound++;
	found_batch += !strcmp(name, "step_batch");
	found_step0 += !strcmp(name, "step_0");
}

static bool suspended_yes(uint32_t job_id)
{
	return job_id == JOB_ID;
}

static bool suspended_no(uint32_t job_id)
{
	(void) job_id;
	return false;
}

START_TEST(one_step_freezes_alone)
{
	char st[32];
	int dir_fd, fd;
	pid_t task, script, stepd;

	setup();
	task = spawn("task", false, NULL);
	script = spawn("slurm_script", false, NULL);
	stepd = spawn("slurmstepd", false, NULL);
	join_cgroup(step0, task);
	join_cgroup(batch, script);
	join_cgroup(job_dir, stepd);

	dir_fd = nm_cg_job_dir_open(JOB_ID, 0);
	ck_assert_int_ge(dir_fd, 0);
	ck_assert_int_eq(nm_cg_job_steps(dir_fd, found, NULL), 2);
	ck_assert_int_eq(nfound, 2);
	ck_assert_int_eq(found_batch, 1);
	ck_assert_int_eq(found_step0, 1);

	fd = nm_cg_step_open(dir_fd, "step_0");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(nm_cg_write(fd, true), 0);
	state_of(step0, st, sizeof(st));
	ck_assert_str_eq(st, "FROZEN");
	state_of(batch, st, sizeof(st));
	ck_assert_str_eq(st, "THAWED");
	state_of(job_dir, st, sizeof(st));
	ck_assert_str_eq(st, "THAWED");

	/* a node manager that died left step_0 frozen: a job Slurm
	 * suspended keeps it so, any other job is thawed */
	ck_assert_int_eq(nm_cg_thaw_orphans(suspended_yes), 0);
	state_of(step0, st, sizeof(st));
	ck_assert_str_eq(st, "FROZEN");
	ck_assert_int_eq(nm_cg_thaw_orphans(suspended_no), 1);
	state_of(step0, st, sizeof(st));
	ck_assert_str_eq(st, "THAWED");
	close(fd);

	/* the job ends: its steps go, then its cgroup */
	kill(task, SIGKILL);
	kill(script, SIGKILL);
	kill(stepd, SIGKILL);
	waitpid(task, NULL, 0);
	waitpid(script, NULL, 0);
	waitpid(stepd, NULL, 0);
	ck_assert_int_eq(rmdir(step0), 0);
	ck_assert_int_eq(rmdir(batch), 0);
	ck_assert_int_eq(nm_cg_job_steps(dir_fd, found, NULL), 0);
	ck_assert_int_eq(rmdir(job_dir), 0);
	ck_assert_int_lt(nm_cg_job_steps(dir_fd, found, NULL), 0);
	close(dir_fd);
}
END_TEST

/* mkdir, an existing directory being fine (the tests share the node's). */
static void mkdir_ok(const char *dir)
{
	ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s",
		      dir, strerror(errno));
}

/* A process that, once a byte comes down *go, spins for ms of CPU in a
 * child it then reaps, and then waits to be killed. */
static pid_t spawn_reaper(int ms, int *go)
{
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pid_t c;
		char b;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[1]);
		if (read(fds[0], &b, 1) != 1)
			_exit(1);
		c = fork();
		if (c == 0) {
			struct timespec t0, t;

			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
			do
				clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
			while ((t.tv_sec - t0.tv_sec) * 1000 +
			       (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
			_exit(0);
		}
		waitpid(c, NULL, 0);
		for (;;)
			pause();
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

START_TEST(job_cpu_time_counts_its_processes)
{
	char path[600], step[700];
	uint64_t before, after;
	pid_t p;
	int go;

	init_nm(1, "/sys/fs/cgroup");
	snprintf(path, sizeof(path), FREEZER "/slurm_%s", node);
	mkdir_ok(path);
	snprintf(path, sizeof(path), FREEZER "/slurm_%s/uid_0", node);
	mkdir_ok(path);
	snprintf(path, sizeof(path), FREEZER "/slurm_%s/uid_0/job_%d", node,
		 USAGE_JOB_ID);
	mkdir_ok(path);
	snprintf(step, sizeof(step), "%s/step_0", path);
	mkdir_ok(step);
	ck_assert_int_eq(nm_cg_job_cpu_ns(USAGE_JOB_ID + 1, 0, &before),
			 -ENOENT);
	ck_assert_int_eq(nm_cg_job_cpu_ns(USAGE_JOB_ID, 0, &before), 0);
	ck_assert_uint_eq(before, 0);	/* no process yet */
	/* the child spins 200 ms of CPU inside the step, its parent (in the
	 * step too) reaps it: the job keeps those 200 ms (clock ticks: allow
	 * one tick less) */
	p = spawn_reaper(200, &go);
	join_cgroup(step, p);
	ck_assert_int_eq(write(go, "g", 1), 1);
	close(go);
	for (int tries = 0; tries < 2500; tries++) {
		ck_assert_int_eq(nm_cg_job_cpu_ns(USAGE_JOB_ID, 0, &after), 0);
		if (after >= 190000000ULL)
			break;
		usleep(10000);
	}
	ck_assert_uint_ge(after, 190000000ULL);
	/* still counted once the child is gone: the parent's cutime */
	usleep(50000);
	ck_assert_int_eq(nm_cg_job_cpu_ns(USAGE_JOB_ID, 0, &before), 0);
	ck_assert_uint_ge(before, 190000000ULL);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}
END_TEST

/* The cgroup v2 hierarchy: /sys/fs/cgroup on a pure v2 host, its
 * "unified" mount on a hybrid one; "" if there is none. */
static char v2mnt[64];

static void find_v2(void)
{
	static const char *const where[] = { "/sys/fs/cgroup",
					     "/sys/fs/cgroup/unified" };
	struct statfs fs;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (!statfs(where[i], &fs) && fs.f_type == CGROUP2_SUPER_MAGIC) {
			snprintf(v2mnt, sizeof(v2mnt), "%s", where[i]);
			return;
		}
}

/* Our node's job and another node's, as cgroup/v2 names them with
 * several slurmd on one host. */
static void v2_paths(char *ours, char *other, size_t len)
{
	snprintf(ours, len, "%s/system.slice/%s_slurmstepd.scope/job_%d",
		 v2mnt, node, JOB_ID);
	snprintf(other, len, "%s/system.slice/%sx_slurmstepd.scope/job_%d",
		 v2mnt, node, JOB_ID + 1);
}

/* cgroup.events says frozen (1) or not (0), within 5 s */
static bool v2_frozen_is(const char *dir, int want)
{
	char path[800], line[64];

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	for (int tries = 0; tries < 500; tries++) {
		FILE *fp = fopen(path, "r");
		int got = -1;

		ck_assert_ptr_nonnull(fp);
		while (fgets(line, sizeof(line), fp))
			sscanf(line, "frozen %d", &got);
		fclose(fp);
		if (got == want)
			return true;
		usleep(10000);
	}
	return false;
}

/* dir and its parent, a scope, new */
static void mkdir_with_parent(const char *dir)
{
	char parent[700];

	snprintf(parent, sizeof(parent), "%s", dir);
	*strrchr(parent, '/') = '\0';
	ck_assert_int_eq(mkdir(parent, 0755), 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
}

START_TEST(v2_job_freezes_and_own_orphans_thaw)
{
	char path[800], ours[700], other[700];
	pid_t task;
	int fd;

	init_nm(2, v2mnt);
	snprintf(path, sizeof(path), "%s/system.slice", v2mnt);
	mkdir(path, 0755);	/* systemd's, or ours (main removes it) */
	v2_paths(ours, other, sizeof(ours));
	mkdir_with_parent(ours);
	mkdir_with_parent(other);

	task = spawn("task", false, NULL);
	join_cgroup(ours, task);
	fd = nm_cg_job_open(JOB_ID, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(nm_cg_write(fd, true), 0);
	ck_assert(v2_frozen_is(ours, 1));
	close(fd);

	/* another node manager's job on this host, frozen by it */
	snprintf(path, sizeof(path), "%s/cgroup.freeze", other);
	write_file(path, "1");

	/* a node manager that died left its job frozen: thawed at start,
	 * even for a job Slurm suspended (Slurm freezes steps, never the
	 * job level), and the other node's job stays as it is */
	ck_assert_int_eq(nm_cg_thaw_orphans(suspended_yes), 1);
	ck_assert(v2_frozen_is(ours, 0));
	ck_assert(v2_frozen_is(other, 1));
	write_file(path, "0");

	kill(task, SIGKILL);
	waitpid(task, NULL, 0);
}
END_TEST

/* Remove the test's cgroups once their processes are gone (they die with
 * the forked test, pass or fail); a cgroup with members cannot go. */
static void rmdir_all(char (*path)[700], int n)
{
	for (int i = 0; i < n; i++) {
		for (int tries = 0; rmdir(path[i]) && errno == EBUSY &&
		     tries < 100; tries++)
			usleep(10000);
	}
}

static void remove_cgroups(void)
{
	char path[7][700];

	snprintf(path[0], sizeof(path[0]), FREEZER "/slurm_%s/uid_0/job_%d/step_0",
		 node, JOB_ID);
	snprintf(path[1], sizeof(path[1]), FREEZER "/slurm_%s/uid_0/job_%d/step_batch",
		 node, JOB_ID);
	snprintf(path[2], sizeof(path[2]), FREEZER "/slurm_%s/uid_0/job_%d",
		 node, JOB_ID);
	snprintf(path[3], sizeof(path[3]), FREEZER "/slurm_%s/uid_0/job_%d/step_0",
		 node, USAGE_JOB_ID);
	snprintf(path[4], sizeof(path[4]), FREEZER "/slurm_%s/uid_0/job_%d",
		 node, USAGE_JOB_ID);
	snprintf(path[5], sizeof(path[5]), FREEZER "/slurm_%s/uid_0", node);
	snprintf(path[6], sizeof(path[6]), FREEZER "/slurm_%s", node);
	rmdir_all(path, 7);
}

/* The same for the v2 test; system.slice too if the test made it. */
static void remove_v2_cgroups(bool slice_was_there)
{
	char path[5][700];

	v2_paths(path[0], path[1], sizeof(path[0]));
	snprintf(path[2], sizeof(path[2]), "%s", path[0]);
	*strrchr(path[2], '/') = '\0';
	snprintf(path[3], sizeof(path[3]), "%s", path[1]);
	*strrchr(path[3], '/') = '\0';
	snprintf(path[4], sizeof(path[4]), "%s/system.slice", v2mnt);
	rmdir_all(path, slice_was_there ? 4 : 5);
}

int main(void)
{
	Suite *s = suite_create("nm_cgroup");
	TCase *tc = tcase_create("steps"), *tc2 = tcase_create("v2");
	struct stat st;
	char slice[100];
	bool v1, slice_was_there;
	int failed;

	find_v2();
	v1 = stat(FREEZER "/cgroup.procs", &st) == 0;
	if (geteuid() != 0 || (!v1 && !v2mnt[0])) {
		fprintf(stderr, "skipped: needs root and a cgroup v1 freezer at %s or a cgroup v2 mount\n",
			FREEZER);
		return 77;
	}
	snprintf(node, sizeof(node), "ut%d", (int) getpid());
	snprintf(slice, sizeof(slice), "%s/system.slice", v2mnt);
	slice_was_there = v2mnt[0] && stat(slice, &st) == 0;
	if (v1) {
		tcase_add_test(tc, one_step_freezes_alone);
		tcase_add_test(tc, job_cpu_time_counts_its_processes);
		/* 200 ms of CPU on a loaded host may take seconds */
		tcase_set_timeout(tc, 60);
		suite_add_tcase(s, tc);
	} else {
		fprintf(stderr, "v1 test skipped: no cgroup v1 freezer at %s\n", FREEZER);
	}
	if (v2mnt[0]) {
		tcase_add_test(tc2, v2_job_freezes_and_own_orphans_thaw);
		suite_add_tcase(s, tc2);
	} else {
		fprintf(stderr, "v2 test skipped: no cgroup v2 mount\n");
	}
	failed = storm_check_run(s);
	if (v1)
		remove_cgroups();
	if (v2mnt[0])
		remove_v2_cgroups(slice_was_there);
	return failed;
}

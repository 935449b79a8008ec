/*
 * test_nm_cgroup.c - the node manager's step-level switch (v1) against a
 * real cgroup v1 freezer hierarchy laid out as proctrack/cgroup lays it
 * out: the job's steps are found, one step freezes without its job or its
 * batch step, and at start a frozen step is thawed unless Slurm suspended
 * its job.
 *
 * Needs root and /sys/fs/cgroup/freezer; skipped (77) otherwise.
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
#include <sys/wait.h>
#include <unistd.h>

#include "src/nm/nm.h"
#include "src/nm/nm_gang.h"

#define FREEZER "/sys/fs/cgroup/freezer"
#define JOB_ID 7

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
	char path[700], v[24];

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

static void setup(void)
{
	nm_t nm;
	char path[400];

	memset(&nm, 0, sizeof(nm));
	ck_assert_ptr_nonnull(mkdtemp(etc));
	snprintf(path, sizeof(path), "%s/cgroup.conf", etc);
	write_file(path, "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n");
	snprintf(nm.slurm_conf, sizeof(nm.slurm_conf), "%s/slurm.conf", etc);
	snprintf(nm.node, sizeof(nm.node), "%s", node);
	ck_assert_int_eq(nm_cg_init(&nm), 0);
	ck_assert_int_eq(nm_cg_version(), 1);

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

/* Remove the test's cgroups once their processes are gone (they die with
 * the forked test, pass or fail); a cgroup with members cannot go. */
static void remove_cgroups(void)
{
	char path[5][400];

	snprintf(path[0], sizeof(path[0]), FREEZER "/slurm_%s/uid_0/job_%d/step_0",
		 node, JOB_ID);
	snprintf(path[1], sizeof(path[1]), FREEZER "/slurm_%s/uid_0/job_%d/step_batch",
		 node, JOB_ID);
	snprintf(path[2], sizeof(path[2]), FREEZER "/slurm_%s/uid_0/job_%d",
		 node, JOB_ID);
	snprintf(path[3], sizeof(path[3]), FREEZER "/slurm_%s/uid_0", node);
	snprintf(path[4], sizeof(path[4]), FREEZER "/slurm_%s", node);
	for (int i = 0; i < 5; i++) {
		for (int tries = 0; rmdir(path[i]) && errno == EBUSY &&
		     tries < 100; tries++)
			usleep(10000);
	}
}

int main(void)
{
	Suite *s = suite_create("nm_cgroup");
	TCase *tc = tcase_create("steps");
	SRunner *sr;
	struct stat st;
	int failed;

	if (geteuid() != 0 || stat(FREEZER "/cgroup.procs", &st)) {
		fprintf(stderr, "skipped: needs root and a cgroup v1 freezer at %s\n",
			FREEZER);
		return 77;
	}
	snprintf(node, sizeof(node), "ut%d", (int) getpid());
	tcase_add_test(tc, one_step_freezes_alone);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_cgroups();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * test_nm_cgroup.c - the node manager's stepd release (nm_cg_release_stepds)
 * against a real cgroup v1 freezer hierarchy: a slurmstepd leaves the
 * job's freezer cgroup, while a child it has forked (still named
 * slurmstepd before its exec) and any other process stay.
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
static char node[32], uid_dir[512], job_dir[600];

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

/* The freezer cgroup pid is in, relative to the hierarchy's root. */
static void freezer_of(pid_t pid, char *buf, size_t len)
{
	char path[64], line[512];
	FILE *fp;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp)) {
		char *p = strstr(line, ":freezer:");

		if (p) {
			snprintf(buf, len, "%s", p + strlen(":freezer:"));
			buf[strcspn(buf, "\n")] = '\0';
		}
	}
	fclose(fp);
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
}

START_TEST(stepd_leaves_its_forked_task_stays)
{
	char where[256], want_job[256];
	int task, dir_fd;
	pid_t stepd, other;

	setup();
	stepd = spawn("slurmstepd", true, &task);
	other = spawn("sleep", false, NULL);
	join_cgroup(job_dir, stepd);
	join_cgroup(job_dir, task);
	join_cgroup(job_dir, other);

	dir_fd = nm_cg_job_dir_open(JOB_ID, 0);
	ck_assert_int_ge(dir_fd, 0);
	ck_assert_int_eq(nm_cg_release_stepds(dir_fd, JOB_ID), 1);
	close(dir_fd);

	snprintf(want_job, sizeof(want_job), "/slurm_%s/uid_0/job_%d", node,
		 JOB_ID);
	freezer_of(stepd, where, sizeof(where));
	ck_assert_str_eq(where, "/");
	freezer_of(task, where, sizeof(where));
	ck_assert_str_eq(where, want_job);
	freezer_of(other, where, sizeof(where));
	ck_assert_str_eq(where, want_job);

	kill(task, SIGKILL);
	kill(stepd, SIGKILL);
	kill(other, SIGKILL);
	waitpid(stepd, NULL, 0);
	waitpid(other, NULL, 0);
	nm_cg_fini();
}
END_TEST

/* Remove the test's cgroups once their processes are gone (they die with
 * the forked test, pass or fail); a cgroup with members cannot go. */
static void remove_cgroups(void)
{
	char path[3][400];

	snprintf(path[0], sizeof(path[0]), FREEZER "/slurm_%s/uid_0/job_%d",
		 node, JOB_ID);
	snprintf(path[1], sizeof(path[1]), FREEZER "/slurm_%s/uid_0", node);
	snprintf(path[2], sizeof(path[2]), FREEZER "/slurm_%s", node);
	for (int i = 0; i < 3; i++) {
		for (int tries = 0; rmdir(path[i]) && errno == EBUSY &&
		     tries < 100; tries++)
			usleep(10000);
	}
}

int main(void)
{
	Suite *s = suite_create("nm_cgroup");
	TCase *tc = tcase_create("release_stepds");
	SRunner *sr;
	struct stat st;
	int failed;

	if (geteuid() != 0 || stat(FREEZER "/cgroup.procs", &st)) {
		fprintf(stderr, "skipped: needs root and a cgroup v1 freezer at %s\n",
			FREEZER);
		return 77;
	}
	snprintf(node, sizeof(node), "ut%d", (int) getpid());
	tcase_add_test(tc, stepd_leaves_its_forked_task_stays);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_cgroups();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

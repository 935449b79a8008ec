/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_main.c - storm-nm: start-up, single instance per node, shutdown.
 *
 *   storm-nm --node NAME [--slurm-conf PATH] [--storm-conf PATH] [-D] [-v]
 *
 * Without -D it detaches once the fast checks passed (configuration valid,
 * node locks taken), so that its parent (the SPANK plugin in slurmd) learns
 * of those failures through the exit code and is never held up by the
 * slower steps (waiting for slurmctld, joining the fabric).
 *
 * One node manager per node, always: before it reads storm.conf it takes
 * the node's instance lock (storm_nmctl.h), keyed by node name and
 * slurm.conf, which no storm.conf content can move; then, as before, the
 * lock beside its control socket in BcastDir, which also holds its pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "nm.h"
#include "nm_relay_report.h"
#include "nm_watchdog.h"

/* Exit codes the SPANK plugin reports. */
enum { NM_EXIT_OK = 0, NM_EXIT_CONF = 1, NM_EXIT_USAGE = 2,
       NM_EXIT_RUNNING = 3, NM_EXIT_FAIL = 4 };

static nm_t the_nm;
/* the instance lock, held for the daemon's life */
static int instance_fd = -1;
static char instance_path[4200];

static void on_signal(int sig)
{
	the_nm.stop = 1;
}

static void usage(FILE *fp)
{
	fprintf(fp, "usage: %s --node NAME [--slurm-conf PATH] "
		"[--storm-conf PATH] [-D] [-v]\n", NM_NAME);
}

/* Expand %n in a path to the node name. */
static void expand_node(const char *in, const char *node, char *out,
			size_t len)
{
	size_t o = 0;

	for (const char *p = in; *p && o + 1 < len; p++) {
		if (p[0] == '%' && p[1] == 'n') {
			o += snprintf(out + o, len - o, "%s", node);
			if (o >= len)
				o = len - 1;
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Take a lock of the node's; returns 0 with *fdp set, or NM_EXIT_RUNNING
 * or NM_EXIT_FAIL with a message. */
static int take_lock(const char *node, const char *path, int *fdp)
{
	char pid[32];
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", NM_NAME, path,
			strerror(errno));
		return NM_EXIT_FAIL;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);

		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "%s: a node manager already runs for node %s (pid %s), holding %s\n",
			NM_NAME, node, pid[0] ? pid : "unknown", path);
		close(fd);
		return NM_EXIT_RUNNING;
	}
	*fdp = fd;
	return 0;
}

static int take_instance_lock(const nm_t *nm)
{
	int rc;

	if ((rc = mkdir_p(STORM_NM_RUN_DIR, 0755))) {
		fprintf(stderr, "%s: cannot create %s: %s\n", NM_NAME,
			STORM_NM_RUN_DIR, strerror(-rc));
		return NM_EXIT_FAIL;
	}
	storm_nm_instance_lock(nm->slurm_conf, nm->node, instance_path,
			       sizeof(instance_path));
	return take_lock(nm->node, instance_path, &instance_fd);
}

static void write_pid(int fd, const char *path)
{
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());

	if (ftruncate(fd, 0) || pwrite(fd, pid, n, 0) != n)
		nm_error("cannot write pid to %s", path);
}

/*
 * Detach: the parent waits until the child has the lock (a byte on a pipe)
 * and exits with the child's verdict.
 */
static int detach(int *ready_fd)
{
	int p[2];
	pid_t pid;
	char verdict = NM_EXIT_FAIL;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &verdict, 1) != 1)
			verdict = NM_EXIT_FAIL;
		_exit(verdict);
	}
	close(p[0]);
	setsid();
	/* A second fork so that the NM is never a session leader. */
	pid = fork();
	if (pid < 0)
		_exit(NM_EXIT_FAIL);
	if (pid > 0)
		_exit(0);
	*ready_fd = p[1];
	return 0;
}

static void report(int ready_fd, char verdict)
{
	if (ready_fd >= 0) {
		/* A lost verdict reads as EOF, which the SPANK plugin
		 * takes for a failed start: nothing more to do here
		 * (glibc's warn_unused_result ignores a (void) cast). */
		if (write(ready_fd, &verdict, 1) != 1)
			verdict = 0;
		close(ready_fd);
	}
}

/*
 * Test only (storm-nm(8)): with STORM_NM_TEST_LEAK in its environment the
 * node manager loses a block on purpose, so that the sanitized system
 * tests show that a leak in it fails them (a check that can never fail
 * proves nothing).  The volatile keeps the compiler from dropping it.
 */
#define NM_TEST_LEAK_ENV "STORM_NM_TEST_LEAK"
static void *volatile test_leak;

static void leak_if_asked(void)
{
	if (!getenv(NM_TEST_LEAK_ENV))
		return;
	test_leak = malloc(4096);
	test_leak = NULL;
	nm_info("%s is set: a block of 4096 bytes leaked on purpose",
		NM_TEST_LEAK_ENV);
}

/*
 * libfabric brought in libinfinipath, whose handlers end the process with
 * exit(1) on a fault or an abort (stormmech.h): a node manager that
 * crashes must leave a core and run no exit handler under its live
 * threads.  SIGTERM and SIGINT are ours just below.
 */
static void reclaim_signals(void)
{
	uint64_t mask = 0;
	int rc = storm_signals_reclaim(NULL, NULL, &mask);

	if (rc)
		nm_error("cannot take the signal handlers back from the library loaded with libfabric: %s",
			 strerror(-rc));
	else if (mask)
		nm_debug("took %d signal handlers back from a library loaded with libfabric",
			 __builtin_popcountll(mask));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "slurm-conf", required_argument, NULL, 'c' },
		{ "storm-conf", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	nm_t *nm = &the_nm;
	bool foreground = false;
	nm_level_t level = NM_INFO;
	char err[STORM_CONF_ERRLEN], logpath[4096];
	int c, rc, ready_fd = -1, nmods = 0;
	struct sigaction sa = { .sa_handler = on_signal };

	nm->lock_fd = -1;
	/* before any thread: it sets the environment libfabric reads */
	storm_fabric_small_buffers();
	while ((c = getopt_long(argc, argv, "n:c:s:Dvh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			snprintf(nm->node, sizeof(nm->node), "%s", optarg);
			break;
		case 'c':
			snprintf(nm->slurm_conf, sizeof(nm->slurm_conf), "%s", optarg);
			break;
		case 's':
			snprintf(nm->storm_conf, sizeof(nm->storm_conf), "%s", optarg);
			break;
		case 'D':
			foreground = true;
			break;
		case 'v':
			if (level < NM_DEBUG)
				level++;
			break;
		case 'h':
			usage(stdout);
			return NM_EXIT_OK;
		default:
			usage(stderr);
			return NM_EXIT_USAGE;
		}
	}
	if (!nm->node[0] || optind != argc) {
		usage(stderr);
		return NM_EXIT_USAGE;
	}
	if (!nm->slurm_conf[0]) {
		const char *env = getenv("SLURM_CONF");

		snprintf(nm->slurm_conf, sizeof(nm->slurm_conf), "%s",
			 env ? env : "/etc/slurm/slurm.conf");
	}
	if (!nm->storm_conf[0])
		storm_conf_path(nm->slurm_conf, nm->storm_conf,
				sizeof(nm->storm_conf));
	if ((rc = take_instance_lock(nm)))
		return rc;
	if (storm_conf_load(nm->storm_conf, true, &nm->conf, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", NM_NAME, err);
		return NM_EXIT_CONF;
	}
	if ((rc = mkdir_p(nm->conf.bcast_dir, 0755))) {
		fprintf(stderr, "%s: cannot create BcastDir %s: %s\n", NM_NAME,
			nm->conf.bcast_dir, strerror(-rc));
		return NM_EXIT_FAIL;
	}
	storm_nm_paths(nm->conf.bcast_dir, nm->node, nm->lock_path,
			 sizeof(nm->lock_path), nm->sock_path,
			 sizeof(nm->sock_path));
	/* Cheap pre-check so that a second start fails before detaching. */
	if ((rc = take_lock(nm->node, nm->lock_path, &nm->lock_fd)))
		return rc;
	if (!foreground) {
		/* flock belongs to the open file, which the children share. */
		if (detach(&ready_fd)) {
			fprintf(stderr, "%s: cannot detach: %s\n", NM_NAME,
				strerror(errno));
			return NM_EXIT_FAIL;
		}
	}

	expand_node(nm->conf.nm_log, nm->node, logpath, sizeof(logpath));
	if (nm_log_open(foreground ? NULL : logpath, level)) {
		fprintf(stderr, "%s: cannot open log %s: %s\n", NM_NAME,
			logpath, strerror(errno));
		report(ready_fd, NM_EXIT_FAIL);
		return NM_EXIT_FAIL;
	}
	nm_log_set_tag(nm->node);
	write_pid(instance_fd, instance_path);
	write_pid(nm->lock_fd, nm->lock_path);
	reclaim_signals();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (!foreground) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
	}
	report(ready_fd, NM_EXIT_OK);
	nm_info("starting for node %s (slurm.conf %s, storm.conf %s)", nm->node,
		nm->slurm_conf, nm->storm_conf);
	leak_if_asked();

	/* forked while this is the only thread (nm_watchdog.h) */
	if ((rc = nm_watchdog_start(nm)))
		nm_error("watchdog: cannot start (%s): a killed node manager leaves its jobs frozen until it is restarted",
			 strerror(-rc));
	setenv("SLURM_CONF", nm->slurm_conf, 1);
	slurm_init(nm->slurm_conf);
	rc = nm_nodes_load(nm);
	if (rc)
		goto done;
	rc = nm_fabric_open(nm);
	if (rc)
		goto done;
	rc = nm_ctl_open(nm);
	if (rc)
		goto done;
	for (; nm_modules[nmods]; nmods++) {
		rc = nm_modules[nmods]->init(nm);
		if (rc) {
			nm_error("module %s failed to start: %s",
				 nm_modules[nmods]->name, strerror(-rc));
			goto done;
		}
	}
	nm_info("ready: control socket %s", nm->sock_path);
	nm_ctl_serve(nm);
	nm_info("stopping");
done:
	while (nmods > 0) {
		nmods--;
		if (nm_modules[nmods]->fini)
			nm_modules[nmods]->fini(nm);
	}
	nm_watchdog_stop();	/* after the modules thawed what they switched */
	nm_relay_report_fini();
	nm_ctl_close(nm);
	nm_fabric_close(nm);
	slurm_fini();
	free(nm->nodes);
	nm_info("exit %s", rc ? "on error" : "cleanly");
	return rc ? NM_EXIT_FAIL : NM_EXIT_OK;
}

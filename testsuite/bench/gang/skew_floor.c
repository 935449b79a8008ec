/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * skew_floor: the least switch skew this host allows, measured the way
 * run-gang-bench measures STORM's.
 *
 *     skew_floor [-n nproc] [-w window_s] quantum_us
 *
 * No Slurm, no fabric, no node manager, no clock estimate: nproc processes
 * (one per simulated node), each with a CPU-bound child in its own freezer
 * cgroup, and each with a SCHED_FIFO thread that sleeps to the same
 * absolute CLOCK_MONOTONIC instants, one a quantum, and at each writes its
 * own freezer (frozen and thawed in turn) -- what a node manager does at
 * an announced instant, with a perfect clock and a strobe that costs
 * nothing.  The spread of the writes' completion across the processes, per
 * instant, is the skew floor: timer wake-up and freezer write on a host
 * whose cores the spinners keep busy.
 *
 * Output: one JSON object on stdout: nproc, quantum_us, instants and the
 * spread's median, p99 and max in microseconds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROC 64
#define MAX_INSTANTS 200000
#define RT_PRIO 41		/* storm-nm's gang watcher */

static bool v2;
static const char *root;
static char dirs[MAX_PROC][256];
static pid_t spinners[MAX_PROC];
static int nmade;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* storm-nm's choice: the v1 freezer when mounted, else cgroup v2. */
static int pick_root(void)
{
	struct stat st;

	if (stat("/sys/fs/cgroup/freezer/cgroup.procs", &st) == 0) {
		root = "/sys/fs/cgroup/freezer";
		return 0;
	}
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		root = "/sys/fs/cgroup";
		v2 = true;
		return 0;
	}
	fprintf(stderr, "skew_floor: no cgroup v1 freezer and no cgroup v2\n");
	return -1;
}

static int write_at(const char *dir, const char *file, const char *val)
{
	char path[320];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static const char *state_file(void)
{
	return v2 ? "cgroup.freeze" : "freezer.state";
}

static const char *state(bool frozen)
{
	return v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");
}

/* A cgroup with a spinner in it. */
static int make_spinner(int i)
{
	char pid[32];

	snprintf(dirs[i], sizeof(dirs[i]), "%s/storm_skewfloor_%d_%d", root,
		 (int) getpid(), i);
	if (mkdir(dirs[i], 0755) < 0) {
		fprintf(stderr, "skew_floor: mkdir %s: %s\n", dirs[i], strerror(errno));
		dirs[i][0] = '\0';
		return -1;
	}
	nmade = i + 1;
	if ((spinners[i] = fork()) < 0)
		return -1;
	if (spinners[i] == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (volatile unsigned long x = 0;; x++)
			;
	}
	snprintf(pid, sizeof(pid), "%d", (int) spinners[i]);
	return write_at(dirs[i], "cgroup.procs", pid);
}

static void cleanup(void)
{
	for (int i = 0; i < nmade; i++) {
		if (spinners[i] > 0) {
			write_at(dirs[i], state_file(), state(false));
			kill(spinners[i], SIGKILL);
			waitpid(spinners[i], NULL, 0);
		}
		for (int k = 0; k < 100 && dirs[i][0] && rmdir(dirs[i]) < 0 &&
				errno == EBUSY; k++)
			usleep(10000);
	}
}

/* One simulated node: at each instant, its freezer written; done[k] when
 * the write returned (0: it failed). */
static void switcher(int i, uint64_t start, uint64_t q, int n, uint64_t *done)
{
	struct sched_param sp = { .sched_priority = RT_PRIO };
	char path[320];
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		_exit(3);
	snprintf(path, sizeof(path), "%s/%s", dirs[i], state_file());
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		_exit(4);
	for (int k = 0; k < n; k++) {
		uint64_t t = start + (uint64_t) k * q;
		struct timespec ts = { .tv_sec = t / 1000000000ull,
				       .tv_nsec = t % 1000000000ull };
		const char *v = state(k % 2 == 0);

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		done[k] = pwrite(fd, v, strlen(v), 0) < 0 ? 0 : now_ns();
	}
	(void) pwrite(fd, state(false), strlen(state(false)), 0);
	close(fd);
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void on_signal(int sig)
{
	for (int i = 0; i < nmade; i++)
		if (spinners[i] > 0)
			kill(spinners[i], SIGKILL);
	_exit(128 + sig);
}

int main(int argc, char **argv)
{
	int nproc = 16, opt, n, rc = 1, ok = 0;
	double window_s = 5;
	uint64_t q, start, *done = NULL, *spread = NULL;
	pid_t kids[MAX_PROC] = { 0 };
	char *end;

	while ((opt = getopt(argc, argv, "n:w:")) != -1) {
		if (opt == 'n')
			nproc = (int) strtol(optarg, &end, 10);
		else if (opt == 'w')
			window_s = strtod(optarg, &end);
		else
			end = (char *) "x";
		if (*end || nproc < 2 || nproc > MAX_PROC || window_s < 0.5 ||
		    window_s > 600) {
			fprintf(stderr, "usage: skew_floor [-n nproc] [-w window_s] quantum_us\n");
			return 2;
		}
	}
	if (optind != argc - 1 || (q = strtoull(argv[optind], &end, 10)) < 100 ||
	    *end || q > 10000000) {
		fprintf(stderr, "usage: skew_floor [-n nproc] [-w window_s] quantum_us\n");
		return 2;
	}
	q *= 1000;
	n = (int) (window_s * 1e9 / q);
	if (n > MAX_INSTANTS)
		n = MAX_INSTANTS;
	if (pick_root() < 0)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	done = mmap(NULL, sizeof(uint64_t) * nproc * n, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	spread = calloc(n, sizeof(*spread));
	if (done == MAP_FAILED || !spread) {
		fprintf(stderr, "skew_floor: out of memory\n");
		goto out;
	}
	for (int i = 0; i < nproc; i++)
		if (make_spinner(i) < 0)
			goto out;
	start = now_ns() + 300000000ull;	/* every switcher asleep by then */
	for (int i = 0; i < nproc; i++) {
		if ((kids[i] = fork()) < 0)
			goto out;
		if (kids[i] == 0)
			switcher(i, start, q, n, done + (size_t) i * n);
	}
	for (int i = 0; i < nproc; i++) {
		int st = 0;

		waitpid(kids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "skew_floor: switcher %d failed (status %d; SCHED_FIFO needs root)\n",
				i, st);
			goto out;
		}
	}
	for (int k = 0; k < n; k++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		bool all = true;

		for (int i = 0; i < nproc; i++) {
			uint64_t d = done[(size_t) i * n + k];

			all = all && d;
			lo = d < lo ? d : lo;
			hi = d > hi ? d : hi;
		}
		if (all)
			spread[ok++] = hi - lo;
	}
	if (!ok) {
		fprintf(stderr, "skew_floor: no instant where every write succeeded\n");
		goto out;
	}
	qsort(spread, ok, sizeof(*spread), cmp_u64);
	printf("{\"cgroup\": \"%s\", \"nproc\": %d, \"quantum_us\": %llu, \"instants\": %d, "
	       "\"skew_median_us\": %.1f, \"skew_p99_us\": %.1f, \"skew_max_us\": %.1f}\n",
	       v2 ? "v2" : "v1", nproc, (unsigned long long) (q / 1000), ok,
	       spread[ok / 2] / 1e3, spread[(int) ((ok - 1) * 0.99 + 0.5)] / 1e3,
	       spread[ok - 1] / 1e3);
	rc = 0;
out:
	for (int i = 0; i < nproc; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	cleanup();
	free(spread);
	if (done && done != MAP_FAILED)
		munmap(done, sizeof(uint64_t) * nproc * n);
	return rc;
}

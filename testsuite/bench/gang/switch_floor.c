/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * switch_floor: the least a gang switch costs on this host, measured the
 * way run-gang-bench measures STORM.
 *
 *     switch_floor [-c ncores] [-w window_s] [-x] quantum_us...
 *
 * No Slurm, no fabric, no node manager.  On each of ncores cores: two
 * CPU-bound processes (gang A and gang B) in their own freezer cgroups, and
 * one SCHED_FIFO thread pinned to that core that freezes the outgoing one
 * and thaws the incoming one at every quantum boundary.  The boundaries are
 * absolute CLOCK_MONOTONIC deadlines shared by all cores, as if a perfect
 * strobe arrived with no cost and no skew.  That is storm-nm's switch (v1
 * freezer.state, or cgroup.freeze on a pure cgroup v2 host; freeze first,
 * then thaw; real-time priority) with everything else STORM adds taken away:
 * the strobe, its acknowledgements, the COMPARE-AND-WRITE confirmation, the
 * machine manager's thread in slurmctld.
 *
 * Why it exists: the gang goal is at most 2% slowdown at a 2 ms quantum.
 * On a host where the switching and the jobs share the same cores, the
 * switch itself takes a share of every quantum; this program measures that
 * share, so the benchmark can print what any implementation could reach.
 *
 * -x runs each core's switching thread on the next core instead, so every
 * freeze and thaw crosses cores (a node manager's thread is not pinned to
 * the cores of the jobs it switches).
 *
 * Output: one JSON object on stdout.  slowdown = (CPU/s of A alone, B
 * frozen) / (CPU/s of A+B alternating), A alone measured before and after
 * the sweep (their mean), as run-gang-bench does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* CPU_SET, sched_setaffinity */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CORES 64
#define MAX_QUANTA 32

struct cg {
	char dir[256];
	int fd;			/* freeze control, open for writing */
	pid_t pid;		/* the spinner */
};

struct core {
	int cpu;
	struct cg gang[2];	/* A, B */
	uint64_t start_ns;	/* first deadline */
	uint64_t quantum_ns;
	uint64_t end_ns;
	uint64_t switches;
	uint64_t late_max_ns;	/* worst wake-up after a deadline */
	int err;		/* errno of the first failed write */
	pthread_t tid;
};

static bool v2;			/* cgroup.freeze instead of freezer.state */
static bool cross;		/* -x: switch from the next core */
static const char *root;
static struct core *cores;	/* for the signal handler */
static int ncores_made;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

static int cg_freeze(struct cg *g, bool frozen)
{
	const char *v = v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");

	if (pwrite(g->fd, v, strlen(v), 0) < 0)
		return -errno;
	return 0;
}

/* Pick the freezer the way storm-nm does: the v1 freezer hierarchy when it
 * is mounted, else the cgroup v2 root (cgroup.freeze needs no controller). */
static int pick_root(void)
{
	struct stat st;

	if (stat("/sys/fs/cgroup/freezer/freezer.state", &st) == 0 ||
	    stat("/sys/fs/cgroup/freezer/cgroup.procs", &st) == 0) {
		root = "/sys/fs/cgroup/freezer";
		return 0;
	}
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		root = "/sys/fs/cgroup";
		v2 = true;
		return 0;
	}
	fprintf(stderr, "switch_floor: no cgroup v1 freezer and no cgroup v2 at /sys/fs/cgroup\n");
	return -1;
}

static void cg_destroy(struct cg *g)
{
	if (g->pid > 0) {
		if (g->fd >= 0)
			cg_freeze(g, false);	/* a frozen task cannot die */
		kill(g->pid, SIGKILL);
		waitpid(g->pid, NULL, 0);
		g->pid = 0;
	}
	if (g->fd >= 0) {
		close(g->fd);
		g->fd = -1;
	}
	if (g->dir[0]) {
		/* the cgroup empties once the killed task is reaped */
		for (int i = 0; i < 100 && rmdir(g->dir) < 0 && errno == EBUSY; i++)
			usleep(10000);
		g->dir[0] = '\0';
	}
}

static int cg_create(struct cg *g, int cpu, const char *tag)
{
	char path[320], pid[32];
	int rc;

	g->fd = -1;
	g->pid = 0;
	snprintf(g->dir, sizeof(g->dir), "%s/storm_floor_%d_%s%d", root,
		 (int) getpid(), tag, cpu);
	if (mkdir(g->dir, 0755) < 0) {
		fprintf(stderr, "switch_floor: mkdir %s: %s\n", g->dir, strerror(errno));
		g->dir[0] = '\0';
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", g->dir,
		 v2 ? "cgroup.freeze" : "freezer.state");
	if ((g->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "switch_floor: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	g->pid = fork();
	if (g->pid < 0) {
		fprintf(stderr, "switch_floor: fork: %s\n", strerror(errno));
		g->pid = 0;
		return -1;
	}
	if (g->pid == 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			_exit(1);
		for (volatile unsigned long x = 0;; x++)
			;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", g->dir);
	snprintf(pid, sizeof(pid), "%d", (int) g->pid);
	if ((rc = write_str(path, pid)) < 0) {
		fprintf(stderr, "switch_floor: %s: %s\n", path, strerror(-rc));
		return -1;
	}
	return 0;
}

static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int) pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static uint64_t gang_cpu(struct core *c, int n, int which)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if (which < 0 || which == k)
				s += cpu_ns(c[i].gang[k].pid);
	return s;
}

static void *switcher(void *arg)
{
	struct core *c = arg;
	uint64_t t = c->start_ns;
	int cur = 0;		/* A runs first */

	while (t < c->end_ns) {
		struct timespec ts = { .tv_sec = t / 1000000000ull,
				       .tv_nsec = t % 1000000000ull };
		uint64_t late;
		int rc;

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		late = now_ns() - t;
		if (late > c->late_max_ns)
			c->late_max_ns = late;
		/* freeze first, then thaw: as storm-nm, never both at once */
		if ((rc = cg_freeze(&c->gang[cur], true)) < 0 ||
		    (rc = cg_freeze(&c->gang[!cur], false)) < 0) {
			c->err = -rc;
			break;
		}
		cur = !cur;
		c->switches++;
		t += c->quantum_ns;
	}
	return NULL;
}

static int start_switchers(struct core *c, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_attr_t at;
		struct sched_param sp = { .sched_priority = 50 };
		cpu_set_t set;
		int rc;

		CPU_ZERO(&set);
		CPU_SET(cross ? (c[i].cpu + 1) % n : c[i].cpu, &set);
		pthread_attr_init(&at);
		pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&at, SCHED_FIFO);
		pthread_attr_setschedparam(&at, &sp);
		pthread_attr_setaffinity_np(&at, sizeof(set), &set);
		rc = pthread_create(&c[i].tid, &at, switcher, &c[i]);
		pthread_attr_destroy(&at);
		if (rc) {
			fprintf(stderr, "switch_floor: SCHED_FIFO thread on cpu %d: %s (run as root)\n",
				c[i].cpu, strerror(rc));
			for (int k = 0; k < i; k++)
				c[k].end_ns = 0;	/* stop at the next deadline */
			for (int k = 0; k < i; k++)
				pthread_join(c[k].tid, NULL);
			return -1;
		}
	}
	return 0;
}

/* CPU/s of A alone (B frozen on every core) over window_ns. */
static int alone_rate(struct core *c, int n, uint64_t window_ns, double *rate)
{
	uint64_t t0, t1, a0, a1;

	for (int i = 0; i < n; i++)
		if (cg_freeze(&c[i].gang[1], true) < 0 || cg_freeze(&c[i].gang[0], false) < 0)
			return -1;
	usleep(200000);
	a0 = gang_cpu(c, n, 0);
	t0 = now_ns();
	usleep(window_ns / 1000);
	a1 = gang_cpu(c, n, 0);
	t1 = now_ns();
	*rate = (double) (a1 - a0) / (double) (t1 - t0);
	return 0;
}

/* CPU/s of A and B alternating every quantum_ns over window_ns. */
static int pair_rate(struct core *c, int n, uint64_t quantum_ns, uint64_t window_ns,
		     double *rate, uint64_t *switches, uint64_t *late_max)
{
	uint64_t start = now_ns() + 50000000ull, warm = 200000000ull;
	uint64_t t0, t1, s0, s1;
	int rc = 0;

	for (int i = 0; i < n; i++) {
		c[i].start_ns = start;
		c[i].quantum_ns = quantum_ns;
		c[i].end_ns = start + warm + window_ns + 100000000ull;
		c[i].switches = c[i].late_max_ns = 0;
		c[i].err = 0;
	}
	if (start_switchers(c, n) < 0)
		return -1;
	usleep((start + warm - now_ns()) / 1000);
	s0 = gang_cpu(c, n, -1);
	t0 = now_ns();
	usleep(window_ns / 1000);
	s1 = gang_cpu(c, n, -1);
	t1 = now_ns();
	*switches = 0;
	*late_max = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(c[i].tid, NULL);
		*switches += c[i].switches;
		if (c[i].late_max_ns > *late_max)
			*late_max = c[i].late_max_ns;
		if (c[i].err) {
			fprintf(stderr, "switch_floor: freeze on cpu %d: %s\n",
				c[i].cpu, strerror(c[i].err));
			rc = -1;
		}
	}
	*rate = (double) (s1 - s0) / (double) (t1 - t0);
	return rc;
}

/* Interrupted: thaw and kill the spinners (a frozen task cannot die, and
 * would stay behind in its cgroup), then leave.  Only async-signal-safe
 * calls; the cgroup directories are left for the next run to see. */
static void on_signal(int sig)
{
	for (int i = 0; i < ncores_made; i++)
		for (int k = 0; k < 2; k++) {
			struct cg *g = &cores[i].gang[k];

			if (g->fd >= 0)
				cg_freeze(g, false);
			if (g->pid > 0)
				kill(g->pid, SIGKILL);
		}
	_exit(128 + sig);
}

static void usage(void)
{
	fprintf(stderr, "usage: switch_floor [-c ncores] [-w window_s] [-x] quantum_us...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct core c[MAX_CORES];
	uint64_t quanta[MAX_QUANTA];
	int ncores = 2, nq = 0, opt, rc = 1, made = 0;
	double window_s = 6, before = 0, after = 0;
	double rate[MAX_QUANTA];
	uint64_t sw[MAX_QUANTA], late[MAX_QUANTA];

	while ((opt = getopt(argc, argv, "c:w:x")) != -1) {
		char *end;

		switch (opt) {
		case 'c':
			ncores = (int) strtol(optarg, &end, 10);
			if (*end || ncores < 1 || ncores > MAX_CORES)
				usage();
			break;
		case 'w':
			window_s = strtod(optarg, &end);
			if (*end || window_s < 0.5 || window_s > 600)
				usage();
			break;
		case 'x':
			cross = true;
			break;
		default:
			usage();
		}
	}
	for (int i = optind; i < argc; i++) {
		char *end;
		long q = strtol(argv[i], &end, 10);

		if (*end || q < 50 || q > 60000000 || nq == MAX_QUANTA)
			usage();
		quanta[nq++] = (uint64_t) q * 1000ull;
	}
	if (!nq)
		usage();
	if (ncores > sysconf(_SC_NPROCESSORS_ONLN)) {
		fprintf(stderr, "switch_floor: -c %d but only %ld CPUs online\n",
			ncores, sysconf(_SC_NPROCESSORS_ONLN));
		return 2;
	}
	if (pick_root() < 0)
		return 1;
	memset(c, 0, sizeof(c));
	for (int i = 0; i < ncores; i++) {
		c[i].cpu = i;
		c[i].gang[0].fd = c[i].gang[1].fd = -1;
	}
	cores = c;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	for (made = 0; made < ncores; made++) {
		ncores_made = made + 1;
		if (cg_create(&c[made].gang[0], made, "a") < 0 ||
		    cg_create(&c[made].gang[1], made, "b") < 0) {
			made++;
			goto out;
		}
	}

	uint64_t win = (uint64_t) (window_s * 1e9);

	if (alone_rate(c, ncores, win, &before) < 0)
		goto out;
	for (int q = 0; q < nq; q++)
		if (pair_rate(c, ncores, quanta[q], win, &rate[q], &sw[q], &late[q]) < 0)
			goto out;
	if (alone_rate(c, ncores, win, &after) < 0)
		goto out;

	double alone = (before + after) / 2;

	printf("{\"cgroup\": \"%s\", \"ncores\": %d, \"cross\": %s, \"window_s\": %.1f, "
	       "\"alone_before\": %.6f, \"alone_after\": %.6f, \"points\": [",
	       v2 ? "v2" : "v1", ncores, cross ? "true" : "false", window_s,
	       before, after);
	for (int q = 0; q < nq; q++)
		printf("%s{\"quantum_us\": %llu, \"pair_cpu_per_s\": %.6f, "
		       "\"slowdown\": %.6f, \"switches\": %llu, \"late_max_us\": %.1f}",
		       q ? ", " : "", (unsigned long long) (quanta[q] / 1000), rate[q],
		       alone / rate[q], (unsigned long long) sw[q], late[q] / 1e3);
	printf("]}\n");
	rc = 0;
out:
	for (int i = 0; i < made; i++)
		for (int k = 0; k < 2; k++)
			cg_destroy(&c[i].gang[k]);
	return rc;
}

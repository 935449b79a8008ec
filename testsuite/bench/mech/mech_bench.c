/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mech_bench - STORM mechanisms vs the Slurm way vs memcpy, side by side.
 *
 *   mech_bench [-p provider] [-n maxcaw] [-r reps] [-c cawreps] [--sweep]
 *              [-a caw_arity] [-b caw_busy_poll_us]
 *   mech_bench [-p provider] [-r reps] -x n chunk window arity
 *
 * -a/-b change the tree arity and the progress thread's busy-poll of the
 * COMPARE-AND-WRITE runs only (experiments; the JSON keeps the defaults'
 * name).  -x times one XFER-AND-SIGNAL configuration and prints its
 * median in ms.
 *
 * Prints one JSON document on stdout (run-mech-bench turns it into the
 * table, doc/bench/mech.json and doc/bench/mech.png).
 *  - COMPARE-AND-WRITE latency (compare-only, the strobe ack) from a root
 *    outside the set, vs endpoints;
 *  - XFER-AND-SIGNAL of 12 MiB from a root outside the set to 1..16
 *    endpoints, time until the root knows all members hold it;
 *  - the Slurm way: TCP socket tree, fanout 8, stop-and-wait per 8 MiB
 *    block (each block is received whole, forwarded, acked up the tree
 *    before the next one starts), same processes count;
 *  - the memcpy ceiling: k private copies of 12 MiB in one process;
 *  - the floors of this host, without the library: a loopback-TCP gather
 *    of 1, 3, 7 and 15 sleeping processes (the least a COMPARE-AND-WRITE's
 *    serializer does), and 16 copies of 12 MiB with one thread per CPU
 *    (run-mech-bench turns them into bounds on the goals' ratios).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define XLEN (12u << 20)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, n, sizeof(double), cmpd);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

/* ------------------------------------------------------------ CAW */
static int caw_arity;	/* -a: tree arity of the CAW runs (0: default) */
static int caw_busy_us = -1;	/* -b: busy-poll of the CAW runs (-1: default) */

static void bench_caw(const char *prov, int n, int reps, bool first)
{
	storm_cfg_t cfg;
	struct harness h;
	h_cfg(&cfg, prov);
	cfg.timeout_ms = 10000;
	if (caw_arity)
		cfg.arity = caw_arity;
	if (caw_busy_us >= 0)
		cfg.busy_poll_us = caw_busy_us;
	if (h_start(&h, n, &cfg)) {
		fprintf(stderr, "caw %d: start failed\n", n);
		h_stop(&h);
		return;
	}
	storm_set_t set;
	storm_set_clear(&set);
	storm_set_range(&set, 0, n - 1);
	double *v = calloc(reps, sizeof(double));
	for (int i = 0; i < 20; i++)
		storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, NULL);
	int bad = 0;
	for (int i = 0; i < reps; i++) {
		double t0 = now_us();
		int rc = storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, NULL);
		v[i] = now_us() - t0;
		bad += rc != 1;
	}
	double med = pct(v, reps, 0.5), p99 = pct(v, reps, 0.99);
	printf("%s{\"n\": %d, \"median_us\": %.1f, \"p99_us\": %.1f, "
	       "\"failed\": %d}", first ? "" : ",\n    ", n, med, p99, bad);
	fflush(stdout);
	fprintf(stderr, "caw n=%d median %.1f us p99 %.1f us\n", n, med, p99);
	free(v);
	h_stop(&h);
}

/* ----------------------------------------------------------- XFER */
static double bench_xas_one(const char *prov, int n, int reps, size_t chunk,
			    int window, int arity)
{
	storm_cfg_t cfg;
	struct harness h;
	h_cfg(&cfg, prov);
	cfg.timeout_ms = 20000;
	if (chunk) cfg.chunk = chunk;
	if (window) cfg.window = window;
	if (arity) cfg.arity = arity;
	if (h_start(&h, n, &cfg)) {
		h_stop(&h);
		return -1;
	}
	storm_set_t set;
	storm_set_clear(&set);
	storm_set_range(&set, 0, n - 1);
	uint8_t *buf = malloc(XLEN);
	for (size_t i = 0; i < XLEN; i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	double *v = calloc(reps, sizeof(double));
	/* warm up: connections, receive buffers and regions touched */
	storm_xfer_sync(h.ctx, &set, buf, XLEN, 0, 1, NULL);
	int ok = 0;
	for (int i = 0; i < reps; i++) {
		double t0 = now_us();
		int rc = storm_xfer_sync(h.ctx, &set, buf, XLEN, 0, 1, NULL);
		double dt = now_us() - t0;
		if (rc == 0)
			v[ok++] = dt;
	}
	/* integrity, once */
	h_cmd(&h, -1, H_SUM, 0, XLEN, 0, 0, 0, 0);
	uint64_t want = h_sum(buf, XLEN);
	for (int r = 0; r < n; r++)
		if (h.sh->res[r].sum != want)
			ok = 0;
	double med = ok ? pct(v, ok, 0.5) : -1;
	free(v);
	free(buf);
	h_stop(&h);
	return med;
}

/* ------------------------------------------------ TCP tree (Slurm) */
#define TCP_BLOCK (8u << 20)
#define TCP_FANOUT 8

static int rd_full(int fd, void *p, size_t len)
{
	uint8_t *b = p;
	while (len) {
		ssize_t r = read(fd, b, len);
		if (r <= 0)
			return -1;
		b += r;
		len -= r;
	}
	return 0;
}

static int wr_full(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	while (len) {
		ssize_t r = write(fd, b, len);
		if (r <= 0)
			return -1;
		b += r;
		len -= r;
	}
	return 0;
}

/* A listening socket on an ephemeral loopback port (filled into *a);
 * -1 on error. */
static int listen_loopback(int backlog, struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t sl = sizeof(*a);

	*a = (struct sockaddr_in){ .sin_family = AF_INET };
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && (bind(fd, (void *)a, sizeof(*a)) || listen(fd, backlog) ||
			getsockname(fd, (void *)a, &sl))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* position p (0 = root) has children p*F+1 .. p*F+F */
static void tcp_node(int pos, int nodes, int *lfd, int *ports, int reps)
{
	int cfd[TCP_FANOUT], nc = 0;
	uint8_t *buf = malloc(TCP_BLOCK);
	memset(buf, 0, TCP_BLOCK);
	int pfd = accept(lfd[pos], NULL, NULL);
	for (int i = 1; i <= TCP_FANOUT; i++) {
		int c = pos * TCP_FANOUT + i;
		if (c >= nodes)
			break;
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(ports[c]) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		while (connect(fd, (void *)&a, sizeof(a)))
			usleep(1000);
		cfd[nc++] = fd;
	}
	for (;;) {
		uint64_t len;
		if (rd_full(pfd, &len, 8))
			break;
		if (rd_full(pfd, buf, len))
			break;
		/* forward the whole block, then wait for the subtree */
		for (int i = 0; i < nc; i++) {
			wr_full(cfd[i], &len, 8);
			wr_full(cfd[i], buf, len);
		}
		for (int i = 0; i < nc; i++) {
			char ack;
			rd_full(cfd[i], &ack, 1);
		}
		char ack = 1;
		wr_full(pfd, &ack, 1);
	}
	_exit(0);
}

static double bench_tcp_tree(int n, int reps)
{
	int nodes = n + 1;
	int lfd[H_MAX + 1], ports[H_MAX + 1];
	pid_t pid[H_MAX + 1];

	for (int i = 1; i < nodes; i++) {
		struct sockaddr_in a;
		lfd[i] = listen_loopback(16, &a);
		ports[i] = ntohs(a.sin_port);
	}
	for (int i = 1; i < nodes; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			tcp_node(i, nodes, lfd, ports, reps);
	}
	/* root = position 0, this process */
	int cfd[TCP_FANOUT], nc = 0;
	for (int i = 1; i <= TCP_FANOUT && i < nodes; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(ports[i]) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cfd[nc] = socket(AF_INET, SOCK_STREAM, 0);
		while (connect(cfd[nc], (void *)&a, sizeof(a)))
			usleep(1000);
		nc++;
	}
	uint8_t *src = malloc(XLEN);
	memset(src, 3, XLEN);
	double *v = calloc(reps + 1, sizeof(double));
	for (int r = 0; r <= reps; r++) {
		double t0 = now_us();
		for (size_t off = 0; off < XLEN; off += TCP_BLOCK) {
			uint64_t len = XLEN - off < TCP_BLOCK ? XLEN - off
							      : TCP_BLOCK;
			for (int i = 0; i < nc; i++) {
				wr_full(cfd[i], &len, 8);
				wr_full(cfd[i], src + off, len);
			}
			for (int i = 0; i < nc; i++) {
				char ack;
				rd_full(cfd[i], &ack, 1);
			}
		}
		v[r] = now_us() - t0;   /* r == 0 is the warm-up */
	}
	for (int i = 0; i < nc; i++)
		close(cfd[i]);
	for (int i = 1; i < nodes; i++) {
		waitpid(pid[i], NULL, 0);
		close(lfd[i]);
	}
	double med = pct(v + 1, reps, 0.5);
	free(v);
	free(src);
	return med;
}

/* ----------------------------------------------------------- memcpy */
struct mc_job {
	const uint8_t *src;
	uint8_t **dst;
	int first, k, step;
};

static void *mc_worker(void *arg)
{
	struct mc_job *j = arg;
	for (int i = j->first; i < j->k; i += j->step)
		memcpy(j->dst[i], j->src, XLEN);
	return NULL;
}

/* k private copies of 12 MiB, by `threads` threads (1: the single-process
 * ceiling; every CPU: what any transport, which must write each
 * destination's bytes at least once, cannot beat on this host). */
static double bench_memcpy(int k, int reps, int threads)
{
	uint8_t *src = malloc(XLEN), *dst[H_MAX];
	pthread_t th[H_MAX];
	struct mc_job jobs[H_MAX];

	if (threads < 1)
		threads = 1;
	if (threads > k)
		threads = k;
	memset(src, 5, XLEN);
	for (int i = 0; i < k; i++) {
		dst[i] = malloc(XLEN);
		memset(dst[i], 0, XLEN);   /* pre-touched, like the regions */
	}
	double *v = calloc(reps, sizeof(double));
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		bool started[H_MAX] = { false };
		for (int t = 1; t < threads; t++) {
			jobs[t] = (struct mc_job){ src, dst, t, k, threads };
			started[t] = !pthread_create(&th[t], NULL, mc_worker,
						     &jobs[t]);
		}
		/* share 0 here, and any share whose thread did not start */
		jobs[0] = (struct mc_job){ src, dst, 0, k, threads };
		mc_worker(&jobs[0]);
		for (int t = 1; t < threads; t++) {
			if (started[t])
				pthread_join(th[t], NULL);
			else
				mc_worker(&jobs[t]);
		}
		v[r] = now_us() - t0;
	}
	double med = pct(v, reps, 0.5);
	for (int i = 0; i < k; i++)
		free(dst[i]);
	free(src);
	free(v);
	return med;
}

/* ------------------------------------------------------------ floors */
/*
 * The cheapest "every member wakes, runs and answers" on this host: a root
 * writes one byte to each of m sleeping processes over loopback TCP (the
 * transport under tcp;ofi_rxm) and waits for their m answers, with a pause
 * between rounds so that the members are asleep again, as between two
 * COMPARE-AND-WRITEs.  No library, no tree, no header: a lower bound for
 * the gather any COMPARE-AND-WRITE over m+1 endpoints does at its
 * serializer.
 */
static double bench_gather_floor(int m, int reps)
{
	struct sockaddr_in a;
	int l = listen_loopback(H_MAX, &a), one = 1;
	int cfd[H_MAX];
	pid_t pid[H_MAX];
	struct pollfd pf[H_MAX];
	double *v = calloc(reps, sizeof(double)), med = -1;
	int ok = 0, made = 0;

	if (l < 0 || !v)
		goto out;
	for (; made < m; made++) {
		pid[made] = fork();
		if (pid[made] < 0)
			goto out;
		if (pid[made] == 0) {
			int fd = socket(AF_INET, SOCK_STREAM, 0);
			char c;
			if (fd < 0 || connect(fd, (void *)&a, sizeof(a)))
				_exit(1);
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			while (read(fd, &c, 1) == 1 && write(fd, &c, 1) == 1)
				;
			_exit(0);
		}
		cfd[made] = accept(l, NULL, NULL);
		if (cfd[made] < 0) {
			kill(pid[made], SIGKILL);
			waitpid(pid[made], NULL, 0);
			goto out;
		}
		setsockopt(cfd[made], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pf[made] = (struct pollfd){ .fd = cfd[made], .events = POLLIN };
	}
	for (int r = 0; r <= reps; r++) {
		char c = 1;
		int got = 0;
		double t0 = now_us();
		for (int i = 0; i < m; i++)
			if (write(cfd[i], &c, 1) != 1)
				goto out;
		while (got < m) {
			if (poll(pf, (nfds_t)m, 5000) <= 0)
				goto out;
			for (int i = 0; i < m; i++)
				if ((pf[i].revents & POLLIN) && read(cfd[i], &c, 1) == 1)
					got++;
		}
		if (r)			/* round 0 warms up */
			v[ok++] = now_us() - t0;
		usleep(200);
	}
	med = pct(v, ok, 0.5);
out:
	for (int i = 0; i < made; i++) {
		close(cfd[i]);
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	if (l >= 0)
		close(l);
	free(v);
	return med;
}

int main(int argc, char **argv)
{
	const char *prov = "tcp;ofi_rxm";
	int maxcaw = 32, reps = 7, careps = 300;
	bool sweep = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-p") && i + 1 < argc) prov = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc) maxcaw = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sweep")) sweep = true;
		else if (!strcmp(argv[i], "-c") && i + 1 < argc) careps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-a") && i + 1 < argc) caw_arity = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc) caw_busy_us = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-x") && i + 4 < argc) {
			/* one XFER point: -x n chunk window arity */
			int n = atoi(argv[i + 1]);
			double t = bench_xas_one(prov, n, reps,
						 strtoul(argv[i + 2], NULL, 0),
						 atoi(argv[i + 3]),
						 atoi(argv[i + 4]));
			printf("%.2f\n", t / 1e3);
			return 0;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (!h_provider_ok(prov)) {
		fprintf(stderr, "provider %s not available\n", prov);
		return 2;
	}
	printf("{\n  \"provider\": \"%s\",\n  \"xfer_bytes\": %u,\n", prov, XLEN);
	printf("  \"defaults\": {\"chunk\": %u, \"window\": %d, \"arity\": %d},\n",
	       STORM_DEF_CHUNK, STORM_DEF_WINDOW, STORM_DEF_ARITY);
	printf("  \"caw\": [");
	int ns[] = { 2, 4, 8, 16, 32 };
	bool first = true;
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		if (ns[i] > maxcaw)
			break;
		bench_caw(prov, ns[i], careps, first);
		first = false;
	}
	printf("],\n  \"xfer\": [");
	int xs[] = { 1, 2, 4, 8, 16 };
	for (unsigned i = 0; i < 5; i++) {
		int n = xs[i];
		double xas = bench_xas_one(prov, n, reps, 0, 0, 0);
		double tcp = bench_tcp_tree(n, reps);
		double mc = bench_memcpy(n, reps, 1);
		fprintf(stderr, "xfer n=%d storm %.1f ms tcp-tree %.1f ms "
			"memcpy %.1f ms\n", n, xas / 1e3, tcp / 1e3, mc / 1e3);
		printf("%s{\"n\": %d, \"storm_ms\": %.2f, \"tcp_tree_ms\": %.2f, "
		       "\"memcpy_ms\": %.2f, \"storm_MBps_per_ep\": %.0f, "
		       "\"tcp_tree_MBps_per_ep\": %.0f}", i ? ",\n    " : "", n,
		       xas / 1e3, tcp / 1e3, mc / 1e3,
		       xas > 0 ? XLEN / xas : 0, XLEN / tcp);
		fflush(stdout);
	}
	printf("]");
	/* What this host allows any implementation: the gather a
	 * COMPARE-AND-WRITE's serializer does (1 member for 2 endpoints, 15
	 * for 16) and the copy work of a 16-endpoint XFER with every CPU. */
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int gm[] = { 1, 3, 7, 15 };
	printf(",\n  \"floor\": {\"ncpu\": %d, \"gather_tcp\": [", ncpu);
	for (unsigned i = 0; i < sizeof(gm) / sizeof(gm[0]); i++) {
		double g = bench_gather_floor(gm[i], careps * 5);
		fprintf(stderr, "floor: TCP gather of %d sleeping members %.1f us\n",
			gm[i], g);
		printf("%s{\"members\": %d, \"median_us\": %.1f}", i ? ", " : "",
		       gm[i], g);
	}
	double mc16 = bench_memcpy(16, reps, ncpu);
	fprintf(stderr, "floor: memcpy 16 x 12 MiB with %d threads %.1f ms\n",
		ncpu, mc16 / 1e3);
	printf("], \"memcpy16_all_cpus_ms\": %.2f}", mc16 / 1e3);
	fflush(stdout);
	if (sweep) {
		struct { size_t chunk; int w, k; } sw[] = {
			{ 128 << 10, 4, 4 }, { 256 << 10, 4, 4 },
			{ 512 << 10, 4, 4 }, { 1 << 20, 4, 4 }, { 2 << 20, 4, 4 },
			{ 512 << 10, 1, 4 }, { 512 << 10, 2, 4 },
			{ 512 << 10, 8, 4 },
			{ 512 << 10, 4, 2 }, { 512 << 10, 4, 3 },
			{ 512 << 10, 4, 8 }, { 512 << 10, 4, 16 },
		};
		printf(",\n  \"sweep16\": [");
		for (unsigned i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
			double t = bench_xas_one(prov, 16, reps, sw[i].chunk,
						 sw[i].w, sw[i].k);
			fprintf(stderr, "sweep chunk %zu window %d arity %d: "
				"%.1f ms\n", sw[i].chunk, sw[i].w, sw[i].k,
				t / 1e3);
			printf("%s{\"chunk\": %zu, \"window\": %d, \"arity\": %d, "
			       "\"ms\": %.2f}", i ? ",\n    " : "", sw[i].chunk,
			       sw[i].w, sw[i].k, t / 1e3);
			fflush(stdout);
		}
		printf("]");
	}
	printf("\n}\n");
	return 0;
}

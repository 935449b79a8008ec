/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_workload.c - the RMS gang-scheduling study's micro-benchmark, for
 * admins to evaluate time-sharing policies on their own cluster.
 *
 * Each iteration walks an array with a large prime stride (so that the
 * cache and TLB see the memory footprint, as a real code's would), reads an
 * element, computes on it, writes it back and copies it into a
 * communication buffer; every --exchange-every iterations the ranks do an
 * MPI_Alltoall of that buffer.  --exchange-every 0 makes it a purely
 * CPU-bound job.  Rank 0 prints one JSON line with the run time.
 *
 *   storm-workload [--array-mb N] [--compute N] [--iters N]
 *                  [--exchange-every N] [--buf-kb N] [--label TEXT]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

/* A prime far larger than any cache line or page stride. */
#define STRIDE 1000003ULL

typedef struct {
	uint64_t array_mb;	/* per-rank array: the memory footprint */
	uint64_t compute;	/* arithmetic steps per element visited */
	uint64_t iters;		/* elements visited */
	uint64_t exchange_every;	/* iterations between all-to-alls (0: none) */
	uint64_t buf_kb;	/* all-to-all buffer per rank */
	const char *label;
} params_t;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || !*s || *end || *s == '-') ? -1 : 0;
}

static int parse_args(int argc, char **argv, params_t *p)
{
	static const struct option opts[] = {
		{ "array-mb", required_argument, NULL, 'a' },
		{ "compute", required_argument, NULL, 'c' },
		{ "iters", required_argument, NULL, 'i' },
		{ "exchange-every", required_argument, NULL, 'e' },
		{ "buf-kb", required_argument, NULL, 'b' },
		{ "label", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	p->array_mb = 64;
	p->compute = 200;
	p->iters = 2000000;
	p->exchange_every = 0;
	p->buf_kb = 64;
	p->label = "";
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		uint64_t *dst = NULL;

		switch (c) {
		case 'a': dst = &p->array_mb; break;
		case 'c': dst = &p->compute; break;
		case 'i': dst = &p->iters; break;
		case 'e': dst = &p->exchange_every; break;
		case 'b': dst = &p->buf_kb; break;
		case 'l': p->label = optarg; continue;
		default: return -1;
		}
		if (parse_u64(optarg, dst))
			return -1;
	}
	if (optind != argc || !p->array_mb || !p->iters || !p->buf_kb ||
	    p->array_mb > (1ULL << 20) || p->buf_kb > (1ULL << 20))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	params_t p;
	int rank, size, rc = 0;
	uint64_t n, idx = 0, *array = NULL;
	size_t buf_words, per_rank;
	uint64_t *sendbuf = NULL, *recvbuf = NULL, checksum = 0;
	double t0, t1, elapsed, slowest;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (parse_args(argc, argv, &p)) {
		if (rank == 0)
			fprintf(stderr,
				"usage: storm-workload [--array-mb N] [--compute N] [--iters N] "
				"[--exchange-every N] [--buf-kb N] [--label TEXT]\n");
		MPI_Finalize();
		return 2;
	}

	n = p.array_mb * (1ULL << 20) / sizeof(uint64_t);
	per_rank = p.buf_kb * 1024 / sizeof(uint64_t) / (size_t) size;
	if (!per_rank)
		per_rank = 1;
	buf_words = per_rank * (size_t) size;
	array = malloc(n * sizeof(*array));
	sendbuf = malloc(buf_words * sizeof(*sendbuf));
	recvbuf = malloc(buf_words * sizeof(*recvbuf));
	if (!array || !sendbuf || !recvbuf) {
		fprintf(stderr, "storm-workload: rank %d: out of memory for %" PRIu64 " MiB\n",
			rank, p.array_mb);
		rc = 1;
		goto done;
	}
	/* Touch every page now, so the timed loop measures steady state. */
	for (uint64_t i = 0; i < n; i++)
		array[i] = i ^ (uint64_t) rank;
	memset(sendbuf, 0, buf_words * sizeof(*sendbuf));

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	for (uint64_t it = 0; it < p.iters; it++) {
		uint64_t v = array[idx];

		for (uint64_t k = 0; k < p.compute; k++)
			v = v * 6364136223846793005ULL + 1442695040888963407ULL;
		array[idx] = v;
		sendbuf[it % buf_words] = v;
		idx = (idx + STRIDE) % n;
		if (p.exchange_every && (it + 1) % p.exchange_every == 0)
			MPI_Alltoall(sendbuf, (int) per_rank, MPI_UINT64_T,
				     recvbuf, (int) per_rank, MPI_UINT64_T,
				     MPI_COMM_WORLD);
	}
	t1 = now();
	elapsed = t1 - t0;
	for (uint64_t i = 0; i < n; i += 4096)
		checksum += array[i];
	MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
		   MPI_COMM_WORLD);
	if (rank == 0)
		printf("{\"label\": \"%s\", \"ranks\": %d, \"seconds\": %.6f, "
		       "\"iters\": %" PRIu64 ", \"compute\": %" PRIu64
		       ", \"array_mb\": %" PRIu64 ", \"exchange_every\": %" PRIu64
		       ", \"buf_kb\": %" PRIu64 ", \"checksum\": %" PRIu64 "}\n",
		       p.label, size, slowest, p.iters, p.compute, p.array_mb,
		       p.exchange_every, p.buf_kb, checksum);
done:
	free(array);
	free(sendbuf);
	free(recvbuf);
	if (rc)
		MPI_Abort(MPI_COMM_WORLD, rc);
	MPI_Finalize();
	return rc;
}

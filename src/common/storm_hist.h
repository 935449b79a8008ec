/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_hist.h - fixed-bucket histograms of durations, kept where the
 * durations are measured (the Machine Manager's strobes and confirmations,
 * a relay's broadcasts) and exported as they are for Prometheus.
 *
 * Fixed bounds and plain counters: observing a value is a short scan and
 * an increment, with nothing to allocate or lock, so the Machine Manager
 * can afford it every quantum.  The bounds live here once: the side that
 * counts and the side that writes the status (storm_status.h) agree on
 * them by construction.  A histogram on the wire (storm_report.h) or in
 * memory holds per-bucket counts; the status file holds them cumulative,
 * as Prometheus' `le` buckets are.  No Slurm headers.
 */
#ifndef STORM_HIST_H
#define STORM_HIST_H

#include <stdint.h>

/* Buckets, the last one +Inf: bounds are one fewer. */
#define STORM_HIST_MAX 16

typedef struct storm_hist {
	uint64_t count[STORM_HIST_MAX];	/* per bucket, not cumulative */
	uint64_t sum_us;
} storm_hist_t;

/* The Machine Manager's strobe and confirmation: 10 us to 100 ms, in
 * steps of 1, 2.5 and 5, from a fabric that answers in microseconds to a
 * quantum stalled by a loaded host. */
static inline const uint64_t *storm_hist_latency_le_us(int *n)
{
	static const uint64_t le[] = {
		10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
		50000, 100000,
	};

	*n = (int) (sizeof(le) / sizeof(le[0]));
	return le;
}

/* A broadcast as its relay times it, from sending the manifest on to the
 * go-ahead (or the failure): 1 ms to a minute. */
static inline const uint64_t *storm_hist_bcast_le_us(int *n)
{
	static const uint64_t le[] = {
		1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
		1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
	};

	*n = (int) (sizeof(le) / sizeof(le[0]));
	return le;
}

/* Count v (us) in h, whose bounds are le[0..n-1] (n < STORM_HIST_MAX). */
static inline void storm_hist_observe(storm_hist_t *h, const uint64_t *le,
				      int n, uint64_t v)
{
	int b = 0;

	while (b < n && v > le[b])
		b++;
	h->count[b]++;
	h->sum_us += v;
}

#endif /* STORM_HIST_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_time.h - the clocks as plain numbers: nanoseconds (or micro-,
 * milliseconds) of CLOCK_MONOTONIC or CLOCK_REALTIME.
 *
 * Inline, in a header, so that the mechanism library (which takes no
 * Slurm headers and links no other STORM library), the node manager,
 * stormctl and the plugins read the clock the same way without one more
 * library to link twice into a plugin.  No Slurm headers.
 *
 * Which clock: intervals and deadlines on one host run on
 * CLOCK_MONOTONIC; instants another host compares (announced switches,
 * clock offsets) on CLOCK_REALTIME.
 */
#ifndef STORM_TIME_H
#define STORM_TIME_H

#include <stdint.h>
#include <time.h>

/* The clock clk in nanoseconds; 0 if clk cannot be read (an invalid id:
 * the two clocks used here cannot fail). */
static inline uint64_t storm_time_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static inline uint64_t storm_mono_ns(void)
{
	return storm_time_ns(CLOCK_MONOTONIC);
}

static inline uint64_t storm_real_ns(void)
{
	return storm_time_ns(CLOCK_REALTIME);
}

static inline uint64_t storm_mono_us(void)
{
	return storm_mono_ns() / 1000ULL;
}

/* Milliseconds with their fraction, for durations that are logged. */
static inline double storm_mono_ms(void)
{
	return (double) storm_mono_ns() / 1e6;
}

#endif /* STORM_TIME_H */

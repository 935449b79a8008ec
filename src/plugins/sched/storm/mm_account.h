/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_account.h - what the Machine Manager's thread (mm_gang.c) measures of
 * itself, for the status file and the log: each strobe's and
 * confirmation's cost (a moving average and a histogram), the measured
 * period per quantum, what each step of a quantum took, and strobes late
 * by half of FailSafe.
 */
#ifndef STORM_MM_ACCOUNT_H
#define STORM_MM_ACCOUNT_H

#include <stdint.h>

#include "src/common/storm_hist.h"

#include "mm_state.h"

/* One strobe's or confirmation's cost (us) into its average and its
 * histogram. */
extern void mm_account_cost(uint64_t *avg, storm_hist_t *h, uint64_t us);
/* The strobe sent at t0 (CLOCK_MONOTONIC ns): the measured period. */
extern void mm_account_period(mm_t *mm, uint64_t t0);
/* The strobe sent at t0 was due due_ns after the one before: logged if it
 * was later than that by half of FailSafe.  Before mm_account_period(). */
extern void mm_account_gap(mm_t *mm, uint64_t t0, uint64_t due_ns);
/* The step (MM_STEP_*) that ended now took this long from *t; *t becomes
 * now. */
extern void mm_account_lap(mm_t *mm, int step, uint64_t *t);

#endif /* STORM_MM_ACCOUNT_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_account.c - the Machine Manager thread's own measurements
 * (mm_account.h).
 */
#include "config.h"

#include <inttypes.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "mm_account.h"

/* Late strobes are logged one line per this, with the count between. */
#define MM_GAP_LOG_NS 10000000000ULL

/* Exponential moving average, 1/8 weight for the new sample. */
static void ewma(uint64_t *avg, uint64_t v)
{
	*avg = *avg ? (*avg * 7 + v) / 8 : v;
}

/* A scan of a dozen bounds and two additions a quantum. */
extern void mm_account_cost(uint64_t *avg, storm_hist_t *h, uint64_t us)
{
	int n;
	const uint64_t *le = storm_hist_latency_le_us(&n);

	ewma(avg, us);
	storm_hist_observe(h, le, n, us);
}

/* Per quantum whatever the span; it starts over when switching starts or
 * stops (the idle heartbeat's longer period would otherwise linger in the
 * average for many strobes). */
extern void mm_account_period(mm_t *mm, uint64_t t0)
{
	mm_clock_t *c = &mm->clk;
	bool switching = mm->matrix.nslots > 1;

	if (switching != c->last_switching)
		mm->stats.period_us = 0;
	else if (c->last_start)
		ewma(&mm->stats.period_us, (t0 - c->last_start) / 1000 /
					   c->last_span);
	c->last_start = t0;
	c->last_span = mm->span;
	c->last_switching = switching;
}

/*
 * Late by half of FailSafe: the node managers are half-way to failing
 * safe.  Logged with what each step of the thread took (this quantum's
 * first three, the previous one's last three), since the cause is the
 * thread's own: the listener logs a stall of its own, and a node that does
 * not answer is a suspect.
 */
extern void mm_account_gap(mm_t *mm, uint64_t t0, uint64_t due)
{
	mm_clock_t *c = &mm->clk;
	const uint64_t *st = c->step_ns;
	uint64_t gap;

	if (!c->last_start)
		return;
	gap = t0 - c->last_start;
	if (gap <= due + mm->conf.failsafe_us * 500ULL)
		return;
	if (c->gap_logged_ns && t0 - c->gap_logged_ns < MM_GAP_LOG_NS) {
		c->gaps_unlogged++;
		return;
	}
	verbose("%s: a strobe %" PRIu64 " ms late (due every %" PRIu64 " ms, FailSafe=%" PRIu64 "us; %" PRIu64 " more since the last line): the last strobe took %" PRIu64 " ms, the status file %" PRIu64 " ms, the sleep %" PRIu64 " ms; then the latency probe %" PRIu64 " ms, the confirmation %" PRIu64 " ms (its COMPARE-AND-WRITE %" PRIu64 " ms, one-node probes %" PRIu64 " ms, Slurm's drains and returns %" PRIu64 " ms), placing the jobs %" PRIu64 " ms",
		MM_PREFIX, (gap - due) / 1000000, due / 1000000,
		mm->conf.failsafe_us, c->gaps_unlogged,
		st[MM_STEP_STROBE] / 1000000, st[MM_STEP_STATUS] / 1000000,
		st[MM_STEP_SLEEP] / 1000000, st[MM_STEP_PROBE] / 1000000,
		st[MM_STEP_CONFIRM] / 1000000, c->confirm_caw_ns / 1000000,
		c->probes_ns / 1000000, c->slurm_ns / 1000000,
		st[MM_STEP_REBUILD] / 1000000);
	c->gap_logged_ns = t0;
	c->gaps_unlogged = 0;
}

extern void mm_account_lap(mm_t *mm, int step, uint64_t *t)
{
	uint64_t now = storm_mono_ns();

	mm->clk.step_ns[step] = now - *t;
	*t = now;
}

/*
 * nm_reject.c - the messages this node manager refused (nm_reject.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "nm_reject.h"

static _Atomic uint64_t counted[STORM_REJECT_KINDS];
static struct {
	uint64_t logged[STORM_REJECT_KINDS];
	time_t last_log;
} reject_counts;

extern void nm_reject_count(enum storm_reject_kind kind)
{
	if (kind < STORM_REJECT_KINDS)
		atomic_fetch_add(&counted[kind], 1);
}

extern void nm_reject_counts(nm_t *nm, uint64_t out[STORM_REJECT_KINDS])
{
	for (int k = 0; k < STORM_REJECT_KINDS; k++)
		out[k] = atomic_load(&counted[k]);
	if (nm->ctx) {
		storm_stats_t st;

		storm_ctx_stats(nm->ctx, &st);
		out[STORM_REJECT_FABRIC] += STORM_REPORT_FABRIC_REFUSED(st);
	}
}

static bool moved(const uint64_t a[], const uint64_t b[])
{
	return memcmp(a, b, STORM_REJECT_KINDS * sizeof(uint64_t)) != 0;
}

static void summarize(const uint64_t now[])
{
	uint64_t d[STORM_REJECT_KINDS];

	for (int k = 0; k < STORM_REJECT_KINDS; k++)
		d[k] = now[k] - reject_counts.logged[k];
	nm_info("refused in the last %d s: control socket %" PRIu64 ", BcastPort %" PRIu64 ", fabric %" PRIu64,
		NM_REJECT_LOG_S, d[STORM_REJECT_CTL], d[STORM_REJECT_BCAST],
		d[STORM_REJECT_FABRIC]);
	memcpy(reject_counts.logged, now, sizeof(reject_counts.logged));
}

extern void nm_reject_tick(nm_t *nm)
{
	uint64_t now[STORM_REJECT_KINDS];
	time_t t = time(NULL);

	if (t - reject_counts.last_log < NM_REJECT_LOG_S)
		return;
	nm_reject_counts(nm, now);
	if (moved(now, reject_counts.logged)) {
		reject_counts.last_log = t;
		summarize(now);
	}
}

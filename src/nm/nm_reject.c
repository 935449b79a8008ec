/*
 * nm_reject.c - the messages this node manager refused (nm_reject.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "nm_gang.h"
#include "nm_reject.h"

static _Atomic uint64_t counted[STORM_REJECT_KINDS];
static struct {
	storm_node_report_t rep;	/* what the op in flight sends */
	storm_op_t *op;
	uint64_t sent[STORM_REJECT_KINDS];
	uint64_t sent_fs_events;
	bool sent_fs_open;
	bool sent_has_lag;
	int64_t sent_lag_us;
	uint64_t logged[STORM_REJECT_KINDS];
	time_t last_report, last_log;
} T;

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

/* The last report is done (or there is none): may the buffer change? */
static bool report_free(void)
{
	if (T.op && storm_op_test(T.op, NULL) == -EAGAIN)
		return false;
	if (T.op)
		storm_op_free(T.op);
	T.op = NULL;
	return true;
}

/* What the report carries besides the refusals. */
typedef struct extra {
	uint64_t fs_events;
	bool fs_open;
	bool has_lag;
	int64_t lag_us;
} extra_t;

static void report(nm_t *nm, const uint64_t now[], const extra_t *x)
{
	storm_set_t mm;
	int rc;

	if (!nm->ctx || nm->rank >= STORM_REPORT_MAX_RANKS || !report_free())
		return;
	T.rep.magic = STORM_REPORT_MAGIC;
	T.rep.rank = (uint32_t) nm->rank;
	memcpy(T.rep.rejected, now, sizeof(T.rep.rejected));
	T.rep.failsafe_events = x->fs_events;
	T.rep.failsafe_open = x->fs_open;
	T.rep.has_lag = x->has_lag;
	T.rep.switch_lag_us = x->has_lag ? x->lag_us : 0;
	storm_set_clear(&mm);
	storm_set_add(&mm, nm->nnodes);		/* the Machine Manager */
	rc = storm_xfer(nm->ctx, &mm, &T.rep, sizeof(T.rep),
			storm_report_off(nm->rank), STORM_NO_EVENT,
			STORM_NO_EVENT, &T.op);
	if (rc) {
		T.op = NULL;
		nm_debug("report to the machine manager: %s", storm_strerror(rc));
		return;
	}
	memcpy(T.sent, now, sizeof(T.sent));
	T.sent_fs_events = x->fs_events;
	T.sent_fs_open = x->fs_open;
	T.sent_has_lag = x->has_lag;
	T.sent_lag_us = x->lag_us;
}

static void summarize(const uint64_t now[])
{
	uint64_t d[STORM_REJECT_KINDS];

	for (int k = 0; k < STORM_REJECT_KINDS; k++)
		d[k] = now[k] - T.logged[k];
	nm_info("refused in the last %d s: control socket %" PRIu64 ", BcastPort %" PRIu64 ", fabric %" PRIu64,
		NM_REJECT_LOG_S, d[STORM_REJECT_CTL], d[STORM_REJECT_BCAST],
		d[STORM_REJECT_FABRIC]);
	memcpy(T.logged, now, sizeof(T.logged));
}

extern void nm_reject_tick(nm_t *nm)
{
	uint64_t now[STORM_REJECT_KINDS];
	time_t t = time(NULL);
	extra_t x = { 0 };

	if (t == T.last_report)
		return;
	T.last_report = t;
	nm_reject_counts(nm, now);
	nm_gang_failsafe(&x.fs_events, &x.fs_open);
	x.has_lag = nm_gang_switch_lag(&x.lag_us);
	if (moved(now, T.sent) || x.fs_events != T.sent_fs_events ||
	    x.fs_open != T.sent_fs_open || x.has_lag != T.sent_has_lag ||
	    x.lag_us != T.sent_lag_us)
		report(nm, now, &x);
	if (t - T.last_log >= NM_REJECT_LOG_S && moved(now, T.logged)) {
		T.last_log = t;
		summarize(now);
	}
}

extern void nm_reject_fini(void)
{
	if (T.op)
		storm_op_free(T.op);
	T.op = NULL;
}

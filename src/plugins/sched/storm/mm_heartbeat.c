/*
 * mm_heartbeat.c - the node managers' heartbeats, heard (mm_heartbeat.h).
 */
#include "config.h"

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "mm_heartbeat.h"

#define MM_LISTEN_MIN_NS 1000000ULL
/* Progress passes per listen: enough for every node's heartbeat and more,
 * bounded so that a flood of junk cannot hold this thread. */
#define MM_LISTEN_PASSES 64

extern const storm_node_report_t *mm_heartbeat_report(const mm_t *mm, int i)
{
	const storm_node_report_t *r;
	size_t size = 0;
	uint8_t *region;

	if (!mm->ctx || i < 0 || i >= STORM_REPORT_MAX_RANKS ||
	    !(region = storm_region_ptr(mm->ctx, &size)) ||
	    storm_report_off(i) + sizeof(*r) > size)
		return NULL;
	r = (const storm_node_report_t *) (region + storm_report_off(i));
	if (r->magic != STORM_REPORT_MAGIC || r->rank != (uint32_t) i)
		return NULL;
	return r;
}

extern void mm_heartbeat_heard(mm_t *mm, int i)
{
	mm_node_t *n = &mm->nodes[i];

	n->heard_once = true;
	n->silent_ns = 0;
	n->last_heard_ns = mm_now_ns(CLOCK_MONOTONIC);
}

extern uint64_t mm_heartbeat_listen_ns(const mm_t *mm)
{
	uint64_t ns = mm->conf.suspect_time_us * 1000ULL / 8;

	return ns > MM_LISTEN_MIN_NS ? ns : MM_LISTEN_MIN_NS;
}

/*
 * Silence is counted listen by listen, and one interval counts for at most
 * half of SuspectTime: when this thread itself did not run (slurmctld's
 * locks, a host or VM that stalled), the time it could not listen is not
 * the nodes' silence.  Heartbeats sent meanwhile wait in the sockets and
 * are taken in by the progress passes below, before anyone is judged.
 */
extern void mm_heartbeat_listen(mm_t *mm)
{
	uint64_t now = mm_now_ns(CLOCK_MONOTONIC), dt, cap;

	if (!mm->ctx || (mm->clk.last_listen &&
			 now - mm->clk.last_listen < MM_LISTEN_MIN_NS))
		return;
	for (int k = 0; k < MM_LISTEN_PASSES; k++)
		if (storm_progress(mm->ctx, 0) <= 0)
			break;
	now = mm_now_ns(CLOCK_MONOTONIC);
	dt = mm->clk.last_listen ? now - mm->clk.last_listen : 0;
	cap = mm->conf.suspect_time_us * 1000ULL / 2;
	if (dt > cap)
		dt = cap;
	mm->clk.last_listen = now;
	for (int i = 0; i < mm->nnodes; i++) {
		const storm_node_report_t *r = mm_heartbeat_report(mm, i);
		mm_node_t *n = &mm->nodes[i];

		if (r && r->beat != n->beat_seen) {
			n->beat_seen = r->beat;
			mm_heartbeat_heard(mm, i);
		} else {
			n->silent_ns += dt;
		}
	}
}

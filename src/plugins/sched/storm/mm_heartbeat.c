/*
 * mm_heartbeat.c - the node managers' heartbeats, heard (mm_heartbeat.h).
 */
#include "config.h"

#include <inttypes.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "mm_heartbeat.h"

#define MM_LISTEN_MIN_NS 1000000ULL
/* A real-time thread wakes within microseconds of its deadline; this much
 * later, the host itself did not run it. */
#define MM_STALL_NS 20000000ULL
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

/* Quiet: silent over half of SuspectTime (mm_fabric_in_set()).  Back from
 * quiet, a node may have missed a table: everyone gets it again. */
static void set_quiet(mm_t *mm, int i)
{
	mm_node_t *n = &mm->nodes[i];
	bool quiet = n->heard_once &&
		     n->silent_ns > mm->conf.suspect_time_us * 1000ULL / 2;

	if (quiet == n->quiet)
		return;
	n->quiet = quiet;
	if (quiet)
		verbose("%s: %s silent for %" PRIu64 " ms: left out of strobes until it is heard",
			MM_PREFIX, mm->node_names[i], n->silent_ns / 1000000);
	else
		mm->table.dirty = true;
}

extern void mm_heartbeat_heard(mm_t *mm, int i)
{
	mm_node_t *n = &mm->nodes[i];

	n->heard_once = true;
	n->silent_ns = 0;
	n->last_heard_ns = mm_now_ns(CLOCK_MONOTONIC);
	set_quiet(mm, i);
}

extern void mm_heartbeat_slept(mm_t *mm, uint64_t due, uint64_t woke)
{
	if (woke > due + MM_STALL_NS)
		mm->clk.stalled_ns += woke - due;
}

extern uint64_t mm_heartbeat_listen_ns(const mm_t *mm)
{
	uint64_t ns = mm->conf.suspect_time_us * 1000ULL / 8;

	return ns > MM_LISTEN_MIN_NS ? ns : MM_LISTEN_MIN_NS;
}

/*
 * Silence is counted listen by listen, less the time this thread overslept
 * (mm_heartbeat_stalled()): a host or VM that stalled stopped the node
 * managers' heartbeats too, and a node must not be drained for a silence
 * that was the whole machine's.  Time spent waiting for the fabric or for
 * slurmctld's locks counts: heartbeats sent meanwhile wait in the sockets
 * and are taken in by the progress passes below, before anyone is judged.
 */
extern void mm_heartbeat_listen(mm_t *mm)
{
	uint64_t now = mm_now_ns(CLOCK_MONOTONIC), dt;

	if (!mm->ctx || (mm->clk.last_listen &&
			 now - mm->clk.last_listen < MM_LISTEN_MIN_NS))
		return;
	for (int k = 0; k < MM_LISTEN_PASSES; k++)
		if (storm_progress(mm->ctx, 0) <= 0)
			break;
	now = mm_now_ns(CLOCK_MONOTONIC);
	dt = mm->clk.last_listen ? now - mm->clk.last_listen : 0;
	dt -= mm->clk.stalled_ns < dt ? mm->clk.stalled_ns : dt;
	mm->clk.stalled_ns = 0;
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
		set_quiet(mm, i);
	}
}

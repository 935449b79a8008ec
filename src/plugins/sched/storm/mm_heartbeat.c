/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_heartbeat.c - the node managers' heartbeats and acknowledgements
 * (mm_heartbeat.h).
 */
#include "config.h"

#include "mm_heartbeat.h"

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
	atomic_store(&mm->nodes[i].ack_heard_ns, storm_mono_ns());
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_return.c - drained nodes returned to service (mm_return.h).
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "mm_return.h"

/* Answering: back in the strobe set, heard within half of SuspectTime, and
 * not one quantum missed since. */
static bool answering(const mm_node_t *n)
{
	return n->live && !n->quiet && !n->misses;
}

extern void mm_return_track(mm_t *mm, uint64_t now)
{
	for (int i = 0; i < mm->nnodes; i++) {
		mm_node_t *n = &mm->nodes[i];

		if (!n->drain_ours || !answering(n))
			n->answering_since = 0;
		else if (!n->answering_since)
			n->answering_since = now;
	}
}

static bool due(const mm_t *mm, int i, uint64_t now)
{
	const mm_node_t *n = &mm->nodes[i];

	return mm->conf.return_after_us && n->drain_ours &&
	       n->answering_since &&
	       now - n->answering_since >= mm->conf.return_after_us * 1000ULL;
}

extern bool mm_return_due(const mm_t *mm, uint64_t now)
{
	for (int i = 0; i < mm->nnodes; i++)
		if (due(mm, i, now))
			return true;
	return false;
}

extern bool mm_return_drained_by_us(const node_record_t *nr)
{
	return IS_NODE_DRAIN(nr) && nr->reason &&
	       !strncmp(nr->reason, MM_DRAIN_REASON_PREFIX,
			strlen(MM_DRAIN_REASON_PREFIX));
}

/* Still ours to lift: drained by us and not down (an administrator who
 * wrote another reason, or set the node down, decides for it now). */
static bool still_ours(const node_record_t *nr)
{
	return mm_return_drained_by_us(nr) && !IS_NODE_DOWN(nr);
}

/* Under slurmctld's node write lock; true if the node was resumed. */
static bool return_one(mm_t *mm, int i, uint64_t now)
{
	mm_node_t *n = &mm->nodes[i];
	node_record_t *nr = find_node_record(mm->node_names[i]);
	uint64_t ms = (now - n->answering_since) / 1000000;
	update_node_msg_t msg;
	int rc;

	n->drain_ours = false;
	n->answering_since = 0;
	if (!nr || !still_ours(nr)) {
		verbose("%s: %s answers again; it is no longer drained by STORM, so its state is left as it is",
			MM_PREFIX, mm->node_names[i]);
		return false;
	}
	slurm_init_update_node_msg(&msg);
	msg.node_names = mm->node_names[i];
	msg.node_state = NODE_RESUME;
	rc = update_node(&msg, slurm_conf.slurm_user_id);
	if (rc != SLURM_SUCCESS) {
		error("%s: cannot return %s to service: %s", MM_PREFIX,
		      mm->node_names[i], slurm_strerror(rc));
		return false;
	}
	info("%s: returned %s to service: its node manager answered heartbeats and strobes for %" PRIu64 " ms (ReturnAfter=%" PRIu64 "us)",
	     MM_PREFIX, mm->node_names[i], ms, mm->conf.return_after_us);
	n->drained = false;
	mm->stats.returns++;
	return true;
}

extern void mm_return_nodes(mm_t *mm, uint64_t now)
{
	/* what scontrol's update of a node takes (proc_req.c) */
	slurmctld_lock_t node_write = { .conf = NO_LOCK, .job = WRITE_LOCK,
					.node = WRITE_LOCK, .part = WRITE_LOCK,
					.fed = READ_LOCK };
	bool any = false;

	if (!mm_return_due(mm, now))
		return;
	lock_slurmctld(node_write);
	for (int i = 0; i < mm->nnodes; i++)
		if (due(mm, i, now) && return_one(mm, i, now))
			any = true;
	unlock_slurmctld(node_write);
	if (!any)
		return;
	/* as after scontrol's update: these take their own locks */
	schedule_node_save();
	queue_job_scheduler();
}

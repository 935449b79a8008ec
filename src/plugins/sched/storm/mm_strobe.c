/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_strobe.c - the job table and the strobe, to the node managers.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"

#include "src/common/storm_gang.h"

#include "mm_fabric.h"
#include "mm_faults.h"
#include "mm_jobs.h"
#include "mm_matrix.h"
#include "mm_offset.h"
#include "mm_prio.h"
#include "mm_strobe.h"

/*
 * Waits for op and frees it: 0, or its error with the members it lost in
 * *lost (storm_op_lost(): those that did not answer their parent, not the
 * subtrees below them, which may be alive).  An acknowledgement naming
 * only ranks outside the tree leaves nobody lost: those are blamed then.
 */
static int wait_lost(storm_op_t *op, storm_set_t *lost)
{
	storm_set_t failed;
	int rc = storm_op_wait_free(op, &failed, lost);

	if (rc && !storm_set_count(lost))
		*lost = failed;
	return rc;
}

extern int mm_strobe_send_table(mm_t *mm)
{
	storm_set_t live, lost;
	storm_op_t *op;
	int rc;

	mm_fabric_live_set(mm, &live);
	if (!storm_set_count(&live))
		return 0;
	rc = storm_xfer_flags(mm->ctx, &live, mm->table.t, mm->table.len,
			      STORM_GANG_TABLE_OFF, STORM_NO_EVENT,
			      STORM_GANG_EV_TABLE, 0, &op);
	if (rc)
		return rc;
	rc = wait_lost(op, &lost);
	if (rc == 0) {
		mm->table.dirty = false;
		debug("%s: table generation %" PRIu64 " (%u jobs, %d slots) sent",
		      MM_PREFIX, mm->table.t->gen, mm->table.t->njobs,
		      mm->matrix.nslots);
		return 0;
	}
	if (storm_set_count(&lost))
		mm_faults_sort_out(mm, &lost, "missed the job table");
	return rc;
}

static void strobe_fill(const mm_t *mm, storm_gang_strobe_t *s, uint32_t slot,
			uint32_t nq, uint64_t next_in_ns)
{
	memset(s, 0, sizeof(*s));
	s->magic = STORM_GANG_MAGIC;
	s->slot = slot;
	s->epoch = s->epoch_check = mm->epoch;
	s->table_gen = mm->table.gen;
	s->quantum_us = mm->conf.timeslice_us;
	s->failsafe_us = mm->conf.failsafe_us;
	s->mm_id = mm->mm_id;
	s->sent_ns = storm_real_ns();
	s->nquanta = nq;
	s->nslots = mm->matrix.nslots > 0 ? (uint32_t) mm->matrix.nslots : 1;
	s->next_in_us = next_in_ns / 1000;
	s->at_ns = mm_offset_switch_at(mm, s->sent_ns);
}

/* One try: the strobe to the live nodes; the ones it lost in *lost. */
static int strobe_once(mm_t *mm, const storm_gang_strobe_t *s,
		       storm_set_t *lost)
{
	storm_set_t live;
	storm_op_t *op;
	bool lowered;
	int rc;

	/* a node silent for half of SuspectTime is left out (quiet,
	 * mm_listener.h) before the strobe can wait out its timeout on it */
	mm_fabric_live_set(mm, &live);
	if (!storm_set_count(&live))
		return 0;
	storm_set_clear(lost);
	/* each node switches when the strobe reaches it, not after a commit
	 * round: one message per node per quantum fewer (storm_xfer_flags) */
	rc = storm_xfer_flags(mm->ctx, &live, s, sizeof(*s),
			      STORM_GANG_STROBE_OFF, STORM_NO_EVENT,
			      STORM_GANG_EV_STROBE, STORM_XFER_ON_ARRIVAL, &op);
	if (rc)
		return rc;
	lowered = mm->prio == MM_STROBE_PRIO;
	if (lowered)
		mm_prio_set(mm, MM_ACK_WAIT_PRIO);
	rc = wait_lost(op, lost);
	if (lowered)
		mm_prio_set(mm, MM_STROBE_PRIO);
	return rc;
}

/* A node the strobe lost is taken out of the set and the strobe goes
 * again, once, to the others. */
extern int mm_strobe_send(mm_t *mm, uint32_t slot, uint32_t nq,
			  uint64_t next_in_ns)
{
	storm_gang_strobe_t s;
	storm_set_t lost;
	uint64_t sent;
	int rc, tries = 0;

	do {
		strobe_fill(mm, &s, slot, nq, next_in_ns);
		sent = storm_mono_ns();
		rc = strobe_once(mm, &s, &lost);
	} while (rc && storm_set_count(&lost) &&
		 mm_faults_sort_out(mm, &lost, "missed a strobe") &&
		 ++tries < 2);
	if (!rc) {
		/* the nodes' FailSafe runs from here (mm_faults_probe_fits()) */
		mm->clk.last_reached = sent;
		/* what the nodes run now, for views (storm_now.h) */
		storm_now_publish(&mm->now, &s, mm->nquanta);
	}
	return rc;
}

extern void mm_strobe_release_all(mm_t *mm)
{
	mm_matrix_release_all(&mm->matrix);
	mm_jobs_build_table(mm);
	if (mm_strobe_send_table(mm) == 0) {
		mm->epoch++;
		mm_strobe_send(mm, 0, 1, mm->conf.timeslice_us * 1000ULL);
		info("%s: told the node managers to run every job", MM_PREFIX);
	}
}

extern void mm_strobe_hand_over(mm_t *mm)
{
	uint64_t q_us = mm->conf.timeslice_us;
	uint64_t nq = q_us ? mm->conf.handover_us / q_us : 0;
	int nslots = mm->matrix.nslots;

	if (nslots <= 1 || nq < 2) {
		mm_strobe_release_all(mm);
		return;
	}
	if (nq > UINT32_MAX)
		nq = UINT32_MAX;
	if (mm->table.dirty)
		mm_strobe_send_table(mm);
	mm->cur_slot = mm_matrix_next_slot(mm->cur_slot, mm->span, nslots);
	mm->span = (uint32_t) nq;
	mm->epoch++;
	mm->span_start = storm_mono_ns();
	if (mm_strobe_send(mm, (uint32_t) mm->cur_slot, mm->span,
			   q_us * 1000ULL) == 0)
		info("%s: handed the node managers %" PRIu64 " quanta (%" PRIu64 " ms, HandoverTime) to switch on their own until a machine manager strobes again; without one, their fail-safe opens FailSafe after them",
		     MM_PREFIX, nq, nq * q_us / 1000);
	else
		error("%s: the handover strobe did not reach every node manager: those it missed open their fail-safe FailSafe after the last strobe they had",
		      MM_PREFIX);
}

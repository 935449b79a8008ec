/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_faults.c - the Machine Manager's suspects and drains (mm_faults.h).
 */
#include "config.h"

#include <inttypes.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_gang.h"

#include "mm_fabric.h"
#include "mm_faults.h"
#include "mm_heartbeat.h"
#include "mm_return.h"

extern int mm_faults_probe(mm_t *mm, int rank, uint64_t want, uint64_t *us)
{
	storm_set_t one, unreach;
	uint64_t t0;
	int rc;

	/* a quiet node would only make this wait out the ack timeout
	 * (mm_listener.h) */
	if (mm->nodes[rank].quiet)
		return 0;
	t0 = storm_mono_ns();
	storm_set_clear(&one);
	storm_set_add(&one, rank);
	rc = storm_caw(mm->ctx, &one, STORM_GANG_VAR_APPLIED, STORM_GE, want,
		       -1, 0, &unreach);
	t0 = storm_mono_ns() - t0;
	mm->clk.probes_ns += t0;
	if (us)
		*us = t0 / 1000;
	return rc;
}

/* Out of the strobe set from now: probed once heard again. */
static void take_out(mm_t *mm, int i)
{
	mm_node_t *n = &mm->nodes[i];

	n->live = false;
	n->out_ns = storm_mono_ns();
	n->next_probe_ns = 0;
}

extern void mm_faults_missed(mm_t *mm, int i, const char *why)
{
	mm_node_t *n = &mm->nodes[i];

	mm_rules_missed(&mm->tally, &n->misses, &n->miss_quanta);
	if (n->misses == 1 && n->acked_once)
		verbose("%s: %s (rank %d) is a suspect: %s", MM_PREFIX,
			mm->node_names[i], i, why);
}

extern void mm_faults_acked(mm_t *mm, int i)
{
	mm_node_t *n = &mm->nodes[i];

	if (n->misses >= mm->conf.suspect_quanta)
		info("%s: %s answers again after %u missed quanta%s", MM_PREFIX,
		     mm->node_names[i], n->misses,
		     !n->drained ? "" : mm->conf.return_after_us ?
		     "; it is returned to service once it answered for ReturnAfter" :
		     "; it stays drained until an administrator resumes it (ReturnAfter=0)");
	mm_rules_answered(&mm->tally, !n->acked_once);
	n->misses = 0;
	/* a new outage drains it again (the administrator may have resumed
	 * it since; draining a drained node only renews the reason) */
	n->drained = false;
	n->failed_probes = 0;
	n->acked_once = true;
	n->last_ack_ns = storm_mono_ns();
	mm_heartbeat_heard(mm, i);
}

extern bool mm_faults_probe_fits(const mm_t *mm, uint64_t now)
{
	return mm_rules_probe_fits(now, mm->clk.last_reached,
				   mm->conf.failsafe_us * 1000ULL,
				   mm->conf.timeslice_us * 1000ULL,
				   2ULL * mm->ack_timeout_ms * 1000000ULL);
}

/* An XFER-AND-SIGNAL is all-or-nothing, so one dead node must not stop the
 * strobe for everyone.  The lost ones leave the strobe set at once unless
 * there is time to ask them alone (a node only slow to answer stays); the
 * members below them stay in, and the next operation, with the lost ones
 * out of its tree, reaches them or loses them in turn. */
extern bool mm_faults_sort_out(mm_t *mm, const storm_set_t *lost,
			       const char *why)
{
	bool removed = false;

	for (int r = storm_set_next(lost, 0); r >= 0 && r < mm->nnodes;
	     r = storm_set_next(lost, r + 1)) {
		if (!mm->nodes[r].live)
			continue;
		if (mm_faults_probe_fits(mm, storm_mono_ns()) &&
		    mm_faults_probe(mm, r, 0, NULL) == 1)
			continue;
		take_out(mm, r);
		mm_faults_missed(mm, r, why);
		removed = true;
	}
	return removed;
}

static void confirm_incomplete(mm_t *mm, int rc, const storm_set_t *unreach,
			       uint64_t now)
{
	char set[256];

	storm_set_format(unreach, set, sizeof(set));
	mm->stats.confirm_timeouts++;
	mm->confirm_pause_until = now + mm->conf.timeout_us * 1000ULL;
	verbose("%s: acknowledgement of epoch %" PRIu64 " incomplete (%s; no answer from ranks %s); confirmations pause for Timeout=%" PRIu64 "us, strobes go on",
		MM_PREFIX, mm->epoch, rc < 0 ? storm_strerror(rc) : "timeout",
		set, mm->conf.timeout_us);
}

/*
 * A clean "false" (every node answered, someone had not applied the
 * strobe) is held against particular nodes after asking each one alone.
 * The COMPARE-AND-WRITE is serialized at the set's lowest rank, which runs
 * it with this thread's ack timeout (sm_caw.c): a member that does not
 * answer, a leaf below a healthy parent included, is named in the result
 * with the members below it in the serializer's tree; the ones that did
 * not answer their parent (storm_caw_lost()) leave the strobe set
 * (mm_faults_sort_out()), as after a failed strobe.  When the
 * serializer itself does not answer in time, the result names only it and
 * says nothing of the others: dead nodes are then found by the strobe's
 * XFER-AND-SIGNAL, and confirmations pause for Timeout so the serializer
 * can drain (a node manager of an older version waits its own Timeout).
 */
extern void mm_faults_confirm(mm_t *mm)
{
	storm_set_t live, unreach;
	uint64_t now = storm_mono_ns();
	int rc;

	if (now < mm->confirm_pause_until)
		return;
	mm_fabric_live_set(mm, &live);
	if (!storm_set_count(&live))
		return;
	storm_set_clear(&unreach);
	rc = storm_caw(mm->ctx, &live, STORM_GANG_VAR_APPLIED, STORM_GE,
		       mm->epoch, -1, 0, &unreach);
	mm->clk.confirm_caw_ns = storm_mono_ns() - now;
	if (rc == 1) {
		for (int r = storm_set_next(&live, 0); r >= 0;
		     r = storm_set_next(&live, r + 1))
			mm_faults_acked(mm, r);
		return;
	}
	if (rc == 0 && storm_set_count(&unreach) &&
	    !storm_set_has(&unreach, storm_set_next(&live, 0))) {
		storm_set_t lost;

		mm->stats.confirm_timeouts++;
		storm_caw_lost(mm->ctx, &live, &unreach, &lost);
		mm_faults_sort_out(mm, &lost, "missed a confirmation");
		return;
	}
	if (rc < 0 || storm_set_count(&unreach)) {
		confirm_incomplete(mm, rc, &unreach, now);
		return;
	}
	/* Reachable but late: find who (rare, so one probe per node). */
	mm->stats.late++;
	for (int r = storm_set_next(&live, 0); r >= 0;
	     r = storm_set_next(&live, r + 1)) {
		if (mm_faults_probe(mm, r, mm->epoch, NULL) == 1)
			mm_faults_acked(mm, r);
		else
			mm_faults_missed(mm, r, "applied the strobe late");
	}
}

/*
 * A node out of the strobe set misses the quantum, and is probed when the
 * rules say (mm_rules_probe_now()); then the quantum is tallied, before
 * anyone is judged.
 */
extern void mm_faults_watch_dead(mm_t *mm, uint64_t now)
{
	bool periodic = now - mm->clk.last_probe >= MM_PROBE_DEAD_NS;

	for (int i = 0; i < mm->nnodes; i++) {
		mm_node_t *n = &mm->nodes[i];
		bool heard;

		if (n->live)
			continue;
		mm_rules_missed(&mm->tally, &n->misses, &n->miss_quanta);
		heard = atomic_load(&n->heard_ns) > n->out_ns;
		if (!mm_rules_probe_now(n->quiet, heard, n->next_probe_ns,
					periodic, now))
			continue;
		/* not heard since it left: likely dead, and a dead node's
		 * probe may not fit in this quantum (it is heard once back) */
		if (!heard && !mm_faults_probe_fits(mm, storm_mono_ns()))
			continue;
		if (mm_faults_probe(mm, i, 0, NULL) == 1) {
			n->live = true;
			mm_faults_acked(mm, i);
			mm->table.dirty = true;	/* it needs the table */
			continue;
		}
		/* heard again from here on, before it is probed early */
		n->out_ns = storm_mono_ns();
		n->next_probe_ns = n->out_ns +
				   mm_rules_probe_backoff_ns(++n->failed_probes);
		if (mm_rules_forget_peer(n->failed_probes))
			storm_ctx_set_peer(mm->ctx, i, mm->node_addrs[i]);
	}
	if (periodic)
		mm->clk.last_probe = now;
	mm_rules_quantum_end(&mm->tally);
}

static mm_rules_conf_t rules_conf(const mm_t *mm)
{
	return (mm_rules_conf_t) {
		.suspect_quanta = mm->conf.suspect_quanta,
		.suspect_ns = mm->conf.suspect_time_us * 1000ULL,
	};
}

static mm_rules_node_t rules_node(const mm_t *mm, int i)
{
	const mm_node_t *n = &mm->nodes[i];

	return (mm_rules_node_t) {
		.drained = atomic_load(&n->drained),
		.acked_once = n->acked_once,
		.misses = n->misses,
		.miss_quanta = n->miss_quanta,
		.heard_ns = atomic_load(&n->heard_ns),
		.silent_ns = atomic_load(&n->silent_ns),
	};
}

/* Silent for over SuspectTime, as the listener last counted it. */
static bool is_silent(const mm_t *mm, int i)
{
	mm_rules_conf_t conf = rules_conf(mm);
	mm_rules_node_t n = rules_node(mm, i);

	return mm_rules_silent(&conf, &n);
}

/* To drain for its missed quanta (mm_rules_suspect()); silence is the
 * listener's to judge (mm_faults_drain_silent()). */
static bool is_suspect(const mm_t *mm, int i, uint64_t now)
{
	mm_rules_conf_t conf = rules_conf(mm);
	mm_rules_node_t n = rules_node(mm, i);
	mm_rules_cluster_t c = {
		.tally = &mm->tally,
		.nobody_heard = atomic_load(&mm->nobody_heard),
		.heard_again_ns = atomic_load(&mm->heard_again_ns),
		.since_start_ns = now - mm->start_ns,
	};

	return mm_rules_suspect(&conf, &n, &c, now);
}

extern bool mm_faults_to_drain(mm_t *mm)
{
	uint64_t now = storm_mono_ns();

	for (int i = 0; i < mm->nnodes; i++)
		if (is_suspect(mm, i, now))
			return true;
	return false;
}

static char *silent_reason(uint64_t silent_ns, uint64_t suspect_us)
{
	return xstrdup_printf(MM_DRAIN_REASON_PREFIX "silent for %" PRIu64 " ms: missed its heartbeats and strobe acknowledgements (SuspectTime=%" PRIu64 "us)",
			      silent_ns / 1000000, suspect_us);
}

static char *drain_reason(const mm_t *mm, int i)
{
	const mm_node_t *n = &mm->nodes[i];

	if (is_silent(mm, i))
		return silent_reason(n->silent_ns, mm->conf.suspect_time_us);
	return xstrdup_printf(MM_DRAIN_REASON_PREFIX "missed %u strobe acknowledgements (SuspectQuanta=%u, Timeslice=%" PRIu64 "us)",
			      n->misses, mm->conf.suspect_quanta,
			      mm->conf.timeslice_us);
}

/*
 * Node i, claimed (n->drained set by the caller, so that the other thread
 * does not drain it too), drained in Slurm.  Called from either thread
 * with nothing held that the other needs: slurmctld's node write lock may
 * take a while.  Unclaimed again if Slurm refuses (false).
 */
static bool drain_one(mm_t *mm, int i, char *reason)
{
	slurmctld_lock_t node_write = { .conf = READ_LOCK, .job = WRITE_LOCK,
					.node = WRITE_LOCK, .fed = READ_LOCK };
	uint64_t t0 = storm_mono_ns(), waited;
	int rc;

	lock_slurmctld(node_write);
	waited = (storm_mono_ns() - t0) / 1000000;
	rc = drain_nodes(mm->node_names[i], reason, slurm_conf.slurm_user_id);
	unlock_slurmctld(node_write);
	if (rc == SLURM_SUCCESS) {
		/* the wait says how much of the drain's delay was slurmctld's */
		info("%s: drained %s: %s (after %" PRIu64 " ms for slurmctld's locks)",
		     MM_PREFIX, mm->node_names[i], reason, waited);
		atomic_store(&mm->nodes[i].drain_ours_ns,
			     storm_mono_ns());
		mm->nodes[i].drain_ours = true;
		atomic_fetch_add(&mm->stats.drains, 1);
	} else {
		error("%s: cannot drain %s: %s", MM_PREFIX,
		      mm->node_names[i], slurm_strerror(rc));
		mm->nodes[i].drained = false;
	}
	xfree(reason);
	return rc == SLURM_SUCCESS;
}

static bool claim(mm_t *mm, int i)
{
	bool no = false;

	return atomic_compare_exchange_strong(&mm->nodes[i].drained, &no,
					      true);
}

/*
 * A node that answered this MM and stops is drained after SuspectQuanta
 * missed quanta here, or after SuspectTime of silence by the listener,
 * whichever comes first.  A node drained for its silence also leaves the
 * strobe set (mm_faults_take_out()), so that no strobe waits for it once
 * it is heard again; it comes back when it answers a probe
 * (mm_faults_watch_dead()).
 */
extern void mm_faults_drain(mm_t *mm)
{
	uint64_t now = storm_mono_ns();

	for (int i = 0; i < mm->nnodes; i++) {
		if (!is_suspect(mm, i, now) || !claim(mm, i))
			continue;
		if (is_silent(mm, i))
			take_out(mm, i);
		drain_one(mm, i, drain_reason(mm, i));
	}
}

extern void mm_faults_drain_silent(mm_t *mm, int i, uint64_t silent_ns,
				   uint64_t suspect_us)
{
	if (claim(mm, i) &&
	    drain_one(mm, i, silent_reason(silent_ns, suspect_us)))
		mm->nodes[i].silence_drained = true;
}

extern void mm_faults_take_out(mm_t *mm)
{
	for (int i = 0; i < mm->nnodes; i++)
		if (atomic_exchange(&mm->nodes[i].silence_drained, false))
			take_out(mm, i);
}

extern void mm_faults_probe_latency(mm_t *mm)
{
	int rr = mm->clk.rr;

	for (int k = 0; k < mm->nnodes; k++) {
		rr = (rr + 1) % mm->nnodes;
		if (mm_fabric_in_set(mm, rr))
			break;
	}
	mm->clk.rr = rr;
	/* a figure for views, never worth a late strobe: not a node that
	 * missed its last acknowledgement, nor when a dead one would not fit */
	if (mm_fabric_in_set(mm, rr) && !mm->nodes[rr].misses &&
	    mm_faults_probe_fits(mm, storm_mono_ns()))
		mm_faults_probe(mm, rr, 0, &mm->nodes[rr].ack_us);
}

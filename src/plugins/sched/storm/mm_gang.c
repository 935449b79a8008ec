/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_gang.c - the Machine Manager: STORM gang scheduling inside slurmctld.
 *
 * One thread.  It joins the STORM fabric as rank node_record_count
 * (mm_fabric.c) and every quantum, in this order:
 *
 *   1. measures one node's acknowledgement latency (a one-node
 *      COMPARE-AND-WRITE, round robin, at most every 100 ms) and asks one
 *      node for its clock (mm_offset.c, every 25 ms): first in the
 *      quantum, because just after a strobe their messages would add to
 *      the switch skew on a shared host;
 *   2. confirms the previous strobe: COMPARE-AND-WRITE(applied >= epoch)
 *      over the live nodes; a node that does not confirm is a suspect, and
 *      SuspectQuanta misses in a row drain it in Slurm with a reason
 *      (mm_faults.c).  A heartbeat is not confirmed: its acknowledgements
 *      answer it (MM_IDLE_ACK_PROBE_NS).  The node managers' own
 *      heartbeats are heard by a thread of their own (mm_listener.h),
 *      which leaves a quiet node out of this thread's operations and
 *      drains a node silent for SuspectTime, whatever the quantum, however
 *      rare the strobes and however long this thread waits;
 *   3. places the jobs of the sampler's newest copy of Slurm's running
 *      jobs (taken every 100 ms under slurmctld's read locks by a thread
 *      of its own, mm_sampler.h) in the Ousterhout matrix (mm_matrix.c,
 *      mm_jobs.c): this thread never waits for slurmctld's locks;
 *   4. pushes the job table (XFER-AND-SIGNAL) when it changed, then
 *      multicasts the strobe {epoch, slot, the instant to switch at}
 *      (XFER-AND-SIGNAL, remote event) to the live nodes (mm_strobe.c);
 *      the strobe is also the heartbeat, so it runs even when nothing
 *      time-shares; each strobe sent is copied into the mapped file views
 *      read the running slot from (storm_now.h);
 *   5. rewrites the status file that `stormctl show` reads, once a second
 *      (mm_status.c);
 *   6. sleeps until the next quantum boundary (absolute time, so a slow
 *      step shortens the sleep instead of stretching every quantum).
 *
 * After a slurmctld restart the thread starts again from Slurm's job
 * state; its epochs start at the wall clock in microseconds, so they are
 * always above those of the previous instance and the node managers'
 * applied-epoch variables never confirm a strobe they did not apply.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/xmalloc.h"

#include "mm_account.h"
#include "mm_fabric.h"
#include "mm_faults.h"
#include "mm_gang.h"
#include "mm_jobs.h"
#include "mm_offset.h"
#include "mm_prio.h"
#include "mm_return.h"
#include "mm_sampler.h"
#include "mm_state.h"
#include "mm_status.h"
#include "mm_strobe.h"

/*
 * A long sleep (quanta over 100 ms) wakes every MM_REBUILD_NS to place the
 * sampler's newest jobs and keep the status file fresh.  One node's
 * acknowledgement latency, for stormctl, is measured at most every 100 ms:
 * a CAW to one node is two messages and a wake-up of its node manager, at
 * short quanta as many messages as the quantum's own confirmation.
 */
#define MM_REBUILD_NS 100000000ULL
#define MM_ACK_PROBE_NS 100000000ULL
#define MM_STATUS_NS 1000000000ULL
/*
 * When nothing time-shares (at most one slot), the strobe is only the
 * heartbeat: it then goes out every max(Timeslice, 50 ms).  A heartbeat
 * every millisecond quantum cost every node manager a tree message
 * hundreds of times a second for nothing to switch, CPU that time-sharing
 * nodes elsewhere on the same hosts need.  A dead node manager is still
 * drained after
 * SuspectQuanta heartbeats.
 */
#define MM_IDLE_HEARTBEAT_NS 50000000ULL
/*
 * A heartbeat (at most one slot, and no new job table sent with it) gives
 * a node nothing to apply, and its XFER-AND-SIGNAL is acknowledged by each
 * node after the node's strobe callback ran (STORM_XFER_ON_ARRIVAL).  So
 * after a heartbeat the MM skips the COMPARE-AND-WRITE confirmation and
 * counts those acknowledgements instead, and measures acknowledgement
 * latency once a second rather than every 100 ms.  On an idle cluster the
 * confirmation and the probes were most of the messages, and this idle
 * load is jitter on every node of a cluster that never time-shares.  Any
 * strobe that can switch something is confirmed.
 */
#define MM_IDLE_ACK_PROBE_NS 1000000000ULL

/* From one strobe to the next: its span of quanta while switching (or at
 * quanta over the idle heartbeat's), else the idle heartbeat's. */
static uint64_t strobe_period_ns(bool switching, uint32_t span, uint64_t q_ns)
{
	if (switching || q_ns >= MM_IDLE_HEARTBEAT_NS)
		return span * q_ns;
	return MM_IDLE_HEARTBEAT_NS;
}

static mm_t mm_state = {
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.span = 1,
	.prio = -1,
	.now = STORM_NOW_WRITER_INIT,
};

/* A change that needs a new fabric endpoint. */
static bool conf_needs_rejoin(const storm_conf_t *old, const storm_conf_t *c)
{
	return old->ctl_port != c->ctl_port ||
	       strcmp(old->provider, c->provider) ||
	       old->port_lo != c->port_lo || old->port_hi != c->port_hi ||
	       old->timeslice_us != c->timeslice_us ||
	       old->suspect_time_us != c->suspect_time_us ||
	       old->timeout_us != c->timeout_us;
}

/* A new configuration, if there is one; called and returns under
 * mm->mutex (dropped while the fabric closes). */
static void take_config(mm_t *mm)
{
	storm_conf_t old = mm->conf;

	if (mm->conf_gen == mm->conf_next_gen)
		return;
	mm_prio_rt(mm, false);	/* logs, may rejoin the fabric */
	mm->conf = mm->conf_next;
	mm->conf_gen = mm->conf_next_gen;
	if (mm->ctx && conf_needs_rejoin(&old, &mm->conf)) {
		info("%s: configuration changed; rejoining the fabric",
		     MM_PREFIX);
		slurm_mutex_unlock(&mm->mutex);
		mm_fabric_close(mm);
		slurm_mutex_lock(&mm->mutex);
	}
	/* the new quantum starts now, not at the old schedule's next
	 * boundary (up to an old quantum away) */
	mm->clk.next = storm_mono_ns();
	/* and the measured period starts over: an average across two
	 * quanta of different lengths says nothing */
	mm->clk.last_start = 0;
	mm->stats.period_us = 0;
}

/* On the fabric, or false after waiting 2 s under mm->mutex (held on
 * return) to try again: the port is taken or the provider missing. */
static bool fabric_ready(mm_t *mm)
{
	struct timespec ts;

	if (mm->ctx)
		return true;
	mm_prio_rt(mm, false);
	if (!mm_fabric_open(mm))
		return true;
	slurm_mutex_lock(&mm->mutex);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (!mm->stopping)
		pthread_cond_timedwait(&mm->wake, &mm->mutex, &ts);
	return false;
}

/* Step 1: one node's acknowledgement latency, at most every 100 ms (every
 * second between heartbeats). */
static void step_probe_latency(mm_t *mm)
{
	uint64_t now = storm_mono_ns();
	uint64_t every = mm->last_heartbeat ? MM_IDLE_ACK_PROBE_NS :
					      MM_ACK_PROBE_NS;

	mm_offset_probe(mm, now);
	if (!mm->nquanta || !mm->nnodes || now - mm->clk.last_ack_probe < every)
		return;
	mm->clk.last_ack_probe = now;
	mm_faults_probe_latency(mm);
}

/* Step 2: the previous quantum's strobe, unless it was a heartbeat; then
 * the nodes out of the strobe set, and the suspects to drain. */
static void step_confirm(mm_t *mm, uint64_t *now)
{
	uint64_t t0;

	mm->clk.confirm_caw_ns = mm->clk.probes_ns = 0;
	if (mm->nquanta && !mm->last_heartbeat) {
		t0 = storm_mono_ns();
		mm_faults_confirm(mm);
		mm_account_cost(&mm->stats.caw_us, &mm->stats.caw_hist,
			     (storm_mono_ns() - t0) / 1000);
	}
	*now = storm_mono_ns();
	mm_faults_take_out(mm);
	mm_faults_watch_dead(mm, *now);
	t0 = storm_mono_ns();
	/* slurmctld's locks (the drains, the returns): see mm_prio.c */
	if (mm_faults_to_drain(mm) || mm_return_due(mm, *now))
		mm_prio_rt(mm, false);
	mm_faults_drain(mm);
	mm_return_track(mm, *now);
	mm_return_nodes(mm, *now);
	mm->clk.slurm_ns = storm_mono_ns() - t0;
}

/* Step 3: the matrix from the sampler's newest jobs, if it has new ones
 * (the sampler started again, once a second, if it could not be). */
static void step_rebuild(mm_t *mm, uint64_t now)
{
	if (!mm->sampler && now - mm->clk.last_sampler_try >= MM_STATUS_NS) {
		mm->clk.last_sampler_try = now;
		mm_prio_rt(mm, false);	/* logs */
		mm_sampler_start(mm);
	}
	if (mm_jobs_rebuild(mm) || !mm->table.t)
		mm_jobs_build_table(mm);
}

/* Step 4: the table when it changed, then the strobe of the next slot. */
static uint64_t step_strobe(mm_t *mm, uint64_t q_ns)
{
	uint64_t t0, t1;
	bool heartbeat;

	mm_prio_rt(mm, true);
	if (atomic_load(&mm->back_gen) != mm->back_seen) {
		/* a quiet node heard again may have missed a table */
		mm->back_seen = atomic_load(&mm->back_gen);
		mm->table.dirty = true;
	}
	heartbeat = !mm_strobe_switches(mm);
	if (mm->table.dirty)
		mm_strobe_send_table(mm);
	mm->cur_slot = mm_matrix_next_slot(mm->cur_slot, mm->span,
					   mm->matrix.nslots);
	/* StrobeInterval: one strobe for several quanta, which the node
	 * managers time themselves (storm_gang.h) */
	mm->span = mm->matrix.nslots > 1 ?
		   storm_conf_quanta_per_strobe(&mm->conf) : 1;
	mm->epoch++;
	t0 = storm_mono_ns();
	mm_account_gap(mm, t0, strobe_period_ns(mm->clk.last_switching,
						mm->clk.last_span, q_ns));
	mm->span_start = t0;
	mm->last_heartbeat = mm_strobe_send(mm, (uint32_t) mm->cur_slot,
					    mm->span, q_ns) == 0 && heartbeat;
	if (mm->last_heartbeat)
		for (int i = 0; i < mm->nnodes; i++)
			if (mm_fabric_in_set(mm, i))
				mm_faults_acked(mm, i);
	t1 = storm_mono_ns();
	mm_account_cost(&mm->stats.strobe_us, &mm->stats.strobe_hist,
		     (t1 - t0) / 1000);
	mm_offset_strobe_took(mm, t1 - t0);
	mm_account_period(mm, t0);
	mm->nquanta += mm->span;	/* quanta, not strobes */
	return t1;
}

/* Step 5: the file `stormctl show` reads, at most once a second. */
static void step_status(mm_t *mm, uint64_t now)
{
	if (now - mm->clk.last_status >= MM_STATUS_NS) {
		mm_prio_rt(mm, false);	/* a file: see mm_prio.c */
		mm_status_write(mm);
		mm->clk.last_status = now;
	}
}

/* CLOCK_MONOTONIC, absolute; at once if past */
static void sleep_until(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* A job ended between boundaries: the new table went out, and the rest of
 * the span is strobed again from the quantum running now. */
static void strobe_rest_of_span(mm_t *mm)
{
	uint64_t q_ns = mm->conf.timeslice_us * 1000ULL, due;
	uint64_t now = storm_mono_ns();
	int nslots = mm->matrix.nslots > 0 ? mm->matrix.nslots : 1;
	uint32_t k = 0;

	if (q_ns && now > mm->span_start)
		k = (now - mm->span_start) / q_ns;
	if (k >= mm->span)
		k = mm->span - 1;
	due = mm->span_start + (k + 1) * q_ns;
	mm->epoch++;
	mm_strobe_send(mm, (uint32_t) ((mm->cur_slot + k) % nslots),
		       mm->span - k, due > now ? due - now : 0);
}

/* Every MM_REBUILD_NS of a long sleep: true to stop sleeping (a new
 * configuration or a stop). */
static bool sleep_tick(mm_t *mm)
{
	bool wake, job_left = false;

	mm_prio_rt(mm, false);	/* slurmctld's locks: see mm_prio.c */
	slurm_mutex_lock(&mm->mutex);
	wake = mm->stopping || mm->conf_gen != mm->conf_next_gen;
	slurm_mutex_unlock(&mm->mutex);
	if (!wake) {
		uint64_t left = mm->jobs_left;
		uint64_t now = storm_mono_ns();

		if (mm_jobs_rebuild(mm))	/* keeps cur_slot < nslots */
			mm_jobs_build_table(mm);
		job_left = mm->jobs_left != left;
		mm_faults_take_out(mm);
		mm_return_track(mm, now);
		mm_return_nodes(mm, now);
		step_status(mm, now);
	}
	mm_prio_rt(mm, true);
	if (wake)
		return true;
	if (job_left && mm->table.dirty && !mm_strobe_send_table(mm))
		strobe_rest_of_span(mm);
	return false;
}

/*
 * Step 6: sleep to the quantum boundary.  Quanta longer than MM_REBUILD_NS
 * are slept in steps of that.  When a job ends between boundaries, the
 * nodes get the new table with a strobe of the current slot at once: a job
 * its end left alone runs again within ~100 ms, not up to a whole quantum
 * later, frozen on an idle node.  A job that starts waits for the boundary
 * (it runs until then: freezing it in the middle of its launch could stall
 * the launch for a quantum).  The status file stays fresh; a new
 * configuration or a stop ends the sleep.
 */
static void step_sleep(mm_t *mm, uint64_t q_ns)
{
	uint64_t now;

	/* never try to catch up */
	mm->clk.next += strobe_period_ns(mm->matrix.nslots > 1, mm->span, q_ns);
	if (mm->clk.next < storm_mono_ns())
		mm->clk.next = storm_mono_ns();
	mm_prio_rt(mm, true);
	for (;;) {
		now = storm_mono_ns();
		if (now >= mm->clk.next)
			return;
		if (mm->clk.next - now <= MM_REBUILD_NS) {
			sleep_until(mm->clk.next);
			return;
		}
		sleep_until(now + MM_REBUILD_NS);
		if (sleep_tick(mm))
			return;
	}
}

/* One quantum, steps 1 to 6. */
static void quantum(mm_t *mm)
{
	uint64_t q_ns = mm->conf.timeslice_us * 1000ULL, now, t;

	mm_prio_rt(mm, true);
	t = storm_mono_ns();
	step_probe_latency(mm);
	mm_account_lap(mm, MM_STEP_PROBE, &t);
	step_confirm(mm, &now);
	mm_account_lap(mm, MM_STEP_CONFIRM, &t);
	step_rebuild(mm, now);
	mm_account_lap(mm, MM_STEP_REBUILD, &t);
	now = step_strobe(mm, q_ns);
	mm_account_lap(mm, MM_STEP_STROBE, &t);
	step_status(mm, now);
	mm_account_lap(mm, MM_STEP_STATUS, &t);
	step_sleep(mm, q_ns);
	mm_account_lap(mm, MM_STEP_SLEEP, &t);
}

/* The thread's last words: the nodes switch on their own for
 * HandoverTime, or every job runs; the fabric closes. */
static void mm_finish(mm_t *mm)
{
	mm_prio_rt(mm, false);
	mm_sampler_stop(mm);
	if (mm->ctx) {
		mm_strobe_hand_over(mm);
		mm_fabric_close(mm);
	}
	mm_status_now_close(mm);
	mm_status_writer_stop();
	mm_matrix_free(&mm->matrix);
	mm_table_free(&mm->table);
}

static void *mm_main(void *arg)
{
	mm_t *mm = arg;

	mm->mm_id = storm_real_ns() / 1000;
	mm->start_ns = storm_mono_ns();
	mm->epoch = mm->mm_id;
	memset(&mm->clk, 0, sizeof(mm->clk));
	mm->clk.last_span = 1;
	mm->clk.next = storm_mono_ns();
	info("sched/storm: machine manager thread started (mm)");
	mm_status_now_open(mm);
	mm_status_writer_start();

	slurm_mutex_lock(&mm->mutex);
	while (!mm->stopping) {
		take_config(mm);
		slurm_mutex_unlock(&mm->mutex);
		if (!fabric_ready(mm))
			continue;	/* under mm->mutex */
		quantum(mm);
		/* mm->mutex's holders (reconfigure, stop) hold it briefly
		 * and never wait for this thread under it */
		slurm_mutex_lock(&mm->mutex);
	}
	slurm_mutex_unlock(&mm->mutex);
	mm_finish(mm);
	info("sched/storm: machine manager thread stopped");
	return NULL;
}

extern void mm_gang_start(const storm_conf_t *c)
{
	mm_t *mm = &mm_state;

	slurm_mutex_lock(&mm->mutex);
	mm->conf_next = *c;
	mm->conf_next_gen++;
	if (!mm->started) {
		mm->stopping = false;
		slurm_thread_create(&mm->tid, mm_main, mm);
		mm->started = true;
	}
	slurm_mutex_unlock(&mm->mutex);
}

extern void mm_gang_reconfig(const storm_conf_t *c)
{
	mm_t *mm = &mm_state;

	slurm_mutex_lock(&mm->mutex);
	mm->conf_next = *c;
	mm->conf_next_gen++;
	slurm_cond_broadcast(&mm->wake);
	slurm_mutex_unlock(&mm->mutex);
}

extern void mm_gang_stop(void)
{
	mm_t *mm = &mm_state;
	bool join;

	slurm_mutex_lock(&mm->mutex);
	mm->stopping = true;
	join = mm->started;
	mm->started = false;
	slurm_cond_broadcast(&mm->wake);
	slurm_mutex_unlock(&mm->mutex);
	if (join)
		pthread_join(mm->tid, NULL);
}

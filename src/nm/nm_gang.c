/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang.c - the node's end of gang scheduling.
 *
 * When the Machine Manager's strobe reaches this node (XFER-AND-SIGNAL to
 * STORM_GANG_STROBE_OFF, signalled on arrival: STORM_XFER_ON_ARRIVAL), the
 * fabric's real-time progress thread calls on_commit(), which freezes the
 * jobs that do not run in the new slot, then thaws the ones that do (v1:
 * their step cgroups, the batch step made idle-class instead; v2: the job
 * level; nm_cgroup.c says why), and stores the strobe's epoch in
 * STORM_GANG_VAR_APPLIED for the MM's COMPARE-AND-WRITE.  A second thread,
 * the watcher, times the switches between strobes (StrobeInterval, below),
 * looks for new steps of frozen jobs and checks the fail-safe
 * (nm_failsafe.c).  See storm_gang.h for the wire format.
 *
 * Why freeze first, then thaw: the two gangs must not run at once on a
 * node; a v1 freeze takes effect within microseconds, so the overlap is
 * that, not the whole quantum.
 *
 * Why real-time threads: a freeze issued from an ordinary thread on a busy
 * node waits milliseconds for a scheduler tick; from a real-time thread it
 * takes tens of microseconds.  Both threads sleep between strobes, so they
 * do not compete with the jobs they switch.
 *
 * Policy=flexible jobs (table entry how = STORM_GANG_SWITCH_IDLE) are not
 * frozen outside their slots but made idle-class (cpu.idle = 1,
 * nm_cgroup.c): the running slot has the CPUs whenever it can use them, and
 * when its processes block (communication, I/O) the other slots' processes
 * fill the CPU until the next strobe.  Where cpu.idle is missing they are
 * frozen like gang jobs, and the NM says so once per job.
 *
 * StrobeInterval (storm.conf): one strobe may cover several quanta
 * (nquanta > 1).  The NM then switches to slot + k itself at k quanta after
 * the strobe's next boundary, timed by the watcher thread (real-time, on an
 * absolute CLOCK_MONOTONIC deadline).
 * Why: on a host where the jobs, the node managers and slurmctld share the
 * cores, a strobe costs every job the wake-ups and loopback sends of all
 * of them, while a timed switch costs one freeze and one thaw (the floor
 * testsuite/bench/gang/switch_floor.c measures).  The nodes stay in
 * step: each anchors on the strobe's instant (below), or on its own
 * arrival, and a new strobe replaces the rest.
 *
 * Announced instants (storm.conf SwitchAt=announced, the default): the
 * strobe names the instant of its switch on the MM's clock, a lead after
 * it was sent.  The NM converts it with its clock offset to the MM
 * (nm_clock.c) and the watcher switches at it, so every node switches at
 * one instant, whenever its strobe arrived, and the strobe's delivery
 * skew drops out.  A strobe that arrives after its instant switches at
 * once and counts as late.  While the offset is unknown or more uncertain
 * than a quarter of the quantum, the NM switches on arrival, as with
 * SwitchAt=arrival, and logs the change either way.
 *
 * A job Slurm suspended (scontrol suspend) is "held" in the table: the NM
 * leaves it to Slurm until it resumes (nm_gang_job_hold(), nm_gang_job.c).
 *
 * Fail-safe (fail open, nm_failsafe.c): if no strobe arrives for FailSafe,
 * every job this NM froze is thawed and every job it made idle-class is
 * back to normal, and so at exit; at start, job cgroups that an earlier NM
 * of this node left frozen or idle-class are restored.  A job is never
 * left frozen because a controller or a node manager died.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "src/common/storm_gang.h"
#include "nm.h"
#include "src/common/storm_time.h"
#include "nm_cgroup.h"
#include "nm_clock.h"
#include "nm_failsafe.h"
#include "nm_watchdog.h"
#include "nm_gang.h"
#include "nm_gang_job.h"
#include "nm_gang_plan.h"
#include "src/common/storm_deadline.h"
#include "src/common/storm_mutex.h"
#include "src/common/storm_thread.h"

/* One above the fabric progress thread (nm_fabric.c). */
#define NM_GANG_RT_PRIO 41
/* The switch trace (gang-trace): 8 s of switches at 2 ms quanta; the
 * benchmark reads it after a 5 s window. */
#define NM_GANG_TRACE 4096

/* One switch: a strobe's (q 0) or the q-th one timed after it. */
typedef struct trace {
	uint64_t epoch, sent_ns, recv_ns, done_ns;
	uint32_t q, slot, nfrozen;
} trace_t;

/*
 * The module's state.  Under lock (held while switching; ctl reads it)
 * but for the watcher's handle and sync_ready.  Nothing calls a storm_*
 * function while holding lock: on_commit takes it inside the ctx lock.
 */
static struct gang {
	nm_t *nm;
	storm_thread_t watcher;
	pthread_mutex_t lock;		/* priority-inheriting: init_sync */
	pthread_cond_t wake;		/* wakes the watcher (CLOCK_MONOTONIC) */
	bool sync_ready;

	nm_gang_job_t *jobs;
	int njobs, capjobs;
	storm_gang_strobe_t last;	/* last strobe applied */
	uint64_t table_gen;		/* generation applied */
	void *table_buf;		/* private copy of the table */
	nm_failsafe_t failsafe;		/* last strobe, fail-safe open */
	nm_gang_counts_t counts;	/* freezes, thaws, idles */
	uint64_t nstrobes, nsubs;
	trace_t ring[NM_GANG_TRACE];
	uint64_t ring_n;
	/* The switches the watcher times (nm_gang_plan.h); the strobe
	 * itself (its slot count and quanta) is `last`. */
	nm_gang_subs_t subs;
	uint32_t mode;			/* STORM_GANG_AT_*, of the last strobe */
	uint64_t late;			/* strobes after their instant */
	bool clock_due;			/* a clock reply for the watcher */
} gang = {
	.watcher = STORM_THREAD_INIT("storm-nm-gang", &gang.lock, &gang.wake),
};

static nm_gang_job_t *find_job(uint32_t job_id)
{
	for (int i = 0; i < gang.njobs; i++)
		if (gang.jobs[i].job_id == job_id)
			return &gang.jobs[i];
	return NULL;
}

static nm_gang_job_t *add_job(uint32_t job_id, uint32_t uid)
{
	nm_gang_job_t *j;

	if (gang.njobs == gang.capjobs) {
		int cap = gang.capjobs ? gang.capjobs * 2 : 64;
		nm_gang_job_t *n = realloc(gang.jobs, cap * sizeof(*n));

		if (!n)
			return NULL;
		gang.jobs = n;
		gang.capjobs = cap;
	}
	j = &gang.jobs[gang.njobs++];
	nm_gang_job_init(j, job_id, uid);
	return j;
}

static void drop_job(nm_gang_job_t *j)
{
	nm_gang_job_release(j);
	*j = gang.jobs[--gang.njobs];
}

/* Fail open: nothing frozen, nothing idle-class (nm_failsafe_thaw_f);
 * how many jobs it undid.  Called with lock held. */
static int thaw_all(void *arg)
{
	int n = 0;

	(void) arg;
	for (int i = 0; i < gang.njobs; i++) {
		if (gang.jobs[i].frozen || gang.jobs[i].idle)
			n++;
		nm_gang_job_set_frozen(&gang.jobs[i], false, &gang.counts);
		nm_gang_job_set_idle(&gang.jobs[i], false, &gang.counts);
	}
	return n;
}

/* Copy the table out of the region if it is the generation the strobe
 * names; else keep the one we have (a late table only delays changes). */
static void load_table(uint64_t want_gen)
{
	size_t rsize = 0;
	char *region = storm_region_ptr(gang.nm->ctx, &rsize);
	const storm_gang_table_t *t;
	size_t len;

	if (!region || rsize < STORM_GANG_TABLE_OFF + sizeof(*t))
		return;
	t = (const void *) (region + STORM_GANG_TABLE_OFF);
	if (t->magic != STORM_GANG_MAGIC || t->gen != want_gen ||
	    t->njobs > STORM_GANG_MAX_JOBS)
		return;
	len = sizeof(*t) + t->njobs * sizeof(t->jobs[0]);
	if (STORM_GANG_TABLE_OFF + len > rsize)
		return;
	memcpy(gang.table_buf, t, len);
	gang.table_gen = want_gen;
	nm_debug("gang: table generation %llu: %u jobs, %u slots",
		 (unsigned long long) want_gen, t->njobs, t->nslots);
}

/* Switch to slot: the outgoing jobs first, then the incoming. */
static uint32_t apply(uint32_t slot)
{
	const storm_gang_table_t *t = gang.table_buf;
	uint32_t bit = slot < 32 ? 1u << slot : 0, nfrozen = 0;
	uint64_t now = storm_mono_ns();

	for (int i = 0; i < gang.njobs; i++)
		gang.jobs[i].listed = false;
	if (t->magic == STORM_GANG_MAGIC) {
		for (uint32_t k = 0; k < t->njobs; k++) {
			const storm_gang_job_t *e = &t->jobs[k];
			nm_gang_job_t *j = find_job(e->job_id);

			if (!j && !(j = add_job(e->job_id, e->uid)))
				continue;
			j->listed = true;
			j->mask = e->slot_mask;
			if (!nm_gang_job_present(j) && now >= j->retry_ns)
				nm_gang_job_open(j, now);
			if (e->how == STORM_GANG_SWITCH_HOLD) {
				nm_gang_job_hold(j, &gang.counts);
				continue;
			}
			nm_gang_job_unhold(j);
			if (j->how != e->how)
				j->stale = true;	/* the batch step may change */
			j->how = e->how;
		}
	}
	/* Jobs no longer listed: thawed if we froze them, then forgotten. */
	for (int i = 0; i < gang.njobs;) {
		if (!gang.jobs[i].listed) {
			nm_gang_job_set_frozen(&gang.jobs[i], false,
					       &gang.counts);
			drop_job(&gang.jobs[i]);
			continue;
		}
		i++;
	}
	for (int i = 0; i < gang.njobs; i++)
		if (!gang.jobs[i].held && !(gang.jobs[i].mask & bit))
			nm_gang_job_switch_out(&gang.jobs[i], &gang.counts);
	for (int i = 0; i < gang.njobs; i++)
		if (!gang.jobs[i].held && (gang.jobs[i].mask & bit))
			nm_gang_job_switch_in(&gang.jobs[i], &gang.counts);
	for (int i = 0; i < gang.njobs; i++)
		if (gang.jobs[i].frozen)
			nfrozen++;
	return nfrozen;
}

/* Switch to slot and record it in the trace ring.  Called with lock
 * held. */
static void traced_apply(uint64_t epoch, uint32_t q, uint32_t slot,
			 uint64_t sent_ns, uint64_t recv_ns)
{
	trace_t *t = &gang.ring[gang.ring_n++ % NM_GANG_TRACE];

	*t = (trace_t) { .epoch = epoch, .q = q, .slot = slot,
			 .sent_ns = sent_ns, .recv_ns = recv_ns };
	t->nfrozen = apply(slot);
	t->done_ns = nm_clock_now();
}

static uint64_t failsafe_ns(void);

static const char *mode_str(uint32_t mode)
{
	switch (mode) {
	case STORM_GANG_AT_ANNOUNCED:
		return "announced";
	case STORM_GANG_AT_ARRIVAL:
		return "arrival";
	case STORM_GANG_AT_FALLBACK:
		return "fallback";
	}
	return "none";
}

/* How to take this strobe: at its instant (offset in *off) or on arrival
 * (nm_gang_plan_mode()).  A change is logged.  Called with lock held. */
static uint32_t choose_mode(const storm_gang_strobe_t *s, int64_t *off)
{
	uint64_t unc = 0;
	uint32_t mode;
	bool known = false;

	*off = 0;
	if (s->at_ns)
		known = nm_clock_estimate(off, &unc);
	mode = nm_gang_plan_mode(s, known, unc);
	if (mode == gang.mode)
		return mode;
	if (mode == STORM_GANG_AT_ANNOUNCED)
		nm_info("gang: switching at announced instants (clock offset %lld us, uncertainty %llu us)",
			(long long) (*off / 1000),
			(unsigned long long) (unc / 1000));
	else if (mode == STORM_GANG_AT_ARRIVAL)
		nm_info("gang: switching on arrival (SwitchAt=arrival)");
	else if (known)
		nm_info("gang: switching on arrival: clock offset uncertainty %llu us is above a quarter of the %llu us quantum",
			(unsigned long long) (unc / 1000),
			(unsigned long long) s->quantum_us);
	else
		nm_info("gang: switching on arrival until the clock offset to the machine manager is estimated");
	gang.mode = mode;
	return mode;
}

/* A valid strobe arrived: switch to its slot, at once or at its instant,
 * and take its quanta over.  recv_ns is this node's clock (nm_clock_now),
 * recv_mono CLOCK_MONOTONIC, both at arrival.  Called with lock held. */
static void take_strobe(const storm_gang_strobe_t *s, uint64_t recv_ns,
			uint64_t recv_mono)
{
	nm_gang_take_t take;
	uint32_t mode;
	int64_t off;

	if (s->mm_id != gang.last.mm_id)
		nm_info("gang: strobes from machine manager %llu, quantum %llu us",
			(unsigned long long) s->mm_id,
			(unsigned long long) s->quantum_us);
	if (s->table_gen != gang.table_gen)
		load_table(s->table_gen);
	gang.last = *s;
	gang.counts.long_ns = nm_gang_plan_long_ns(s);
	gang.counts.failsafe_ns = failsafe_ns();
	nm_failsafe_strobe(&gang.failsafe, storm_mono_ns(), s->epoch);
	nm_watchdog_strobe(gang.failsafe.last_strobe_ns, failsafe_ns());
	gang.nstrobes++;
	mode = choose_mode(s, &off);
	take = nm_gang_plan_strobe(s, mode, off, recv_ns, recv_mono,
				   &gang.subs);
	if (take == NM_GANG_TAKE_LATE)
		gang.late++;
	if (take != NM_GANG_TAKE_AT)
		traced_apply(s->epoch, 0, s->slot, s->sent_ns, recv_ns);
	if (gang.subs.left)
		pthread_cond_signal(&gang.wake);	/* a nearer deadline */
}

/*
 * A strobe, handled where it arrives: the library calls this on the
 * fabric's real-time progress thread when a transfer commits (the strobe:
 * when it arrives, after it went on to this node's children) with the ctx
 * locked.  Switching here instead of in a thread woken by TEST-EVENT saves
 * a real-time wake-up per strobe on every node, and on a shared host those
 * wake-ups, serialized, were most of the first-to-last switch skew.  The
 * remote event is still signalled, for anyone who waits on it.
 */
static void on_commit(void *arg, int root, uint64_t offset, uint64_t len,
		      void *dst)
{
	uint64_t recv_ns = nm_clock_now();
	uint64_t recv_mono = storm_mono_ns();
	storm_gang_strobe_t s;
	storm_gang_clock_req_t r;

	(void) arg;
	if (root != gang.nm->nnodes)
		return;		/* not from the machine manager */
	if (offset == STORM_GANG_CLOCK_OFF && len == sizeof(r)) {
		memcpy(&r, dst, sizeof(r));
		if (nm_clock_request(gang.nm, &r, recv_ns)) {
			/* answered by the watcher: no storm_* call here */
			pthread_mutex_lock(&gang.lock);
			gang.clock_due = true;
			pthread_cond_signal(&gang.wake);
			pthread_mutex_unlock(&gang.lock);
		}
		return;
	}
	if (offset != STORM_GANG_STROBE_OFF || len != sizeof(s))
		return;		/* not a strobe */
	memcpy(&s, dst, sizeof(s));
	if (s.magic != STORM_GANG_MAGIC || s.epoch != s.epoch_check)
		return;
	pthread_mutex_lock(&gang.lock);
	take_strobe(&s, recv_ns, recv_mono);
	pthread_mutex_unlock(&gang.lock);
	storm_var_set(gang.nm->ctx, STORM_GANG_VAR_APPLIED, s.epoch);
}

/* FailSafe as the strobes carry it, else as configured; after a stopping
 * Machine Manager's handover, counted from the end of its quanta. */
static uint64_t failsafe_ns(void)
{
	return nm_gang_plan_failsafe_ns(&gang.last,
					(gang.last.failsafe_us ?
					 gang.last.failsafe_us :
					 gang.nm->conf.failsafe_us) * 1000ULL);
}

/*
 * The watcher sleeps until the fail-safe would fire, not on a short fixed
 * period and not per strobe: an idle real-time thread that wakes often
 * costs every job on the node a context switch each time.  A strobe that
 * covers several quanta brings its switches forward.  Called with lock
 * held.
 */
static void next_deadline(uint64_t now, bool frozen, struct timespec *ts)
{
	uint64_t fs_due = nm_failsafe_due(&gang.failsafe, failsafe_ns());
	uint64_t max_ms = frozen ? NM_GANG_SCAN_MS : NM_GANG_WAIT_MAX_MS;
	uint64_t due = nm_gang_plan_deadline(now, fs_due, max_ms, &gang.subs);

	ts->tv_sec = due / 1000000000ULL;
	ts->tv_nsec = due % 1000000000ULL;
}

/* Freeze the steps that frozen jobs started since they were frozen (v1);
 * true if any job is frozen.  Called with lock held.  Not on every
 * wake-up: with timed switches (StrobeInterval) the watcher wakes every
 * quantum (a look is due after 90% of the period, so a wake-up a little
 * early does not double it). */
static bool scan_frozen_jobs(void)
{
	bool any = false;

	for (int i = 0; i < gang.njobs; i++) {
		int rc;

		if (!gang.jobs[i].frozen)
			continue;
		any = true;
		if ((rc = nm_gang_job_scan(&gang.jobs[i],
					    NM_GANG_SCAN_NS / 10 * 9)))
			nm_gang_job_left(&gang.jobs[i], rc);
	}
	return any;
}

/* The next timed switch, if it is due: the strobe's own at its instant,
 * or the slot after the last one.  A late thread (more than a quantum)
 * jumps to the slot the other nodes are in; the strobe's own switch is
 * never skipped (it may bring a new table).  Called with lock held. */
static void sub_switch(uint64_t now)
{
	uint32_t q, slot;

	if (!nm_gang_plan_next_switch(&gang.subs, gang.last.nslots, now,
				      &slot, &q))
		return;
	gang.last.slot = slot;
	traced_apply(gang.last.epoch, q, slot, gang.last.sent_ns,
		     nm_clock_now());
	if (q)
		gang.nsubs++;
}

/* The watcher: the timed switches of a strobe that covers several quanta,
 * the fail-safe (at real-time priority, so that a fail-safe thaw does not
 * wait behind the jobs) and, while a job is frozen, a look every
 * NM_GANG_SCAN_MS for its new steps. */
static void *watcher_thread(void *arg)
{
	int rc = storm_thread_sched_self(SCHED_FIFO, NM_GANG_RT_PRIO);

	(void) arg;
	if (rc)
		nm_info("gang: no SCHED_FIFO for the fail-safe thread (%s); a fail-safe thaw may wait for scheduler ticks",
			strerror(rc));
	pthread_mutex_lock(&gang.lock);
	nm_failsafe_start(&gang.failsafe, storm_mono_ns());
	while (!storm_thread_stopping(&gang.watcher)) {
		uint64_t now = storm_mono_ns();
		struct timespec ts;

		sub_switch(now);
		if (nm_failsafe_check(&gang.failsafe, now, failsafe_ns(),
				      thaw_all, NULL))
			gang.subs.left = 0;
		if (gang.clock_due) {
			uint64_t late = gang.late;
			uint32_t mode = gang.mode;

			/* storm_xfer: never under lock */
			gang.clock_due = false;
			pthread_mutex_unlock(&gang.lock);
			nm_clock_reply(gang.nm, late, mode);
			pthread_mutex_lock(&gang.lock);
			continue;
		}
		next_deadline(now, scan_frozen_jobs(), &ts);
		pthread_cond_timedwait(&gang.wake, &gang.lock, &ts);
	}
	pthread_mutex_unlock(&gang.lock);
	return NULL;
}

extern bool nm_gang_failsafe(uint64_t *nevents, bool *open)
{
	if (!gang.sync_ready || pthread_mutex_trylock(&gang.lock))
		return false;	/* not started, or busy: ask again later */
	*nevents = gang.failsafe.nevents;
	*open = gang.failsafe.open;
	pthread_mutex_unlock(&gang.lock);
	return true;
}

extern int nm_gang_jobs_here(uint32_t *ids, uint32_t *uids, int max)
{
	int n = 0;

	if (!gang.sync_ready || pthread_mutex_trylock(&gang.lock))
		return -1;
	for (int i = 0; i < gang.njobs && n < max; i++)
		if (nm_gang_job_present(&gang.jobs[i])) {
			ids[n] = gang.jobs[i].job_id;
			uids[n++] = gang.jobs[i].uid;
		}
	pthread_mutex_unlock(&gang.lock);
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

extern bool nm_gang_switch_lag(bool *has, int64_t *lag_us)
{
	int64_t lag[NM_GANG_LAG_STROBES];
	int n = 0;

	if (!gang.sync_ready || pthread_mutex_trylock(&gang.lock))
		return false;	/* not started, or busy: ask again later */
	/* copied under the lock, sorted outside: on_commit waits on it */
	for (uint64_t k = gang.ring_n;
	     k > 0 && gang.ring_n - k < NM_GANG_TRACE &&
	     n < NM_GANG_LAG_STROBES; k--) {
		const trace_t *t = &gang.ring[(k - 1) % NM_GANG_TRACE];

		if (t->q == 0 && t->sent_ns)
			lag[n++] = ((int64_t) t->done_ns - (int64_t) t->sent_ns) / 1000;
	}
	pthread_mutex_unlock(&gang.lock);
	*has = n > 0;
	if (n) {
		qsort(lag, (size_t) n, sizeof(lag[0]), cmp_i64);
		*lag_us = lag[n / 2];
	}
	return true;
}

/* "gang": one line of state for stormctl and tests. */
static int ctl_gang(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		    size_t outlen)
{
	int nfrozen = 0, nidle_now = 0, nbatch_idle = 0, o;
	uint64_t now, oldest = 0;
	int64_t off = 0;
	uint64_t unc = 0;
	bool known = nm_clock_estimate(&off, &unc);

	pthread_mutex_lock(&gang.lock);
	/* read under the lock: taken before it, a switch made while this
	 * thread waited would be "frozen" since an instant after now, and the
	 * unsigned age wrapped to 2^64 ns */
	now = storm_mono_ns();
	for (int i = 0; i < gang.njobs; i++) {
		bool whole = gang.jobs[i].how == STORM_GANG_SWITCH_IDLE;

		nfrozen += gang.jobs[i].frozen;
		if (gang.jobs[i].frozen &&
		    now - gang.jobs[i].frozen_ns > oldest)
			oldest = now - gang.jobs[i].frozen_ns;
		nidle_now += gang.jobs[i].idle && whole;
		nbatch_idle += gang.jobs[i].idle && !whole;
	}
	o = snprintf(out, outlen,
		     "epoch=%llu slot=%u table_gen=%llu quantum_us=%llu cgroup=v%d jobs=%d frozen=%d idle=%d batch_idle=%d strobes=%llu timed_switches=%llu freezes=%llu thaws=%llu idles=%llu failsafe=%s failsafe_events=%llu last_strobe_ms=%llu freezes_long=%llu freeze_max_us=%llu freezes_over_failsafe=%llu frozen_oldest_ms=%llu switch_at=%s late_switches=%llu clock_offset_ns=%lld clock_uncert_ns=%lld",
		     (unsigned long long) gang.last.epoch, gang.last.slot,
		     (unsigned long long) gang.table_gen,
		     (unsigned long long) gang.last.quantum_us, nm_cg_version(),
		     gang.njobs, nfrozen, nidle_now, nbatch_idle,
		     (unsigned long long) gang.nstrobes,
		     (unsigned long long) gang.nsubs,
		     (unsigned long long) gang.counts.freezes,
		     (unsigned long long) gang.counts.thaws,
		     (unsigned long long) gang.counts.idles,
		     gang.failsafe.open ? "open" : "no",
		     (unsigned long long) gang.failsafe.nevents,
		     (unsigned long long) ((storm_mono_ns() -
					    gang.failsafe.last_strobe_ns) / 1000000),
		     (unsigned long long) gang.counts.freezes_long,
		     (unsigned long long) (gang.counts.freeze_max_ns / 1000),
		     (unsigned long long) gang.counts.freezes_over_failsafe,
		     (unsigned long long) (oldest / 1000000),

		     mode_str(gang.mode), (unsigned long long) gang.late,
		     (long long) off, known ? (long long) unc : -1LL);
	for (int i = 0; i < gang.njobs && o > 0 && (size_t) o < outlen; i++)
		o += snprintf(out + o, outlen - o, " job%u=%s%s",
			      gang.jobs[i].job_id,
			      nm_gang_job_state(&gang.jobs[i]),
			      gang.jobs[i].mask == STORM_GANG_ALL_SLOTS ?
			      "(alone)" : "");
	pthread_mutex_unlock(&gang.lock);
	return 0;
}

/* "gang-trace [SINCE [Q]]": epoch:slot:sent:recv:done:q (ns,
 * CLOCK_REALTIME) of the switches after switch Q of strobe SINCE, oldest
 * first, as many as fit; q is 0 for a strobe's own switch and k for the
 * k-th switch this node timed after it (StrobeInterval).  The ring is
 * copied out under the lock and formatted after: the lock is what the next
 * switch waits for. */
static int ctl_trace(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		     size_t outlen)
{
	unsigned long long since = 0, since_q = 0;
	trace_t *copy;
	uint64_t first, n;
	size_t o = 0;

	out[0] = '\0';
	if (args && *args &&
	    sscanf(args, "%llu %llu", &since, &since_q) < 1) {
		snprintf(out, outlen, "usage: gang-trace [SINCE [Q]]");
		return -EINVAL;
	}
	if (!(copy = malloc(sizeof(gang.ring)))) {
		snprintf(out, outlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&gang.lock);
	n = gang.ring_n;
	memcpy(copy, gang.ring, sizeof(gang.ring));
	pthread_mutex_unlock(&gang.lock);
	first = n > NM_GANG_TRACE ? n - NM_GANG_TRACE : 0;
	for (uint64_t i = first; i < n; i++) {
		const trace_t *t = &copy[i % NM_GANG_TRACE];
		int k;

		if (t->epoch < since || (t->epoch == since && t->q <= since_q))
			continue;
		k = snprintf(out + o, outlen - o, "%s%llu:%u:%llu:%llu:%llu:%u",
			     o ? " " : "", (unsigned long long) t->epoch,
			     t->slot, (unsigned long long) t->sent_ns,
			     (unsigned long long) t->recv_ns,
			     (unsigned long long) t->done_ns, t->q);
		if (k < 0 || (size_t) k >= outlen - o) {
			out[o] = '\0';
			break;
		}
		o += k;
	}
	free(copy);
	return 0;
}

/* The Machine Manager is rank nnodes at the controller's address. */
static int set_mm_peer(nm_t *nm)
{
	slurm_conf_t *cf = NULL;
	char hp[300];
	int rc;

	if (slurm_load_ctl_conf((time_t) 0, &cf) != SLURM_SUCCESS || !cf ||
	    !cf->control_cnt || !cf->control_addr || !cf->control_addr[0]) {
		nm_error("gang: cannot learn the controller address: %s",
			 slurm_strerror(errno));
		if (cf)
			slurm_free_ctl_conf(cf);
		return -EHOSTUNREACH;
	}
	snprintf(hp, sizeof(hp), "%s:%u", cf->control_addr[0],
		 nm->conf.ctl_port);
	slurm_free_ctl_conf(cf);
	rc = storm_ctx_set_peer(nm->ctx, nm->nnodes, hp);
	if (rc) {
		nm_error("gang: cannot add the machine manager %s as rank %d: %s",
			 hp, nm->nnodes, storm_strerror(rc));
		return rc;
	}
	nm_info("gang: machine manager is rank %d at %s", nm->nnodes, hp);
	return 0;
}

/*
 * The lock inherits priority: the real-time switch must not wait behind an
 * ordinary-priority ctl thread that the jobs keep off the CPU.
 */
static int init_sync(void)
{
	int rc;

	if (gang.sync_ready)
		return 0;
	if ((rc = storm_mutex_init_inherit(&gang.lock)))
		return -rc;
	if ((rc = storm_cond_init_monotonic(&gang.wake)))
		return -rc;
	gang.sync_ready = true;
	return 0;
}

static int gang_init(nm_t *nm)
{
	size_t rsize = 0;
	int rc;

	gang.nm = nm;
	nm_clock_init();
	if ((rc = init_sync()))
		return rc;
	if ((rc = nm_cg_init(nm)))
		return rc;
	nm_failsafe_recover();
	if (!storm_region_ptr(nm->ctx, &rsize) ||
	    rsize < STORM_GANG_TABLE_OFF + sizeof(storm_gang_table_t) +
		    STORM_GANG_MAX_JOBS * sizeof(storm_gang_job_t)) {
		nm_error("gang: fabric region of %zu bytes is too small for the job table",
			 rsize);
		return -ENOSPC;
	}
	gang.table_buf = calloc(1, sizeof(storm_gang_table_t) +
			      STORM_GANG_MAX_JOBS * sizeof(storm_gang_job_t));
	if (!gang.table_buf)
		return -ENOMEM;
	if ((rc = set_mm_peer(nm)))
		goto fail;
	nm_ctl_register("gang", ctl_gang);
	nm_ctl_register("gang-trace", ctl_trace);
	if ((rc = -storm_thread_start(&gang.watcher, watcher_thread, NULL)))
		goto fail;
	storm_set_recv_fn(nm->ctx, on_commit, NULL);
	return 0;
fail:
	free(gang.table_buf);
	gang.table_buf = NULL;
	return rc;
}

static void gang_fini(nm_t *nm)
{
	int n;

	/* takes the ctx lock, so no on_commit() runs past this point */
	storm_set_recv_fn(nm->ctx, NULL, NULL);
	if (gang.watcher.started)
		storm_thread_stop(&gang.watcher);
	nm_clock_fini();
	pthread_mutex_lock(&gang.lock);
	n = thaw_all(NULL);	/* fail open at exit too */
	while (gang.njobs)
		drop_job(&gang.jobs[0]);
	(void) nm_cg_idle_cleanup();	/* and our cpu-controller directory */
	pthread_mutex_unlock(&gang.lock);
	if (n)
		nm_info("gang: thawed %d job(s) on exit", n);
	free(gang.jobs);
	gang.jobs = NULL;
	gang.capjobs = 0;
	free(gang.table_buf);
	gang.table_buf = NULL;
}

const nm_module_t nm_gang_module = {
	.name = "gang",
	.init = gang_init,
	.fini = gang_fini,
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_listener.c - the Machine Manager's listener thread (mm_listener.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"

#include "mm_faults.h"
#include "mm_heartbeat.h"
#include "mm_listener.h"
#include "mm_silence.h"

#define MM_LISTENER_MIN_NS 1000000ULL
#define MM_LISTENER_MAX_NS 50000000ULL
/* Progress passes per tick: enough for every node's heartbeat and more,
 * bounded so that a flood of junk cannot hold this thread.  After a stall
 * everything queued in it must be taken in before anyone is judged, so
 * the bound is higher then. */
#define MM_LISTENER_PASSES 64
#define MM_LISTENER_CATCH_UP_PASSES 4096
/* Stalls are logged one line a second at most, with the count between. */
#define MM_LISTENER_STALL_LOG_NS 1000000000ULL

typedef struct mm_listener {
	mm_t *mm;		/* ctx, nnodes, node_names, nodes: fixed while
				 * the thread runs (mm_fabric.c) */
	pthread_t tid;
	atomic_bool run;
	uint64_t suspect_us;	/* SuspectTime (a change rejoins the fabric
				 * and so restarts this thread) */
	uint64_t tick_ns;
	uint64_t stall_logged_ns;
	uint64_t stalls_unlogged;
	int prio;		/* the thread's now: 0 normal */
	bool prio_warned;
	/* The thread's own: */
	mm_silence_t silence;
	uint64_t *beat_seen;	/* each node's last heartbeat value */
	uint64_t *ack_seen;	/* ... and ack_heard_ns */
} mm_listener_t;

extern uint64_t mm_listener_tick_ns(uint64_t suspect_time_us)
{
	uint64_t ns = suspect_time_us * 1000ULL / 16;

	if (ns < MM_LISTENER_MIN_NS)
		ns = MM_LISTENER_MIN_NS;
	if (ns > MM_LISTENER_MAX_NS)
		ns = MM_LISTENER_MAX_NS;
	return ns;
}

static void set_prio(mm_listener_t *l, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	int rc;

	if (l->prio == prio)
		return;
	rc = pthread_setschedparam(pthread_self(),
				   prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (!rc) {
		l->prio = prio;
	} else if (prio && !l->prio_warned) {
		l->prio_warned = true;
		verbose("%s: no SCHED_FIFO for the heartbeat listener (%s); on a busy host a silent node may be drained late",
			MM_PREFIX, strerror(rc));
	}
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* What arrived since the last tick, and what each node was last heard. */
static void take_in(mm_listener_t *l, uint64_t now)
{
	mm_t *mm = l->mm;

	for (int i = 0; i < mm->nnodes; i++) {
		const storm_node_report_t *r = mm_heartbeat_report(mm, i);
		uint64_t ack = atomic_load(&mm->nodes[i].ack_heard_ns);

		if (r && r->beat != l->beat_seen[i]) {
			l->beat_seen[i] = r->beat;
			mm_silence_heard(&l->silence, i, now);
		}
		if (ack != l->ack_seen[i]) {
			l->ack_seen[i] = ack;
			mm_silence_heard(&l->silence, i, ack);
		}
	}
}

static void log_tick(mm_listener_t *l, unsigned what, uint64_t now)
{
	if (what & MM_SILENCE_STALL) {
		l->stalls_unlogged++;
		if (now - l->stall_logged_ns >= MM_LISTENER_STALL_LOG_NS) {
			info("%s: heartbeat listener did not observe for %" PRIu64 " ms (this thread, slurmctld or the host stalled; %" PRIu64 " such stalls since the last line): every node's silence counts afresh",
			     MM_PREFIX, l->silence.stall_ns / 1000000,
			     l->stalls_unlogged);
			l->stall_logged_ns = now;
			l->stalls_unlogged = 0;
		}
	}
	if (what & MM_SILENCE_NOBODY)
		error("%s: no node manager heard for over half of SuspectTime=%" PRIu64 "us; draining none while none is heard: the controller's host or link is the likelier fault",
		      MM_PREFIX, l->suspect_us);
	if (what & MM_SILENCE_FORGIVEN)
		info("%s: node managers heard again (none was for %" PRIu64 " ms); their silence is forgiven, and those not back yet are drained if still silent after SuspectTime",
		     MM_PREFIX,
		     (l->silence.heard_again_ns - l->silence.all_silent_ns) /
		     1000000);
}

/* The verdicts, where the MM thread reads them. */
static void publish(mm_listener_t *l)
{
	mm_t *mm = l->mm;

	atomic_store(&mm->nobody_heard, l->silence.all_silent);
	atomic_store(&mm->heard_again_ns, l->silence.heard_again_ns);
	for (int i = 0; i < mm->nnodes; i++) {
		const mm_silence_node_t *s = &l->silence.nodes[i];
		mm_node_t *n = &mm->nodes[i];

		atomic_store(&n->heard_ns, s->heard_ns);
		atomic_store(&n->silent_ns, s->silent_ns);
		if (atomic_exchange(&n->quiet, s->quiet) == s->quiet)
			continue;
		if (s->quiet)
			verbose("%s: %s silent for %" PRIu64 " ms: left out of strobes until it is heard",
				MM_PREFIX, mm->node_names[i],
				s->silent_ns / 1000000);
		else
			atomic_fetch_add(&mm->back_gen, 1);
	}
}

/*
 * slurmctld's locks at normal priority, as the MM thread takes them
 * (mm_prio.c): a real-time thread waiting for a lock whose holder a busy
 * host does not run can hang slurmctld.
 */
static void drain_due(mm_listener_t *l)
{
	mm_t *mm = l->mm;

	for (int i = 0; i < mm->nnodes; i++) {
		if (!mm_silence_due(&l->silence, i) || mm->nodes[i].drained)
			continue;
		set_prio(l, 0);
		mm_faults_drain_silent(mm, i, l->silence.nodes[i].silent_ns,
				       l->suspect_us);
	}
	set_prio(l, MM_LISTENER_PRIO);
}

/*
 * Progress first, so that a heartbeat that waited in a socket (nobody
 * drove the fabric meanwhile) is taken in before anyone is judged; its
 * silence then counts from now, a little short, never long.  A pass that
 * starts late (the time since the last one ended over the stall limit:
 * the tick will restart every silence) drives progress until nothing is
 * left, so that the restart comes after all that was queued.
 */
static void listen_once(mm_listener_t *l)
{
	mm_t *mm = l->mm;
	int passes = MM_LISTENER_PASSES;
	uint64_t now = storm_mono_ns();

	/* the silence bookkeeping's last tick is the last pass's end */
	if (l->silence.last_tick_ns &&
	    now > l->silence.last_tick_ns + l->silence.stall_limit_ns)
		passes = MM_LISTENER_CATCH_UP_PASSES;
	for (int k = 0; k < passes; k++)
		if (storm_progress(mm->ctx, 0) <= 0)
			break;
	take_in(l, storm_mono_ns());
	now = storm_mono_ns();
	log_tick(l, mm_silence_tick(&l->silence, now), now);
	publish(l);
	drain_due(l);
}

static void *listener_main(void *arg)
{
	mm_listener_t *l = arg;
	uint64_t next = storm_mono_ns();

	set_prio(l, MM_LISTENER_PRIO);
	while (atomic_load(&l->run)) {
		uint64_t now = storm_mono_ns();

		/* never catch up: a late pass is a stall, handled once */
		next += l->tick_ns;
		if (next < now)
			next = now;
		sleep_until(next);
		if (!atomic_load(&l->run))
			break;
		listen_once(l);
	}
	return NULL;
}

static void free_listener(mm_listener_t *l)
{
	mm_silence_free(&l->silence);
	xfree(l->beat_seen);
	xfree(l->ack_seen);
	xfree(l);
}

extern int mm_listener_start(mm_t *mm)
{
	mm_listener_t *l = xmalloc(sizeof(*l));
	int rc;

	l->mm = mm;
	l->suspect_us = mm->conf.suspect_time_us;
	l->tick_ns = mm_listener_tick_ns(l->suspect_us);
	l->prio = -1;
	l->beat_seen = xcalloc(mm->nnodes + 1, sizeof(uint64_t));
	l->ack_seen = xcalloc(mm->nnodes + 1, sizeof(uint64_t));
	if (mm_silence_init(&l->silence, mm->nnodes, l->suspect_us * 1000ULL,
			    l->tick_ns)) {
		error("%s: no memory for the heartbeat listener", MM_PREFIX);
		free_listener(l);
		return -1;
	}
	atomic_store(&l->run, true);
	rc = pthread_create(&l->tid, NULL, listener_main, l);
	if (rc) {
		error("%s: cannot start the heartbeat listener: %s", MM_PREFIX,
		      strerror(rc));
		free_listener(l);
		return -1;
	}
	mm->listener = l;
	debug("%s: heartbeat listener started, every %" PRIu64 " us",
	      MM_PREFIX, l->tick_ns / 1000);
	return 0;
}

extern void mm_listener_stop(mm_t *mm)
{
	mm_listener_t *l = mm->listener;

	if (!l)
		return;
	atomic_store(&l->run, false);
	pthread_join(l->tid, NULL);
	mm->listener = NULL;
	free_listener(l);
}

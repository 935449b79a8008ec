/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_offset.c - the nodes' clock offsets and the strobe's lead
 * (mm_offset.h; the exchange in storm_gang.h, the arithmetic in
 * storm_clock.h).
 *
 * Every MM_OFFSET_PROBE_NS (while slots switch; every
 * MM_OFFSET_IDLE_PROBE_NS otherwise) the thread sends one node a clock
 * request and waits a little for the reply.  The reply's receive time t4
 * is stamped in the fabric's receive callback, which this thread runs
 * itself while it waits (the MM has no progress thread), so a reply that
 * comes while the thread waits is stamped when it arrives; one that comes
 * later is stamped late (at the heartbeat listener's next progress pass,
 * mm_listener.h), its sample's delay shows it, and the node's filter
 * passes it over.  The next request to that node carries the t4
 * back, and the node estimates its own offset (nm_clock.c): the node is
 * the one that converts instants.
 *
 * The lead: the strobe's round trip to its slowest node bounds how long
 * the strobe takes to reach every node; it is tracked (up at once, down
 * slowly) and the lead follows it, bounded (storm_clock_lead()).  A node
 * that reports new late switches raises the tracked time by a quarter.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"

#include "src/common/storm_clock.h"
#include "src/common/storm_gang.h"
#include "src/common/storm_time.h"

#include "mm_fabric.h"
#include "mm_offset.h"

#define MM_OFFSET_PROBE_NS 25000000ULL
#define MM_OFFSET_IDLE_PROBE_NS 250000000ULL

typedef struct mm_offsets {
	pthread_mutex_t lock;		/* nodes: the callback and the thread */
	mm_offset_node_t *nodes;
	int nnodes;
	storm_gang_clock_req_t req;	/* the request in flight */
	storm_op_t *op;			/* its op, until it ends */
	uint64_t seq, last_probe;
	int rr;
	uint64_t delivery_ns, lead_ns;
} mm_offsets_t;

/* The fabric's receive callback (ctx locked, on this thread while it
 * drives progress): a clock reply lands in its rank's place. */
static void on_reply(void *arg, int root, uint64_t offset, uint64_t len,
		     void *dst)
{
	mm_offsets_t *o = arg;
	uint64_t t4 = storm_real_ns();
	storm_gang_clock_rep_t r;
	mm_offset_node_t *n;
	int rank;

	if (len != sizeof(r) || offset < STORM_GANG_CLOCK_REP_BASE ||
	    (offset - STORM_GANG_CLOCK_REP_BASE) % sizeof(r))
		return;
	rank = (int) ((offset - STORM_GANG_CLOCK_REP_BASE) / sizeof(r));
	memcpy(&r, dst, sizeof(r));
	if (rank != root || r.magic != STORM_GANG_MAGIC ||
	    r.rank != (uint32_t) rank)
		return;
	pthread_mutex_lock(&o->lock);
	if (rank < o->nnodes) {
		n = &o->nodes[rank];
		if (r.seq == n->seq_sent && r.t1 == n->t1_sent) {
			n->rep_seq = r.seq;
			n->rep_t4 = t4;
		}
		n->offset_ns = r.offset_ns;
		n->uncert_ns = r.uncert_ns;
		n->late = r.late;
		n->mode = r.mode;
		n->replied = true;
	}
	pthread_mutex_unlock(&o->lock);
}

extern int mm_offset_open(mm_t *mm)
{
	mm_offsets_t *o = xmalloc(sizeof(*o));

	slurm_mutex_init(&o->lock);
	o->nnodes = mm->nnodes < STORM_GANG_CLOCK_MAX_RANKS ?
		    mm->nnodes : STORM_GANG_CLOCK_MAX_RANKS;
	o->nodes = xcalloc(o->nnodes + 1, sizeof(*o->nodes));
	mm->offsets = o;
	storm_set_recv_fn(mm->ctx, on_reply, o);
	return 0;
}

extern void mm_offset_close(mm_t *mm)
{
	mm_offsets_t *o = mm->offsets;

	if (!o)
		return;
	if (o->op)
		storm_op_free(o->op);
	if (mm->ctx)
		storm_set_recv_fn(mm->ctx, NULL, NULL);
	slurm_mutex_destroy(&o->lock);
	xfree(o->nodes);
	xfree(o);
	mm->offsets = NULL;
}

/* The next live node after the last one asked, or -1. */
static int probe_target(mm_t *mm, mm_offsets_t *o)
{
	for (int k = 0; k < o->nnodes; k++) {
		o->rr = (o->rr + 1) % o->nnodes;
		if (mm->nodes[o->rr].live)
			return o->rr;
	}
	return -1;
}

/* A node that reports new late switches: the lead grows. */
static void look_at_late(mm_offsets_t *o, mm_offset_node_t *n, int i,
			 const char *name)
{
	if (n->late <= n->late_seen)
		return;
	debug("%s: node %s (%d) switched late %" PRIu64 " time(s); lead %" PRIu64 " us grows",
	      MM_PREFIX, name, i, n->late - n->late_seen, o->lead_ns / 1000);
	n->late_seen = n->late;
	o->delivery_ns += o->delivery_ns / 4;
}

extern void mm_offset_probe(mm_t *mm, uint64_t now)
{
	mm_offsets_t *o = mm->offsets;
	uint64_t every = mm->matrix.nslots > 1 ? MM_OFFSET_PROBE_NS :
						 MM_OFFSET_IDLE_PROBE_NS;
	uint64_t before = 0, q_ms = mm->conf.timeslice_us / 1000;
	mm_offset_node_t *n;
	storm_set_t one;
	int i, rc, wait_ms = q_ms > 2 ? (int) (q_ms / 2) : 1;

	if (!o || !mm->ctx || !o->nnodes || now - o->last_probe < every)
		return;
	/* the last request's buffer is o->req: not while its op runs */
	if (o->op && storm_op_test(o->op, NULL) == -EAGAIN)
		return;
	if (o->op)
		storm_op_free(o->op);
	o->op = NULL;
	o->last_probe = now;
	if ((i = probe_target(mm, o)) < 0)
		return;
	n = &o->nodes[i];
	pthread_mutex_lock(&o->lock);
	look_at_late(o, n, i, mm->node_names[i]);
	memset(&o->req, 0, sizeof(o->req));
	o->req.magic = STORM_GANG_MAGIC;
	o->req.rank = (uint32_t) i;
	o->req.seq = o->req.seq_check = ++o->seq;
	o->req.prev_seq = n->rep_seq;
	o->req.prev_t4 = n->rep_t4;
	o->req.t1 = n->t1_sent = storm_real_ns();
	n->seq_sent = o->req.seq;
	pthread_mutex_unlock(&o->lock);
	storm_set_clear(&one);
	storm_set_add(&one, i);
	(void) storm_event_test(mm->ctx, STORM_GANG_EV_CLOCK, &before);
	rc = storm_xfer_flags(mm->ctx, &one, &o->req, sizeof(o->req),
			      STORM_GANG_CLOCK_OFF, STORM_NO_EVENT,
			      STORM_NO_EVENT, STORM_XFER_ON_ARRIVAL, &o->op);
	if (rc) {
		o->op = NULL;
		debug("%s: clock request to %s: %s", MM_PREFIX,
		      mm->node_names[i], storm_strerror(rc));
		return;
	}
	/* a little wait, so that this thread drives progress when the
	 * reply comes and stamps it then; a node that does not answer is
	 * mm_faults.c's business, not this */
	if (storm_op_wait(o->op, wait_ms, NULL) == 0)
		(void) storm_event_wait(mm->ctx, STORM_GANG_EV_CLOCK,
					before + 1, wait_ms);
}

extern void mm_offset_strobe_took(mm_t *mm, uint64_t ns)
{
	mm_offsets_t *o = mm->offsets;

	if (!o)
		return;
	o->delivery_ns = storm_clock_delivery_track(o->delivery_ns, ns);
	o->lead_ns = storm_clock_lead(o->delivery_ns,
				      mm->conf.timeslice_us * 1000ULL);
}

extern uint64_t mm_offset_switch_at(const mm_t *mm, uint64_t sent_ns)
{
	const mm_offsets_t *o = mm->offsets;
	uint64_t lead;

	if (mm->conf.switch_at_arrival)
		return 0;
	lead = o && o->lead_ns ? o->lead_ns :
	       storm_clock_lead(0, mm->conf.timeslice_us * 1000ULL);
	return sent_ns + lead;
}

extern uint64_t mm_offset_lead_ns(const mm_t *mm)
{
	return mm->offsets ? mm->offsets->lead_ns : 0;
}

extern const mm_offset_node_t *mm_offset_node(const mm_t *mm, int i)
{
	const mm_offsets_t *o = mm->offsets;

	if (!o || i < 0 || i >= o->nnodes)
		return NULL;
	return &o->nodes[i];
}

/*
 * mm_gang.c - the Machine Manager: STORM gang scheduling inside slurmctld.
 *
 * One thread.  It joins the STORM fabric as rank node_record_count at the
 * controller's address and ControllerPort (the NMs are ranks 0..n-1 in
 * slurm.conf node order), and every quantum:
 *
 *   1. confirms the previous strobe: COMPARE-AND-WRITE(applied >= epoch)
 *      over the live nodes; a node that does not confirm is a suspect, and
 *      SuspectQuanta misses in a row drain it in Slurm with a reason (a
 *      heartbeat, see MM_IDLE_ACK_PROBE_NS, is not confirmed: its
 *      acknowledgements answer it);
 *   2. multicasts {epoch, slot} (XFER-AND-SIGNAL, remote event) to the
 *      live nodes: the strobe, which is also the heartbeat, so it runs even
 *      when nothing time-shares;
 *   3. every ~100 ms (or every quantum when quanta are longer) rebuilds the
 *      Ousterhout matrix from Slurm's running jobs under slurmctld's read
 *      locks, and pushes the job table (XFER-AND-SIGNAL) when it changed;
 *   4. (first thing in the next quantum, away from the switch)
 *      measures one node's acknowledgement latency (a one-node
 *      COMPARE-AND-WRITE, round robin, at most every 100 ms); after the
 *      strobe it rewrites the status file that `stormctl show` reads,
 *      once a second;
 *   5. sleeps until the next quantum boundary (absolute time, so a slow
 *      step shortens the sleep instead of stretching every quantum).
 *
 * The matrix.  Rows are slots, columns nodes.  Each running job of a
 * Policy=gang partition keeps the slot it got when it started (so a job
 * never moves while it runs); a new job takes the lowest slot where none of
 * its nodes is taken.  Slots are then filled Ousterhout-style: in slot t a
 * job of another slot also runs if none of its nodes is used by slot t's
 * jobs or by another job already filled in.  A job that shares no node with
 * any other job runs in every slot, so MPL 1 never freezes anything.  This
 * is sent to the NMs as one slot mask per job (storm_gang.h).
 *
 * Slurm keeps the jobs RUNNING: nothing here calls job_suspend().  Jobs
 * Slurm suspended itself (scontrol suspend) stay in the table, held: no
 * slot, and the NMs leave them to Slurm's own freeze of their steps (see
 * nm_cgroup.c for why the NMs must be told).
 *
 * After a slurmctld restart the thread starts again from Slurm's job
 * state; its epochs start at the wall clock in microseconds, so they are
 * always above those of the previous instance and the NMs' applied-epoch
 * variables never confirm a strobe they did not apply.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_gang.h"
#include "src/stormmech/stormmech.h"

#include "mm_gang.h"

#define MM_PREFIX "sched/storm: mm"
/*
 * The strobe thread drives the fabric itself (no progress thread: each
 * handoff to one cost slurmctld two context switches per message, most of
 * its CPU at millisecond quanta).  Its real-time priority is above the
 * node managers' threads (40, 41), so that on a host it shares with node
 * managers a strobe reaches all its tree children before the first of
 * them preempts it (16-node switch skew, median / p99, with the NMs
 * switching in their receive callback: 0.59 / 1.04 ms at 30,
 * 0.51-0.56 / 0.77-0.94 ms at 50, measured with a progress thread at
 * those priorities).  Between quanta it sleeps; messages that come then
 * wait in the socket for the next quantum's work.
 */
#define MM_STROBE_PRIO 50
/*
 * While it waits for a strobe's acknowledgements the thread is below the
 * node managers: the nodes switch as the strobe reaches them, and on a
 * shared host each acknowledgement that woke the thread at 50 preempted a
 * node in the middle of its switch (4 nodes at 5 ms: switch skew median /
 * p99 125-154 / 229-245 us with the wait at 50, 58-72 / 135-164 at 30).
 */
#define MM_ACK_WAIT_PRIO 30
/*
 * Slurm's job list is read (under slurmctld's read locks) every 100 ms,
 * not every quantum: at 2 ms that was 500 lock rounds a second competing
 * with slurmctld's own RPCs, for changes (job starts and ends) that take
 * far longer than 100 ms to matter.  Likewise one node's acknowledgement
 * latency, for stormctl, is measured at most every 100 ms (a CAW to one
 * node, i.e. two messages and a wake-up of its node manager; at 20 ms
 * that was as many messages as the quantum's own confirmation at a 20 ms
 * Timeslice).  With 16 nodes each node's figure is 1.6 s old at most.
 */
#define MM_REBUILD_NS 100000000ULL
#define MM_ACK_PROBE_NS 100000000ULL
#define MM_STATUS_NS 1000000000ULL
#define MM_PROBE_DEAD_NS 1000000000ULL
#define MM_MIN_TIMEOUT_MS 100
#define MM_MAX_SLOTS 32
#define MM_START_GRACE_NS 60000000000ULL
/*
 * When nothing time-shares (at most one slot), the strobe is only the
 * heartbeat: it then goes out every max(Timeslice, 50 ms).  At the default
 * 2 ms a heartbeat every quantum cost every node manager a tree message
 * 500 times a second for nothing to switch; on a 2-core host running several
 * clusters that load starved the strobes of the clusters that did switch.
 * A dead node manager is still drained after SuspectQuanta heartbeats.
 */
#define MM_IDLE_HEARTBEAT_NS 50000000ULL
/*
 * A heartbeat (at most one slot, and no new job table sent with it) gives
 * a node nothing to apply, and its XFER-AND-SIGNAL is acknowledged by each
 * node after the node's strobe callback ran (STORM_XFER_ON_ARRIVAL).  So
 * after a heartbeat the MM skips the COMPARE-AND-WRITE confirmation and
 * counts those acknowledgements instead, and measures acknowledgement
 * latency once a second rather than every 100 ms.  On an idle 2-node
 * cluster the confirmation and the probes were over half of the messages,
 * and this idle load is jitter on every node of a cluster that never
 * time-shares.  Any strobe that can switch something is confirmed.
 */
#define MM_IDLE_ACK_PROBE_NS 1000000000ULL

typedef struct mm_job {
	uint32_t job_id, uid;
	int slot;
	uint32_t mask;
	bool gang;		/* switched: Policy=gang or flexible */
	bool held;		/* suspended by Slurm: no slot, not switched */
	uint32_t how;		/* STORM_GANG_SWITCH_*: freeze or idle */
	bool seen;
	bool seen_policy;	/* how and gang were set */
	bitstr_t *nodes;	/* copy of job_ptr->node_bitmap */
} mm_job_t;

typedef struct mm_node {
	bool live;		/* in the strobe set */
	bool drained;		/* drained by us */
	bool acked_once;	/* has acknowledged this MM at least once */
	uint32_t failed_probes;	/* while out of the strobe set */
	uint32_t misses;	/* consecutive quanta without an ack */
	uint64_t ack_us;	/* last one-node COMPARE-AND-WRITE round trip */
	uint64_t last_ack_ns;
} mm_node_t;

static pthread_mutex_t mm_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mm_wake = PTHREAD_COND_INITIALIZER;
static pthread_t mm_tid;
static bool mm_started, mm_stopping;
static storm_conf_t conf_next;	/* under mm_mutex */
static uint64_t conf_next_gen;

/* Thread-private state. */
static storm_conf_t gconf;
static uint64_t conf_gen;
static storm_ctx_t *ctx;
static int nnodes;
static char **node_names;	/* copies, for drain and status */
static char **node_addrs;
static mm_node_t *nodes;
static mm_job_t *jobs;
static int njobs, capjobs;
static int nslots, cur_slot;
/* The strobe being served covers span quanta from span_start (CLOCK_
 * MONOTONIC); cur_slot is its first.  span > 1 only with StrobeInterval. */
static uint32_t span = 1;
static uint64_t span_start;
static uint64_t epoch, gen, mm_id;
static storm_gang_table_t *table;
static size_t table_len;
static bool table_dirty;
static uint64_t jobs_left;		/* jobs rebuild() saw end or suspend:
					 * the nodes get the table at once */
static uint64_t stat_strobe_us, stat_caw_us, stat_period_us, stat_late;
static uint64_t nquanta;
static bool last_heartbeat;	/* the last strobe was a heartbeat only */
static uint64_t confirm_pause_until, stat_confirm_timeouts;
static uint64_t mm_start_ns;
static int strobe_prio = -1;	/* the strobe thread's: 0 normal, -1 unknown */

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Exponential moving average, 1/8 weight for the new sample. */
static void ewma(uint64_t *avg, uint64_t v)
{
	*avg = *avg ? (*avg * 7 + v) / 8 : v;
}

static void mm_log(void *arg, storm_log_level_t lvl, const char *msg)
{
	if (lvl == STORM_LOG_ERROR)
		error("%s: fabric: %s", MM_PREFIX, msg);
	else if (lvl == STORM_LOG_WARN)
		verbose("%s: fabric: %s", MM_PREFIX, msg);
	else
		debug("%s: fabric: %s", MM_PREFIX, msg);
}

static void strobe_set_prio(int prio);

static int mm_timeout_ms(void)
{
	uint64_t t = gconf.timeslice_us * 4 / 1000;

	if (t < MM_MIN_TIMEOUT_MS)
		t = MM_MIN_TIMEOUT_MS;
	if (t > gconf.timeout_us / 1000)
		t = gconf.timeout_us / 1000;
	return (int) t;
}

static void free_nodes(void)
{
	for (int i = 0; i < nnodes; i++) {
		xfree(node_names[i]);
		xfree(node_addrs[i]);
	}
	xfree(node_names);
	xfree(node_addrs);
	xfree(nodes);
	nnodes = 0;
}

static void close_fabric(void)
{
	if (ctx) {
		storm_ctx_close(ctx);
		ctx = NULL;
	}
	free_nodes();
}

/* Join the fabric as rank node_record_count; 0 or a negative error. */
static int open_fabric(void)
{
	slurmctld_lock_t node_read = { .conf = READ_LOCK, .node = READ_LOCK };
	storm_cfg_t cfg;
	char host[256];
	int rc;

	lock_slurmctld(node_read);
	nnodes = node_record_count;
	node_names = xcalloc(nnodes + 1, sizeof(char *));
	node_addrs = xcalloc(nnodes + 1, sizeof(char *));
	nodes = xcalloc(nnodes + 1, sizeof(*nodes));
	for (int i = 0; i < nnodes; i++) {
		node_record_t *n = node_record_table_ptr[i];
		int port = storm_conf_port(gconf.port_lo, gconf.port_hi, i);

		node_names[i] = xstrdup(n && n->name ? n->name : "?");
		node_addrs[i] = xstrdup_printf("%s:%d",
					       n && n->comm_name ? n->comm_name :
					       node_names[i], port);
		nodes[i].live = true;
	}
	snprintf(host, sizeof(host), "%s",
		 (slurm_conf.control_cnt && slurm_conf.control_addr &&
		  slurm_conf.control_addr[0]) ? slurm_conf.control_addr[0] :
						"127.0.0.1");
	unlock_slurmctld(node_read);
	node_addrs[nnodes] = xstrdup_printf("%s:%u", host, gconf.ctl_port);

	storm_cfg_init(&cfg);
	cfg.provider = gconf.provider;
	cfg.host = host;
	cfg.port = (int) gconf.ctl_port;
	cfg.rank = nnodes;
	cfg.nodes = (const char *const *) node_addrs;
	cfg.nnodes = nnodes + 1;
	cfg.region_size = 64 * 1024;	/* the MM only sends */
	cfg.arity = (int) gconf.tree_arity;
	cfg.timeout_ms = mm_timeout_ms();
	cfg.busy_poll_us = 0;	/* as the node managers: sleep on the CQ fd */
	rc = storm_ctx_open(&cfg, &ctx);
	if (rc) {
		ctx = NULL;
		error("%s: cannot open the fabric endpoint %s:%u (provider %s): %s",
		      MM_PREFIX, host, gconf.ctl_port, gconf.provider,
		      storm_strerror(rc));
		free_nodes();
		return rc;
	}
	storm_set_log_fn(ctx, mm_log, NULL, STORM_LOG_WARN);
	info("%s: joined the fabric as rank %d at %s:%u (%s), %d node managers, Timeslice=%" PRIu64 "us, ack timeout %d ms",
	     MM_PREFIX, nnodes, host, gconf.ctl_port, gconf.provider, nnodes,
	     gconf.timeslice_us, cfg.timeout_ms);
	return 0;
}

static void live_set(storm_set_t *s)
{
	storm_set_clear(s);
	for (int i = 0; i < nnodes; i++)
		if (nodes[i].live)
			storm_set_add(s, i);
}

/* Takes a slot: a gang or flexible job that Slurm has not suspended. */
static bool switched(const mm_job_t *j)
{
	return j->gang && !j->held;
}

/* ------------------------------------------------------------ matrix */

static mm_job_t *find_job(uint32_t id)
{
	for (int i = 0; i < njobs; i++)
		if (jobs[i].job_id == id)
			return &jobs[i];
	return NULL;
}

static void drop_job(int i)
{
	FREE_NULL_BITMAP(jobs[i].nodes);
	jobs[i] = jobs[--njobs];
}

static bool slot_conflict(const mm_job_t *j, int slot)
{
	for (int k = 0; k < njobs; k++)
		if (&jobs[k] != j && switched(&jobs[k]) && jobs[k].slot == slot &&
		    bit_overlap_any(jobs[k].nodes, j->nodes))
			return true;
	return false;
}

/*
 * A job's policy, from its partition; true if that changed how it is
 * switched.  Policy=local jobs are never switched (they take no slot: the
 * node's own scheduler time-shares them); gang and flexible jobs take a slot
 * and differ only in what a node does outside it, so a switch between those
 * two keeps the slot, and either way it applies at the next strobe.
 */
static bool apply_policy(mm_job_t *j, storm_policy_t pol)
{
	bool gang = pol != STORM_POLICY_LOCAL;
	uint32_t how = pol == STORM_POLICY_FLEXIBLE ? STORM_GANG_SWITCH_IDLE :
						     STORM_GANG_SWITCH_FREEZE;
	bool changed = j->gang != gang || j->how != how || !j->seen_policy;

	if (j->gang != gang)
		j->slot = -1;
	if (changed && j->seen_policy)
		info("%s: JobId=%u now runs under Policy=%s", MM_PREFIX,
		     j->job_id, storm_policy_str(pol));
	j->gang = gang;
	j->how = how;
	j->seen_policy = true;
	return changed;
}

/*
 * Sample Slurm's running jobs; returns true when the table changed.
 * Called without locks; takes slurmctld's job and node read locks.
 */
static bool rebuild(void)
{
	slurmctld_lock_t job_read = { .conf = READ_LOCK, .job = READ_LOCK,
				      .node = READ_LOCK, .part = READ_LOCK };
	bool changed = false;
	int used[MM_MAX_SLOTS] = { 0 }, remap[MM_MAX_SLOTS];

	for (int i = 0; i < njobs; i++)
		jobs[i].seen = false;
	lock_slurmctld(job_read);
	if (job_list) {
		ListIterator it = list_iterator_create(job_list);
		job_record_t *jp;

		while ((jp = list_next(it))) {
			mm_job_t *j;
			const char *part;

			if (!(IS_JOB_RUNNING(jp) || IS_JOB_SUSPENDED(jp)) ||
			    !jp->node_bitmap)
				continue;
			j = find_job(jp->job_id);
			if (!j) {
				part = jp->part_ptr ? jp->part_ptr->name : NULL;
				if (njobs == capjobs) {
					capjobs = capjobs ? capjobs * 2 : 64;
					xrecalloc(jobs, capjobs, sizeof(*jobs));
				}
				j = &jobs[njobs++];
				memset(j, 0, sizeof(*j));
				j->job_id = jp->job_id;
				j->uid = jp->user_id;
				j->slot = -1;
				changed = true;
			}
			if (!j->nodes || bit_size(j->nodes) !=
					 bit_size(jp->node_bitmap) ||
			    !bit_equal(j->nodes, jp->node_bitmap)) {
				FREE_NULL_BITMAP(j->nodes);
				j->nodes = bit_copy(jp->node_bitmap);
				changed = true;
			}
			part = jp->part_ptr ? jp->part_ptr->name : NULL;
			if (apply_policy(j, storm_conf_part_policy(&gconf, part)))
				changed = true;
			if (j->held != IS_JOB_SUSPENDED(jp)) {
				j->held = !j->held;
				j->slot = -1;	/* a resumed job takes a new one */
				if (j->held)
					jobs_left++;
				changed = true;
			}
			j->seen = true;
		}
		list_iterator_destroy(it);
	}
	unlock_slurmctld(job_read);

	for (int i = 0; i < njobs;) {
		if (!jobs[i].seen) {
			debug("%s: JobId=%u left slot %d", MM_PREFIX,
			      jobs[i].job_id, jobs[i].slot);
			drop_job(i);
			jobs_left++;
			changed = true;
			continue;
		}
		i++;
	}
	if (!changed)
		return false;

	/* New jobs take the lowest slot free on all their nodes. */
	for (int i = 0; i < njobs; i++) {
		mm_job_t *j = &jobs[i];

		if (!switched(j)) {
			j->slot = -1;
			continue;
		}
		if (j->slot >= 0)
			continue;
		for (int s = 0; s < MM_MAX_SLOTS; s++) {
			if (!slot_conflict(j, s)) {
				j->slot = s;
				break;
			}
		}
		if (j->slot < 0) {
			error("%s: JobId=%u finds no free slot among %d; it runs unswitched",
			      MM_PREFIX, j->job_id, MM_MAX_SLOTS);
			j->gang = false;
		} else {
			debug("%s: JobId=%u takes slot %d", MM_PREFIX,
			      j->job_id, j->slot);
		}
	}
	/* Compact: slots left empty by ended jobs disappear. */
	for (int i = 0; i < njobs; i++)
		if (switched(&jobs[i]))
			used[jobs[i].slot] = 1;
	nslots = 0;
	for (int s = 0; s < MM_MAX_SLOTS; s++)
		remap[s] = used[s] ? nslots++ : -1;
	for (int i = 0; i < njobs; i++)
		if (switched(&jobs[i]))
			jobs[i].slot = remap[jobs[i].slot];
	if (cur_slot >= nslots)
		cur_slot = 0;

	/* Masks: own slot, plus every slot it can fill without a clash. */
	for (int i = 0; i < njobs; i++)
		jobs[i].mask = switched(&jobs[i]) ? 1u << jobs[i].slot :
					      STORM_GANG_ALL_SLOTS;
	for (int t = 0; t < nslots; t++) {
		for (int i = 0; i < njobs; i++) {
			mm_job_t *j = &jobs[i];
			bool clash = false;

			if (!switched(j) || j->slot == t)
				continue;
			for (int k = 0; k < njobs && !clash; k++) {
				if (k == i || !switched(&jobs[k]) ||
				    !(jobs[k].mask & (1u << t)))
					continue;
				clash = bit_overlap_any(jobs[k].nodes, j->nodes);
			}
			if (!clash)
				j->mask |= 1u << t;
		}
	}
	/* A job running in every slot is never frozen: say so exactly. */
	for (int i = 0; i < njobs; i++) {
		uint32_t all = nslots >= 32 ? STORM_GANG_ALL_SLOTS :
					      (1u << nslots) - 1;

		if (switched(&jobs[i]) && (jobs[i].mask & all) == all)
			jobs[i].mask = STORM_GANG_ALL_SLOTS;
	}
	return true;
}

/* The job table from the matrix; a new generation only if it differs. */
static void build_table(void)
{
	int n = njobs < STORM_GANG_MAX_JOBS ? njobs : STORM_GANG_MAX_JOBS;
	size_t need = sizeof(*table) + n * sizeof(table->jobs[0]);
	storm_gang_table_t *t = xmalloc(need);

	for (int i = 0; i < n; i++) {
		t->jobs[i].job_id = jobs[i].job_id;
		t->jobs[i].uid = jobs[i].uid;
		t->jobs[i].slot_mask = jobs[i].held ? 0 : jobs[i].mask;
		t->jobs[i].nslots = nslots;
		t->jobs[i].how = jobs[i].held ? STORM_GANG_SWITCH_HOLD :
						jobs[i].how;
	}
	t->magic = STORM_GANG_MAGIC;
	t->njobs = n;
	t->nslots = nslots;
	if (table && table_len == need && table->nslots == t->nslots &&
	    !memcmp(table->jobs, t->jobs, n * sizeof(t->jobs[0]))) {
		xfree(t);
		return;
	}
	t->gen = ++gen;
	xfree(table);
	table = t;
	table_len = need;
	table_dirty = true;
}

/* ------------------------------------------------------------- faults */

/* One-node COMPARE-AND-WRITE: 1 acked, 0 not, <0 error; *us its time. */
static int probe(int rank, uint64_t want, uint64_t *us)
{
	storm_set_t one, unreach;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int rc;

	storm_set_clear(&one);
	storm_set_add(&one, rank);
	rc = storm_caw(ctx, &one, STORM_GANG_VAR_APPLIED, STORM_GE, want, -1,
		       0, &unreach);
	if (us)
		*us = (now_ns(CLOCK_MONOTONIC) - t0) / 1000;
	return rc;
}

static void node_missed(int i, const char *why)
{
	mm_node_t *n = &nodes[i];

	n->misses++;
	if (n->misses == 1 && n->acked_once)
		verbose("%s: %s (rank %d) is a suspect: %s", MM_PREFIX,
			node_names[i], i, why);
}

static void node_acked(int i)
{
	if (nodes[i].misses >= gconf.suspect_quanta)
		info("%s: %s answers again after %u missed quanta%s", MM_PREFIX,
		     node_names[i], nodes[i].misses,
		     nodes[i].drained ? "; it stays drained until an administrator resumes it" : "");
	nodes[i].misses = 0;
	/* a new outage drains it again (the administrator may have resumed
	 * it since; draining a drained node only renews the reason) */
	nodes[i].drained = false;
	nodes[i].failed_probes = 0;
	nodes[i].acked_once = true;
	nodes[i].last_ack_ns = now_ns(CLOCK_MONOTONIC);
}

/* Nodes that failed an operation: keep the ones that answer alone, take
 * the others out of the strobe set (an XFER-AND-SIGNAL is all-or-nothing,
 * so one dead node must not stop the strobe for everyone). */
static bool sort_out(const storm_set_t *failed, const char *why)
{
	bool removed = false;

	for (int r = storm_set_next(failed, 0); r >= 0 && r < nnodes;
	     r = storm_set_next(failed, r + 1)) {
		if (!nodes[r].live)
			continue;
		if (probe(r, 0, NULL) == 1)
			continue;
		nodes[r].live = false;
		node_missed(r, why);
		removed = true;
	}
	return removed;
}

/* Missed SuspectQuanta acknowledgements and not drained yet. */
static bool is_suspect(int i)
{
	return !nodes[i].drained && nodes[i].misses >= gconf.suspect_quanta;
}

/* A node drain_suspects() would look at now (it takes slurmctld's locks). */
static bool suspect_to_drain(void)
{
	for (int i = 0; i < nnodes; i++)
		if (is_suspect(i))
			return true;
	return false;
}

static void drain_suspects(void)
{
	slurmctld_lock_t node_write = { .conf = READ_LOCK, .job = WRITE_LOCK,
					.node = WRITE_LOCK, .fed = READ_LOCK };

	for (int i = 0; i < nnodes; i++) {
		char *reason;
		int rc;

		if (!is_suspect(i))
			continue;
		/*
		 * A node whose NM never answered this MM may still be starting
		 * (slurmd starts it); give it MM_START_GRACE_NS before calling
		 * it dead.  A node that did answer and stops is drained after
		 * SuspectQuanta quanta.
		 */
		if (!nodes[i].acked_once &&
		    now_ns(CLOCK_MONOTONIC) - mm_start_ns < MM_START_GRACE_NS)
			continue;
		reason = xstrdup_printf("STORM: node manager missed %u strobe acknowledgements (SuspectQuanta=%u, Timeslice=%" PRIu64 "us)",
					nodes[i].misses, gconf.suspect_quanta,
					gconf.timeslice_us);
		lock_slurmctld(node_write);
		rc = drain_nodes(node_names[i], reason,
				 slurm_conf.slurm_user_id);
		unlock_slurmctld(node_write);
		if (rc == SLURM_SUCCESS) {
			info("%s: drained %s: %s", MM_PREFIX, node_names[i],
			     reason);
			nodes[i].drained = true;
		} else {
			error("%s: cannot drain %s: %s", MM_PREFIX,
			      node_names[i], slurm_strerror(rc));
		}
		xfree(reason);
	}
}

/* ------------------------------------------------------------- status */

static void write_status(void)
{
	char *path = NULL, *tmp = NULL, *buf = NULL, set[4096];
	FILE *fp;

	if (!slurm_conf.state_save_location)
		return;
	path = xstrdup_printf("%s/storm-mm.status",
			      slurm_conf.state_save_location);
	tmp = xstrdup_printf("%s.tmp", path);
	xstrfmtcat(buf, "version=1\nwritten=%ld\nmm_id=%" PRIu64 "\nepoch=%" PRIu64 "\nslot=%d\nnslots=%d\nquantum_us=%" PRIu64 "\nperiod_us=%" PRIu64 "\nstrobe_us=%" PRIu64 "\nconfirm_us=%" PRIu64 "\nlate_quanta=%" PRIu64 "\nconfirm_timeouts=%" PRIu64 "\nquanta=%" PRIu64 "\ntable_gen=%" PRIu64 "\nsuspect_quanta=%u\nfailsafe_us=%" PRIu64 "\nprovider=%s\nnnodes=%d\nquanta_per_strobe=%u\n",
		   (long) time(NULL), mm_id, epoch, cur_slot, nslots,
		   gconf.timeslice_us, stat_period_us, stat_strobe_us,
		   stat_caw_us, stat_late, stat_confirm_timeouts, nquanta, gen, gconf.suspect_quanta,
		   gconf.failsafe_us, gconf.provider, nnodes, span);
	for (int i = 0; i < nnodes; i++)
		xstrfmtcat(buf, "node %d %s state=%s ack_us=%" PRIu64 " misses=%u\n",
			   i, node_names[i],
			   nodes[i].drained ? "drained" :
			   nodes[i].live ? "live" : "unreachable",
			   nodes[i].ack_us, nodes[i].misses);
	for (int i = 0; i < njobs; i++) {
		storm_set_t s;

		storm_set_clear(&s);
		for (int k = 0; k < nnodes; k++)
			if (k < (int) bit_size(jobs[i].nodes) &&
			    bit_test(jobs[i].nodes, k))
				storm_set_add(&s, k);
		storm_set_format(&s, set, sizeof(set));
		xstrfmtcat(buf, "job %u slot=%d mask=0x%x nodes=%s policy=%s\n",
			   jobs[i].job_id, switched(&jobs[i]) ? jobs[i].slot : -1,
			   jobs[i].mask, set,
			   jobs[i].held ? "held" : !jobs[i].gang ? "local" :
			   jobs[i].how == STORM_GANG_SWITCH_IDLE ? "flexible" :
								  "gang");
	}
	fp = fopen(tmp, "w");
	if (!fp || fputs(buf, fp) < 0 || fclose(fp)) {
		if (fp)
			(void) fclose(fp);
		debug("%s: cannot write %s: %m", MM_PREFIX, tmp);
	} else if (rename(tmp, path)) {
		debug("%s: cannot rename %s: %m", MM_PREFIX, tmp);
	}
	xfree(buf);
	xfree(tmp);
	xfree(path);
}

/* ------------------------------------------------------------ strobes */

static int send_table(void)
{
	storm_set_t live, failed;
	int rc;

	live_set(&live);
	if (!storm_set_count(&live))
		return 0;
	storm_set_clear(&failed);
	rc = storm_xfer_sync(ctx, &live, table, table_len,
			     STORM_GANG_TABLE_OFF, STORM_GANG_EV_TABLE, &failed);
	if (rc == 0) {
		table_dirty = false;
		debug("%s: table generation %" PRIu64 " (%u jobs, %d slots) sent",
		      MM_PREFIX, table->gen, table->njobs, nslots);
		return 0;
	}
	if (storm_set_count(&failed))
		sort_out(&failed, "missed the job table");
	return rc;
}

/* A strobe for slot, covering nq quanta whose next boundary is next_in_ns
 * after now. */
static int send_strobe(uint32_t slot, uint32_t nq, uint64_t next_in_ns)
{
	storm_gang_strobe_t s;
	storm_set_t live, failed;
	storm_op_t *op;
	int rc, tries = 0;

again:
	live_set(&live);
	if (!storm_set_count(&live))
		return 0;
	memset(&s, 0, sizeof(s));
	s.magic = STORM_GANG_MAGIC;
	s.slot = slot;
	s.epoch = s.epoch_check = epoch;
	s.table_gen = gen;
	s.quantum_us = gconf.timeslice_us;
	s.failsafe_us = gconf.failsafe_us;
	s.mm_id = mm_id;
	s.sent_ns = now_ns(CLOCK_REALTIME);
	s.nquanta = nq;
	s.nslots = nslots > 0 ? (uint32_t) nslots : 1;
	s.next_in_us = next_in_ns / 1000;
	storm_set_clear(&failed);
	/* each node switches when the strobe reaches it, not after a commit
	 * round: one message per node per quantum fewer (storm_xfer_flags) */
	rc = storm_xfer_flags(ctx, &live, &s, sizeof(s), STORM_GANG_STROBE_OFF,
			      STORM_NO_EVENT, STORM_GANG_EV_STROBE,
			      STORM_XFER_ON_ARRIVAL, &op);
	if (!rc) {
		bool lowered = strobe_prio == MM_STROBE_PRIO;

		if (lowered)
			strobe_set_prio(MM_ACK_WAIT_PRIO);
		rc = storm_op_wait(op, -1, &failed);
		storm_op_free(op);
		if (lowered)
			strobe_set_prio(MM_STROBE_PRIO);
	}
	if (rc && storm_set_count(&failed) && sort_out(&failed, "missed a strobe") &&
	    ++tries < 2)
		goto again;
	return rc;
}

/*
 * The previous strobe: did every live node apply it?
 *
 * Only a clean "false" (every node answered, someone had not applied the
 * strobe) is held against particular nodes, after asking each one alone.
 * A COMPARE-AND-WRITE that times out says little about who: it is
 * serialized at the set's lowest rank, which waits for its own children up
 * to the NMs' Timeout, so one dead node makes the healthy lowest rank look
 * dead too.  Dead nodes are found by the strobe's XFER-AND-SIGNAL instead
 * (its failed set, narrowed by one-node probes in sort_out()); after a
 * timeout, confirmations pause for Timeout so the serializer can drain.
 */
static void confirm(void)
{
	storm_set_t live, unreach;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	int rc;

	if (now < confirm_pause_until)
		return;
	live_set(&live);
	if (!storm_set_count(&live))
		return;
	storm_set_clear(&unreach);
	rc = storm_caw(ctx, &live, STORM_GANG_VAR_APPLIED, STORM_GE, epoch,
		       -1, 0, &unreach);
	if (rc == 1) {
		for (int r = storm_set_next(&live, 0); r >= 0;
		     r = storm_set_next(&live, r + 1))
			node_acked(r);
		return;
	}
	if (rc < 0 || storm_set_count(&unreach)) {
		char set[256];

		storm_set_format(&unreach, set, sizeof(set));
		stat_confirm_timeouts++;
		confirm_pause_until = now + gconf.timeout_us * 1000ULL;
		verbose("%s: acknowledgement of epoch %" PRIu64 " incomplete (%s; no answer from ranks %s); confirmations pause for Timeout=%" PRIu64 "us, strobes go on",
			MM_PREFIX, epoch, rc < 0 ? storm_strerror(rc) : "timeout",
			set, gconf.timeout_us);
		return;
	}
	/* Reachable but late: find who (rare, so one probe per node). */
	stat_late++;
	for (int r = storm_set_next(&live, 0); r >= 0;
	     r = storm_set_next(&live, r + 1)) {
		if (probe(r, epoch, NULL) == 1)
			node_acked(r);
		else
			node_missed(r, "applied the strobe late");
	}
}

/* Nodes out of the strobe set: count the quantum, and every second see
 * whether they answer again (a restarted NM). */
static void watch_dead(uint64_t now, uint64_t *last_probe)
{
	bool probe_now = now - *last_probe >= MM_PROBE_DEAD_NS;

	for (int i = 0; i < nnodes; i++) {
		if (nodes[i].live)
			continue;
		nodes[i].misses++;
		if (!probe_now)
			continue;
		if (probe(i, 0, NULL) == 1) {
			nodes[i].live = true;
			node_acked(i);
			table_dirty = true;	/* it needs the table */
		} else if (++nodes[i].failed_probes % 10 == 0) {
			/*
			 * Dead for ~10 s: forget the connection, so that a node
			 * manager restarted on that node is reached afresh.  Not
			 * sooner: re-adding a peer drops a connection still being
			 * set up, and a busy node may just be slow to connect.
			 */
			storm_ctx_set_peer(ctx, i, node_addrs[i]);
		}
	}
	if (probe_now)
		*last_probe = now;
}

/* Tell every NM to run everything (MM stopping): best effort. */
static void release_all(void)
{
	for (int i = 0; i < njobs; i++)
		jobs[i].mask = STORM_GANG_ALL_SLOTS;
	build_table();
	if (send_table() == 0) {
		epoch++;
		send_strobe(0, 1, gconf.timeslice_us * 1000ULL);
		info("%s: told the node managers to run every job", MM_PREFIX);
	}
}

/*
 * The strobe thread is SCHED_FIFO (MM_STROBE_PRIO) only while it drives
 * the fabric: the confirm, the strobe, the probe and the sleep to the
 * boundary, where it waits on nothing but the fabric and the clock.  At
 * normal priority each of those wake-ups (three or four a quantum) queued
 * behind the job a node had just thawed: on 2 nodes at 5 ms the period
 * stretched to 5.7-8.8 ms (a strobe took 2.9-6.4 ms) once the nodes
 * switched at COMMIT; 5.5 ms (0.2 ms) with these waits real-time.  It is
 * back at normal priority whenever it takes slurmctld's locks, drains a
 * node or writes a file: with the whole thread real-time, slurmctld once
 * hung at start-up on a busy 2-core host (the thread waited on a lock
 * whose holder never ran).  But only then: a quantum that needs none of
 * that (all but the one that rebuilds every 100 ms and the one that writes
 * the status file every second) stays real-time throughout.  Dropping and
 * raising the priority around that work every quantum cost six
 * sched_setscheduler calls a quantum, and each drop let a busy job preempt
 * the thread: at 2 ms quanta on 2 nodes slurmctld took 0.22-0.25 CPU-s/s
 * in 6300-6400 slices a second.
 */
static void strobe_set_prio(int prio)
{
	static bool warned;
	struct sched_param sp = { .sched_priority = prio };
	int rc;

	if (strobe_prio == prio)
		return;
	strobe_prio = prio;
	rc = pthread_setschedparam(pthread_self(),
				   prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (rc && prio && !warned) {
		warned = true;
		verbose("%s: no SCHED_FIFO for the strobe thread (%s); quanta will be late on a busy host",
			MM_PREFIX, strerror(rc));
	}
}

/* The next strobe can switch something: more than one slot, or a new job
 * table to deliver.  Otherwise it is a heartbeat (MM_IDLE_ACK_PROBE_NS). */
static bool strobe_switches(void)
{
	return nslots > 1 || table_dirty;
}

/*
 * Real time only while strobes switch something: a heartbeat that is a few
 * milliseconds late on a busy host harms nothing, and raising and lowering
 * the priority around each one cost three sched_setscheduler calls a
 * heartbeat.
 */
static void strobe_rt(bool on)
{
	strobe_set_prio(on && strobe_switches() ? MM_STROBE_PRIO : 0);
}

/* The file `stormctl show` reads, at most once a second. */
static void status_if_due(uint64_t now, uint64_t *last_status)
{
	if (now - *last_status >= MM_STATUS_NS) {
		strobe_rt(false);	/* a file: see strobe_rt() */
		write_status();
		*last_status = now;
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

/*
 * Sleep to the quantum boundary `next`.  Quanta longer than MM_REBUILD_NS
 * are slept in steps of that.  When a job ends between boundaries, the
 * nodes get the new table with a strobe of the current slot at once: a job
 * its end left alone runs again within ~100 ms, not up to a whole quantum
 * later, frozen on an idle node.  A job that starts waits for the boundary
 * (it runs until then: freezing it in the middle of its launch could stall
 * the launch for a quantum).  The status file stays fresh; a new
 * configuration or a stop ends the sleep.
 */
static void sleep_quantum(uint64_t next, uint64_t *last_rebuild,
			  uint64_t *last_status)
{
	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		bool wake, job_left = false;

		if (now >= next)
			return;
		if (next - now <= MM_REBUILD_NS) {
			sleep_until(next);
			return;
		}
		sleep_until(now + MM_REBUILD_NS);
		strobe_rt(false);	/* slurmctld's locks: see strobe_rt() */
		slurm_mutex_lock(&mm_mutex);
		wake = mm_stopping || conf_gen != conf_next_gen;
		slurm_mutex_unlock(&mm_mutex);
		if (!wake) {
			uint64_t left = jobs_left;

			now = now_ns(CLOCK_MONOTONIC);
			*last_rebuild = now;
			if (rebuild())	/* keeps cur_slot < nslots */
				build_table();
			job_left = jobs_left != left;
			status_if_due(now, last_status);
		}
		strobe_rt(true);
		if (wake)
			return;
		if (job_left && table_dirty && !send_table()) {
			/* the rest of the span, from the quantum running now */
			uint64_t q_ns = gconf.timeslice_us * 1000ULL, due;
			uint32_t k = 0;

			now = now_ns(CLOCK_MONOTONIC);
			if (q_ns && now > span_start)
				k = (now - span_start) / q_ns;
			if (k >= span)
				k = span - 1;
			due = span_start + (k + 1) * q_ns;
			epoch++;
			send_strobe((uint32_t) ((cur_slot + k) % (nslots > 0 ? nslots : 1)),
				    span - k, due > now ? due - now : 0);
		}
	}
}

static void *mm_main(void *arg)
{
	uint64_t next, last_rebuild = 0, last_status = 0, last_probe = 0;
	uint64_t last_ack_probe = 0;
	uint64_t last_start = 0;
	uint32_t last_span = 1;
	bool last_switching = false;
	int rr = 0;

	mm_id = now_ns(CLOCK_REALTIME) / 1000;
	mm_start_ns = now_ns(CLOCK_MONOTONIC);
	epoch = mm_id;
	next = now_ns(CLOCK_MONOTONIC);
	info("sched/storm: machine manager thread started (mm)");

	slurm_mutex_lock(&mm_mutex);
	while (!mm_stopping) {
		uint64_t t0, t1, q_ns;
		struct timespec ts;
		bool heartbeat;

		if (conf_gen != conf_next_gen) {
			storm_conf_t old = gconf;

			strobe_rt(false);	/* logs, may rejoin the fabric */

			gconf = conf_next;
			conf_gen = conf_next_gen;
			if (ctx && (old.ctl_port != gconf.ctl_port ||
				    strcmp(old.provider, gconf.provider) ||
				    old.port_lo != gconf.port_lo ||
				    old.port_hi != gconf.port_hi ||
				    old.timeslice_us != gconf.timeslice_us ||
				    old.timeout_us != gconf.timeout_us)) {
				info("%s: configuration changed; rejoining the fabric",
				     MM_PREFIX);
				slurm_mutex_unlock(&mm_mutex);
				close_fabric();
				slurm_mutex_lock(&mm_mutex);
			}
			last_rebuild = 0;
			/* the new quantum starts now, not at the old
			 * schedule's next boundary (up to an old quantum
			 * away) */
			next = now_ns(CLOCK_MONOTONIC);
			/* and the measured period starts over: an average
			 * across two quanta says nothing (it read 6.1 s for
			 * 8 s quanta) */
			last_start = 0;
			stat_period_us = 0;
		}
		slurm_mutex_unlock(&mm_mutex);

		if (!ctx)
			strobe_rt(false);
		if (!ctx && open_fabric()) {
			/* Port taken or provider missing: try again later. */
			slurm_mutex_lock(&mm_mutex);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 2;
			if (!mm_stopping)
				pthread_cond_timedwait(&mm_wake, &mm_mutex, &ts);
			continue;
		}
		q_ns = gconf.timeslice_us * 1000ULL;
		strobe_rt(true);

		/* 4. (first in the quantum: just after a strobe its messages
		 * would add to the switch skew on a shared host) one node's
		 * acknowledgement latency, at most every 100 ms (every second
		 * between heartbeats) */
		t0 = now_ns(CLOCK_MONOTONIC);
		if (nquanta && nnodes && t0 - last_ack_probe >=
		    (last_heartbeat ? MM_IDLE_ACK_PROBE_NS : MM_ACK_PROBE_NS)) {
			last_ack_probe = t0;
			for (int k = 0; k < nnodes; k++) {
				rr = (rr + 1) % nnodes;
				if (nodes[rr].live)
					break;
			}
			if (nodes[rr].live)
				probe(rr, 0, &nodes[rr].ack_us);
		}

		/* 1. the previous quantum's strobe, unless it was a
		 * heartbeat (answered by its acknowledgements) */
		if (nquanta && !last_heartbeat) {
			t0 = now_ns(CLOCK_MONOTONIC);
			confirm();
			ewma(&stat_caw_us, (now_ns(CLOCK_MONOTONIC) - t0) / 1000);
		}
		t0 = now_ns(CLOCK_MONOTONIC);
		if (!table || t0 - last_rebuild >= MM_REBUILD_NS ||
		    suspect_to_drain())
			strobe_rt(false);	/* slurmctld's locks */
		watch_dead(t0, &last_probe);
		drain_suspects();

		/* 2. the strobe (and the table first when it changed) */
		if (t0 - last_rebuild >= MM_REBUILD_NS) {
			if (rebuild())
				build_table();
			last_rebuild = t0;
		}
		if (!table)
			build_table();
		strobe_rt(true);
		heartbeat = !strobe_switches();
		if (table_dirty)
			send_table();
		if (nslots > 1)
			cur_slot = (cur_slot + span) % nslots;
		else
			cur_slot = 0;
		/* StrobeInterval: one strobe for several quanta, which the
		 * node managers time themselves (storm_gang.h) */
		span = nslots > 1 ? storm_conf_quanta_per_strobe(&gconf) : 1;
		epoch++;
		t0 = now_ns(CLOCK_MONOTONIC);
		span_start = t0;
		last_heartbeat = send_strobe((uint32_t) cur_slot, span, q_ns) == 0 &&
				 heartbeat;
		if (last_heartbeat)
			for (int i = 0; i < nnodes; i++)
				if (nodes[i].live)
					node_acked(i);
		t1 = now_ns(CLOCK_MONOTONIC);
		ewma(&stat_strobe_us, (t1 - t0) / 1000);
		/* per quantum, whatever the span; the average starts over
		 * when switching starts or stops (the idle heartbeat's 50 ms
		 * took 25 strobes of a 2 ms / 200 ms StrobeInterval to fade
		 * from it: stormctl read 4.7 ms) */
		if ((nslots > 1) != last_switching)
			stat_period_us = 0;
		else if (last_start)
			ewma(&stat_period_us, (t0 - last_start) / 1000 / last_span);
		last_start = t0;
		last_span = span;
		last_switching = nslots > 1;
		nquanta += span;	/* quanta, not strobes */
		status_if_due(t1, &last_status);


		/* 5. sleep to the next boundary; never try to catch up */
		next += (nslots > 1 || q_ns >= MM_IDLE_HEARTBEAT_NS) ? span * q_ns :
			MM_IDLE_HEARTBEAT_NS;
		if (next < now_ns(CLOCK_MONOTONIC))
			next = now_ns(CLOCK_MONOTONIC);
		strobe_rt(true);
		sleep_quantum(next, &last_rebuild, &last_status);
		/* mm_mutex's holders (reconfigure, stop) hold it briefly and
		 * never wait for this thread under it */
		slurm_mutex_lock(&mm_mutex);
	}
	slurm_mutex_unlock(&mm_mutex);
	strobe_rt(false);
	if (ctx) {
		release_all();
		close_fabric();
	}
	for (int i = njobs - 1; i >= 0; i--)
		drop_job(i);
	xfree(jobs);
	capjobs = 0;
	xfree(table);
	info("sched/storm: machine manager thread stopped");
	return NULL;
}

extern void mm_gang_start(const storm_conf_t *c)
{
	slurm_mutex_lock(&mm_mutex);
	conf_next = *c;
	conf_next_gen++;
	if (!mm_started) {
		mm_stopping = false;
		slurm_thread_create(&mm_tid, mm_main, NULL);
		mm_started = true;
	}
	slurm_mutex_unlock(&mm_mutex);
}

extern void mm_gang_reconfig(const storm_conf_t *c)
{
	slurm_mutex_lock(&mm_mutex);
	conf_next = *c;
	conf_next_gen++;
	slurm_cond_broadcast(&mm_wake);
	slurm_mutex_unlock(&mm_mutex);
}

extern void mm_gang_stop(void)
{
	bool join;

	slurm_mutex_lock(&mm_mutex);
	mm_stopping = true;
	join = mm_started;
	mm_started = false;
	slurm_cond_broadcast(&mm_wake);
	slurm_mutex_unlock(&mm_mutex);
	if (join)
		pthread_join(mm_tid, NULL);
}

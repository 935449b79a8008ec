/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * select_cons_tres_storm.c - STORM's node selection plugin.
 *
 * A wrapper around select/cons_tres: cons_tres keeps doing resource
 * accounting (cores, memory, GRES, OverSubscribe=FORCE:N rows) and this
 * plugin adds what time-sharing needs on top of it.  The name contains
 * "cons_tres" on purpose: slurmctld, slurmd and the GRES code test
 * SelectType with xstrstr(..., "cons_tres") to enable cons_tres behaviour.
 *
 * Every host process loads this plugin (slurmctld, slurmd, slurmstepd and
 * the clients), so it must reference no slurmctld-only data symbol.
 *
 * This file is the same for every Slurm version; the select_p_* entry
 * points, which change between versions, are in select_ops_MMmm.c and
 * call the storm_select_* hooks here (select_storm.h).
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/job_resources.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_conf.h"
#include "src/plugins/compat/compat.h"
#include "src/plugins/compat/pend_reasons.h"
#include "select_storm.h"

const char plugin_name[] = "STORM co-scheduling selection (wraps cons_tres)";
const char plugin_type[] = "select/cons_tres_storm";
/* Unique among select plugins (built-in ids are 101-110, slurm.h). */
const uint32_t plugin_id = 190;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * Time slots.  Each node may carry at most MaxMPL running jobs of a STORM
 * partition: one per slot of the Machine Manager's matrix under
 * Policy=gang and flexible, and the same cap on co-allocated jobs under
 * Policy=local, where the node's own scheduler shares the CPUs.
 * The count is kept here, from job_begin/job_fini/job_suspend/job_resume
 * and job_init (slurmctld restart), under our own lock: this plugin is
 * loaded by every Slurm program, so it must not reach into slurmctld's
 * job_list (a data symbol the clients do not have).
 *
 * Buddy placement: a multi-node job with no required nodes first tries
 * node blocks aligned to the next power of two of its size (STORM's buddy
 * allocation), preferring blocks that already hold whole jobs, so that the
 * jobs of one slot share tree subtrees and a slot's strobe and
 * acknowledgements stay within few subtrees.  If no aligned block fits,
 * cons_tres chooses freely.
 */
typedef struct {
	uint32_t job_id;
	bitstr_t *nodes;
	uint64_t mem_mb;	/* per node, the most on any of its nodes */
} slot_job_t;

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_job_t *sjobs;
static int nsjobs, capsjobs;
static storm_conf_t sconf;
static bool sconf_ok;

#define BUDDY_MAX_TRIES 8

static void _load_conf(const char *why)
{
	char path[4096], err[STORM_CONF_ERRLEN];
	storm_conf_t c;

	storm_conf_path(slurm_conf.slurm_conf, path, sizeof(path));
	if (storm_conf_load(path, true, &c, err, sizeof(err))) {
		/* sched/storm reports the error; keep the last good values,
		 * from sched/storm's copy when slurmctld re-executed itself */
		debug("%s: %s: %s", plugin_type, why, err);
		snprintf(path, sizeof(path), "%s/" STORM_CONF_KEPT,
			 slurm_conf.state_save_location ?
			 slurm_conf.state_save_location : ".");
		if (sconf_ok || !storm_compat_ctld_reexec() ||
		    storm_conf_load(path, false, &c, err, sizeof(err)))
			return;
	}
	slurm_mutex_lock(&slot_lock);
	sconf = c;
	sconf_ok = true;
	slurm_mutex_unlock(&slot_lock);
}

/* MaxMPL of the job's partition (any policy), 0 without storm.conf;
 * slot_lock. */
static uint32_t _gang_mpl(job_record_t *job_ptr)
{
	const char *part = job_ptr->part_ptr ? job_ptr->part_ptr->name : NULL;

	if (!sconf_ok)
		return 0;
	return storm_conf_part_max_mpl(&sconf, part);
}

/*
 * Memory a job holds on each of its nodes, in MB: what cons_tres reserved
 * when it tracks memory (CR_*_Memory), else the request.  Frozen or
 * idle-class jobs keep their memory, so admission counts every slot: with
 * ConstrainRAMSpace the request is also the bound on what a job's
 * processes can keep resident.
 */
static uint64_t _job_mem_mb(job_record_t *job_ptr)
{
	__typeof__(job_ptr->details) d = job_ptr->details;	/* its type
							 * name differs by version */
	job_resources_t *r = job_ptr->job_resrcs;
	uint64_t m = 0, cpus;

	if (r && r->memory_allocated) {
		for (uint32_t i = 0; i < r->nhosts; i++)
			m = MAX(m, r->memory_allocated[i]);
		if (m)
			return m;
	}
	if (!d)
		return 0;
	m = d->pn_min_memory;
	if (m & MEM_PER_CPU) {
		cpus = (uint64_t) MAX(d->cpus_per_task, 1) *
		       MAX(d->ntasks_per_node, 1);
		cpus = MAX(cpus, d->pn_min_cpus);
		if (d->min_nodes)
			cpus = MAX(cpus, d->min_cpus / d->min_nodes);
		m = (m & ~MEM_PER_CPU) * cpus;
	}
	return m;
}

/* RealMemory less MemReserve, MB; UINT64_MAX when unknown. */
static uint64_t _mem_usable(int node)
{
	int idx = node;
	node_record_t *n = next_node(&idx);

	if (!n || idx != node || !n->real_memory)
		return UINT64_MAX;
	return n->real_memory > sconf.mem_reserve_mb ?
	       n->real_memory - sconf.mem_reserve_mb : 0;
}

static void _track_del(uint32_t job_id)
{
	for (int i = 0; i < nsjobs; i++) {
		if (sjobs[i].job_id == job_id) {
			FREE_NULL_BITMAP(sjobs[i].nodes);
			sjobs[i] = sjobs[--nsjobs];
			return;
		}
	}
}

static void _track_add(job_record_t *job_ptr)
{
	bitstr_t *b = job_ptr->job_resrcs ? job_ptr->job_resrcs->node_bitmap :
					    job_ptr->node_bitmap;

	if (!b || !_gang_mpl(job_ptr))
		return;
	_track_del(job_ptr->job_id);
	if (nsjobs == capsjobs) {
		capsjobs = capsjobs ? capsjobs * 2 : 64;
		xrecalloc(sjobs, capsjobs, sizeof(*sjobs));
	}
	sjobs[nsjobs].job_id = job_ptr->job_id;
	sjobs[nsjobs].nodes = bit_copy(b);
	sjobs[nsjobs].mem_mb = _job_mem_mb(job_ptr);
	nsjobs++;
}

/* Jobs placed on a node and the memory they hold there (MB); slot_lock. */
static int _node_usage(int node, uint64_t *mem_mb)
{
	int n = 0;

	*mem_mb = 0;
	for (int i = 0; i < nsjobs; i++) {
		if (node < bit_size(sjobs[i].nodes) &&
		    bit_test(sjobs[i].nodes, node)) {
			n++;
			*mem_mb += sjobs[i].mem_mb;
		}
	}
	return n;
}

/* A pending reason for squeue, where the version keeps it (compat.h). */
static void _pend_reason(job_record_t *job_ptr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void _pend_reason(job_record_t *job_ptr, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc >= 0) {
		storm_pend_reason_set(job_ptr, text);
		free(text);
	}
}

/* Jobs wholly inside [lo, hi): how much a block is already "a buddy". */
static int _jobs_inside(int lo, int hi)
{
	int n = 0;

	for (int i = 0; i < nsjobs; i++) {
		int f = bit_ffs(sjobs[i].nodes), l = bit_fls(sjobs[i].nodes);

		if (f >= lo && l >= 0 && l < hi)
			n++;
	}
	return n;
}

/*
 * Try aligned blocks; returns SLURM_SUCCESS with node_bitmap set to the
 * choice, or an error (node_bitmap untouched) to let cons_tres choose.
 */
static int _buddy_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
		       uint32_t min_nodes, uint32_t max_nodes,
		       uint32_t req_nodes, storm_select_try_f try, void *arg)
{
	int size = bit_size(node_bitmap), b = 1, nblk, tries = 0;
	int order[BUDDY_MAX_TRIES * 4], score[BUDDY_MAX_TRIES * 4], n = 0;
	int rc = SLURM_ERROR;

	while ((uint32_t) b < min_nodes)
		b <<= 1;
	if (b >= size)
		return SLURM_ERROR;
	nblk = (size + b - 1) / b;
	slurm_mutex_lock(&slot_lock);
	for (int k = 0; k < nblk && n < BUDDY_MAX_TRIES * 4; k++) {
		int lo = k * b, hi = MIN(size, lo + b);

		if (bit_set_count_range(node_bitmap, lo, hi) < (int) min_nodes)
			continue;
		order[n] = k;
		score[n] = _jobs_inside(lo, hi);
		n++;
	}
	slurm_mutex_unlock(&slot_lock);
	/* most jobs already inside first; stable for equal scores */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && score[j] > score[j - 1]; j--) {
			int t = score[j];

			score[j] = score[j - 1];
			score[j - 1] = t;
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < n && tries < BUDDY_MAX_TRIES; i++, tries++) {
		int lo = order[i] * b, hi = MIN(size, lo + b);
		bitstr_t *blk = bit_copy(node_bitmap);

		if (lo > 0)
			bit_nclear(blk, 0, lo - 1);
		if (hi < size)
			bit_nclear(blk, hi, size - 1);
		rc = try(blk, MIN(max_nodes, b), MIN(req_nodes, b), arg);
		if (rc == SLURM_SUCCESS) {
			bit_copybits(node_bitmap, blk);
			debug("%s: %pJ placed in aligned block %d-%d", plugin_type,
			      job_ptr, lo, hi - 1);
			FREE_NULL_BITMAP(blk);
			return rc;
		}
		FREE_NULL_BITMAP(blk);
	}
	return SLURM_ERROR;
}

extern int storm_select_init(const char *base_path)
{
	verbose("%s: init: wrapping %s (plugin_id=%u)", plugin_type,
		base_path, plugin_id);
	_load_conf("init");
	return storm_pend_reasons_start();
}

extern void storm_select_fini(void)
{
	storm_pend_reasons_stop();
	slurm_mutex_lock(&slot_lock);
	while (nsjobs)
		_track_del(sjobs[0].job_id);
	xfree(sjobs);
	capsjobs = 0;
	slurm_mutex_unlock(&slot_lock);
}

extern void storm_select_jobs_restored(struct xlist *job_list)
{
	/* slurmctld (re)started: count the slots of the running jobs */
	struct listIterator *it;
	job_record_t *job_ptr;

	if (!job_list)
		return;
	it = list_iterator_create(job_list);
	slurm_mutex_lock(&slot_lock);
	while ((job_ptr = list_next(it)))
		if (IS_JOB_RUNNING(job_ptr))
			_track_add(job_ptr);
	slurm_mutex_unlock(&slot_lock);
	list_iterator_destroy(it);
}

extern int storm_select_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
				 uint32_t min_nodes, uint32_t max_nodes,
				 uint32_t req_nodes, bool run_now,
				 storm_select_try_f try, void *arg)
{
	uint32_t mpl;
	uint64_t need = 0;
	int full = 0, memfull = 0, rc;
	bitstr_t *full_map = NULL, *mem_map = NULL;

	if (!run_now || !node_bitmap)
		goto pass;
	slurm_mutex_lock(&slot_lock);
	mpl = _gang_mpl(job_ptr);
	if (mpl) {
		/* A reason we set earlier is re-derived on every attempt. */
		storm_pend_reason_clear(job_ptr);
		full_map = bit_alloc(bit_size(node_bitmap));
		mem_map = bit_alloc(bit_size(node_bitmap));
		need = _job_mem_mb(job_ptr);
		for (int i = 0; i < bit_size(node_bitmap); i++) {
			uint64_t used_mb;
			int used;

			if (!bit_test(node_bitmap, i))
				continue;
			used = _node_usage(i, &used_mb);
			if (used >= (int) mpl) {
				bit_clear(node_bitmap, i);
				bit_set(full_map, i);
				full++;
			} else if (used && used_mb + need > _mem_usable(i)) {
				/* a node alone may take any job cons_tres
				 * admits: the reserve is for co-scheduling */
				bit_clear(node_bitmap, i);
				bit_set(mem_map, i);
				memfull++;
			}
		}
	}
	slurm_mutex_unlock(&slot_lock);
	if (!mpl)
		goto pass;

	rc = SLURM_ERROR;
	if (min_nodes > 1 && job_ptr->details && !job_ptr->details->req_node_bitmap)
		rc = _buddy_test(job_ptr, node_bitmap, min_nodes, max_nodes,
				 req_nodes, try, arg);
	if (rc != SLURM_SUCCESS)
		rc = try(node_bitmap, max_nodes, req_nodes, arg);
	/* Tell the user why, in squeue (where the version lets us). */
	if (rc != SLURM_SUCCESS && full) {
		char *names = bitmap2node_name(full_map);

		_pend_reason(job_ptr, "STORM_time_slots_full:MaxMPL=%u_on_%s",
			     mpl, names);
		xfree(names);
		debug("%s: %pJ pends: all %u time slots in use on %d node(s)",
		      plugin_type, job_ptr, mpl, full);
	} else if (rc != SLURM_SUCCESS && memfull) {
		char *names = bitmap2node_name(mem_map);

		_pend_reason(job_ptr, "STORM_memory_full:%"PRIu64"MB_does_not_fit_beside_running_jobs_on_%s_(MemReserve=%"PRIu64"MB)",
			     need, names, sconf.mem_reserve_mb);
		xfree(names);
		debug("%s: %pJ pends: its %"PRIu64" MB do not fit beside the running jobs on %d node(s)",
		      plugin_type, job_ptr, need, memfull);
	}
	FREE_NULL_BITMAP(full_map);
	FREE_NULL_BITMAP(mem_map);
	return rc;
pass:
	return try(node_bitmap, max_nodes, req_nodes, arg);
}

extern void storm_select_job_began(job_record_t *job_ptr)
{
	debug("%s: job_begin %pJ", plugin_type, job_ptr);
	slurm_mutex_lock(&slot_lock);
	_track_add(job_ptr);
	slurm_mutex_unlock(&slot_lock);
}

extern void storm_select_job_ended(job_record_t *job_ptr, const char *why)
{
	/* Slurm's own suspend frees the slot (the MM leaves such jobs alone) */
	debug("%s: %s %pJ", plugin_type, why, job_ptr);
	slurm_mutex_lock(&slot_lock);
	_track_del(job_ptr->job_id);
	slurm_mutex_unlock(&slot_lock);
}

extern void storm_select_reconfigure(void)
{
	_load_conf("reconfigure");
}

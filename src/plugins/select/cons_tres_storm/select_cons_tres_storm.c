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
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/job_resources.h"
#include "src/common/node_conf.h"
#include "src/common/select.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_conf.h"
#include "src/common/storm_wrap.h"

const char plugin_name[] = "STORM co-scheduling selection (wraps cons_tres)";
const char plugin_type[] = "select/cons_tres_storm";
/* Unique among select plugins (built-in ids are 101-110, slurm.h). */
const uint32_t plugin_id = 190;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static slurm_select_ops_t base;
static storm_wrap_t base_lib;

/*
 * The names behind slurm_select_ops_t, in its order.  Slurm keeps the same
 * list as node_select_syms, but only in libslurmfull: programs linked with
 * the public libslurm (which load this plugin to unpack node data from
 * slurm_load_node()) do not have it.
 */
static const char *const base_syms[] = {
	"plugin_id",
	"select_p_state_save",
	"select_p_state_restore",
	"select_p_job_init",
	"select_p_node_init",
	"select_p_job_test",
	"select_p_job_begin",
	"select_p_job_ready",
	"select_p_job_expand",
	"select_p_job_resized",
	"select_p_job_signal",
	"select_p_job_fini",
	"select_p_job_suspend",
	"select_p_job_resume",
	"select_p_step_pick_nodes",
	"select_p_step_start",
	"select_p_step_finish",
	"select_p_select_nodeinfo_pack",
	"select_p_select_nodeinfo_unpack",
	"select_p_select_nodeinfo_alloc",
	"select_p_select_nodeinfo_free",
	"select_p_select_nodeinfo_set_all",
	"select_p_select_nodeinfo_set",
	"select_p_select_nodeinfo_get",
	"select_p_select_jobinfo_alloc",
	"select_p_select_jobinfo_free",
	"select_p_select_jobinfo_set",
	"select_p_select_jobinfo_get",
	"select_p_select_jobinfo_copy",
	"select_p_select_jobinfo_pack",
	"select_p_select_jobinfo_unpack",
	"select_p_select_jobinfo_sprint",
	"select_p_select_jobinfo_xstrdup",
	"select_p_get_info_from_plugin",
	"select_p_update_node_config",
	"select_p_reconfigure",
	"select_p_resv_test",
};
_Static_assert(sizeof(base_syms) / sizeof(base_syms[0]) ==
	       sizeof(slurm_select_ops_t) / sizeof(void *),
	       "base_syms must name every slurm_select_ops_t member");

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
		/* sched/storm reports the error; keep the last good values */
		debug("%s: %s: %s", plugin_type, why, err);
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
	struct job_details *d = job_ptr->details;
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

/* A select-owned pending reason, so squeue shows ours (see job_test). */
static void _pend_reason(job_record_t *job_ptr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void _pend_reason(job_record_t *job_ptr, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;
	int rc;

	job_ptr->state_reason = WAIT_BLOCK_MAX_ERR;
	xfree(job_ptr->state_desc);
	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc >= 0) {
		job_ptr->state_desc = xstrdup(text);
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
		       uint32_t req_nodes, uint16_t mode,
		       List preemptee_candidates, List *preemptee_job_list,
		       bitstr_t *exc_core_bitmap)
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
		rc = base.job_test(job_ptr, blk, min_nodes, MIN(max_nodes, b),
				   MIN(req_nodes, b), mode,
				   preemptee_candidates, preemptee_job_list,
				   exc_core_bitmap);
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

extern int init(void)
{
	char err[4096];

	if (storm_wrap_open(&base_lib, slurm_conf.plugindir, SLURM_PLUGINDIR,
			    "select_cons_tres", base_syms, (void **) &base,
			    sizeof(base_syms) / sizeof(base_syms[0]),
			    err, sizeof(err))) {
		error("%s: cannot wrap select/cons_tres: %s", plugin_type, err);
		return SLURM_ERROR;
	}
	verbose("%s: init: wrapping %s (plugin_id=%u)", plugin_type,
		base_lib.path, plugin_id);
	_load_conf("init");
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	/* slurmctld loads cons_tres itself too: let Slurm run its fini(). */
	storm_wrap_close(&base_lib, false);
	slurm_mutex_lock(&slot_lock);
	while (nsjobs)
		_track_del(sjobs[0].job_id);
	xfree(sjobs);
	capsjobs = 0;
	slurm_mutex_unlock(&slot_lock);
	return SLURM_SUCCESS;
}

extern int select_p_state_save(char *dir_name)
{
	return base.state_save(dir_name);
}

extern int select_p_state_restore(char *dir_name)
{
	return base.state_restore(dir_name);
}

extern int select_p_job_init(List job_list)
{
	/* slurmctld (re)started: count the slots of the running jobs */
	if (job_list) {
		ListIterator it = list_iterator_create(job_list);
		job_record_t *job_ptr;

		slurm_mutex_lock(&slot_lock);
		while ((job_ptr = list_next(it)))
			if (IS_JOB_RUNNING(job_ptr))
				_track_add(job_ptr);
		slurm_mutex_unlock(&slot_lock);
		list_iterator_destroy(it);
	}
	return base.job_init(job_list);
}

extern int select_p_node_init(void)
{
	return base.node_init();
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates,
			     List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	uint32_t mpl;
	uint64_t need = 0;
	int full = 0, memfull = 0, rc;
	bitstr_t *full_map = NULL, *mem_map = NULL;

	if (!SELECT_IS_MODE_RUN_NOW(mode) || !node_bitmap)
		goto pass;
	slurm_mutex_lock(&slot_lock);
	mpl = _gang_mpl(job_ptr);
	if (mpl) {
		/* A reason we set earlier is re-derived on every attempt. */
		if (job_ptr->state_reason == WAIT_BLOCK_MAX_ERR) {
			job_ptr->state_reason = WAIT_NO_REASON;
			xfree(job_ptr->state_desc);
		}
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
				 req_nodes, mode, preemptee_candidates,
				 preemptee_job_list, exc_core_bitmap);
	if (rc != SLURM_SUCCESS)
		rc = base.job_test(job_ptr, node_bitmap, min_nodes, max_nodes,
				   req_nodes, mode, preemptee_candidates,
				   preemptee_job_list, exc_core_bitmap);
	/*
	 * Tell the user why, in squeue.  Slurm 22.05 resets the reason to
	 * "Resources" after a failed selection unless it is one of the
	 * (BlueGene-era) select-owned reasons, which it keeps
	 * (node_scheduler.c, select_nodes()); squeue prints state_desc.
	 */
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
	return base.job_test(job_ptr, node_bitmap, min_nodes, max_nodes,
			     req_nodes, mode, preemptee_candidates,
			     preemptee_job_list, exc_core_bitmap);
}

extern int select_p_job_begin(job_record_t *job_ptr)
{
	int rc;

	debug("%s: job_begin %pJ", plugin_type, job_ptr);
	rc = base.job_begin(job_ptr);
	if (rc == SLURM_SUCCESS) {
		slurm_mutex_lock(&slot_lock);
		_track_add(job_ptr);
		slurm_mutex_unlock(&slot_lock);
	}
	return rc;
}

extern int select_p_job_ready(job_record_t *job_ptr)
{
	return base.job_ready(job_ptr);
}

extern int select_p_job_expand(job_record_t *from_job_ptr,
			       job_record_t *to_job_ptr)
{
	return base.job_expand(from_job_ptr, to_job_ptr);
}

extern int select_p_job_resized(job_record_t *job_ptr, node_record_t *node_ptr)
{
	return base.job_resized(job_ptr, node_ptr);
}

extern int select_p_job_signal(job_record_t *job_ptr, int signal)
{
	return base.job_signal(job_ptr, signal);
}

extern int select_p_job_fini(job_record_t *job_ptr)
{
	debug("%s: job_fini %pJ", plugin_type, job_ptr);
	slurm_mutex_lock(&slot_lock);
	_track_del(job_ptr->job_id);
	slurm_mutex_unlock(&slot_lock);
	return base.job_fini(job_ptr);
}

extern int select_p_job_suspend(job_record_t *job_ptr, bool indf_susp)
{
	/* Slurm's own suspend frees the slot (the MM leaves such jobs alone) */
	slurm_mutex_lock(&slot_lock);
	_track_del(job_ptr->job_id);
	slurm_mutex_unlock(&slot_lock);
	return base.job_suspend(job_ptr, indf_susp);
}

extern int select_p_job_resume(job_record_t *job_ptr, bool indf_susp)
{
	slurm_mutex_lock(&slot_lock);
	_track_add(job_ptr);
	slurm_mutex_unlock(&slot_lock);
	return base.job_resume(job_ptr, indf_susp);
}

extern bitstr_t *select_p_step_pick_nodes(job_record_t *job_ptr,
					  select_jobinfo_t *jobinfo,
					  uint32_t node_count,
					  bitstr_t **avail_nodes)
{
	return base.step_pick_nodes(job_ptr, jobinfo, node_count, avail_nodes);
}

extern int select_p_step_start(step_record_t *step_ptr)
{
	return base.step_start(step_ptr);
}

extern int select_p_step_finish(step_record_t *step_ptr, bool killing_step)
{
	return base.step_finish(step_ptr, killing_step);
}

extern int select_p_select_nodeinfo_pack(select_nodeinfo_t *nodeinfo,
					 buf_t *buffer,
					 uint16_t protocol_version)
{
	return base.nodeinfo_pack(nodeinfo, buffer, protocol_version);
}

extern int select_p_select_nodeinfo_unpack(select_nodeinfo_t **nodeinfo,
					   buf_t *buffer,
					   uint16_t protocol_version)
{
	return base.nodeinfo_unpack(nodeinfo, buffer, protocol_version);
}

extern select_nodeinfo_t *select_p_select_nodeinfo_alloc(void)
{
	return base.nodeinfo_alloc();
}

extern int select_p_select_nodeinfo_free(select_nodeinfo_t *nodeinfo)
{
	return base.nodeinfo_free(nodeinfo);
}

extern int select_p_select_nodeinfo_set_all(void)
{
	return base.nodeinfo_set_all();
}

extern int select_p_select_nodeinfo_set(job_record_t *job_ptr)
{
	return base.nodeinfo_set(job_ptr);
}

extern int select_p_select_nodeinfo_get(select_nodeinfo_t *nodeinfo,
					enum select_nodedata_type dinfo,
					enum node_states state, void *data)
{
	return base.nodeinfo_get(nodeinfo, dinfo, state, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_alloc(void)
{
	return base.jobinfo_alloc();
}

extern int select_p_select_jobinfo_free(select_jobinfo_t *jobinfo)
{
	return base.jobinfo_free(jobinfo);
}

extern int select_p_select_jobinfo_set(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return base.jobinfo_set(jobinfo, data_type, data);
}

extern int select_p_select_jobinfo_get(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return base.jobinfo_get(jobinfo, data_type, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_copy(select_jobinfo_t *jobinfo)
{
	return base.jobinfo_copy(jobinfo);
}

extern int select_p_select_jobinfo_pack(select_jobinfo_t *jobinfo,
					buf_t *buffer,
					uint16_t protocol_version)
{
	return base.jobinfo_pack(jobinfo, buffer, protocol_version);
}

extern int select_p_select_jobinfo_unpack(select_jobinfo_t **jobinfo,
					  buf_t *buffer,
					  uint16_t protocol_version)
{
	return base.jobinfo_unpack(jobinfo, buffer, protocol_version);
}

extern char *select_p_select_jobinfo_sprint(select_jobinfo_t *jobinfo,
					    char *buf, size_t size, int mode)
{
	return base.jobinfo_sprint(jobinfo, buf, size, mode);
}

extern char *select_p_select_jobinfo_xstrdup(select_jobinfo_t *jobinfo,
					     int mode)
{
	return base.jobinfo_xstrdup(jobinfo, mode);
}

extern int select_p_get_info_from_plugin(enum select_plugindata_info dinfo,
					 job_record_t *job_ptr, void *data)
{
	return base.get_info_from_plugin(dinfo, job_ptr, data);
}

extern int select_p_update_node_config(int index)
{
	return base.update_node_config(index);
}

extern int select_p_reconfigure(void)
{
	_load_conf("reconfigure");
	return base.reconfigure();
}

extern bitstr_t *select_p_resv_test(resv_desc_msg_t *resv_desc_ptr,
				    uint32_t node_cnt,
				    bitstr_t *avail_bitmap,
				    bitstr_t **core_bitmap)
{
	return base.resv_test(resv_desc_ptr, node_cnt, avail_bitmap,
			      core_bitmap);
}

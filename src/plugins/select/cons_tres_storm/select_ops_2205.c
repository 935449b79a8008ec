/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * select_ops_2205.c - select/cons_tres_storm's entry points for Slurm 22.05:
 * its select interface (src/common/select.c, node_select_syms), each
 * passed to select/cons_tres, with STORM's hooks (select_storm.h) where
 * time-sharing needs them.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"
#include "src/common/select.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_wrap.h"
#include "select_storm.h"

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

/* job_test's other arguments, for storm_select_job_test's tries */
typedef struct {
	job_record_t *job_ptr;
	uint32_t min_nodes;
	uint16_t mode;
	List preemptee_candidates;
	List *preemptee_job_list;
	bitstr_t *exc_core_bitmap;
} try_args_t;

static int _try(bitstr_t *nodes, uint32_t max_nodes, uint32_t req_nodes,
		void *arg)
{
	try_args_t *a = arg;

	return base.job_test(a->job_ptr, nodes, a->min_nodes, max_nodes,
			     req_nodes, a->mode, a->preemptee_candidates,
			     a->preemptee_job_list, a->exc_core_bitmap);
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates,
			     List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	try_args_t a = {
		.job_ptr = job_ptr, .min_nodes = min_nodes, .mode = mode,
		.preemptee_candidates = preemptee_candidates,
		.preemptee_job_list = preemptee_job_list,
		.exc_core_bitmap = exc_core_bitmap,
	};

	return storm_select_job_test(job_ptr, node_bitmap, min_nodes,
				     max_nodes, req_nodes,
				     SELECT_IS_MODE_RUN_NOW(mode), _try, &a);
}

extern int select_p_job_signal(job_record_t *job_ptr, int signal)
{
	return base.job_signal(job_ptr, signal);
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

extern int select_p_update_node_config(int index)
{
	return base.update_node_config(index);
}

extern bitstr_t *select_p_resv_test(resv_desc_msg_t *resv_desc_ptr,
				    uint32_t node_cnt,
				    bitstr_t *avail_bitmap,
				    bitstr_t **core_bitmap)
{
	return base.resv_test(resv_desc_ptr, node_cnt, avail_bitmap,
			      core_bitmap);
}

#include "select_ops_forward.inc"

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * select_ops_2411.c - select/cons_tres_storm's entry points for Slurm 24.11:
 * its select interface (src/interfaces/select.c, node_select_syms), each
 * passed to select/cons_tres, with STORM's hooks (select_storm.h) where
 * time-sharing needs them.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"
#include "src/interfaces/select.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_wrap.h"
#include "select_storm.h"

/* slurm_select_ops_t of src/interfaces/select.c, which keeps it private */
typedef struct {
	uint32_t	(*plugin_id);
	int		(*state_save)		(char *dir_name);
	int		(*state_restore)	(char *dir_name);
	int		(*job_init)		(list_t *job_list);
	int		(*node_init)		(void);
	int		(*job_test)		(job_record_t *job_ptr,
						 bitstr_t *bitmap,
						 uint32_t min_nodes,
						 uint32_t max_nodes,
						 uint32_t req_nodes,
						 uint16_t mode,
						 list_t *preeemptee_candidates,
						 list_t **preemptee_job_list,
						 resv_exc_t *resv_exc_ptr,
						 will_run_data_t *will_run_ptr);
	int		(*job_begin)		(job_record_t *job_ptr);
	int		(*job_ready)		(job_record_t *job_ptr);
	int		(*job_expand)		(job_record_t *from_job_ptr,
						 job_record_t *to_job_ptr);
	int		(*job_resized)		(job_record_t *job_ptr,
						 node_record_t *node_ptr);
	int		(*job_fini)		(job_record_t *job_ptr);
	int		(*job_suspend)		(job_record_t *job_ptr,
						 bool indf_susp);
	int		(*job_resume)		(job_record_t *job_ptr,
						 bool indf_susp);
	bitstr_t *      (*step_pick_nodes)      (job_record_t *job_ptr,
						 select_jobinfo_t *step_jobinfo,
						 uint32_t node_count,
						 bitstr_t **avail_nodes);
	int             (*step_start)           (step_record_t *step_ptr);
	int             (*step_finish)          (step_record_t *step_ptr,
						 bool killing_step);
	int		(*nodeinfo_pack)	(select_nodeinfo_t *nodeinfo,
						 buf_t *buffer,
						 uint16_t protocol_version);
	int		(*nodeinfo_unpack)	(select_nodeinfo_t **nodeinfo,
						 buf_t *buffer,
						 uint16_t protocol_version);
	select_nodeinfo_t *(*nodeinfo_alloc)	(void);
	int		(*nodeinfo_free)	(select_nodeinfo_t *nodeinfo);
	int		(*nodeinfo_set_all)	(void);
	int		(*nodeinfo_set)		(job_record_t *job_ptr);
	int		(*nodeinfo_get)		(select_nodeinfo_t *nodeinfo,
						 enum
						 select_nodedata_type dinfo,
						 enum node_states state,
						 void *data);
	select_jobinfo_t *(*jobinfo_alloc)	(void);
	int		(*jobinfo_free)		(select_jobinfo_t *jobinfo);
	int		(*jobinfo_set)		(select_jobinfo_t *jobinfo,
						 enum
						 select_jobdata_type data_type,
						 void *data);
	int		(*jobinfo_get)		(select_jobinfo_t *jobinfo,
						 enum
						 select_jobdata_type data_type,
						 void *data);
	select_jobinfo_t *(*jobinfo_copy)	(select_jobinfo_t *jobinfo);
	int		(*jobinfo_pack)		(select_jobinfo_t *jobinfo,
						 buf_t *buffer,
						 uint16_t protocol_version);
	int		(*jobinfo_unpack)	(select_jobinfo_t **jobinfo_pptr,
						 buf_t *buffer,
						 uint16_t protocol_version);
	int		(*get_info_from_plugin)	(enum
						 select_plugindata_info dinfo,
						 job_record_t *job_ptr,
						 void *data);
	int		(*reconfigure)		(void);
} select_ops_t;

static select_ops_t base;
static storm_wrap_t base_lib;

/* The names behind select_ops_t, in its order (node_select_syms). */
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
	"select_p_get_info_from_plugin",
	"select_p_reconfigure",
};
_Static_assert(sizeof(base_syms) / sizeof(base_syms[0]) ==
	       sizeof(select_ops_t) / sizeof(void *),
	       "base_syms must name every select_ops_t member");

/* job_test's other arguments, for storm_select_job_test's tries */
typedef struct {
	job_record_t *job_ptr;
	uint32_t min_nodes;
	uint16_t mode;
	list_t *preemptee_candidates;
	list_t **preemptee_job_list;
	resv_exc_t *resv_exc_ptr;
	will_run_data_t *will_run_ptr;
} try_args_t;

static int _try(bitstr_t *nodes, uint32_t max_nodes, uint32_t req_nodes,
		void *arg)
{
	try_args_t *a = arg;

	return base.job_test(a->job_ptr, nodes, a->min_nodes, max_nodes,
			     req_nodes, a->mode, a->preemptee_candidates,
			     a->preemptee_job_list, a->resv_exc_ptr,
			     a->will_run_ptr);
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     list_t *preemptee_candidates,
			     list_t **preemptee_job_list,
			     resv_exc_t *resv_exc_ptr,
			     will_run_data_t *will_run_ptr)
{
	try_args_t a = {
		.job_ptr = job_ptr, .min_nodes = min_nodes, .mode = mode,
		.preemptee_candidates = preemptee_candidates,
		.preemptee_job_list = preemptee_job_list,
		.resv_exc_ptr = resv_exc_ptr, .will_run_ptr = will_run_ptr,
	};

	return storm_select_job_test(job_ptr, node_bitmap, min_nodes,
				     max_nodes, req_nodes,
				     SELECT_IS_MODE_RUN_NOW(mode), _try, &a);
}

#include "select_ops_forward.inc"

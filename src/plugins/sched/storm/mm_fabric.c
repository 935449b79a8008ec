/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_fabric.c - the Machine Manager joins and leaves the STORM fabric.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_gang.h"

#include "mm_fabric.h"
#include "mm_listener.h"
#include "mm_offset.h"
#include "mm_return.h"

#define MM_MIN_TIMEOUT_MS 100

static void mm_log(void *arg, storm_log_level_t lvl, const char *msg)
{
	if (lvl == STORM_LOG_ERROR)
		error("%s: fabric: %s", MM_PREFIX, msg);
	else if (lvl == STORM_LOG_WARN)
		verbose("%s: fabric: %s", MM_PREFIX, msg);
	else
		debug("%s: fabric: %s", MM_PREFIX, msg);
}

/*
 * Four quanta, at least MM_MIN_TIMEOUT_MS, at most half of SuspectTime
 * (but not below that minimum) and at most the Timeout.  A node that does
 * not answer within half of SuspectTime is on its way to being drained
 * anyway, and a longer wait would keep this thread from hearing the other
 * nodes' heartbeats: at long quanta, four quanta are seconds.
 */
static int mm_timeout_ms(const storm_conf_t *conf)
{
	uint64_t t = conf->timeslice_us * 4 / 1000;
	uint64_t half_suspect = conf->suspect_time_us / 2000;

	if (t > half_suspect)
		t = half_suspect;
	if (t < MM_MIN_TIMEOUT_MS)
		t = MM_MIN_TIMEOUT_MS;
	if (t > conf->timeout_us / 1000)
		t = conf->timeout_us / 1000;
	return (int) t;
}

static void free_nodes(mm_t *mm)
{
	for (int i = 0; i < mm->nnodes; i++) {
		xfree(mm->node_names[i]);
		xfree(mm->node_addrs[i]);
	}
	if (mm->node_addrs)
		xfree(mm->node_addrs[mm->nnodes]);
	xfree(mm->node_names);
	xfree(mm->node_addrs);
	xfree(mm->nodes);
	mm->nnodes = 0;
}

extern void mm_fabric_close(mm_t *mm)
{
	mm_listener_stop(mm);	/* it drives the ctx and reads the nodes */
	mm_offset_close(mm);
	if (mm->ctx) {
		storm_ctx_close(mm->ctx);
		mm->ctx = NULL;
	}
	free_nodes(mm);
}

/* The nodes' names and fabric addresses, and the controller's host. */
static void learn_nodes(mm_t *mm, char *host, size_t hostlen)
{
	slurmctld_lock_t node_read = { .conf = READ_LOCK, .node = READ_LOCK };
	int n;

	lock_slurmctld(node_read);
	n = mm->nnodes = node_record_count;
	/* no node has answered this endpoint yet */
	memset(&mm->tally, 0, sizeof(mm->tally));
	atomic_store(&mm->nobody_heard, false);
	atomic_store(&mm->heard_again_ns, 0);
	mm->node_names = xcalloc(n + 1, sizeof(char *));
	mm->node_addrs = xcalloc(n + 1, sizeof(char *));
	mm->nodes = xcalloc(n + 1, sizeof(*mm->nodes));
	for (int i = 0; i < n; i++) {
		node_record_t *nr = node_record_table_ptr[i];
		int port = storm_conf_port(mm->conf.port_lo, mm->conf.port_hi, i);

		mm->node_names[i] = xstrdup(nr && nr->name ? nr->name : "?");
		mm->node_addrs[i] = xstrdup_printf("%s:%d",
						   nr && nr->comm_name ?
						   nr->comm_name :
						   mm->node_names[i], port);
		mm->nodes[i].live = true;
		/* drained by an earlier MM (before slurmctld restarted or the
		 * fabric was rejoined): still ours to return to service */
		mm->nodes[i].drain_ours = mm->nodes[i].drained =
			nr && mm_return_drained_by_us(nr);
		mm->nodes[i].drain_ours_ns = storm_mono_ns();
	}
	snprintf(host, hostlen, "%s",
		 (slurm_conf.control_cnt && slurm_conf.control_addr &&
		  slurm_conf.control_addr[0]) ? slurm_conf.control_addr[0] :
						"127.0.0.1");
	unlock_slurmctld(node_read);
	mm->node_addrs[n] = xstrdup_printf("%s:%u", host, mm->conf.ctl_port);
}

extern int mm_fabric_open(mm_t *mm)
{
	storm_cfg_t cfg;
	char host[256];
	int rc;
	uint64_t t0 = storm_mono_ns(), t_nodes, t_ep;

	learn_nodes(mm, host, sizeof(host));
	t_nodes = storm_mono_ns();
	storm_cfg_init(&cfg);
	cfg.provider = mm->conf.provider;
	cfg.host = host;
	cfg.port = (int) mm->conf.ctl_port;
	cfg.rank = mm->nnodes;
	cfg.nodes = (const char *const *) mm->node_addrs;
	cfg.nnodes = mm->nnodes + 1;
	/* the MM only sends, but for the nodes' heartbeats and reports, the
	 * relays' reports (storm_report.h) and the nodes' clock replies
	 * (storm_gang.h), one after the other */
	cfg.region_size = STORM_GANG_MM_REGION;
	cfg.arity = (int) mm->conf.tree_arity;
	cfg.timeout_ms = mm_timeout_ms(&mm->conf);
	cfg.busy_poll_us = 0;	/* as the node managers: sleep on the CQ fd */
	rc = storm_ctx_open(&cfg, &mm->ctx);
	t_ep = storm_mono_ns();
	if (rc) {
		mm->ctx = NULL;
		error("%s: cannot open the fabric endpoint %s:%u (provider %s): %s",
		      MM_PREFIX, host, mm->conf.ctl_port, mm->conf.provider,
		      storm_strerror(rc));
		free_nodes(mm);
		return rc;
	}
	mm->ack_timeout_ms = cfg.timeout_ms;
	storm_set_log_fn(mm->ctx, mm_log, NULL, STORM_LOG_WARN);
	mm_offset_open(mm);
	if (mm_listener_start(mm)) {
		/* without it no silent node would be drained: try again */
		mm_fabric_close(mm);
		return -ENOMEM;
	}
	info("%s: joined the fabric as rank %d at %s:%u (%s), %d node managers, Timeslice=%" PRIu64 "us, ack timeout %d ms (in %" PRIu64 " ms: nodes %" PRIu64 ", endpoint %" PRIu64 ")",
	     MM_PREFIX, mm->nnodes, host, mm->conf.ctl_port, mm->conf.provider,
	     mm->nnodes, mm->conf.timeslice_us, cfg.timeout_ms,
	     (storm_mono_ns() - t0) / 1000000, (t_nodes - t0) / 1000000,
	     (t_ep - t_nodes) / 1000000);
	return 0;
}

extern bool mm_fabric_in_set(const mm_t *mm, int i)
{
	return mm->nodes[i].live && !mm->nodes[i].quiet;
}

extern void mm_fabric_live_set(const mm_t *mm, storm_set_t *s)
{
	storm_set_clear(s);
	for (int i = 0; i < mm->nnodes; i++)
		if (mm_fabric_in_set(mm, i))
			storm_set_add(s, i);
}

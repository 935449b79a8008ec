/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_fabric.c - the node's endpoint on the STORM fabric.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm.h"
#include "src/common/storm_bcast.h"

/* Priority of the progress thread: above every job, below the kernel's
 * own real-time threads.  The switch thread (gang) runs one above it. */
#define NM_PROGRESS_RT_PRIO 40

extern int nm_fabric_open(nm_t *nm)
{
	storm_cfg_t cfg;
	char **addrs;
	int rc = -ENOMEM;

	addrs = calloc(nm->nnodes, sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (int i = 0; i < nm->nnodes; i++) {
		if (asprintf(&addrs[i], "%s:%d", nm->nodes[i].addr,
			     nm->nodes[i].port) < 0) {
			addrs[i] = NULL;
			goto done;
		}
	}
	storm_cfg_init(&cfg);
	cfg.provider = nm->conf.provider;
	cfg.host = nm->nodes[nm->rank].addr;
	cfg.port = nm->nodes[nm->rank].port;
	cfg.rank = nm->rank;
	cfg.nodes = (const char *const *) addrs;
	cfg.nnodes = nm->nnodes;
	cfg.arity = (int) nm->conf.tree_arity;
	cfg.bulk_arity = (int) nm->conf.bcast_arity;
	cfg.chunk = nm->conf.chunk_bytes;
	cfg.window = (int) nm->conf.window;
	cfg.timeout_ms = (int) (nm->conf.timeout_us / 1000);
	/* No spinning after a message: the progress thread is SCHED_FIFO, so
	 * its sched_yield() spin takes the CPU from the jobs on this node
	 * at every message, which at short quanta is most of what gang
	 * scheduling costs them.  It sleeps on the CQ fd instead and wakes
	 * within tens of microseconds. */
	cfg.busy_poll_us = 0;
	/* 0..15 the NM's own, then one per broadcast client slot */
	cfg.nvars = STORM_BCAST_NVARS;
	/* the heartbeat, fail-safe and gang threads are SCHED_FIFO and a
	 * broadcast's threads ordinary: a holder the jobs preempt must not
	 * keep a heartbeat waiting until this node looks dead */
	cfg.lock_inherit = true;

	rc = storm_ctx_open(&cfg, &nm->ctx);
	if (rc) {
		nm_error("cannot open the fabric endpoint %s:%d (provider %s): %s",
			 cfg.host, cfg.port, cfg.provider, storm_strerror(rc));
		nm->ctx = NULL;
		goto done;
	}
	storm_set_log_fn(nm->ctx, nm_log_mech, nm, STORM_LOG_INFO);
	rc = storm_ctx_start_progress(nm->ctx, NM_PROGRESS_RT_PRIO);
	if (rc) {
		nm_error("cannot start the fabric progress thread: %s",
			 storm_strerror(rc));
		storm_ctx_close(nm->ctx);
		nm->ctx = NULL;
		goto done;
	}
	nm_info("joined the fabric as rank %d of %d at %s:%d (%s)", nm->rank,
		nm->nnodes, cfg.host, cfg.port, cfg.provider);
done:
	for (int i = 0; i < nm->nnodes; i++)
		free(addrs[i]);
	free(addrs);
	return rc;
}

extern void nm_fabric_close(nm_t *nm)
{
	if (!nm->ctx)
		return;
	storm_ctx_stop_progress(nm->ctx);
	storm_ctx_close(nm->ctx);
	nm->ctx = NULL;
}

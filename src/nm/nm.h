/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm.h - the STORM node manager (storm-nm), one per compute node.
 *
 * The NM joins the STORM fabric (libstormmech) as the node's rank, and is
 * the node's end of every STORM function: it receives broadcast files into
 * the node-local RAM disk, switches job cgroups on the Machine Manager's
 * strobe, and answers COMPARE-AND-WRITE for fault detection.  Functions
 * plug in as modules (nm_module_t) so that each lives in its own file.
 *
 * It is started by the SPANK plugin from slurmd (or by systemd, see
 * contribs/systemd), runs detached so that it survives slurmd restarts, and
 * refuses to run twice for one node (a lock in BcastDir).
 */
#ifndef STORM_NM_H
#define STORM_NM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/common/storm_conf.h"
#include "src/common/storm_nmctl.h"
#include "src/stormmech/stormmech.h"

#define NM_NAME "storm-nm"

typedef struct nm_node {
	char name[64];
	char addr[64];		/* NodeAddr */
	int port;		/* fabric port */
} nm_node_t;

typedef struct nm {
	char node[64];		/* this node's Slurm name */
	char slurm_conf[4096];
	char storm_conf[4096];
	storm_conf_t conf;

	int rank;		/* index of this node in the node table */
	int nnodes;
	nm_node_t *nodes;	/* slurm.conf node table order */

	storm_ctx_t *ctx;	/* this node's fabric endpoint */
	int lock_fd;
	char lock_path[4200];
	char sock_path[4200];
	volatile int stop;	/* set by SIGTERM/SIGINT */
} nm_t;

/* Each file's API in its own header; included here so that a module sees
 * the whole node manager through nm.h. */
#include "nm_log.h"
#include "nm_nodes.h"
#include "nm_fabric.h"
#include "nm_ctl.h"
#include "nm_modules.h"

#endif /* STORM_NM_H */

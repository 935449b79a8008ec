/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_nodes.h - the node table (nm_nodes.c): every node of slurm.conf, its address and
 * fabric port, and this node's rank.
 */
#ifndef STORM_NM_NODES_H
#define STORM_NM_NODES_H

#include "nm.h"

/* Fill nm->nodes/nnodes/rank from slurmctld; retries until nm->stop. */
extern int nm_nodes_load(nm_t *nm);
/* Fabric port of the node at index i under the configured Port range. */
extern int nm_node_port(const storm_conf_t *conf, int i);

#endif /* STORM_NM_NODES_H */

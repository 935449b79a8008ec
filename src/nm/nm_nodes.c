/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_nodes.c - the node table, from slurmctld.
 *
 * A node's fabric rank is its index in slurm.conf's node table, which is
 * the order slurm_load_node() returns and the order of slurmctld's
 * node_record_table_ptr, so the Machine Manager, srun and every NM agree
 * on ranks without exchanging anything.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "nm.h"

extern int nm_node_port(const storm_conf_t *conf, int i)
{
	return storm_conf_port(conf->port_lo, conf->port_hi, i);
}

extern int nm_nodes_load(nm_t *nm)
{
	node_info_msg_t *msg = NULL;
	int delay_ms = 100;

	while (slurm_load_node((time_t) 0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		nm_verbose("waiting for slurmctld to list the nodes: %s",
			   slurm_strerror(errno));
		if (nm->stop)
			return -EINTR;
		usleep(delay_ms * 1000);
		if (delay_ms < 2000)
			delay_ms *= 2;
	}
	nm->nodes = calloc(msg->record_count, sizeof(*nm->nodes));
	if (!nm->nodes) {
		slurm_free_node_info_msg(msg);
		return -ENOMEM;
	}
	nm->nnodes = (int) msg->record_count;
	nm->rank = -1;
	for (int i = 0; i < nm->nnodes; i++) {
		node_info_t *n = &msg->node_array[i];
		nm_node_t *d = &nm->nodes[i];

		snprintf(d->name, sizeof(d->name), "%s", n->name ? n->name : "");
		snprintf(d->addr, sizeof(d->addr), "%s",
			 n->node_addr ? n->node_addr : d->name);
		d->port = nm_node_port(&nm->conf, i);
		if (!strcmp(d->name, nm->node))
			nm->rank = i;
	}
	slurm_free_node_info_msg(msg);
	if (nm->rank < 0) {
		nm_error("node %s is not in slurmctld's node table", nm->node);
		return -ENOENT;
	}
	if (nm->conf.port_hi > nm->conf.port_lo &&
	    nm->nnodes > nm->conf.port_hi - nm->conf.port_lo + 1) {
		nm_error("storm.conf Port=%u-%u has fewer ports than the %d nodes",
			 nm->conf.port_lo, nm->conf.port_hi, nm->nnodes);
		return -ERANGE;
	}
	return 0;
}

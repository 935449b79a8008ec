/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_fabric.h - the broadcast on the fabric: libstormmech's
 * destination callbacks, the worker thread they hand work to, and the
 * fabric variable through which each node answers the relay
 * (nm_bcast_fabric.c).
 */
#ifndef STORM_NM_BCAST_FABRIC_H
#define STORM_NM_BCAST_FABRIC_H

#include <stdint.h>

#include "nm.h"

/* Start the worker and take libstormmech's destination callbacks; 0 or
 * -errno. */
extern int nm_bcast_fabric_start(nm_t *nm);
/* Stop the fabric's progress and the worker; drops the work queued. */
extern void nm_bcast_fabric_stop(nm_t *nm);

/* This node's state of the transfer (root, key) in its fabric variable,
 * for the relay; a final state also answers the tasks that wait for it
 * (root: the transfer's relay). */
extern void nm_bcast_publish(int root, uint64_t key, int st);

#endif /* STORM_NM_BCAST_FABRIC_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_fabric.h - the Machine Manager's place on the STORM fabric: rank
 * node_record_count at the controller's address and ControllerPort (the
 * node managers are ranks 0..n-1 in slurm.conf node order).
 */
#ifndef STORM_MM_FABRIC_H
#define STORM_MM_FABRIC_H

#include "src/stormmech/stormmech.h"

#include <stdbool.h>

#include "mm_state.h"

/* Join the fabric and learn the nodes (under slurmctld's read locks);
 * 0 or a negative storm error, with nothing left open. */
extern int mm_fabric_open(mm_t *mm);
/* Leave the fabric and forget the nodes. */
extern void mm_fabric_close(mm_t *mm);
/*
 * The nodes in the strobe set: live (they answered the last operation or a
 * probe since) and not quiet (heard within half of SuspectTime,
 * mm_heartbeat.c).  A quiet node is left out of strobes, confirmations and
 * probes, so that no operation waits out its timeout on a node about to be
 * drained, and the drain comes in SuspectTime; heard again, it is back in
 * with the table.
 */
extern bool mm_fabric_in_set(const mm_t *mm, int i);
extern void mm_fabric_live_set(const mm_t *mm, storm_set_t *s);

#endif /* STORM_MM_FABRIC_H */

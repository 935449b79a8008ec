/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_return.h - nodes the Machine Manager drained, returned to service by
 * it once their node manager answers again for ReturnAfter (storm.conf).
 * Only a drain that is still STORM's is lifted: one an administrator
 * changed, or any other state Slurm gave the node, is left alone.
 */
#ifndef STORM_MM_RETURN_H
#define STORM_MM_RETURN_H

#include <stdbool.h>
#include <stdint.h>

#include "src/common/node_conf.h"

#include "mm_state.h"

/* Every drain reason the Machine Manager writes begins with this. */
#define MM_DRAIN_REASON_PREFIX "STORM: node manager "

/* Drained in Slurm with a reason the Machine Manager wrote (by this MM or
 * an earlier one).  Under slurmctld's node read lock. */
extern bool mm_return_drained_by_us(const node_record_t *nr);

/* Follow, listen by listen, how long each node drained by this MM has
 * answered without a miss (in the strobe set, heard, no missed quantum). */
extern void mm_return_track(mm_t *mm, uint64_t now);
/* A node mm_return_nodes() would resume now (it takes slurmctld's locks). */
extern bool mm_return_due(const mm_t *mm, uint64_t now);
/* Resume in Slurm the nodes that answered for ReturnAfter. */
extern void mm_return_nodes(mm_t *mm, uint64_t now);

#endif /* STORM_MM_RETURN_H */

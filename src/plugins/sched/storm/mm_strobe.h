/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_strobe.h - what the Machine Manager sends the node managers: the job
 * table and the strobe, both XFER-AND-SIGNAL (storm_gang.h).
 */
#ifndef STORM_MM_STROBE_H
#define STORM_MM_STROBE_H

#include <stdint.h>

#include "mm_state.h"

/* The job table to the live nodes; 0 (and no longer dirty) or an error. */
extern int mm_strobe_send_table(mm_t *mm);
/* A strobe of epoch mm->epoch for slot, covering nq quanta whose next
 * boundary is next_in_ns after now; 0 or an error. */
extern int mm_strobe_send(mm_t *mm, uint32_t slot, uint32_t nq,
			  uint64_t next_in_ns);
/* Tell every node manager to run everything (the MM stopping): best
 * effort. */
extern void mm_strobe_release_all(mm_t *mm);
/*
 * The MM stopping: while jobs time-share and HandoverTime is set, a last
 * strobe leaves the node managers HandoverTime of quanta to time
 * themselves, so that switching goes on while slurmctld restarts (from
 * Slurm 23.11 on, every `scontrol reconfigure` is a new slurmctld) and the
 * next MM strobes over it; with none, their fail-safe opens FailSafe after
 * those quanta.  Else mm_strobe_release_all().  Best effort.
 */
extern void mm_strobe_hand_over(mm_t *mm);

#endif /* STORM_MM_STROBE_H */

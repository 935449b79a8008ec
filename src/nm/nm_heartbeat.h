/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_heartbeat.h - the node manager tells the Machine Manager it is alive:
 * a storm_node_report_t (storm_report.h) with a new beat every
 * storm_conf_beat_us(), from a SCHED_FIFO thread, whether or not anything
 * time-shares.  The Machine Manager drains a node it has not heard from for
 * SuspectTime (mm_faults.c), at any Timeslice and StrobeInterval.
 */
#ifndef STORM_NM_HEARTBEAT_H
#define STORM_NM_HEARTBEAT_H

#include "nm.h"

extern const nm_module_t nm_heartbeat_module;

#endif /* STORM_NM_HEARTBEAT_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_heartbeat.h - what the Machine Manager hears from the node managers:
 * their heartbeats (storm_report.h, written into this MM's region every
 * storm_conf_beat_us()) and their acknowledgements.  The listener thread
 * (mm_listener.h) reads the heartbeats and counts each node's silence; the
 * MM thread tells it of every acknowledgement here.
 */
#ifndef STORM_MM_HEARTBEAT_H
#define STORM_MM_HEARTBEAT_H

#include <stdint.h>

#include "src/common/storm_report.h"

#include "mm_state.h"

/* Node i was heard (an acknowledgement) now. */
extern void mm_heartbeat_heard(mm_t *mm, int i);
/* Node i's last report in this MM's region, or NULL (none or torn). */
extern const storm_node_report_t *mm_heartbeat_report(const mm_t *mm, int i);

#endif /* STORM_MM_HEARTBEAT_H */

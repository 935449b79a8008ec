/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_reject.h - the messages this node manager refused, by kind
 * (storm_report.h): counted where they are refused, summarized in the log
 * once per interval instead of a line each, and reported to the Machine
 * Manager with each heartbeat (nm_heartbeat.c), whose status `stormctl
 * show` prints.
 */
#ifndef STORM_NM_REJECT_H
#define STORM_NM_REJECT_H

#include "nm.h"
#include "src/common/storm_report.h"

/* One refused message of this kind; any thread. */
extern void nm_reject_count(enum storm_reject_kind kind);
/* Counts so far (the fabric's from libstormmech). */
extern void nm_reject_counts(nm_t *nm, uint64_t out[STORM_REJECT_KINDS]);
/* From the main loop, a few times a second: once per NM_REJECT_LOG_S log
 * a summary of what moved. */
extern void nm_reject_tick(nm_t *nm);

#define NM_REJECT_LOG_S 10

#endif /* STORM_NM_REJECT_H */

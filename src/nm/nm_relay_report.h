/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_report.h - what this relay tells the Machine Manager of its
 * broadcasts (storm_report.h, storm_relay_report_t): the relay's threads
 * record each broadcast's phase, bytes and nodes here; the control loop's
 * tick sends the latest to the MM when it moved.
 */
#ifndef STORM_NM_RELAY_REPORT_H
#define STORM_NM_RELAY_REPORT_H

#include <stdint.h>

#include "nm.h"
#include "src/common/storm_report.h"

/* A broadcast starts: key, job, file size, nodes besides the relay. */
extern void nm_relay_report_begin(uint64_t key, uint32_t job, uint64_t size,
				  int nnodes);
extern void nm_relay_report_phase(uint64_t key, enum storm_relay_phase phase);
/* Bytes from srun so far. */
extern void nm_relay_report_received(uint64_t key, uint64_t got);
/* Nodes known ready (may be NULL) and holding the file (may be NULL). */
extern void nm_relay_report_nodes(uint64_t key, const storm_set_t *ready,
				  const storm_set_t *done);
/* It ended: DONE when ok (size bytes delivered), else FAILED. */
extern void nm_relay_report_end(uint64_t key, uint64_t size, bool ok,
				uint64_t elapsed_us);
/* From the control loop: send the latest to the MM when it moved, at most
 * every NM_RELAY_REPORT_MS while one is in flight. */
extern void nm_relay_report_tick(nm_t *nm);
extern void nm_relay_report_fini(void);

#define NM_RELAY_REPORT_MS 200

#endif /* STORM_NM_RELAY_REPORT_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_clock.h - this node's clock against the Machine Manager's: the
 * NTP-style exchange (storm_clock.h, storm_gang.h) and its estimate.
 */
#ifndef STORM_NM_CLOCK_H
#define STORM_NM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "src/common/storm_gang.h"
#include "nm.h"

/*
 * Test-only: STORM_NM_TEST_CLOCK_OFFSET_US in the node manager's
 * environment (an integer, microseconds, within +-10 s) adds that much to
 * this node's clock as the gang code sees it, so that a single host can
 * test the offset estimation.  Never set it on a real node.
 */
#define NM_CLOCK_TEST_ENV "STORM_NM_TEST_CLOCK_OFFSET_US"

/* Read the test knob; logs (and ignores) a malformed value. */
extern void nm_clock_init(void);
/* This node's CLOCK_REALTIME in ns, the test offset added. */
extern uint64_t nm_clock_now(void);

/* A clock request arrived (t2: nm_clock_now() on arrival).  Called on the
 * fabric's progress thread with the ctx locked; true if a reply is due
 * (nm_clock_reply()).  A request's prev_t4 completes the previous
 * exchange, whose sample goes into the filter. */
extern bool nm_clock_request(nm_t *nm, const storm_gang_clock_req_t *r,
			     uint64_t t2);
/* Send the due reply, with the estimate, late and mode (STORM_GANG_AT_*).
 * Not on the progress thread: it calls storm_xfer. */
extern void nm_clock_reply(nm_t *nm, uint64_t late, uint32_t mode);
/* The filtered offset (node - MM) and its uncertainty; false before the
 * first sample. */
extern bool nm_clock_estimate(int64_t *offset_ns, uint64_t *uncert_ns);
extern void nm_clock_fini(void);

#endif /* STORM_NM_CLOCK_H */

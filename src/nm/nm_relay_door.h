/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_door.h - the relay's door on BcastPort: accepts connections
 * and reads each one's request in a single thread, under a deadline of
 * its own (storm.conf BcastRequestTimeout), before anything is spent on
 * it.  Only complete, well-formed requests go on to the relay, which
 * then checks the credential and applies the per-user limits.
 */
#ifndef NM_RELAY_DOOR_H
#define NM_RELAY_DOOR_H

#include <stdint.h>

#include "nm_relay_req.h"

/* A complete request: the callee owns fd (blocking again) and req (heap,
 * free with nm_relay_req_free() and free()). */
typedef void (*nm_relay_door_cb)(int fd, nm_relay_req_t *req, void *arg);

typedef struct nm_relay_door_stats {
	uint64_t accepted;	/* connections accepted */
	uint64_t complete;	/* requests handed on */
	uint64_t malformed;	/* not a STORM request, sizes out of range */
	uint64_t incomplete;	/* closed by the peer mid-request */
	uint64_t timed_out;	/* not complete within the deadline */
	uint64_t evicted;	/* oldest pending, closed to make room */
} nm_relay_door_stats_t;

/* Start the door on a listening socket; 0 or -errno. */
extern int nm_relay_door_start(int lfd, uint64_t request_us,
			       nm_relay_door_cb cb, void *arg);

/* Stop accepting and close every pending connection. */
extern void nm_relay_door_stop(void);

extern void nm_relay_door_stats(nm_relay_door_stats_t *st);

#endif

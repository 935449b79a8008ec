/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_wait.h - tasks that wait for their node's copy before exec
 * (BcastOverlap, nm_bcast_wait.c).
 *
 * nm_bcast_wait_init() registers the "bcast_wait" control command;
 * nm_bcast_wake() records a transfer's final state on this node (DONE or
 * why not; root: its relay's rank) and answers its waiters when that is a
 * refusal; nm_bcast_go() records the relay's go-ahead (every node holds
 * the file) and lets the waiters of a complete copy go;
 * nm_bcast_wait_expire() answers those whose wait ran out;
 * nm_bcast_wait_fini() answers everyone (the NM stops).
 */
#ifndef STORM_NM_BCAST_WAIT_H
#define STORM_NM_BCAST_WAIT_H

#include <stdint.h>

extern void nm_bcast_wait_init(void);
extern void nm_bcast_wake(int root, uint64_t key, int st);
extern void nm_bcast_go(int root, uint64_t key);
extern void nm_bcast_wait_expire(void);
extern void nm_bcast_wait_fini(void);

#endif /* STORM_NM_BCAST_WAIT_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_state.h - what the step's nodes report to the relay: their
 * broadcast variables, asked with COMPARE-AND-WRITE, and the signals they
 * send when a variable moves (storm_bcast.h, step 2); the names of the
 * nodes that do not answer.
 */
#ifndef STORM_NM_RELAY_STATE_H
#define STORM_NM_RELAY_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nm.h"

/* The node manager, and the flag that ends waits when it stops. */
extern void nm_relay_state_init(nm_t *nm, volatile bool *stop);
extern const char *nm_relay_node_name(int rank);
/* Names of the ranks of a set, "node1,node5" (truncated politely). */
extern void nm_relay_set_names(const storm_set_t *s, char *out, size_t len);
/* How many nodes of set report state st for key (each asked alone). */
extern int nm_relay_count_state(const storm_set_t *set, uint64_t key, int st);
/* Until every node of set reports `want`: 0, or -1 with err naming the
 * nodes that refused (with their reasons), did not answer or did not get
 * there within nm_relay_wait_ms() of a file of size bytes; -2 (err set)
 * when every node that refused lacked some of a bundle's references
 * (STORM_BCAST_ABSENT). */
extern int nm_relay_wait_state(const storm_set_t *set, uint64_t key, int want,
		      uint64_t size, char *err, size_t errlen);
/* Timeout, plus what a file of size bytes takes a busy node to allocate or
 * check (nm_relay_state.c). */
extern int nm_relay_wait_ms(uint64_t timeout_us, uint64_t size);

#endif /* STORM_NM_RELAY_STATE_H */

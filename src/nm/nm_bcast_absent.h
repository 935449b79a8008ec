/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_absent.h - what the step's nodes lack of a bundle of references
 * (storm_bcast.h), gathered on the relay (nm_bcast_absent.c).
 *
 * A node whose cache lacks some of a bundle's references sends the relay
 * a bitmap of them (bit i: the bundle's i-th reference, byte i / 8, bit
 * i % 8) at offset STORM_BCAST_ABSENT | key, before it reports ABSENT; the
 * relay ORs the bitmaps of a key, and answers srun with their union, so
 * that srun sends only the files some node lacks.  A few keys are kept at
 * a time, the oldest dropped: a report for a key no one asks about ages
 * out, and a relay that lacks a node's report only makes srun send more.
 */
#ifndef STORM_NM_BCAST_ABSENT_H
#define STORM_NM_BCAST_ABSENT_H

#include <stddef.h>
#include <stdint.h>

/* A bitmap no larger than this is taken (a bundle's references, / 8) */
#define NM_BCAST_ABSENT_MAX_BYTES (1u << 20)

/* OR one node's bitmap into key's union, counting the report. */
extern void nm_bcast_absent_merge(uint64_t key, const void *bits, size_t len);

/* Reports merged for key so far. */
extern int nm_bcast_absent_reports(uint64_t key);

/* key's union (malloc'ed, *len bytes) and forget it; NULL when no report
 * came (or out of memory). */
extern uint8_t *nm_bcast_absent_take(uint64_t key, size_t *len);

/* Every node's bitmap of a bundle: bit `ordinal` set. */
extern int nm_bcast_absent_set(uint8_t **bits, size_t *len, uint64_t ordinal);

#endif /* STORM_NM_BCAST_ABSENT_H */

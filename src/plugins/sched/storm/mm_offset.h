/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_offset.h - the Machine Manager's side of announced switch instants:
 * the nodes' clock offsets and the strobe's lead (storm_clock.h).
 */
#ifndef STORM_MM_OFFSET_H
#define STORM_MM_OFFSET_H

#include <stdint.h>

#include "mm_state.h"

/* What a node last replied to a clock request. */
typedef struct mm_offset_node {
	uint64_t seq_sent, t1_sent;	/* the last request to it */
	uint64_t rep_seq, rep_t4;	/* its last reply, when it came */
	int64_t offset_ns;		/* node - MM, as it estimated */
	uint64_t uncert_ns;		/* 0: no estimate (yet) */
	uint64_t late;			/* strobes after their instant */
	uint64_t late_seen;		/* late, when the lead last looked */
	uint32_t mode;			/* STORM_GANG_AT_* */
	bool replied;
} mm_offset_node_t;

/* After the fabric opened: the nodes' table and the reply callback. */
extern int mm_offset_open(mm_t *mm);
/* Before it closes. */
extern void mm_offset_close(mm_t *mm);
/* Step 1 of a quantum: a clock request to the next node, if one is due,
 * and its reply (waited for a little). */
extern void mm_offset_probe(mm_t *mm, uint64_t now);
/* A strobe's round trip (send to the last acknowledgement): the lead
 * follows it. */
extern void mm_offset_strobe_took(mm_t *mm, uint64_t ns);
/* The instant to announce for a strobe sent at sent_ns (CLOCK_REALTIME),
 * or 0 with SwitchAt=arrival. */
extern uint64_t mm_offset_switch_at(const mm_t *mm, uint64_t sent_ns);
/* The lead announced now (0 before the first strobe). */
extern uint64_t mm_offset_lead_ns(const mm_t *mm);
/* Node i's last reply, or NULL. */
extern const mm_offset_node_t *mm_offset_node(const mm_t *mm, int i);

#endif /* STORM_MM_OFFSET_H */

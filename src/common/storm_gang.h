/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_gang.h - what the Machine Manager (slurmctld) and the node managers
 * exchange for gang scheduling over libstormmech.  No Slurm headers.
 *
 * Two blocks live at fixed offsets of every NM's global region:
 *
 *   table   the job table: for each running job of a time-shared partition
 *           its id, uid and a mask of the slots in which it runs.  Pushed
 *           with XFER-AND-SIGNAL (remote event STORM_GANG_EV_TABLE) only when
 *           it changes; its generation is repeated in every strobe.
 *   strobe  {epoch, slot, table generation, quantum}: multicast every
 *           quantum (remote event STORM_GANG_EV_STROBE), or, with
 *           storm.conf StrobeInterval, once for nquanta quanta: the NM
 *           switches to slot + k (mod nslots) itself at k quanta after the
 *           first boundary.
 *           With at_ns set (storm.conf SwitchAt=announced) the strobe's
 *           own switch is due at at_ns, an instant of the MM's
 *           CLOCK_REALTIME a lead after sending, and switch k at
 *           at_ns + next_in + (k - 1) quanta (storm_clock.h); each NM
 *           converts them with its clock offset.  Without, or while a
 *           node's offset is too uncertain, it switches on arrival and
 *           times the rest from there.
 *   clock   a clock request {seq, t1, the previous reply's t4}: the MM
 *           to one node at a time, at STORM_GANG_CLOCK_OFF; the node
 *           answers into the MM's region at storm_gang_clock_off(rank)
 *           (remote event STORM_GANG_EV_CLOCK) with its t2, t3 and what
 *           it estimated: offset, uncertainty, late switches.
 *
 * An NM applies a strobe, then stores the epoch in variable
 * STORM_GANG_VAR_APPLIED; the MM confirms with
 * COMPARE-AND-WRITE(applied >= epoch) before the next quantum.
 *
 * Why a slot mask rather than one slot per job: the MM also fills holes
 * (Ousterhout's "alternative scheduling"): a job may run in any slot in
 * which none of its nodes is claimed by that slot's own jobs, and a job
 * that shares no node with any other job gets every bit, so it is never
 * frozen (MPL 1 costs nothing).
 *
 * Region use: the last 1 MiB of the default 16 MiB region (the launch path
 * receives files into tmpfs mappings or at low offsets).  Events 40-42 and
 * variable 8 are reserved for gang scheduling.
 */
#ifndef STORM_GANG_H
#define STORM_GANG_H

#include <stdint.h>

#include "src/common/storm_report.h"

#define STORM_GANG_MAGIC	0x34474e47u	/* "GNG4": announced instants */
#define STORM_GANG_STROBE_OFF	((16u << 20) - (1u << 20))
#define STORM_GANG_TABLE_OFF	(STORM_GANG_STROBE_OFF + 4096u)
#define STORM_GANG_MAX_JOBS	16384
#define STORM_GANG_EV_TABLE	40
#define STORM_GANG_EV_STROBE	41
#define STORM_GANG_EV_CLOCK	42	/* on the MM: a clock reply */
#define STORM_GANG_CLOCK_OFF	(STORM_GANG_STROBE_OFF + (512u << 10))
#define STORM_GANG_VAR_APPLIED	8
#define STORM_GANG_ALL_SLOTS	0xffffffffu

typedef struct storm_gang_strobe {
	uint32_t magic;
	uint32_t slot;		/* the slot that runs now */
	uint64_t epoch;		/* 1, 2, ... since the MM started */
	uint64_t table_gen;	/* generation of the table to apply */
	uint64_t quantum_us;	/* Timeslice */
	uint64_t failsafe_us;	/* FailSafe, so every NM uses the MM's */
	uint64_t mm_id;		/* MM instance (start time): a restart is
				 * visible to the NMs */
	uint64_t sent_ns;	/* CLOCK_REALTIME at send, for skew traces */
	uint32_t nquanta;	/* quanta this strobe covers (1: this one) */
	uint32_t nslots;	/* slots the sequence cycles through */
	uint64_t next_in_us;	/* from send to the next quantum boundary */
	uint64_t at_ns;		/* MM CLOCK_REALTIME of this strobe's switch;
				 * 0: switch on arrival */
	uint64_t epoch_check;	/* == epoch when the block is complete */
} storm_gang_strobe_t;

/* The MM's clock request to one node (t1: MM CLOCK_REALTIME at send);
 * prev_t4 is when the MM received the node's reply to request prev_seq. */
typedef struct storm_gang_clock_req {
	uint32_t magic;
	uint32_t rank;
	uint64_t seq;
	uint64_t t1;
	uint64_t prev_seq;
	uint64_t prev_t4;
	uint64_t seq_check;	/* == seq when the block is complete */
} storm_gang_clock_req_t;

/* How a node switches now (the reply's mode). */
enum {
	STORM_GANG_AT_NONE = 0,		/* no strobe with an instant yet */
	STORM_GANG_AT_ANNOUNCED = 1,	/* at the announced instants */
	STORM_GANG_AT_ARRIVAL = 2,	/* on arrival: SwitchAt=arrival */
	STORM_GANG_AT_FALLBACK = 3,	/* on arrival: offset too uncertain */
};

/* A node's reply (t2, t3: its own clock), with its estimate. */
typedef struct storm_gang_clock_rep {
	uint32_t magic;
	uint32_t rank;
	uint64_t seq;		/* the request's */
	uint64_t t1, t2, t3;
	int64_t offset_ns;	/* node - MM, filtered */
	uint64_t uncert_ns;	/* 0: no estimate yet */
	uint64_t late;		/* strobes that came after their instant */
	uint32_t mode;		/* STORM_GANG_AT_* */
	uint32_t pad;
} storm_gang_clock_rep_t;

/* Replies sit in the MM's region after the node and relay reports
 * (storm_report.h), one per rank below STORM_GANG_CLOCK_MAX_RANKS (the
 * nodes above switch on arrival); the MM's region is STORM_GANG_MM_REGION
 * bytes.  A node writes each kind of report at its own offset, so the
 * three blocks must not overlap: a report grown in storm_report.h moves
 * the replies with it, and the asserts below hold the layout to that. */
#define STORM_GANG_CLOCK_MAX_RANKS 1024
#define STORM_GANG_CLOCK_REP_BASE STORM_REPORT_REGION_SIZE
#define STORM_GANG_MM_REGION (STORM_GANG_CLOCK_REP_BASE + \
			      STORM_GANG_CLOCK_MAX_RANKS * \
			      sizeof(storm_gang_clock_rep_t))

_Static_assert(STORM_REPORT_MAX_RANKS * sizeof(storm_node_report_t) <=
	       STORM_RELAY_REPORT_BASE,
	       "node reports overlap the relay reports");
_Static_assert(STORM_RELAY_REPORT_BASE + STORM_REPORT_MAX_RANKS *
	       sizeof(storm_relay_report_t) <= STORM_USAGE_REPORT_BASE,
	       "relay reports overlap the usage reports");
_Static_assert(STORM_USAGE_REPORT_BASE + STORM_REPORT_MAX_RANKS *
	       sizeof(storm_usage_report_t) <= STORM_GANG_CLOCK_REP_BASE,
	       "usage reports overlap the gang clock replies");
_Static_assert(STORM_USAGE_REPORT_BASE % sizeof(uint64_t) == 0 &&
	       sizeof(storm_usage_report_t) % sizeof(uint64_t) == 0,
	       "usage reports misaligned");
_Static_assert(STORM_GANG_CLOCK_REP_BASE % sizeof(uint64_t) == 0,
	       "gang clock replies misaligned");

static inline uint64_t storm_gang_clock_off(int rank)
{
	return STORM_GANG_CLOCK_REP_BASE +
	       (uint64_t) rank * sizeof(storm_gang_clock_rep_t);
}

/* How a node switches a job out of its slot (storm.conf Policy=). */
enum {
	STORM_GANG_SWITCH_FREEZE = 0,	/* gang: frozen outside its slots */
	STORM_GANG_SWITCH_IDLE = 1,	/* flexible: SCHED_IDLE outside them */
	STORM_GANG_SWITCH_HOLD = 2,	/* suspended by Slurm: not switched */
};

typedef struct storm_gang_job {
	uint32_t job_id;
	uint32_t uid;
	uint32_t slot_mask;	/* bit s: runs in slot s */
	uint32_t nslots;	/* slots the job's nodes take part in */
	uint32_t how;		/* STORM_GANG_SWITCH_* */
} storm_gang_job_t;

typedef struct storm_gang_table {
	uint32_t magic;
	uint32_t njobs;
	uint64_t gen;
	uint32_t nslots;
	uint32_t pad;
	storm_gang_job_t jobs[];
} storm_gang_table_t;

#endif /* STORM_GANG_H */

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
 *           first boundary, timed from the strobe's arrival.
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
 * receives files into tmpfs mappings or at low offsets).  Events 40-41 and
 * variable 8 are reserved for gang scheduling.
 */
#ifndef STORM_GANG_H
#define STORM_GANG_H

#include <stdint.h>

#define STORM_GANG_MAGIC	0x33474e47u	/* "GNG3": strobes cover nquanta */
#define STORM_GANG_STROBE_OFF	((16u << 20) - (1u << 20))
#define STORM_GANG_TABLE_OFF	(STORM_GANG_STROBE_OFF + 4096u)
#define STORM_GANG_MAX_JOBS	16384
#define STORM_GANG_EV_TABLE	40
#define STORM_GANG_EV_STROBE	41
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
	uint64_t epoch_check;	/* == epoch when the block is complete */
} storm_gang_strobe_t;

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

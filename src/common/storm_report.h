/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_report.h - what a node manager reports to the Machine Manager
 * besides its acknowledgements: that it is alive (the heartbeat), the
 * messages it refused, by kind, its fail-safe (how often it thawed
 * everything for lack of strobes, and whether it is open now) and how late
 * it switches after a strobe is sent.
 *
 * Each node manager writes one storm_node_report_t with XFER-AND-SIGNAL
 * into the Machine Manager's region at storm_report_off(rank) every
 * storm_conf_beat_us() (nm_heartbeat.c), from a real-time thread of its
 * own, so that its silence means it is dead, stopped or cut off and not
 * merely busy.  The MM takes a new beat as a sign of life (mm_faults.c) and
 * copies the rest into its status file (storm_status.h), where `stormctl
 * show` shows it.  Needs stormmech.h (storm_stats_t, STORM_MAX_RANKS).
 * Counts only grow; a torn report is at worst one beat stale.
 */
#ifndef STORM_REPORT_H
#define STORM_REPORT_H

#include <stdint.h>

#include "src/stormmech/stormmech.h"

#include "storm_hist.h"

enum storm_reject_kind {
	STORM_REJECT_CTL,	/* the node manager's control socket */
	STORM_REJECT_BCAST,	/* BcastPort: malformed, incomplete, refused */
	STORM_REJECT_FABRIC,	/* STORM messages that failed their checks */
	STORM_REJECT_KINDS
};

/* A new layout takes a new magic: the MM ignores a report it would misread
 * (a node manager of another version) instead of showing garbage. */
#define STORM_REPORT_MAGIC 0x53525033u	/* "SRP3" */

typedef struct storm_node_report {
	uint32_t magic;
	uint32_t rank;
	uint64_t rejected[STORM_REJECT_KINDS];
	uint64_t beat;		/* changes with every report: random start,
				 * so a restarted node manager changes it too */
	uint64_t failsafe_events;	/* nm_failsafe_t.nevents */
	uint32_t failsafe_open;		/* 1 while it is open */
	uint32_t has_lag;		/* switch_lag_us is set */
	int64_t switch_lag_us;		/* nm_gang_switch_lag() */
} storm_node_report_t;

/* What of libstormmech's counts is a refusal: messages that failed their
 * checks (a late answer to a finished operation is not one), and
 * connections the provider's handshake refused before any message. */
#define STORM_REPORT_FABRIC_REFUSED(st) \
	((st).rx_bad_header + (st).rx_bad_range + (st).rx_bad_sender + \
	 (st).conn_refused)

/* Reports sit at the start of the MM's region, one per rank. */
#define STORM_REPORT_MAX_RANKS 1024

static inline uint64_t storm_report_off(int rank)
{
	return (uint64_t) rank * sizeof(storm_node_report_t);
}

/*
 * A relay's broadcasts (nm_relay.c): each node manager that relays srun's
 * files writes its latest broadcast (the one in flight, else the last
 * finished), its totals and the histogram of its broadcasts' durations
 * into the MM's region after the node reports,
 * one slot per rank, a few times a second while one is in flight and once
 * when it ends.  Per-node progress is what the relay itself learns from the
 * nodes' broadcast variables (storm_bcast.h steps 2 and 4): which nodes
 * are ready for the data and which hold the file.
 */
#define STORM_RELAY_REPORT_MAGIC 0x53524232u	/* "SRB2" */

enum storm_relay_phase {
	STORM_RELAY_MANIFEST,	/* checking srun's request, sending it on */
	STORM_RELAY_READY,	/* waiting for the nodes to be ready */
	STORM_RELAY_DATA,	/* the file from srun, on to the nodes */
	STORM_RELAY_CONFIRM,	/* waiting for the nodes to hold it */
	STORM_RELAY_GO,		/* the go-ahead */
	STORM_RELAY_DONE,
	STORM_RELAY_FAILED,
	STORM_RELAY_PHASES
};

typedef struct storm_relay_report {
	uint32_t magic;
	uint32_t rank;			/* the relay */
	uint64_t seq;			/* moves with every change */
	uint64_t key;
	uint32_t job_id;
	uint32_t phase;			/* enum storm_relay_phase */
	uint32_t nnodes;		/* the step's nodes but the relay */
	uint32_t pad;
	uint64_t size;			/* the file's bytes */
	uint64_t received;		/* from srun so far */
	int64_t start_us;		/* CLOCK_REALTIME */
	uint64_t elapsed_us;		/* to the report, or to the end */
	uint64_t count, failed, bytes;	/* this relay's totals */
	uint64_t ready[STORM_MAX_RANKS / 64];	/* rank bits: ready */
	uint64_t done[STORM_MAX_RANKS / 64];	/* rank bits: hold the file */
	storm_hist_t dur;		/* the ended ones' durations, against
					 * storm_hist_bcast_le_us() */
} storm_relay_report_t;

/* Relay reports follow the node reports: one slot per rank. */
#define STORM_RELAY_REPORT_BASE \
	(STORM_REPORT_MAX_RANKS * sizeof(storm_node_report_t))

static inline uint64_t storm_relay_report_off(int rank)
{
	return STORM_RELAY_REPORT_BASE +
	       (uint64_t) rank * sizeof(storm_relay_report_t);
}

/*
 * The CPU a node's jobs use (nm_usage.c): each node manager measures the
 * jobs of the gang table that run on it from their cgroups about once a
 * second and writes what each used over that time, in thousandths of a
 * CPU, into the MM's region after the relay reports, one slot per rank.
 * The MM sums a job's figures over its live nodes into the status
 * (storm_status.h, a job's cpu_m).  A node runs at most MaxMPL jobs per
 * CPU; jobs beyond STORM_USAGE_MAX_JOBS go unreported.
 */
#define STORM_USAGE_REPORT_MAGIC 0x53555231u	/* "SUR1" */
#define STORM_USAGE_MAX_JOBS 30

typedef struct storm_usage_job {
	uint32_t job_id;
	uint32_t cpu_m;			/* 1/1000 CPU over the last window */
} storm_usage_job_t;

typedef struct storm_usage_report {
	uint32_t magic;
	uint32_t rank;
	uint64_t seq;			/* moves with every report */
	uint32_t window_ms;		/* what cpu_m was measured over */
	uint32_t njobs;
	storm_usage_job_t jobs[STORM_USAGE_MAX_JOBS];
} storm_usage_report_t;

#define STORM_USAGE_REPORT_BASE \
	(STORM_RELAY_REPORT_BASE + \
	 STORM_REPORT_MAX_RANKS * sizeof(storm_relay_report_t))

static inline uint64_t storm_usage_report_off(int rank)
{
	return STORM_USAGE_REPORT_BASE +
	       (uint64_t) rank * sizeof(storm_usage_report_t);
}

/* Every kind of report for every rank: the start of the MM's region.  The
 * gang clock replies follow (storm_gang.h, STORM_GANG_CLOCK_REP_BASE). */
#define STORM_REPORT_REGION_SIZE \
	(STORM_USAGE_REPORT_BASE + \
	 STORM_REPORT_MAX_RANKS * sizeof(storm_usage_report_t))

static inline const char *storm_relay_phase_str(uint32_t phase)
{
	static const char *const name[] = {
		"manifest", "ready", "data", "confirm", "go", "done", "failed"
	};

	return phase < STORM_RELAY_PHASES ? name[phase] : "?";
}

static inline const char *storm_reject_kind_str(int kind)
{
	static const char *const name[] = { "ctl", "bcast", "fabric" };

	return kind >= 0 && kind < STORM_REJECT_KINDS ? name[kind] : "?";
}

#endif /* STORM_REPORT_H */

/*
 * storm_report.h - what a node manager reports to the Machine Manager
 * besides its acknowledgements: that it is alive (the heartbeat) and the
 * messages it refused, by kind.
 *
 * Each node manager writes one storm_node_report_t with XFER-AND-SIGNAL
 * into the Machine Manager's region at storm_report_off(rank) every
 * storm_conf_beat_us() (nm_heartbeat.c), from a real-time thread of its
 * own, so that its silence means it is dead, stopped or cut off and not
 * merely busy.  The MM takes a new beat as a sign of life (mm_faults.c) and
 * copies the counts into its status file (storm_status.h), where `stormctl
 * show` shows them.  Needs storm_stats_t (stormmech.h) for
 * STORM_REPORT_FABRIC_REFUSED.  Counts only grow; a torn report is at worst
 * one beat stale.
 */
#ifndef STORM_REPORT_H
#define STORM_REPORT_H

#include <stdint.h>

enum storm_reject_kind {
	STORM_REJECT_CTL,	/* the node manager's control socket */
	STORM_REJECT_BCAST,	/* BcastPort: malformed, incomplete, refused */
	STORM_REJECT_FABRIC,	/* STORM messages that failed their checks */
	STORM_REJECT_KINDS
};

#define STORM_REPORT_MAGIC 0x53525031u	/* "SRP1" */

typedef struct storm_node_report {
	uint32_t magic;
	uint32_t rank;
	uint64_t rejected[STORM_REJECT_KINDS];
	uint64_t beat;		/* changes with every report: random start,
				 * so a restarted node manager changes it too */
} storm_node_report_t;

/* What of libstormmech's counts is a refusal: messages that failed their
 * checks (a late answer to a finished operation is not one). */
#define STORM_REPORT_FABRIC_REFUSED(st) \
	((st).rx_bad_header + (st).rx_bad_range + (st).rx_bad_sender)

/* Reports sit at the start of the MM's region, one per rank. */
#define STORM_REPORT_MAX_RANKS 1024

static inline uint64_t storm_report_off(int rank)
{
	return (uint64_t) rank * sizeof(storm_node_report_t);
}

static inline const char *storm_reject_kind_str(int kind)
{
	static const char *const name[] = { "ctl", "bcast", "fabric" };

	return kind >= 0 && kind < STORM_REJECT_KINDS ? name[kind] : "?";
}

#endif /* STORM_REPORT_H */

/*
 * storm_report.h - what a node manager reports to the Machine Manager
 * besides its acknowledgements: the messages it refused, by kind, and its
 * fail-safe (how often it thawed everything for lack of strobes, and
 * whether it is open now).
 *
 * Each node manager writes one storm_node_report_t with XFER-AND-SIGNAL
 * into the Machine Manager's region at storm_report_off(rank), once a
 * second and only when a count or the fail-safe moved; the MM copies them into its status
 * file (storm_status.h), where `stormctl show` shows them.  Needs
 * storm_stats_t (stormmech.h) for STORM_REPORT_FABRIC_REFUSED.  Counts only
 * grow; a reader takes a torn report at worst one second stale.
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

/* A new layout takes a new magic: the MM ignores a report it would misread
 * (a node manager of another version) instead of showing garbage. */
#define STORM_REPORT_MAGIC 0x53525032u	/* "SRP2" */

typedef struct storm_node_report {
	uint32_t magic;
	uint32_t rank;
	uint64_t rejected[STORM_REJECT_KINDS];
	uint64_t failsafe_events;	/* nm_failsafe_t.nevents */
	uint32_t failsafe_open;		/* 1 while it is open */
	uint32_t pad;
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

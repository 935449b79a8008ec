/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_status.h - the Machine Manager's status file, storm-mm.status.
 *
 * The Machine Manager (a thread of slurmctld) rewrites the file once a
 * second in slurmctld's StateSaveLocation; `stormctl show` and monitoring
 * tools read it.  A file rather than an RPC: it needs no new port or
 * protocol in slurmctld, survives the MM's restarts, and its age tells
 * whether the MM is alive.
 *
 * The format, one record a line:
 *
 *   KEY=VALUE                      the header, the keys below, in order
 *   node RANK NAME state=STATE ack_us=N misses=N rejected=CTL,BCAST,FABRIC
 *        [KEY=VALUE ...]          the node keys (storm_status.c's table)
 *   job ID slot=S mask=0xM nodes=RANKS policy=POLICY user=USER name=NAME
 *       cpus=N cpu_m=M            (one line)
 *   bcast RANK NAME key=HEX job=J phase=PHASE size=N received=N nodes=N
 *         start_us=N elapsed_us=N ready=RANKS done=RANKS count=N failed=N
 *         bytes=N dur_hist_us=HIST (one line)
 *
 * STATE is live, unreachable or drained; S is -1 for a job without a slot;
 * bit s of M is set when the job runs in slot s (0xffffffff: in every
 * slot, never switched); RANKS is a list such as "0-3,7"; POLICY is gang,
 * flexible, local or held (suspended by Slurm).  rejected counts the
 * messages the node's manager refused on its control socket, its BcastPort
 * and the fabric (storm_report.h); older files lack it.  The header's
 * rejected_mm counts those the Machine Manager's own endpoint refused.
 * The node keys are the node's clock as it last reported it: its offset
 * to the MM and the uncertainty (us; -1: no estimate yet), the strobes it
 * got after their announced instant (late_switches), and how it switches
 * (switch_at: announced, arrival, fallback, or none before it replied).
 * silent_ms is how long ago the MM last heard from the node (a heartbeat
 * or an acknowledgement), -1 if never.  failsafe_events and failsafe_open
 * are what the node last reported of its fail-safe: how often it thawed
 * everything for lack of strobes, and 1 while it is open (a node that
 * cannot reach the MM cannot say so: the count tells afterwards).
 * switch_lag_us is how late the node switches after a strobe is sent (the
 * median of its last strobes, from the MM's clock to the node's:
 * meaningful with synchronized clocks; negative when the node's clock runs
 * behind; "-" until the node reported one); the spread over the nodes is
 * the switch skew.  The header's switch_at is storm.conf's SwitchAt,
 * lead_us the lead the strobes announce their instants with,
 * suspect_time_us SuspectTime, drains the nodes the MM drained since it
 * started, returns those it returned to service.
 *
 * The header's strobe_hist_us and confirm_hist_us are histograms of what
 * each strobe and each confirmation cost the MM (the moving averages
 * strobe_us and confirm_us summarize the same measurements).  A histogram
 * HIST is one token, "LE:N,...,+Inf:N,sum:S": N strobes took at most LE
 * microseconds (cumulative, as Prometheus' buckets; +Inf is the count),
 * S the sum of their microseconds; the bounds are storm_hist.h's.  Older
 * files lack them.
 *
 * A job's cpus are the CPUs Slurm allocated it; cpu_m the CPU it used,
 * in thousandths of a CPU, summed over the live nodes that reported it
 * (storm_report.h, storm_usage_report_t: each node manager measures its
 * jobs' cgroups over about a second); "-" until a node reported it.
 *
 * USER and NAME are the job's owner and name with every byte outside
 * '!'..'~', and '%', written %XX, so that a name with spaces or markup
 * stays one token; the reader decodes them.  Older files lack user and
 * name.
 *
 * A bcast line is what relay RANK (node NAME) last reported of its
 * broadcasts (storm_report.h, storm_relay_report_t): the latest one, in
 * flight (PHASE manifest, ready, data, confirm, go) or ended (done,
 * failed); its file's size and the bytes srun sent so far; the number of
 * nodes besides the relay, and of those the ranks ready for the data and
 * the ranks that hold the file ("" as "-"); when it started (CLOCK_REALTIME
 * microseconds) and how long it ran; and the relay's totals: broadcasts,
 * failures, bytes delivered, and the histogram of the durations of its
 * broadcasts that ended (done or failed), measured by the relay.
 *
 * Both sides are here so that the writer and every reader agree: the MM
 * formats through storm_status_fprint_*(), readers parse through
 * storm_status_parse()/storm_status_read().  No Slurm headers.
 */
#ifndef STORM_STATUS_H
#define STORM_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "storm_hist.h"

#define STORM_STATUS_FILE "storm-mm.status"
#define STORM_STATUS_VERSION 1
/* A status written longer ago than this: the MM is not running. */
#define STORM_STATUS_STALE_S 5
#define STORM_STATUS_NAMELEN 64
#define STORM_STATUS_STATELEN 32
#define STORM_STATUS_RANKSLEN 4096
#define STORM_STATUS_POLICYLEN 16
#define STORM_STATUS_JOBNAMELEN 256	/* longer names are cut */

/* A histogram as the status has it: cumulative counts; n == 0 when the
 * file lacks it. */
typedef struct storm_status_hist {
	int n;				/* buckets, the last one +Inf */
	uint64_t le_us[STORM_HIST_MAX];	/* the first n - 1 bounds */
	uint64_t cum[STORM_HIST_MAX];	/* at most le_us[i]; cum[n-1]: all */
	uint64_t sum_us;
} storm_status_hist_t;

/* The header, in the file's key order. */
typedef struct storm_status_hdr {
	uint64_t version;
	int64_t written;		/* time(NULL) when written */
	uint64_t mm_id;			/* this MM instance */
	uint64_t epoch;			/* of the last strobe */
	int slot;			/* the slot running now */
	int nslots;
	uint64_t quantum_us;		/* Timeslice */
	uint64_t period_us;		/* measured quantum */
	uint64_t strobe_us;		/* a strobe's cost */
	uint64_t confirm_us;		/* its confirmation's */
	uint64_t late_quanta;
	uint64_t confirm_timeouts;
	uint64_t quanta;
	uint64_t table_gen;
	uint32_t suspect_quanta;
	uint64_t failsafe_us;
	char provider[STORM_STATUS_NAMELEN];
	int nnodes;
	uint32_t quanta_per_strobe;
	uint64_t rejected_mm;		/* fabric messages the MM refused */
	char switch_at[STORM_STATUS_POLICYLEN];	/* SwitchAt */
	uint64_t lead_us;		/* announced instants' lead */
	uint64_t suspect_time_us;
	uint64_t drains;		/* nodes drained since the MM started */
	uint64_t returns;		/* ... and returned to service */
	storm_status_hist_t strobe_hist_us;	/* each strobe's cost */
	storm_status_hist_t confirm_hist_us;	/* each confirmation's */
} storm_status_hdr_t;

typedef struct storm_status_node {
	int rank;
	char name[STORM_STATUS_NAMELEN];
	char state[STORM_STATUS_STATELEN];
	uint64_t ack_us;		/* last one-node round trip */
	uint32_t misses;		/* consecutive missed quanta */
	uint64_t rejected[3];		/* ctl, bcast, fabric (storm_report.h) */
	/* the node keys */
	int64_t clock_offset_us;	/* node - MM */
	int64_t clock_uncert_us;	/* -1: no estimate */
	uint64_t late_switches;
	char switch_at[STORM_STATUS_POLICYLEN];
	int64_t silent_ms;		/* since last heard; -1: never */
	uint64_t failsafe_events;	/* fail-safe thaws, as last reported */
	uint32_t failsafe_open;		/* 1: open at the last report */
	int64_t switch_lag_us;		/* valid when has_lag */
	bool has_lag;			/* switch_lag_us reported */
} storm_status_node_t;

typedef struct storm_status_job {
	uint32_t job_id;
	int slot;
	uint32_t mask;
	char nodes[STORM_STATUS_RANKSLEN];
	char policy[STORM_STATUS_POLICYLEN];	/* "" when absent */
	char user[STORM_STATUS_NAMELEN];	/* decoded; "" when absent */
	char name[STORM_STATUS_JOBNAMELEN];	/* decoded; "" when absent */
	uint32_t cpus;			/* allocated; 0 when absent */
	uint64_t cpu_m;			/* used, 1/1000 CPU; when has_cpu */
	bool has_cpu;			/* some node reported it */
} storm_status_job_t;

typedef struct storm_status_bcast {
	int relay;			/* the relay's rank */
	char name[STORM_STATUS_NAMELEN];
	uint64_t key;
	uint32_t job_id;
	char phase[STORM_STATUS_POLICYLEN];
	uint64_t size, received;
	uint32_t nnodes;
	int64_t start_us;
	uint64_t elapsed_us;
	char ready[STORM_STATUS_RANKSLEN];	/* "" when none */
	char done[STORM_STATUS_RANKSLEN];
	uint64_t count, failed, bytes;
	storm_status_hist_t dur_hist_us;	/* its ended broadcasts */
} storm_status_bcast_t;

typedef struct storm_status {
	storm_status_hdr_t hdr;
	storm_status_node_t *nodes;	/* in file order */
	int nnodes;
	storm_status_job_t *jobs;
	int njobs;
	storm_status_bcast_t *bcasts;
	int nbcasts;
} storm_status_t;

/* "DIR/storm-mm.status" into buf; -ENAMETOOLONG if it does not fit. */
extern int storm_status_path(const char *dir, char *buf, size_t len);

/* A histogram counted per bucket against bounds le[0..nle-1]
 * (storm_hist.h), as the status writes it: cumulative. */
extern void storm_status_hist_set(storm_status_hist_t *out,
				  const storm_hist_t *h, const uint64_t *le,
				  int nle);

/* Writer: the kinds of line; each returns fprintf's result. */
extern int storm_status_fprint_hdr(FILE *fp, const storm_status_hdr_t *h);
extern int storm_status_fprint_node(FILE *fp, const storm_status_node_t *n);
extern int storm_status_fprint_job(FILE *fp, const storm_status_job_t *j);
extern int storm_status_fprint_bcast(FILE *fp, const storm_status_bcast_t *b);

/*
 * Writer: open PATH.tmp for writing (NULL and errno on failure), and
 * commit it: close it and rename it over PATH, so that a reader never sees
 * half a file.  storm_status_commit() closes fp on every path and returns
 * 0 or -errno.
 */
extern FILE *storm_status_begin(const char *path);
extern int storm_status_commit(FILE *fp, const char *path);

/*
 * Reader: parse a status file's text into *st (zeroed first).  Returns 0,
 * -EINVAL when the text is not a status file (no version key), -ENOMEM.
 * Lines that do not parse are skipped.  Free with storm_status_free().
 */
extern int storm_status_parse(const char *text, storm_status_t *st);
/* Read and parse PATH: as above, or -errno when it cannot be read. */
extern int storm_status_read(const char *path, storm_status_t *st);
extern void storm_status_free(storm_status_t *st);

/*
 * The parsed status as one JSON object, for tools that would rather not
 * parse the file (stormctl show --json):
 *   {"header": {KEY: VALUE, ...},        the header keys, in file order
 *    "nodes": [{"rank", "name", "state", "ack_us", "misses",
 *               "rejected": {"ctl", "bcast", "fabric"}, NODE KEY: VALUE,
 *               ...}, ...],         (switch_lag_us null until reported)
 *    "jobs": [{"job_id", "slot", "mask", "nodes", "policy", "user",
 *              "name", "cpus", "cpu_m", "cpu_share"}, ...],
 *    "bcasts": [{"relay", "name", "key", "job_id", "phase", "size",
 *                "received", "nnodes", "start_us", "elapsed_us", "ready",
 *                "done", "count", "failed", "bytes", "dur_hist_us"}, ...]}
 * (key as a hex string: it may not fit a double).  A histogram is
 * {"le": [bounds, us], "buckets": [cumulative counts, one more than the
 * bounds: the last is +Inf], "sum": us}, or null when absent.  cpu_m is
 * null until reported; cpu_share is cpu_m as a percentage of the job's
 * allocated CPUs (null without both).
 * Numbers are JSON numbers (mask too), the rest strings.  Returns 0 or -1
 * on a write error.
 */
extern int storm_status_fprint_json(FILE *fp, const storm_status_t *st);

/* Is node rank k in a ranks list such as "0-3,7"? */
extern bool storm_status_ranks_has(const char *ranks, int k);

#endif /* STORM_STATUS_H */

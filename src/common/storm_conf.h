/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_conf.h - storm.conf, the STORM plugins' configuration file.
 *
 * storm.conf lives beside slurm.conf and uses Slurm's key=value syntax:
 * case-insensitive keys, several pairs per line, '#' comments, and
 * "PartitionName=NAME key=value..." lines for per-partition overrides.
 *
 * The parser has no Slurm dependency so that slurmctld, slurmd, srun, the
 * node manager and stormctl all read the file the same way, and so that it
 * can be unit-tested.  It never logs: on error it fills a message naming the
 * file, line and key, and the caller logs it with its own prefix.
 */
#ifndef STORM_CONF_H
#define STORM_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORM_CONF_FILE "storm.conf"
/* slurmctld keeps the last good storm.conf in StateSaveLocation under this
 * name, for the process that replaces it on reconfigure (compat.h) */
#define STORM_CONF_KEPT "storm.conf.last-good"
#define STORM_CONF_ERRLEN 512
#define STORM_CONF_MAX_PARTS 64
#define STORM_CONF_NAMELEN 64

typedef enum {
	STORM_POLICY_GANG = 0,
	STORM_POLICY_FLEXIBLE,
	STORM_POLICY_LOCAL,
} storm_policy_t;

typedef struct {
	char name[STORM_CONF_NAMELEN];
	storm_policy_t policy;
	uint32_t max_mpl;
} storm_part_conf_t;

typedef struct {
	uint64_t timeslice_us;		/* Timeslice= quantum length */
	uint32_t max_mpl;		/* MaxMPL= time slots per node */
	storm_policy_t policy;		/* Policy= default for partitions */
	char provider[64];		/* Provider= libfabric provider */
	uint16_t port_lo, port_hi;	/* Port=N or N-M: node manager ports */
	uint16_t bcast_port_lo, bcast_port_hi; /* BcastPort= the node
					 * managers' TCP ports for srun's
					 * broadcast hand-off (default Port+100) */
	uint32_t ctl_port;		/* ControllerPort= the Machine Manager's
					 * fabric port on the slurmctld host */
	uint64_t failsafe_us;		/* FailSafe= thaw all without strobe */
	uint64_t handover_us;		/* HandoverTime= quanta the stopping
					 * Machine Manager leaves the nodes to
					 * time (0: it thaws every job) */
	uint64_t strobe_interval_us;	/* StrobeInterval= one strobe covers
					 * this many us of quanta (0: each) */
	bool strobe_interval_auto;	/* StrobeInterval=auto (the default):
					 * the above chosen from Timeslice */
	bool switch_at_arrival;		/* SwitchAt=arrival: nodes switch when
					 * the strobe comes, not at the instant
					 * it announces (SwitchAt=announced) */
	uint32_t suspect_quanta;	/* SuspectQuanta= missed acks to drain */
	uint64_t suspect_time_us;	/* SuspectTime= silent this long: drain
					 * (node managers beat 4 times in it) */
	uint64_t return_after_us;	/* ReturnAfter= a node the MM drained is
					 * resumed once its node manager answered
					 * this long (0: an administrator does) */
	uint64_t timeout_us;		/* Timeout= any fabric wait */
	bool bcast_executable;		/* BcastExecutable= even without --bcast */
	bool bcast_overlap;		/* BcastOverlap= launch while the file
					 * travels; tasks wait for it */
	bool bcast_libraries;		/* BcastLibraries= a broadcast
					 * executable's shared libraries go
					 * with it */
	char bcast_dir[256];		/* BcastDir= node-local tmpfs */
	uint64_t bcast_max_bytes;	/* BcastMaxSize= largest file accepted */
	uint64_t bcast_cache_bytes;	/* BcastCacheSize= what a node keeps of
					 * each user's broadcast files across
					 * jobs (0: no cache) */
	uint64_t bcast_request_us;	/* BcastRequestTimeout= srun's request
					 * (header, credential, node list)
					 * must be in within this of connect */
	uint64_t chunk_bytes;		/* ChunkSize= pipeline chunk */
	uint32_t window;		/* Window= chunks in flight per child */
	uint32_t tree_arity;		/* TreeArity= k of the k-ary tree */
	uint32_t bcast_arity;		/* BcastArity= the tree of blocks of
					 * more than one chunk (1: a chain) */
	uint64_t mem_reserve_mb;	/* MemReserve= kept free per node */
	char nm_path[256];		/* NodeManager= storm-nm binary */
	char nm_log[256];		/* NMLogFile= %n is the node name */
	int nparts;
	storm_part_conf_t parts[STORM_CONF_MAX_PARTS];
} storm_conf_t;

/* The port of the node at index i of slurm.conf's node table under a
 * Port= or BcastPort= pair: low + i for a range, low for a single port. */
static inline int storm_conf_port(uint16_t lo, uint16_t hi, int i)
{
	return hi > lo ? lo + i : lo;
}

/* Fill *conf with the documented defaults (storm.conf(5)). */
extern void storm_conf_defaults(storm_conf_t *conf);

/*
 * Parse the file at path into *conf (defaults first).  A missing file is
 * not an error when missing_ok is set: the defaults apply.
 * Returns 0, or -1 with errbuf naming file, line and key.  On failure *conf
 * is left untouched, so a caller can keep its last good configuration.
 */
extern int storm_conf_load(const char *path, bool missing_ok,
			   storm_conf_t *conf, char *errbuf, size_t errlen);

/* Parse text as if it were the file "name" (used by load and by tests). */
extern int storm_conf_parse(const char *name, const char *text,
			    storm_conf_t *conf, char *errbuf, size_t errlen);

/*
 * The storm.conf path for a given slurm.conf path: $STORM_CONF if set,
 * else storm.conf in slurm.conf's directory.  Returns buf.
 */
extern char *storm_conf_path(const char *slurm_conf_path, char *buf,
			     size_t len);

/* Policy for a partition: its override, else the global one. */
extern storm_policy_t storm_conf_part_policy(const storm_conf_t *conf,
					     const char *partition);

extern const char *storm_policy_str(storm_policy_t policy);

/* MaxMPL for a partition: its override, else the global one. */
extern uint32_t storm_conf_part_max_mpl(const storm_conf_t *conf,
					const char *partition);

/* Quanta one strobe covers: StrobeInterval / Timeslice, at least 1. */
#define STORM_CONF_MAX_QUANTA_PER_STROBE 1000
/* StrobeInterval=auto: a strobe every quantum from this Timeslice up, and
 * below it one strobe per STORM_CONF_AUTO_STROBE_US of quanta (at most
 * half of FailSafe, whole quanta).  Under this Timeslice a strobe every
 * quantum costs the jobs more than the switches themselves, and an
 * interval brings short quanta back near the bare freeze/thaw cost (the
 * gang benchmark, doc/benchmarks.md). */
#define STORM_CONF_AUTO_STROBE_FROM_US 20000ULL
#define STORM_CONF_AUTO_STROBE_US 200000ULL
extern uint32_t storm_conf_quanta_per_strobe(const storm_conf_t *conf);

/*
 * How often a node manager tells the Machine Manager it is alive: four
 * times per SuspectTime, so that three lost or late heartbeats in a row
 * never make a live node a suspect.
 */
#define STORM_CONF_BEATS_PER_SUSPECT 4
static inline uint64_t storm_conf_beat_us(const storm_conf_t *conf)
{
	return conf->suspect_time_us / STORM_CONF_BEATS_PER_SUSPECT;
}

/* Parse "2ms", "500us", "1.5s", "300" (microseconds) into *us. */
extern int storm_parse_duration(const char *s, uint64_t *us);

/* Parse "512K", "12M", "1G", "4096" (bytes) into *bytes. */
extern int storm_parse_size(const char *s, uint64_t *bytes);

/* Write the effective configuration, one key per line, as storm.conf text. */
extern int storm_conf_format(const storm_conf_t *conf, char *buf, size_t len);

#endif /* STORM_CONF_H */

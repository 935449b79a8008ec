/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_handover.h - how srun hands its executable to the STORM broadcast,
 * the same for every Slurm version: whether it does (--bcast, storm.conf
 * BcastExecutable, SLURM_STORM_BCAST), under which name on the nodes, and
 * the transfer itself, waited for or (BcastOverlap) in a thread while the
 * tasks start.  The launch plugin (22.05) and the SPANK plugin (23.02 on)
 * call it with plain values; no Slurm internals here.
 */
#ifndef STORM_BCAST_HANDOVER_H
#define STORM_BCAST_HANDOVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "src/common/storm_conf.h"
#include "bcast_client.h"
#include "bcast_tree.h"

typedef struct storm_handover {
	const char *prefix;	/* the caller's log prefix */
	bool active;		/* the executable goes through STORM */
	bool overlap;		/* BcastOverlap, or SLURM_STORM_BCAST_OVERLAP */
	/* BcastExecutable or SLURM_STORM_BCAST=yes, not --bcast: argv stays
	 * as the user typed it and each node presents its copy at the
	 * original path (STORM_BCAST_ORIG_ENV), so the program behaves as
	 * without STORM */
	bool keep_path;
	char *dest;		/* --bcast=PATH when absolute, else NULL */
	/* the executable's libraries go too (--send-libs, BcastLibraries,
	 * SLURM_STORM_BCAST_LIBS), in Slurm's layout with --bcast */
	bool libs;
	char *exclude;		/* BcastExclude, from slurm.conf */
	char *files;		/* SLURM_STORM_FILES */
	storm_conf_t conf;

	/* one broadcast */
	storm_bcast_req_t req;
	char name[256], dir[4096];
	char *path;		/* the local file */
	char *nodes;		/* the step's node list */
	char *remote;		/* the path on the nodes, once known */
	/* what travels with it (bcast_tree.h), when has_tree */
	bool has_tree;
	bool tree_failed;	/* the error is the bundle's, not the executable's */
	/* the bundle of references (tree.rfd), sent first: when every node
	 * placed it from its cache, the bundle itself is not sent */
	storm_bcast_req_t rreq;
	bool tree_placed;
	/* with a cache and the original path kept, the executable travels in
	 * the bundle (tree.exe): exe_copy is its copy there on the nodes */
	char *exe_copy;
	storm_tree_t tree;
	storm_bcast_req_t treq;
	char tname[256];
	char *tremote;		/* its directory on the nodes */
	char err[4096];
	int rc;
	bool threaded;		/* an overlapped transfer's thread runs */
	pthread_t thread;
	void (*on_failure)(struct storm_handover *h);	/* from the thread */
	void *arg;		/* the caller's, for on_failure */
} storm_handover_t;

/*
 * Decide, from srun's --bcast (bcast_flag, bcast_file), storm.conf (beside
 * slurm_conf_path) and the environment, whether the executable goes
 * through STORM; h->active says so.  compress: --compress was given
 * (STORM's fabric does not compress; said once).  send_libs: srun's
 * --send-libs (or BcastParameters=send_libs); exclude: slurm.conf's
 * BcastExclude.
 */
extern void storm_handover_setup(storm_handover_t *h, const char *prefix,
				 const char *slurm_conf_path, bool bcast_flag,
				 const char *bcast_file, bool compress,
				 bool send_libs, const char *exclude);

/* Check a resolved executable for broadcast; 0, or -1 with err. */
extern int storm_handover_check(const storm_handover_t *h, const char *path,
				char *err, size_t errlen);

/*
 * Whether the resolved executable goes through STORM: 0 yes; -1 with err
 * when it cannot run at all (srun stops, as for --bcast); 1 when
 * keep_path and a copy would not behave as the original (set-ID bits,
 * file capabilities, a file the user may execute but not read, larger
 * than BcastMaxSize): said once on stderr, h->active cleared, and the
 * tasks run the original.
 */
extern int storm_handover_decide(storm_handover_t *h, const char *path,
				 char *err, size_t errlen);

/*
 * The request for the step (job, step) on nodelist of the resolved
 * executable path: the name and directory on the nodes (--bcast=DIR/,
 * --bcast=FILE or the job directory), and the bundle of what travels
 * with it (bcast_tree.h).  0, or -1 (logged: srun stops).
 */
extern int storm_handover_prepare(storm_handover_t *h, const char *path,
				  uint32_t job, uint32_t step,
				  const char *nodelist);

/* The whole transfer (the executable, then its bundle), waited for: 0
 * with h->remote, or -1 (h->err). */
extern int storm_handover_run(storm_handover_t *h);

/*
 * BcastOverlap: draw the transfer's key, set h->remote and wait_val (the
 * value of STORM_BCAST_WAIT_ENV for the tasks) and start the transfer in
 * a thread, which calls on_failure(h) if it fails.  0, or -1 (logged;
 * nothing started).
 */
extern int storm_handover_start(storm_handover_t *h, char *wait_val,
				size_t len);
/* Wait for a started transfer; its result (0 or -1). */
extern int storm_handover_join(storm_handover_t *h);

/*
 * The tasks' environment for what travels with the executable: set(arg,
 * name, value) for each variable (storm_bcast.h: the bundle's directory
 * and paths to present, SLURM_STORM_FILES_DIR, and with Slurm's layout
 * LD_LIBRARY_PATH).  0, or the first non-zero set() result.
 */
extern int storm_handover_env(const storm_handover_t *h,
			      int (*set)(void *arg, const char *name,
					 const char *value),
			      void *arg);

/* srun's message for a failed broadcast of step (a "%ps"-like name). */
extern void storm_handover_say_failure(const storm_handover_t *h,
				       const char *step);

/* Free what prepare and run/start allocated (not dest, exclude, files
 * or conf). */
extern void storm_handover_done(storm_handover_t *h);

#endif

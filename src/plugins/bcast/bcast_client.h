/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_client.h - srun's side of the STORM file broadcast (the launch
 * plugin up to 22.05, the SPANK plugin from 23.02 on).
 * No Slurm internals here: the caller passes plain values.
 */
#ifndef STORM_BCAST_CLIENT_H
#define STORM_BCAST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "src/common/storm_conf.h"

typedef struct storm_bcast_req {
	const storm_conf_t *conf;
	const char *path;	/* resolved local file */
	const char *dest_dir;	/* absolute dir, or NULL: the job directory */
	const char *dest_name;	/* file name on the nodes (storm_bcast_name_ok) */
	uint32_t job, step;
	const char *nodelist;	/* the step's nodes, Slurm hostlist form */
	bool tree;		/* path is a bundle, extracted on the nodes
				 * into a directory named dest_name */
	uint64_t key;		/* the transfer's key; 0: storm_bcast_run
				 * draws one */
	/* a bundle of references the nodes lacked some of: the relay's
	 * bitmap of them (bit i: the i-th reference), malloc'ed; NULL: not
	 * asked for, or not known (send every file) */
	uint8_t **absent;
	size_t *absent_len;
} storm_bcast_req_t;

/* A fresh random transfer key (48 bits, never 0). */
extern uint64_t storm_bcast_new_key(void);

/* The path the file gets on the nodes (malloc'ed), or NULL. */
extern char *storm_bcast_remote(const storm_bcast_req_t *req);

/* How long srun waits for the relay's answer about a file of size bytes,
 * in ms: four times Timeout (the relay's own waits) plus the time the data
 * takes at a pessimistic 10 MB/s.  Tasks that wait for the file on their
 * node (BcastOverlap) wait as long. */
extern uint64_t storm_bcast_wait_ms(const storm_conf_t *conf, uint64_t size);

/*
 * Broadcast one file to the node managers of nodelist and confirm that
 * every node holds it.  On success *remote (malloc'ed) is the path on the
 * nodes.  On failure err names the node(s) and the reason; no node keeps
 * a partial file.  Returns 0 or -1, or 1 for a bundle of references
 * (storm_bundle_refs()) that some node could not place from its cache,
 * when nothing else failed: send the files then.
 */
extern int storm_bcast_run(const storm_bcast_req_t *req, char **remote,
			   char *err, size_t errlen);

/* stat() path into *st, which must be a regular file; 0, or -1 with err
 * filled like srun's own messages. */
extern int storm_bcast_stat_regular(const char *path, struct stat *st,
				    char *err, size_t errlen);

/* Check a local file for broadcast (regular, readable, size limit).
 * Returns 0 or -1 with err filled like srun's own messages. */
extern int storm_bcast_check_file(const char *path, uint64_t max_bytes,
				  char *err, size_t errlen);

#endif

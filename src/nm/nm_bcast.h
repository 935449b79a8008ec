/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast.h - the node manager's end of the STORM file broadcast
 * (nm_bcast.c), as the relay (nm_relay.c) sees it: the node's own copy of
 * a broadcast file, through the same checks, temporary file and commit as
 * a copy that arrives over the fabric.
 */
#ifndef STORM_NM_BCAST_H
#define STORM_NM_BCAST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The relay also gives the go-ahead to the tasks waiting on its node
 * (nm_bcast_go). */
#include "nm_bcast_wait.h"

/* A transfer of the table (nm_bcast_xfer.c), seen from the relay. */
typedef struct nm_bcast_xfer nm_bcast_file_t;

/*
 * Check srun's manifest credential (munge: uid, job owner, this node in
 * the job, sizes) and prepare the hidden temporary file.  Returns
 * STORM_BCAST_READY with *out set, or the refusal state
 * (storm_bcast.h) with *out NULL.
 */
extern int nm_bcast_accept(const char *cred, uint64_t key,
			   nm_bcast_file_t **out);
/* Where the data goes: the mapping of the temporary file. */
extern void *nm_bcast_file_map(nm_bcast_file_t *f, uint64_t *size);
/* The relay's job attestation to send after srun's credential (see
 * nm_bcast_auth.c), or NULL: the other nodes then ask slurmctld. */
extern const char *nm_bcast_file_attest(nm_bcast_file_t *f);
/* The uid the credential vouches for (the broadcast's user). */
extern uid_t nm_bcast_file_uid(nm_bcast_file_t *f);
/* The job the file is for. */
extern uint32_t nm_bcast_file_job(nm_bcast_file_t *f);
/* Does the data match the credential's checksum (computed once)? */
extern bool nm_bcast_file_verify(nm_bcast_file_t *f);
/* Rename into place (commit) or unlink; frees f.  Returns
 * STORM_BCAST_DONE or why not. */
extern int nm_bcast_finish(nm_bcast_file_t *f, bool commit);

#endif /* STORM_NM_BCAST_H */

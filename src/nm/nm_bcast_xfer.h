/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_xfer.h - the transfer table: a broadcast file on its way to
 * this node, from its checked manifest through its temporary file to its
 * commit or removal (nm_bcast_xfer.c).
 */
#ifndef STORM_NM_BCAST_XFER_H
#define STORM_NM_BCAST_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "nm.h"

typedef struct nm_bcast_xfer nm_bcast_xfer_t;

typedef enum {
	NM_XFER_FREE = 0,
	NM_XFER_PREPARING,	/* manifest being checked */
	NM_XFER_READY,		/* file prepared, data to come over the fabric */
	NM_XFER_RECEIVING,	/* data being written (fabric or the relay) */
	NM_XFER_FINISHING,	/* being committed or removed */
} nm_bcast_xstate_t;

/* Room for the transfers in flight on one node. */
#define NM_BCAST_MAX_XFERS 64

/* nm gives BcastDir and Timeout (for the logs and the expiry). */
extern void nm_bcast_xfer_init(const nm_t *nm);
/* Close every transfer, removing its temporary file (the NM stops). */
extern void nm_bcast_xfer_fini(void);

/*
 * Check a manifest (srun's munge credential, and the relay's attestation
 * when attest is not NULL) for the transfer (root, key) and prepare this
 * node's temporary file.  Returns STORM_BCAST_READY with *out in state
 * ready_state (NM_XFER_READY: the data comes over the fabric;
 * NM_XFER_RECEIVING: the relay writes it itself, and *out carries its job
 * attestation), or the refusal state (storm_bcast.h) with *out NULL.
 */
extern int nm_bcast_xfer_accept(const char *cred, const char *attest,
				int root, uint64_t key,
				nm_bcast_xstate_t ready_state,
				nm_bcast_xfer_t **out);

/* Commit (checksum, then rename into place) or abort (unlink) a
 * transfer; frees its slot.  Returns STORM_BCAST_DONE or why not. */
extern int nm_bcast_xfer_finish(nm_bcast_xfer_t *x, bool commit);

/* Where the data goes (the mapping of the temporary file), its size, its
 * key, the relay's attestation (or NULL); does the data match the
 * manifest's checksum (computed once)? */
extern void *nm_bcast_xfer_map(nm_bcast_xfer_t *x, uint64_t *size);
extern uint64_t nm_bcast_xfer_key(const nm_bcast_xfer_t *x);
extern const char *nm_bcast_xfer_attest(const nm_bcast_xfer_t *x);
/* The uid the credential vouches for (the broadcast's user). */
extern uid_t nm_bcast_xfer_uid(const nm_bcast_xfer_t *x);
extern bool nm_bcast_xfer_verify(nm_bcast_xfer_t *x);

/*
 * For the fabric's callbacks, which must not block: the transfer (root,
 * key) in use, or NULL; the destination of len bytes of data for a READY
 * transfer of that size (now RECEIVING), or NULL; the RECEIVING transfer
 * whose data was written at dst (now FINISHING: *root and *key say which),
 * or false.
 */
extern nm_bcast_xfer_t *nm_bcast_xfer_find(int root, uint64_t key);
extern void *nm_bcast_xfer_receive(int root, uint64_t key, uint64_t len);
extern bool nm_bcast_xfer_received(const void *dst, int *root,
				   uint64_t *key);

/* Remove prepared transfers whose data never came (twice Timeout). */
extern void nm_bcast_xfer_expire(void);
extern uint32_t nm_bcast_xfer_job(const nm_bcast_xfer_t *x);
/* Is a transfer of this job in flight? */
extern bool nm_bcast_xfer_busy(uint32_t job);
/* How many transfers are in flight. */
extern int nm_bcast_xfer_count(void);

#endif /* STORM_NM_BCAST_XFER_H */

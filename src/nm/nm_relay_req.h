/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_req.h - srun's broadcast request (storm_bcast.h: header,
 * credential, node list), read incrementally off a connection that has
 * not proved anything yet.
 *
 * The reader asks for at most what the request still lacks, so no byte
 * of the file that follows is ever consumed, and it holds only the bytes
 * the peer has actually sent: a header that announces a 64 KiB node list
 * costs nothing until the list arrives.
 */
#ifndef NM_RELAY_REQ_H
#define NM_RELAY_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "src/common/storm_bcast.h"

typedef struct nm_relay_req {
	storm_relay_req_t hdr;	/* host byte order once the header is in */
	uint64_t key;		/* hdr.key masked to the transfer key */
	size_t have;		/* request bytes received so far */
	char *body;		/* credential, NUL, node list, NUL */
	size_t body_cap;	/* bytes allocated for body */
} nm_relay_req_t;

enum nm_relay_req_rc {
	NM_RELAY_REQ_MORE = 0,	/* incomplete: read nm_relay_req_want() more */
	NM_RELAY_REQ_DONE = 1,	/* complete: cred and nodes are set */
};

/* Bytes the request still lacks, at most `max` (0 when complete). */
extern size_t nm_relay_req_want(const nm_relay_req_t *r, size_t max);

/* Take n bytes (n <= nm_relay_req_want(r, n)): NM_RELAY_REQ_MORE,
 * NM_RELAY_REQ_DONE, or -EBADMSG (not a STORM request, sizes out of range,
 * a NUL inside the credential or node list) or -ENOMEM, with err set. */
extern int nm_relay_req_feed(nm_relay_req_t *r, const void *buf, size_t n,
			     char *err, size_t errlen);

/* The credential and node list of a complete request. */
extern const char *nm_relay_req_cred(const nm_relay_req_t *r);
extern const char *nm_relay_req_nodes(const nm_relay_req_t *r);

/* Memory held for the request (bounded by what the peer sent). */
extern size_t nm_relay_req_bytes(const nm_relay_req_t *r);

extern void nm_relay_req_free(nm_relay_req_t *r);

#endif

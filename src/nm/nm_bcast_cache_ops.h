/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache_ops.h - a bundle extracted through the broadcast cache
 * (nm_bcast_cache_ops.c): storm_bundle_extract_ex()'s ops for one user,
 * references placed from their store, files received put in it.
 *
 *	nm_bcast_cache_use_t use = { .uid = x->uid };
 *	rc = storm_bundle_extract_ex(buf, len, fd, &nm_bcast_cache_ops, &use,
 *				     err, sizeof(err));
 *
 * A reference the store cannot place in that directory (not held, an
 * entry that failed its checks, no cache, another file system, a full
 * link count) is absent: the sender sends the bytes.  A file received is
 * written once, into the store, and the job's file is a link to it
 * (nm_bcast_cache_keep()).  A file that cannot be kept (too large for the
 * bound, the store's disk full, another file system) is still extracted,
 * as the user's own: the cache only saves transfers, it never fails one.
 */
#ifndef STORM_NM_BCAST_CACHE_OPS_H
#define STORM_NM_BCAST_CACHE_OPS_H

#include <stdint.h>
#include <sys/types.h>

#include "src/common/storm_bundle.h"

typedef struct nm_bcast_cache_use {
	uid_t uid;			/* whose store */
	/* each absent reference, for the caller's reply (may be NULL);
	 * ordinal: its place among the bundle's references, from 0 */
	void (*absent)(void *arg, uint64_t ordinal,
		       const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
		       unsigned mode);
	void *arg;
	/* what happened, for the log; refs: references seen */
	uint64_t refs, placed, placed_bytes, missing, kept, kept_bytes,
		 not_kept;
} nm_bcast_cache_use_t;

/* arg: an nm_bcast_cache_use_t */
extern const storm_bundle_ops_t nm_bcast_cache_ops;

#endif /* STORM_NM_BCAST_CACHE_OPS_H */

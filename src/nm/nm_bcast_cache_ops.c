/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache_ops.c - storm_bundle_extract_ex()'s ops over the
 * broadcast cache (nm_bcast_cache_ops.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nm_bcast_cache.h"
#include "nm_bcast_cache_ops.h"
#include "nm_log.h"

static int ref(void *arg, int parentfd, const char *leaf,
	       const uint8_t sha[STORM_BUNDLE_SHA256], uint64_t size,
	       unsigned mode, char *err, size_t errlen)
{
	nm_bcast_cache_use_t *use = arg;
	uint64_t ordinal = use->refs++;
	int rc = nm_bcast_cache_place(use->uid, sha, size, mode, parentfd,
				      leaf);

	switch (rc) {
	case 0:
		use->placed++;
		use->placed_bytes += size;
		return 0;
	case -ENOENT:
	case -EOPNOTSUPP:
	case -EXDEV:
	case -EMLINK:
		use->missing++;
		if (use->absent)
			use->absent(use->arg, ordinal, sha, size, mode);
		return STORM_BUNDLE_ABSENT;
	default:
		snprintf(err, errlen, "from the cache: %s", strerror(-rc));
		return -1;
	}
}

/* Kept as it is written: the job's file and the store's are one inode. */
static int file(void *arg, int parentfd, const char *leaf, const void *data,
		uint64_t size, unsigned mode)
{
	nm_bcast_cache_use_t *use = arg;
	int rc = nm_bcast_cache_keep(use->uid, data, size, mode, parentfd,
				     leaf);

	if (!rc) {
		use->kept++;
		use->kept_bytes += size;
		return 0;
	}
	use->not_kept++;
	if (rc != -EOPNOTSUPP && rc != -EFBIG)
		nm_verbose("bcast cache: uid %u: %s not kept: %s",
			   (unsigned) use->uid, leaf, strerror(-rc));
	return 1;	/* written as usual */
}

const storm_bundle_ops_t nm_bcast_cache_ops = {
	.ref = ref,
	.file = file,
};

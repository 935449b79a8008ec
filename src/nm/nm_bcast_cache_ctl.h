/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache_ctl.h - the broadcast cache on the control socket
 * (nm_bcast_cache_ctl.c), for stormctl cache:
 *
 *   cache_list [UID|all]    "ok entries=N bytes=B limit=L shown=M" then
 *                           M lines "<uid> <sha256> <size> <mode> <last
 *                           use, epoch seconds>" (as many as one reply
 *                           holds)
 *   cache_purge [UID|all]   "ok purged=N"
 *
 * Without an argument: the caller's own entries, root's call: everyone's.
 * Only root (by SO_PEERCRED) may name another user or all.
 */
#ifndef STORM_NM_BCAST_CACHE_CTL_H
#define STORM_NM_BCAST_CACHE_CTL_H

#include <stddef.h>

#include "nm.h"

extern void nm_bcast_cache_ctl_register(void);

/* The handlers, for tests. */
extern int nm_bcast_cache_ctl_list(nm_t *nm, const nm_peer_t *peer,
				   char *args, char *out, size_t outlen);
extern int nm_bcast_cache_ctl_purge(nm_t *nm, const nm_peer_t *peer,
				    char *args, char *out, size_t outlen);

#endif /* STORM_NM_BCAST_CACHE_CTL_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache.h - what this node received, kept across jobs: a
 * content-addressed store per user under BcastDir/.cache/<uid>/
 * (nm_bcast_cache.c), so that a launch of bits a node already holds
 * costs a check, not a transfer.
 *
 * Layout.  BcastDir/.cache and BcastDir/.cache/<uid> are root's, 0700.
 * An entry is a regular file owned by root and named by the lowercase hex
 * SHA-256 of its bytes: "<hex>" with mode 0444, or "<hex>.x" with mode
 * 0555 for a file that had any execute bit.  The same bytes wanted both
 * ways are two entries: one inode cannot be executable for one job and
 * not for another.  A job is given an entry as a hard link in its own
 * directory; root's, read-only, it cannot be changed through that link
 * (nor chmod-ed, nor written), and the user's other links to it are no
 * threat for the same reason.  Its data outlives an eviction for as long
 * as a job links to it.
 *
 * Trust.  The name is the hash of what the node itself wrote: keep writes
 * the received bytes into a file in the user's store (reachable by root
 * only), root's and read-only before the job's link to it exists, and the
 * store hashes that file, not the bytes it was given, so nothing the user
 * can change becomes an entry's content after it was hashed.  Before reuse
 * an entry is NOT hashed again: SHA-256 runs at about a gigabyte per
 * second on a core, even with the CPU's SHA instructions, so re-hashing a
 * container image of a few hundred megabytes would cost each relaunch more
 * than the whole launch is meant to.  Reuse relies instead on what only
 * root can do: an entry is used only if it is a regular file in the 0700
 * root-owned directory, owned by root, with exactly the mode the store
 * gives and exactly the size asked for; anything else is removed and
 * reported absent, so the caller sends the bytes again.  The link count is
 * no trust signal (see above): it is only bounded by the file system, and
 * a full one fails the place.
 *
 * Bound.  Each user's entries are bounded by a byte limit (storm.conf
 * BcastCacheSize); an entry's mtime is its last use, set when its bytes
 * are kept and on each place.  When a new entry takes the store past the
 * limit, the least recently used entries go, never the new one, until the
 * store is an eighth under the limit: the sweep reads the whole directory,
 * and the slack keeps a full store from sweeping on every new entry.  An
 * entry used in the last hold seconds does not go: a launch asks the nodes
 * what they hold, then sends only what they lack, and what they said they
 * held must still be there when the rest arrives.  When only such entries
 * keep the store over its limit, the new entry is not kept instead (the
 * job still gets its file).  A file larger than the limit is not kept.
 *
 * All calls are thread-safe (the transfer threads and the control socket
 * call them) and take root's file-system identity for their work, giving
 * the caller's back on return: an extraction runs as the user.
 */
#ifndef STORM_NM_BCAST_CACHE_H
#define STORM_NM_BCAST_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "src/common/storm_sha256.h"

#define NM_BCAST_CACHE_DIR ".cache"
/* every user, for list and purge */
#define NM_BCAST_CACHE_ALL ((uid_t) -1)
/* how long a use protects an entry from eviction: past the longest gap
 * between a launch's references and its data that a node should bridge */
#define NM_BCAST_CACHE_HOLD_S 600

/*
 * Open the store under bcast_dir, each user bounded to per_user_bytes
 * (0: no cache; every call below then returns -EOPNOTSUPP), an entry used
 * in the last hold_s seconds never evicted (0: any may go).  Creates
 * BcastDir/.cache (root's, 0700) and refuses one that is not a directory
 * owned by root.  May be called again (the previous store is closed).
 * Returns 0 or -errno (logged).
 */
extern int nm_bcast_cache_init(const char *bcast_dir, uint64_t per_user_bytes,
			       unsigned hold_s);
extern void nm_bcast_cache_fini(void);
extern bool nm_bcast_cache_enabled(void);

/*
 * A received file kept as it is extracted: write the size bytes at data
 * into a new file of uid's store (as root, read-only, mode 0444 or 0555
 * by the execute bits of mode) and hard-link it at leaf in the directory
 * parentfd, so the job's file and the kept one are one inode and one copy
 * in RAM.  Its SHA-256 is computed afterwards by the store's own thread,
 * off the launch's path, from that file, which nobody can change; until
 * then no launch is offered it.  Content already held becomes no second
 * entry: the held one is marked used.  Evicts as described above; an
 * entry not kept for want of room is no error, the job has its file.
 * Returns 0; -EFBIG (larger than the limit), -EOPNOTSUPP (no cache) or
 * -errno, with nothing at leaf: the caller writes the file itself.
 */
extern int nm_bcast_cache_keep(uid_t uid, const void *data, uint64_t size,
			       unsigned mode, int parentfd, const char *leaf);

/* Wait until every kept file is named (or dropped): for tests. */
extern void nm_bcast_cache_settle(void);

/*
 * Hard-link uid's entry of this content, size and execute class (any x
 * bit in mode) at leaf in the directory parentfd, marking it used.
 * Returns 0; -ENOENT when the store does not hold it (an entry that fails
 * the checks above is removed and counts as not held); -EOPNOTSUPP (no
 * cache); or -errno of the link (EEXIST, EXDEV: parentfd on another file
 * system, EMLINK).
 */
extern int nm_bcast_cache_place(uid_t uid, const uint8_t sha[STORM_SHA256_LEN],
				uint64_t size, unsigned mode, int parentfd,
				const char *leaf);

/*
 * One line per entry of uid (or NM_BCAST_CACHE_ALL), in directory order:
 * "<uid> <sha256 hex> <size> <mode, octal> <last use, seconds since the
 * epoch>".  Returns the number of lines or -errno.
 */
extern int nm_bcast_cache_list(uid_t uid, FILE *out);

/* Remove all of uid's entries (or everyone's) and the user's directory;
 * links jobs hold stay.  Returns the number of entries removed or
 * -errno. */
extern int nm_bcast_cache_purge(uid_t uid);

/* The bytes uid's store holds by the store's count (for tests and
 * logs); 0 for a user without one. */
extern uint64_t nm_bcast_cache_bytes(uid_t uid);

#endif /* STORM_NM_BCAST_CACHE_H */

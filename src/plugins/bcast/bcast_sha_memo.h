/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_sha_memo.h - the SHA-256 of the files a user's launches send,
 * remembered across sruns (bcast_sha_memo.c), so that a relaunch of a
 * container image or a Python environment costs a stat per file, not a
 * read of every byte: the references srun sends first to the nodes'
 * caches (bcast_tree.c) name files by their SHA-256, and hashing a few
 * hundred megabytes takes longer than the whole launch is meant to.
 *
 * The memo is a text file of the user's own ($XDG_CACHE_HOME/storm/sha256,
 * else ~/.cache/storm/sha256), one line per file version:
 *   "<dev> <ino> <size> <mtime s.ns> <ctime s.ns> <sha256 hex>\n"
 * A file is known by its device, inode, size, modification and change
 * times: a write changes the times, and the change time cannot be set
 * back by its owner.  A file whose times are within STORM_SHA_MEMO_RACY_S
 * seconds of now is hashed and not remembered: the kernel's clock for file
 * times ticks in milliseconds, and a second write within the same tick,
 * of the same size, would leave every key as it was.
 *
 * Lines are appended (O_APPEND, one write each), so concurrent sruns of a
 * job array do not lose each other's; a memo past STORM_SHA_MEMO_MAX
 * lines is rewritten with its newest distinct ones.  A memo that cannot be
 * read or written only costs hashing: no error reaches the launch.  It
 * holds nothing a user could use against anyone but themselves: the nodes
 * keep a cache per user, so a wrong line only gives the user their own
 * older bytes, as a file they modified in place would.
 */
#ifndef STORM_BCAST_SHA_MEMO_H
#define STORM_BCAST_SHA_MEMO_H

#include <stdint.h>
#include <sys/stat.h>

#include "src/common/storm_sha256.h"

#define STORM_SHA_MEMO_RACY_S 2
#define STORM_SHA_MEMO_MAX 200000

typedef struct storm_sha_memo storm_sha_memo_t;

/* The memo at path (NULL: the default above), read whole; never NULL
 * unless out of memory (a missing or unreadable file is an empty memo). */
extern storm_sha_memo_t *storm_sha_memo_open(const char *path);

/*
 * The SHA-256 of the regular file open at fd, whose fstat is st: from the
 * memo when it holds this version, else read from fd (from offset 0, with
 * pread) and remembered unless racy.  Returns 0, or -1 with errno (a
 * read error, or EAGAIN when the file's size changed while it was read).
 */
extern int storm_sha_memo_file(storm_sha_memo_t *m, int fd,
			       const struct stat *st,
			       uint8_t sha[STORM_SHA256_LEN]);

/* Hashes taken from the memo and read from files, for srun's log. */
extern void storm_sha_memo_counts(const storm_sha_memo_t *m, uint64_t *hits,
				  uint64_t *hashed, uint64_t *hashed_bytes);

/* Append what was learnt (compacting a memo past its bound) and free. */
extern void storm_sha_memo_close(storm_sha_memo_t *m);

#endif /* STORM_BCAST_SHA_MEMO_H */

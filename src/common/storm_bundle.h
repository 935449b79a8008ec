/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_bundle.h - many files as one: the shared libraries, named files and
 * directory trees (a Python venv, say) a job needs, packed into one stream
 * that travels as ONE broadcast and that each node manager unpacks into a
 * fresh directory inside the job's node-local directory.  One broadcast
 * instead of one per file: a broadcast costs a tree set-up and a
 * completion round however small its payload, and a venv has thousands of
 * small files.
 *
 * The format is sequential so that the writer streams file data straight
 * from the sources (nothing is held in memory) and the extractor walks the
 * buffer once, front to back, never seeking.  All integers little endian:
 *
 *   "STORMBD1"                        8 bytes, the magic
 *   u64 count                         entries that follow
 *   count times:
 *     u8  type                        'd' directory, 'f' file, 'l' symlink,
 *                                     'c' cached file (a reference)
 *     u8  pad[3]                      zero
 *     u32 mode                        permission bits (extracted & 0777)
 *     u32 name_len                    1 .. STORM_BUNDLE_MAX_NAME
 *     u32 link_len                    'l': 1 .. STORM_BUNDLE_MAX_NAME, else 0
 *     u64 size                        'f': data bytes; 'c': the file's
 *                                     size (no data follows); else 0
 *     name bytes                      relative, no NUL
 *     link target bytes ('l'), data bytes ('f') or the file's SHA-256
 *     (32 bytes, 'c')
 *
 * A 'c' entry names a file by its content instead of carrying it: the
 * node that extracts the bundle places it from a cache of what it
 * received before (storm_bundle_extract_ex()), or says it does not have
 * it.  A bundle of references is what a launch sends first to learn what
 * every node already holds.
 *
 * Nothing follows the last entry.  A name is "a/b/c": no leading '/', no
 * empty, "." or ".." component, no NUL or newline; every parent directory
 * of a name is a 'd' entry earlier in the stream.  The writer puts a
 * directory before what is in it and sorts a tree's entries by name, so
 * the same files always make the same bytes.
 *
 * No Slurm dependency: srun writes bundles, the node manager extracts them.
 */
#ifndef STORM_BUNDLE_H
#define STORM_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORM_BUNDLE_MAGIC "STORMBD1"
#define STORM_BUNDLE_HDR 16		/* magic and count */
#define STORM_BUNDLE_ENTRY_HDR 24	/* an entry's fixed part */
#define STORM_BUNDLE_MAX_ENTRIES 1000000
#define STORM_BUNDLE_MAX_NAME 4096	/* a name's or link target's bytes */
#define STORM_BUNDLE_SHA256 32		/* a 'c' entry's content hash */

typedef struct storm_bundle storm_bundle_t;

/* An empty bundle; NULL on ENOMEM. */
extern storm_bundle_t *storm_bundle_new(void);

/*
 * Add what is at src (an absolute or relative local path) under the
 * relative bundle name `name`, with lstat semantics: a directory with its
 * whole tree (entries sorted by name), a symlink inside a tree as a
 * symlink (its target text as is), a regular file as a file with its
 * permission bits.  follow: src itself, if a symlink, is stored as what it
 * points to (a shared library named by a symlink path).  Missing parent
 * directories of `name` are added (mode 0755).  A name already in the
 * bundle is skipped silently when it is the same kind (the first one
 * stays; a directory keeps its mode and what is in both trees is merged),
 * an error otherwise.  Sockets, fifos and devices inside a tree are
 * skipped and counted (storm_bundle_skipped()); named as src, an error.
 * Hard links inside a tree travel as separate files.
 *
 * Returns 0, or -1 with err naming the path and the errno text; a failed
 * add leaves the bundle as it was.
 */
extern int storm_bundle_add(storm_bundle_t *b, const char *src,
			    const char *name, bool follow, char *err,
			    size_t errlen);

/*
 * Add a reference to a file by its content: the entry `name` of a file of
 * `size` bytes and permission bits `mode` whose SHA-256 is `sha256`; no
 * source is read, now or when written.  Missing parents are added as for
 * storm_bundle_add(); a file of that name already in the bundle (sent or
 * referenced) stays and this one is skipped; another kind of entry of that
 * name is an error.  Returns 0, or -1 with err; a failed add leaves the
 * bundle as it was.
 */
extern int storm_bundle_add_ref(storm_bundle_t *b, const char *name,
				unsigned mode, uint64_t size,
				const uint8_t sha256[STORM_BUNDLE_SHA256],
				char *err, size_t errlen);

/*
 * How storm_bundle_refs() learns a file's content: the SHA-256 of the
 * size bytes at src (follow: src may be a symlink to them) into sha256.
 * Returns 0 for a reference, 1 to keep the file as data (a file the nodes
 * lack), or -1 with err.
 */
typedef int (*storm_bundle_hash_f)(void *arg, const char *src, bool follow,
				   uint64_t size,
				   uint8_t sha256[STORM_BUNDLE_SHA256],
				   char *err, size_t errlen);

/*
 * A copy of b in which each file is a reference or data as hash() says,
 * directories, symlinks and references as they are, in the same order:
 * the bundle a launch sends first to learn what the nodes hold (every
 * file a reference), then with the files some node lacked as data.
 * NULL with err on failure.
 */
extern storm_bundle_t *storm_bundle_refs(const storm_bundle_t *b,
					 storm_bundle_hash_f hash, void *arg,
					 char *err, size_t errlen);

/* The exact byte size storm_bundle_write() will produce. */
extern uint64_t storm_bundle_size(const storm_bundle_t *b);
extern uint64_t storm_bundle_entries(const storm_bundle_t *b);
extern uint64_t storm_bundle_skipped(const storm_bundle_t *b);

/*
 * Write the stream to fd (a regular file the caller then maps), from its
 * current offset.  File data is read from the sources now; a file whose
 * size changed since it was added is an error ("changed while being
 * sent").  Returns 0, or -1 with err.
 */
extern int storm_bundle_write(storm_bundle_t *b, int fd, char *err,
			      size_t errlen);

extern void storm_bundle_free(storm_bundle_t *b);

/*
 * Extract a bundle held in memory into the directory dirfd, which the
 * caller created empty.  The input is untrusted (a user crafts it, the
 * node manager runs this): the whole stream is checked before anything is
 * created (every length against len, every name, every parent earlier in
 * the stream, the entry count and name lengths capped), then nothing is
 * ever followed (parents opened O_DIRECTORY|O_NOFOLLOW from dirfd, files
 * created O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat, symlinkat).  Modes come out
 * exactly as the bundle says, masked to 0777 (no set-ID, no sticky bit)
 * whatever the umask; directories get theirs last, so a read-only
 * directory can still be filled.  Returns 0, or -1 with err naming the
 * entry; on failure what was created stays for the caller to remove.  A
 * 'c' entry is refused (before anything is created): there is no cache
 * to resolve it.
 */
extern int storm_bundle_extract(const void *buf, size_t len, int dirfd,
				char *err, size_t errlen);

/* ref()'s answer for a file the cache does not hold. */
#define STORM_BUNDLE_ABSENT (-2)

/*
 * What the extractor asks of its caller.  ref: place the file of this
 * content, size and mode at leaf in the directory parentfd (the leaf does
 * not exist yet); 0 when placed, STORM_BUNDLE_ABSENT when not held, -1
 * with err on any other failure.  NULL: 'c' entries are refused as by
 * storm_bundle_extract().  file (may be NULL): put a file entry's size
 * bytes, data, at leaf in the directory parentfd (the leaf does not exist
 * yet) its own way, mode the bundle's; 0 when done, 1 to have the
 * extractor write it as usual, -1 (errno set) fails the extraction.  Both
 * run in the extracting thread, with whatever file-system identity it
 * has.
 */
typedef struct storm_bundle_ops {
	int (*ref)(void *arg, int parentfd, const char *leaf,
		   const uint8_t sha256[STORM_BUNDLE_SHA256], uint64_t size,
		   unsigned mode, char *err, size_t errlen);
	int (*file)(void *arg, int parentfd, const char *leaf,
		    const void *data, uint64_t size, unsigned mode);
} storm_bundle_ops_t;

/*
 * storm_bundle_extract() with references resolved by ops (NULL: exactly
 * storm_bundle_extract()).  The stream is checked whole first, as there.
 * An absent reference does not stop the extraction: every entry is
 * resolved, so that one pass learns all a node lacks (ref() sees each and
 * may record it); then it returns STORM_BUNDLE_ABSENT with err naming the
 * first absent entry and the count, and directories keep the mode they
 * were created with (0700), so the caller may fill the holes or drop the
 * whole.  Returns 0, -1 with err, or STORM_BUNDLE_ABSENT.
 */
extern int storm_bundle_extract_ex(const void *buf, size_t len, int dirfd,
				   const storm_bundle_ops_t *ops, void *arg,
				   char *err, size_t errlen);

#endif /* STORM_BUNDLE_H */

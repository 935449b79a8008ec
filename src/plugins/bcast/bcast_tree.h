/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_tree.h - what travels with a broadcast executable: its shared
 * libraries (--send-libs, storm.conf BcastLibraries, SLURM_STORM_BCAST_LIBS)
 * and the files and directories a user names (SLURM_STORM_FILES), packed
 * into one bundle (storm_bundle.h) so that they cost one broadcast, not
 * one per file.  No Slurm internals here.
 *
 * Two layouts, chosen by how the executable travels:
 *  - mirror: entries named by their absolute paths ("opt/lib/libx.so").
 *    Each node presents them at those paths in the task's own mount
 *    namespace (storm_present.c), so the loader, $ORIGIN, a venv's
 *    pyvenv.cfg and the program's own paths find exactly what they would
 *    without STORM, read from the node.  Used for the libraries when the
 *    executable keeps its path (BcastExecutable, SLURM_STORM_BCAST=yes)
 *    and always for named files.
 *  - Slurm's: srun --bcast --send-libs puts the libraries, by file name,
 *    in a directory "<copy>_libs" beside the copy and prepends it to the
 *    tasks' LD_LIBRARY_PATH.  STORM does the same, so a user who asked
 *    for that sees what Slurm gives.  Named files then sit in the same
 *    directory under their absolute paths.
 */
#ifndef STORM_BCAST_TREE_H
#define STORM_BCAST_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct storm_tree {
	bool slurm_libs;	/* Slurm's layout for the libraries */
	int fd;			/* the bundle: an unlinked temporary file */
	char path[64];		/* /proc/self/fd/<fd>, for the broadcast */
	uint64_t size;
	/* the same bundle with every file as a reference (its SHA-256), which
	 * the nodes place from their caches; rfd -1: none */
	int rfd;
	char rpath[64];
	uint64_t rsize;
	struct storm_bundle *bundle;	/* kept while rfd is open */
	/* files whose SHA-256 srun's memo knew, bytes it had to hash */
	uint64_t sha_memo_hits, sha_hashed_bytes;
	char *binds;		/* original paths to present, ':'-separated */
	int libs, files;	/* entries of each kind */
	bool exe;		/* the executable is in it, at its path */
	char note[1024];	/* what was left out and why, for stderr */
} storm_tree_t;

/*
 * Pack what goes with the executable exe: its library closure when libs
 * (resolved by the loader, minus the directories in exclude, Slurm's
 * BcastExclude form), in Slurm's layout when slurm_libs, and the
 * ':'-separated paths in files (NULL: none).  max_bytes bounds the
 * bundle (BcastMaxSize).  refs: also the bundle of references to ask the
 * nodes' caches first (t->rfd).  exe_entry (NULL: none): the executable's
 * real path, to travel in the bundle at that path (t->exe).  Returns 1 with t ready to send, 0 when nothing
 * goes (t->note may say why: no libraries, over the size limit, the
 * loader failed), -1 with err when a named file cannot be sent (srun
 * stops: the user asked for it).  A program that cannot be sent with its
 * libraries still runs: they then come from their own paths.
 */
extern int storm_tree_build(storm_tree_t *t, const char *exe, bool libs,
			    bool slurm_libs, const char *exclude,
			    const char *files, uint64_t max_bytes, bool refs,
			    const char *exe_entry, char *err, size_t errlen);

/*
 * Make the bundle to send the one whose files are data where bits (the
 * relay's bitmap of what nodes lacked: bit i, the i-th file) says so,
 * references elsewhere: t->fd, t->path (the same string) and t->size now
 * name it.  0, or -1 with err (t unchanged: send it whole).
 */
extern int storm_tree_lacked(storm_tree_t *t, const uint8_t *bits,
			     size_t len, char *err, size_t errlen);

/* Close and free what storm_tree_build made; the note stays. */
extern void storm_tree_free(storm_tree_t *t);

#endif

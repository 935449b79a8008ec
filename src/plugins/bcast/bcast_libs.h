/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_libs.h - the shared libraries a program needs, as the dynamic loader
 * itself resolves them, so that srun can send them with the executable.
 * No Slurm headers: srun's launch plugin (22.05) and the SPANK plugin
 * (23.02 on) both call it with plain values.
 */
#ifndef STORM_BCAST_LIBS_H
#define STORM_BCAST_LIBS_H

#include <stdbool.h>
#include <stddef.h>

/* How long the loader may take to list a file's libraries. */
#define BCAST_LIBS_TIMEOUT_MS 10000

/*
 * The shared libraries the dynamic loader maps for file (an executable or
 * a shared library), as the loader itself resolves them: the ELF's
 * PT_INTERP run as `<interp> --list <file>` (DT_NEEDED, RPATH/RUNPATH with
 * $ORIGIN, LD_LIBRARY_PATH and LD_PRELOAD from the caller's environment,
 * ld.so.cache, hwcaps directories).  glibc's --list stops at the first
 * library it cannot find; then the loader is run again the way ldd runs it
 * (LD_TRACE_LOADED_OBJECTS=1 <interp> <file>), which lists every library
 * and marks the missing ones "not found".
 *
 * Libraries under a directory in exclude are left out (exclude: Slurm's
 * BcastExclude form, a comma-separated list of absolute directories;
 * "none", "" or NULL for none).  *libs: a malloc'd, NULL-terminated array
 * of malloc'd absolute paths as the loader names them (not realpath'd), in
 * the loader's order, without duplicates; never the interpreter itself,
 * never the vDSO.  Libraries the loader reports "not found" are left out
 * and counted in *missing (missing may be NULL): the program then fails on
 * the nodes the same way it would without a broadcast.
 *
 * Returns the number of libraries (0, with an empty array, for a static
 * executable, a script, any non-ELF file or an ELF of another class or
 * machine than this process); -1 with err (and *libs NULL) when the file
 * cannot be read, the loader cannot be run or fails (its stderr's first
 * line in err), or the whole call takes longer than BCAST_LIBS_TIMEOUT_MS
 * (the loader is killed).
 */
int bcast_libs_closure(const char *file, const char *exclude, char ***libs,
		       int *missing, char *err, size_t errlen);

/*
 * The parsing step alone: out is the loader's listing, interp the
 * loader's path (the entry naming the same file is left out; NULL: none).
 * Same result rules as bcast_libs_closure.
 */
int bcast_libs_parse(const char *out, const char *interp, const char *exclude,
		     char ***libs, int *missing, char *err, size_t errlen);

/*
 * path is under one of exclude's directories.  Compares the path as named
 * (".", ".." and repeated slashes taken by name: "/opt/a/bin/../lib/x.so"
 * is not under /opt/a/bin) and its realpath (Debian's /lib is a symlink to
 * usr/lib) against each directory as written and its realpath, whole
 * components only ("/usr/lib" does not exclude "/usr/lib64x/...").  Trailing slashes in the list do not
 * matter; entries that are not absolute are ignored.
 */
bool bcast_libs_excluded(const char *path, const char *exclude);

/*
 * The ELF interpreter (PT_INTERP) of file into buf: 1 found, 0 none
 * (static, script, not ELF, another class, byte order or machine than this
 * process's, truncated), -1 with errno when the file cannot be read (EISDIR
 * or EINVAL for a file that is not regular, ERANGE when len is too small).
 */
int bcast_libs_interp(const char *file, char *buf, size_t len);

/* Frees an array from bcast_libs_closure or bcast_libs_parse (NULL: no-op). */
void bcast_libs_free(char **libs);

#endif /* STORM_BCAST_LIBS_H */

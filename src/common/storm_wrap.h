/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_wrap.h - open a stock Slurm plugin that a STORM plugin wraps.
 *
 * select/cons_tres_storm, sched/storm and launch/storm each add behaviour
 * around a stock plugin (cons_tres, backfill, launch/slurm) instead of
 * copying it, so Slurm fixes reach our users unchanged.  The stock plugin is
 * found the way Slurm finds plugins: by file name in each PluginDir entry.
 */
#ifndef STORM_WRAP_H
#define STORM_WRAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	void *handle;
	char path[4096];
} storm_wrap_t;

/*
 * dlopen "<name>.so" from the first directory of the colon-separated
 * plugindir list that has it (fallback_dir last), call its init() if it has
 * one, and resolve syms[i] into ptrs[i] for i < nsyms.
 * Returns 0, or -1 with errbuf saying which file or symbol failed; on
 * failure nothing stays open.
 */
extern int storm_wrap_open(storm_wrap_t *w, const char *plugindir,
			   const char *fallback_dir, const char *name,
			   const char *const *syms, void **ptrs, size_t nsyms,
			   char *errbuf, size_t errlen);

/*
 * Close the stock plugin, calling its fini() first when call_fini is set.
 * Leave call_fini unset when Slurm itself may also have loaded that plugin
 * (slurmctld loads every select plugin): its fini() would then run twice.
 */
extern void storm_wrap_close(storm_wrap_t *w, bool call_fini);

/* True when both paths name the same file (device and inode). */
extern bool storm_same_file(const char *a, const char *b);

#endif /* STORM_WRAP_H */

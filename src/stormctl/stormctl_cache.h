/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_cache.h - `stormctl cache`: what a node's manager keeps of the
 * users' broadcast files across jobs (BcastCacheSize), shown or purged
 * through that node manager's control socket.
 */
#ifndef STORMCTL_CACHE_H
#define STORMCTL_CACHE_H

/* `stormctl cache show|purge [--node N] [--user U | --all]` with argv
 * after "cache": the exit status, or -1 on unknown arguments (the caller
 * prints the usage). */
extern int cache_main(int argc, char **argv);

#endif /* STORMCTL_CACHE_H */

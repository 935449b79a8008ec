/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_log.h - the node manager's log (nm_log.c): one line per event, with a timestamp
 * and the node's tag, to its NMLogFile.
 */
#ifndef STORM_NM_LOG_H
#define STORM_NM_LOG_H

#include "src/stormmech/stormmech.h"

typedef enum { NM_ERROR, NM_INFO, NM_VERBOSE, NM_DEBUG } nm_level_t;
extern int nm_log_open(const char *path, nm_level_t level);
extern void nm_log_set_tag(const char *node);
/* The log's file descriptor (kept by a forked child), or -1. */
extern int nm_log_fd(void);
extern void nm_log(nm_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define nm_error(...) nm_log(NM_ERROR, __VA_ARGS__)
#define nm_info(...) nm_log(NM_INFO, __VA_ARGS__)
#define nm_verbose(...) nm_log(NM_VERBOSE, __VA_ARGS__)
#define nm_debug(...) nm_log(NM_DEBUG, __VA_ARGS__)
/* libstormmech's log callback, routed into the NM log */
extern void nm_log_mech(void *arg, storm_log_level_t lvl, const char *msg);

#endif /* STORM_NM_LOG_H */

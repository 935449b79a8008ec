/*
 * nm_log.c - the node manager's log: one file per node, Slurm-like lines
 * ("[2026-11-22T01:02:03.456] storm-nm node3: ...") so that the NM's log
 * reads like slurmd's beside it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nm.h"
#include "src/common/storm_mutex.h"

static FILE *log_fp;
static nm_level_t log_level = NM_INFO;
/* real-time threads log too (storm_mutex.h): made priority-inheriting by
 * the first nm_log_open(), before any thread starts */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static bool log_lock_inherits;
static char log_tag[96] = NM_NAME;

extern int nm_log_open(const char *path, nm_level_t level)
{
	FILE *fp = NULL;

	if (path && *path) {
		fp = fopen(path, "a");
		if (!fp)
			return -1;
		setvbuf(fp, NULL, _IOLBF, 0);
	}
	if (!log_lock_inherits)
		log_lock_inherits = !storm_mutex_init_inherit(&log_lock);
	pthread_mutex_lock(&log_lock);
	if (log_fp && log_fp != stderr)
		fclose(log_fp);
	log_fp = fp ? fp : stderr;
	log_level = level;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

extern int nm_log_fd(void)
{
	return log_fp ? fileno(log_fp) : -1;
}

extern void nm_log_set_tag(const char *node)
{
	snprintf(log_tag, sizeof(log_tag), "%s %s", NM_NAME, node);
}

extern void nm_log(nm_level_t level, const char *fmt, ...)
{
	static const char *const prefix[] = { "error: ", "", "", "debug: " };
	struct timeval tv;
	struct tm tm;
	char ts[32];
	va_list ap;

	if (level > log_level)
		return;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	if (!log_fp)
		log_fp = stderr;
	fprintf(log_fp, "[%s.%03ld] %s: %s", ts, (long) tv.tv_usec / 1000,
		log_tag, prefix[level]);
	va_start(ap, fmt);
	vfprintf(log_fp, fmt, ap);
	va_end(ap);
	fputc('\n', log_fp);
	pthread_mutex_unlock(&log_lock);
}

extern void nm_log_mech(void *arg, storm_log_level_t lvl, const char *msg)
{
	static const nm_level_t map[] = { NM_ERROR, NM_INFO, NM_VERBOSE,
					  NM_DEBUG };

	nm_log(lvl <= STORM_LOG_DEBUG ? map[lvl] : NM_DEBUG, "fabric: %s",
	       msg);
}

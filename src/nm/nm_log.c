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

static struct {
	FILE *fp;
	nm_level_t level;
	/* real-time threads log too (storm_mutex.h): made
	 * priority-inheriting by the first nm_log_open(), before any thread
	 * starts */
	pthread_mutex_t lock;
	bool lock_inherits;
	char tag[96];
} logger = { .level = NM_INFO, .lock = PTHREAD_MUTEX_INITIALIZER,
	     .tag = NM_NAME };

extern int nm_log_open(const char *path, nm_level_t level)
{
	FILE *fp = NULL;

	if (path && *path) {
		fp = fopen(path, "a");
		if (!fp)
			return -1;
		setvbuf(fp, NULL, _IOLBF, 0);
	}
	if (!logger.lock_inherits)
		logger.lock_inherits = !storm_mutex_init_inherit(&logger.lock);
	pthread_mutex_lock(&logger.lock);
	if (logger.fp && logger.fp != stderr)
		fclose(logger.fp);
	logger.fp = fp ? fp : stderr;
	logger.level = level;
	pthread_mutex_unlock(&logger.lock);
	return 0;
}

extern int nm_log_fd(void)
{
	return logger.fp ? fileno(logger.fp) : -1;
}

extern void nm_log_set_tag(const char *node)
{
	snprintf(logger.tag, sizeof(logger.tag), "%s %s", NM_NAME, node);
}

extern void nm_log(nm_level_t level, const char *fmt, ...)
{
	static const char *const prefix[] = { "error: ", "", "", "debug: " };
	struct timeval tv;
	struct tm tm;
	char ts[32];
	va_list ap;

	if (level > logger.level)
		return;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&logger.lock);
	if (!logger.fp)
		logger.fp = stderr;
	fprintf(logger.fp, "[%s.%03ld] %s: %s", ts, (long) tv.tv_usec / 1000,
		logger.tag, prefix[level]);
	va_start(ap, fmt);
	vfprintf(logger.fp, fmt, ap);
	va_end(ap);
	fputc('\n', logger.fp);
	pthread_mutex_unlock(&logger.lock);
}

extern void nm_log_mech(void *arg, storm_log_level_t lvl, const char *msg)
{
	static const nm_level_t map[] = { NM_ERROR, NM_INFO, NM_VERBOSE,
					  NM_DEBUG };

	nm_log(lvl <= STORM_LOG_DEBUG ? map[lvl] : NM_DEBUG, "fabric: %s",
	       msg);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_now.c - `stormctl now`: where the gang schedule is at this
 * instant, computed from the MM's last strobe as the nodes compute it.
 *
 * --follow MS prints a line every MS milliseconds until killed (or until
 * its reader goes away): storm-web keeps one running rather than starting
 * a process five times a second.  A read that fails is a line too (JSON:
 * {"error": ...}), so a follower sees the MM stop and start again.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/storm_now.h"
#include "src/common/storm_time.h"

#include "stormctl_now.h"
#include "stormctl_paths.h"

#define FOLLOW_MIN_MS 20
#define FOLLOW_MAX_MS 60000

static const char *why(int rc)
{
	if (rc == -EINVAL)
		return "not a STORM now file";
	if (rc == -EAGAIN)
		return "no strobe published yet";
	return strerror(-rc);
}

/* One reading, as text or a JSON line; 0, or 1 when it failed. */
static int print_once(const char *path, bool json)
{
	storm_now_t n;
	storm_now_pos_t pos;
	int rc = storm_now_read(path, &n);

	if (rc) {
		if (json)
			printf("{\"error\": \"cannot read %s: %s\"}\n", path,
			       why(rc));
		else
			fprintf(stderr, "stormctl: cannot read %s: %s (is slurmctld running with SchedulerType=sched/storm?)\n",
				path, why(rc));
		return 1;
	}
	storm_now_at(&n, storm_real_ns(), &pos);
	if (json)
		return storm_now_fprint_json(stdout, &n, &pos) ? 1 : 0;
	printf("slot %u of %u, quantum %llu (%.3f ms), epoch %llu: strobe sent %.3f ms ago covering %u quanta%s\n",
	       pos.slot, pos.nslots, (unsigned long long) pos.quantum,
	       n.strobe.quantum_us / 1000.0,
	       (unsigned long long) n.strobe.epoch, pos.since_ns / 1e6,
	       n.strobe.nquanta ? n.strobe.nquanta : 1,
	       pos.stale ? " -- STALE: the machine manager is not strobing" :
	       "");
	return 0;
}

static int follow(const char *path, bool json, long ms)
{
	uint64_t next = storm_mono_ns();

	for (;;) {
		struct timespec ts;

		print_once(path, json);
		if (fflush(stdout))
			return 1;	/* the reader went away */
		next += (uint64_t) ms * 1000000ULL;
		if (next < storm_mono_ns())
			next = storm_mono_ns();
		ts.tv_sec = next / 1000000000ULL;
		ts.tv_nsec = next % 1000000000ULL;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
}

extern int now_main(int argc, char **argv)
{
	const char *file = NULL, *status = NULL;
	char path[4200];
	bool json = false;
	long ms = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--now") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--status") && i + 1 < argc) {
			status = argv[++i];
		} else if (!strcmp(argv[i], "--follow") && i + 1 < argc) {
			char *end;

			errno = 0;
			ms = strtol(argv[++i], &end, 10);
			if (errno || *end || ms < FOLLOW_MIN_MS ||
			    ms > FOLLOW_MAX_MS) {
				fprintf(stderr, "stormctl: --follow %s: expected milliseconds from %d to %d\n",
					argv[i], FOLLOW_MIN_MS, FOLLOW_MAX_MS);
				return 2;
			}
		} else {
			return -1;
		}
	}
	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else if (status ? stormctl_beside(status, STORM_NOW_FILE, path,
					  sizeof(path)) :
		 stormctl_state_path(STORM_NOW_FILE, path, sizeof(path)))
		return 1;
	if (ms)
		return follow(path, json, ms);
	return print_once(path, json);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_cg_usage.c - the CPU time a job used on this node (nm_cg_usage.h).
 *
 *   v2: the job's cgroup counts it itself: cpu.stat's usage_usec, exact,
 *       processes that ended included.
 *   v1: Slurm's proctrack/cgroup creates only freezer cgroups, which count
 *       no time, and moving a job's tasks into a cpuacct cgroup of our own
 *       would change what Slurm tracks.  So the time is the sum, over the
 *       processes in the job's freezer cgroups (the job's and its steps'),
 *       of their utime + stime + cutime + cstime (/proc/PID/stat, clock
 *       ticks): a child reaped by a process of the job stays counted in
 *       its parent's cutime; a process that ended and was reaped outside
 *       the job (its slurmstepd) drops out, so the sum can fall, and the
 *       caller must not read a fall as negative use.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nm_cgroup.h"
#include "nm_cg_usage.h"

/* Step cgroups sit one level below the job's; a task/cgroup layout
 * (step_N/task_M) one more. */
#define V1_DEPTH 3

/* utime + stime + cutime + cstime of pid, in clock ticks; 0 if it is
 * gone (it ended between the listing and now). */
static uint64_t pid_ticks(long pid)
{
	char path[64], buf[1024], *p;
	uint64_t sum = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: fields count
	 * from the last ')' on; utime is field 14, the state field 3 */
	if (!(p = strrchr(buf, ')')))
		return 0;
	p++;
	for (int field = 3; field <= 17; field++) {
		char *end;
		unsigned long long v;

		while (*p == ' ')
			p++;
		v = strtoull(p, &end, 10);
		if (field >= 14)
			sum += v;
		p = end;
		while (*p && *p != ' ')
			p++;
	}
	return sum;
}

/* The processes of dir's cgroup.procs, then its subdirectories'. */
static uint64_t dir_ticks(const char *dir, int depth)
{
	char path[4200], line[32];
	uint64_t sum = 0;
	struct dirent *de;
	FILE *fp;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((fp = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), fp))
			if (isdigit((unsigned char) line[0]))
				sum += pid_ticks(strtol(line, NULL, 10));
		fclose(fp);
	}
	if (depth <= 1 || !(d = opendir(dir)))
		return sum;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		sum += dir_ticks(path, depth - 1);
	}
	closedir(d);
	return sum;
}

/* v2: "usage_usec N" of dir/cpu.stat. */
static int v2_usage(const char *dir, uint64_t *ns)
{
	char path[4200], line[128];
	int rc = -ENODATA;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	if (!(fp = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long us;

		if (sscanf(line, "usage_usec %llu", &us) == 1) {
			*ns = (uint64_t) us * 1000;
			rc = 0;
			break;
		}
	}
	fclose(fp);
	return rc;
}

extern int nm_cg_job_cpu_ns(uint32_t job_id, uint32_t uid, uint64_t *ns)
{
	char dir[2048];
	long hz = sysconf(_SC_CLK_TCK);
	int rc;

	if ((rc = nm_cg_job_dir(job_id, uid, dir, sizeof(dir))))
		return rc;
	if (nm_cg_version() == 2)
		return v2_usage(dir, ns);
	if (hz <= 0)
		return -EINVAL;
	*ns = dir_ticks(dir, V1_DEPTH) * (1000000000ULL / (uint64_t) hz);
	return 0;
}

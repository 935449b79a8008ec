/*
 * nm_bcast_dir.c - what backs BcastDir, said once at start-up.
 *
 * The broadcast's cost on a node is mostly the RAM disk's: every file is
 * allocated and populated before its data comes, then written.  With 4 KiB
 * pages a 12 MiB file is 3072 page faults and clears; on a tmpfs mounted
 * with huge=within_size it is six, and the 16-node transfer of the launch
 * benchmark went from 192 to 116 ms (README, Launch).  On a disk file
 * system each file also pays block allocation.  An admin sees which case a
 * node is in from the node manager's log, without reading mount tables.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm.h"
#include "nm_bcast.h"

#define SHMEM_ENABLED "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' &&
		    p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*o++ = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 +
				       (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

/* Is mount point mp a prefix of path at a component boundary? */
static bool covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (!strcmp(mp, "/"))
		return path[0] == '/';
	return !strncmp(mp, path, n) && (path[n] == '\0' || path[n] == '/');
}

static void copy(char *dst, size_t len, const char *src)
{
	if (len) {
		strncpy(dst, src, len - 1);
		dst[len - 1] = '\0';
	}
}

extern int nm_mount_of(FILE *mountinfo, const char *path, char *fstype,
		       size_t fslen, char *opts, size_t optlen)
{
	char line[8192];
	size_t best = 0;
	int rc = -ENOENT;

	while (fgets(line, sizeof(line), mountinfo)) {
		char *f[64], *save = NULL, *tok;
		int n = 0, sep = -1;

		for (tok = strtok_r(line, " \n", &save); tok && n < 64;
		     tok = strtok_r(NULL, " \n", &save))
			f[n++] = tok;
		/* id parent maj:min root mountpoint options [optional...] -
		 * fstype source super-options */
		for (int i = 6; i < n; i++)
			if (!strcmp(f[i], "-")) {
				sep = i;
				break;
			}
		if (sep < 0 || sep + 1 >= n)
			continue;
		unescape(f[4]);
		/* >=: a later mount on the same point hides the earlier */
		if (!covers(f[4], path) || strlen(f[4]) < best)
			continue;
		best = strlen(f[4]);
		copy(fstype, fslen, f[sep + 1]);
		copy(opts, optlen, sep + 3 < n ? f[sep + 3] : "");
		rc = 0;
	}
	return rc;
}

extern bool nm_tmpfs_huge(const char *opts, const char *shmem_enabled)
{
	char buf[1024], val[32] = "", *save = NULL;

	/* The sysfs knob's [deny] and [force] override every mount. */
	if (shmem_enabled && strstr(shmem_enabled, "[deny]"))
		return false;
	if (shmem_enabled && strstr(shmem_enabled, "[force]"))
		return true;
	copy(buf, sizeof(buf), opts);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save))
		if (!strncmp(o, "huge=", 5))
			copy(val, sizeof(val), o + 5);
	/* huge=advise needs madvise(MADV_HUGEPAGE), which we do not make */
	return !strcmp(val, "within_size") || !strcmp(val, "always");
}

extern void nm_bcast_dir_report(const char *dir)
{
	char real[PATH_MAX], fstype[64], opts[1024], shmem[128] = "";
	FILE *fp;
	int rc;

	if (!realpath(dir, real))
		return;
	if (!(fp = fopen("/proc/self/mountinfo", "re")))
		return;
	rc = nm_mount_of(fp, real, fstype, sizeof(fstype), opts, sizeof(opts));
	fclose(fp);
	if (rc)
		return;
	if (strcmp(fstype, "tmpfs")) {
		nm_info("bcast: BcastDir %s is on %s, not a RAM disk (tmpfs): every broadcast file also costs that file system's block allocation",
			dir, fstype);
		return;
	}
	if ((fp = fopen(SHMEM_ENABLED, "re"))) {
		if (!fgets(shmem, sizeof(shmem), fp))
			shmem[0] = '\0';
		fclose(fp);
	}
	if (nm_tmpfs_huge(opts, shmem))
		nm_info("bcast: BcastDir %s is a tmpfs with huge pages", dir);
	else
		nm_info("bcast: BcastDir %s is a tmpfs with small pages; mounted with huge=within_size, broadcasts allocate and fill files far faster (storm.conf(5), BcastDir)",
			dir);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_paths.c - the Machine Manager's files in StateSaveLocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stormctl_paths.h"

/* The last StateSaveLocation= of slurm.conf, as slurmctld takes it. */
static int state_dir(char *buf, size_t len)
{
	const char *conf = getenv("SLURM_CONF");
	char line[4096];
	FILE *fp = fopen(conf ? conf : "/etc/slurm/slurm.conf", "r");
	int rc = -1;

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncasecmp(p, "StateSaveLocation=", 18)) {
			p += 18;
			p[strcspn(p, " \t\r\n#")] = '\0';
			snprintf(buf, len, "%s", p);
			rc = 0;
		}
	}
	fclose(fp);
	return rc;
}

extern int stormctl_state_path(const char *name, char *path, size_t len)
{
	char dir[4096];
	int n;

	if (state_dir(dir, sizeof(dir))) {
		fprintf(stderr, "stormctl: no StateSaveLocation in slurm.conf; use --status FILE\n");
		return -1;
	}
	n = snprintf(path, len, "%s/%s", dir, name);
	if (n < 0 || (size_t) n >= len) {
		fprintf(stderr, "stormctl: StateSaveLocation too long: %s\n",
			dir);
		return -1;
	}
	return 0;
}

extern int stormctl_beside(const char *file, const char *name, char *path,
			   size_t len)
{
	const char *slash = strrchr(file, '/');
	int n = slash ? snprintf(path, len, "%.*s/%s", (int) (slash - file),
				 file, name) :
			snprintf(path, len, "%s", name);

	if (n < 0 || (size_t) n >= len) {
		fprintf(stderr, "stormctl: path too long: %s\n", file);
		return -1;
	}
	return 0;
}

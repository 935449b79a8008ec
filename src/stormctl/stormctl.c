/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl - the STORM administration command.
 *
 *   stormctl check-config [FILE]   validate storm.conf, print the result
 *   stormctl show [--json] [--status FILE]
 *                                  the gang scheduler: time-slot matrix,
 *                                  current slot, quantum, per-node acks
 *   stormctl now [--json] [--follow MS] [--now FILE | --status FILE]
 *                                  the slot the nodes run at this instant
 *   stormctl cache show|purge [--node N] [--user U | --all]
 *                                  a node's store of broadcast files
 *
 * See stormctl(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/storm_conf.h"

#include "stormctl_cache.h"
#include "stormctl_now.h"
#include "stormctl_show.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: stormctl check-config [FILE]\n"
		"       stormctl show [--json] [--status FILE]\n"
		"       stormctl now [--json] [--follow MS] [--now FILE | --status FILE]\n"
		"       stormctl cache show|purge [--node N] [--user U | --all]\n"
		"  check-config  parse storm.conf (FILE, else $STORM_CONF, else\n"
		"                storm.conf beside $SLURM_CONF or /etc/slurm) and\n"
		"                print the effective configuration\n"
		"  show          the gang scheduler's time-slot matrix, current\n"
		"                slot, quantum and per-node acknowledgement latency;\n"
		"                --json: the parsed status file as one JSON object\n"
		"  now           the slot the nodes run at this instant, from the\n"
		"                machine manager's last strobe; --follow MS: a line\n"
		"                every MS milliseconds until killed\n"
		"  cache         what this node keeps of the users' broadcast\n"
		"                files across jobs (BcastCacheSize): show it, or\n"
		"                purge it; a user's own store unless root names\n"
		"                another (--user) or every one (--all, root's\n"
		"                default); --node: which node manager of this host\n");
}

static int check_config(const char *file)
{
	char path[4096], err[STORM_CONF_ERRLEN], out[16384];
	storm_conf_t conf;

	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else
		storm_conf_path(getenv("SLURM_CONF"), path, sizeof(path));
	/* An explicit file must exist; the default may be absent. */
	if (storm_conf_load(path, file == NULL, &conf, err, sizeof(err))) {
		fprintf(stderr, "stormctl: %s\n", err);
		return 1;
	}
	if (storm_conf_format(&conf, out, sizeof(out)) < 0) {
		fprintf(stderr, "stormctl: configuration too large to print\n");
		return 1;
	}
	printf("# %s: OK\n%s", path, out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "show")) {
		int rc = show_main(argc - 2, argv + 2);

		if (rc >= 0)
			return rc;
	}
	if (!strcmp(argv[1], "now")) {
		int rc = now_main(argc - 2, argv + 2);

		if (rc >= 0)
			return rc;
	}
	if (!strcmp(argv[1], "cache")) {
		int rc = cache_main(argc - 2, argv + 2);

		if (rc >= 0)
			return rc;
	}
	if (!strcmp(argv[1], "check-config") && argc <= 3)
		return check_config(argc == 3 ? argv[2] : NULL);
	fprintf(stderr, "stormctl: unknown command or arguments: %s\n",
		argv[1]);
	usage(stderr);
	return 2;
}

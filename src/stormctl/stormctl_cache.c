/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_cache.c - `stormctl cache show|purge`.
 *
 * A node's manager answers on its control socket in BcastDir (storm.conf),
 * so this runs on the node: --node names which manager when the host
 * runs several, else the only one whose socket is there, else the short
 * host name.  The node manager decides what the caller may see: a user
 * their own store, root anyone's.
 */
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_conf.h"
#include "src/common/storm_nmctl.h"

#include "stormctl_cache.h"

#define REPLY (64 * 1024)	/* more than a node manager's longest reply */
#define TIMEOUT_MS 10000	/* a purge of a large store takes a while */

/* The node whose manager to ask: given, the only socket in BcastDir, or
 * this host's short name.  0, or 1 after a message. */
static int pick_node(const char *bcast_dir, const char *given, char *node,
		     size_t len)
{
	DIR *d;
	struct dirent *e;
	int found = 0;

	if (given) {
		snprintf(node, len, "%s", given);
		return 0;
	}
	if ((d = opendir(bcast_dir))) {
		while ((e = readdir(d))) {
			size_t n = strlen(e->d_name);

			if (strncmp(e->d_name, ".nm-", 4) || n < 10 ||
			    strcmp(e->d_name + n - 5, ".sock"))
				continue;
			if (found++ == 0)
				snprintf(node, len, "%.*s", (int) (n - 9),
					 e->d_name + 4);
		}
		closedir(d);
	}
	if (found == 1)
		return 0;
	if (found > 1) {
		fprintf(stderr, "stormctl: several node managers run here (%s); name one with --node\n",
			bcast_dir);
		return 1;
	}
	if (gethostname(node, len)) {
		fprintf(stderr, "stormctl: no host name: %s\n", strerror(errno));
		return 1;
	}
	node[len - 1] = '\0';
	node[strcspn(node, ".")] = '\0';
	return 0;
}

/* A user name or uid as the node manager's argument. */
static int user_arg(const char *user, char *out, size_t len)
{
	struct passwd *pw = getpwnam(user);
	char *end;
	unsigned long v;

	if (pw) {
		snprintf(out, len, "%u", (unsigned) pw->pw_uid);
		return 0;
	}
	errno = 0;
	v = strtoul(user, &end, 10);
	if (user[0] < '0' || user[0] > '9' || errno || *end ||
	    v >= (unsigned long) (uid_t) -1) {
		fprintf(stderr, "stormctl: --user %s: no such user\n", user);
		return 1;
	}
	snprintf(out, len, "%lu", v);
	return 0;
}

static const char *user_name(unsigned uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid((uid_t) uid);

	if (pw)
		return pw->pw_name;
	snprintf(buf, len, "%u", uid);
	return buf;
}

/* The reply of cache_list as a table. */
static int show(const char *node, const char *text)
{
	unsigned long long bytes, limit;
	int entries, shown;
	const char *p = strchr(text, '\n');

	if (sscanf(text, "entries=%d bytes=%llu limit=%llu shown=%d", &entries,
		   &bytes, &limit, &shown) != 4) {
		fprintf(stderr, "stormctl: %s: unexpected reply: %.200s\n", node,
			text);
		return 1;
	}
	printf("node %s: %d cached files, %llu bytes (at most %llu per user)\n",
	       node, entries, bytes, limit);
	if (entries)
		printf("%-12s %-64s %12s %4s %s\n", "USER", "SHA256", "BYTES",
		       "MODE", "LAST USE");
	while (p && *++p) {
		char sha[65], name[32], when[32];
		unsigned uid, mode;
		unsigned long long size;
		long long used;
		time_t t;
		struct tm tm;

		if (sscanf(p, "%u %64s %llu %o %lld", &uid, sha, &size, &mode,
			   &used) == 5) {
			t = (time_t) used;
			if (!localtime_r(&t, &tm) ||
			    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
				snprintf(when, sizeof(when), "%lld", used);
			printf("%-12s %-64s %12llu %04o %s\n",
			       user_name(uid, name, sizeof(name)), sha, size,
			       mode, when);
		}
		p = strchr(p, '\n');
	}
	if (shown < entries)
		printf("(%d more not shown: name a user with --user)\n",
		       entries - shown);
	return 0;
}

extern int cache_main(int argc, char **argv)
{
	const char *node_opt = NULL, *user = NULL;
	char path[4096], err[STORM_CONF_ERRLEN], node[256], sock[4300];
	char who[32] = "", req[64], *reply;
	storm_conf_t conf;
	bool purge, all = false;
	int rc;

	if (argc < 1)
		return -1;
	if (!strcmp(argv[0], "show"))
		purge = false;
	else if (!strcmp(argv[0], "purge"))
		purge = true;
	else
		return -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--node") && i + 1 < argc)
			node_opt = argv[++i];
		else if (!strcmp(argv[i], "--user") && i + 1 < argc)
			user = argv[++i];
		else if (!strcmp(argv[i], "--all"))
			all = true;
		else
			return -1;
	}
	if (user && all)
		return -1;
	if (user && user_arg(user, who, sizeof(who)))
		return 1;
	if (all)
		snprintf(who, sizeof(who), "all");
	storm_conf_path(getenv("SLURM_CONF"), path, sizeof(path));
	if (storm_conf_load(path, true, &conf, err, sizeof(err))) {
		fprintf(stderr, "stormctl: %s\n", err);
		return 1;
	}
	if (pick_node(conf.bcast_dir, node_opt, node, sizeof(node)))
		return 1;
	storm_nm_paths(conf.bcast_dir, node, NULL, 0, sock, sizeof(sock));
	snprintf(req, sizeof(req), "%s%s%s", purge ? "cache_purge" : "cache_list",
		 who[0] ? " " : "", who);
	if (!(reply = malloc(REPLY)))
		return 1;
	rc = storm_nm_request(sock, req, reply, REPLY, TIMEOUT_MS);
	if (rc) {
		fprintf(stderr, "stormctl: cannot reach the node manager of %s at %s: %s\n",
			node, sock, strerror(-rc));
		rc = 1;
	} else if (strncmp(reply, "ok ", 3)) {
		fprintf(stderr, "stormctl: %s: %s\n", node,
			!strncmp(reply, "error ", 6) ? reply + 6 : reply);
		rc = 1;
	} else if (purge) {
		printf("node %s: %s cached files removed\n", node,
		       !strncmp(reply + 3, "purged=", 7) ? reply + 10 : reply + 3);
	} else {
		rc = show(node, reply + 3);
	}
	free(reply);
	return rc;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_cache_ctl.c - cache_list and cache_purge on the control socket
 * (nm_bcast_cache_ctl.h).  Who asks is SO_PEERCRED's answer, never the
 * request's: a user sees and purges only their own store.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm.h"
#include "nm_bcast_cache.h"
#include "nm_bcast_cache_ctl.h"

/* Whose store a request means: its argument (a uid or "all"), else the
 * caller's own, or everyone's for root.  0, or 1 with the reply. */
static int whose(const nm_peer_t *peer, const char *args, uid_t *uid,
		 char *out, size_t outlen, const char *cmd)
{
	char *end;
	unsigned long v;

	while (*args == ' ')
		args++;
	if (!*args) {
		*uid = peer->uid == 0 ? NM_BCAST_CACHE_ALL : peer->uid;
		return 0;
	}
	if (!strcmp(args, "all")) {
		*uid = NM_BCAST_CACHE_ALL;
	} else {
		errno = 0;
		v = strtoul(args, &end, 10);
		if (errno || *end || args[0] < '0' || args[0] > '9' ||
		    v >= (unsigned long) NM_BCAST_CACHE_ALL) {
			snprintf(out, outlen, "usage: %s [UID|all]", cmd);
			return 1;
		}
		*uid = (uid_t) v;
	}
	if (peer->uid != 0 && *uid != peer->uid) {
		snprintf(out, outlen, "permission denied: only root may %s "
			 "another user's cache", strcmp(cmd, "cache_list") ?
			 "purge" : "list");
		return 1;
	}
	return 0;
}

static int cache_off(int rc, char *out, size_t outlen)
{
	if (rc == -EOPNOTSUPP)
		snprintf(out, outlen, "no cache on this node (BcastCacheSize=0)");
	else
		snprintf(out, outlen, "%s", strerror(-rc));
	return 1;
}

extern int nm_bcast_cache_ctl_list(nm_t *nm, const nm_peer_t *peer,
				   char *args, char *out, size_t outlen)
{
	char *text = NULL, *p, *nl;
	size_t len = 0, used, room;
	uint64_t bytes = 0, limit = nm ? nm->conf.bcast_cache_bytes : 0;
	int n, shown = 0, head;
	FILE *mem;
	uid_t uid;

	if (whose(peer, args, &uid, out, outlen, "cache_list"))
		return 1;
	if (!(mem = open_memstream(&text, &len)))
		return cache_off(-errno, out, outlen);
	n = nm_bcast_cache_list(uid, mem);
	fclose(mem);
	if (n < 0) {
		free(text);
		return cache_off(n, out, outlen);
	}
	for (p = text; p && *p; p = nl + 1) {
		unsigned long long size = 0;

		if (!(nl = strchr(p, '\n')))
			break;
		if (sscanf(p, "%*u %*s %llu", &size) == 1)
			bytes += size;
	}
	/* as many whole lines as the reply holds after the summary, which
	 * is no longer than with every line shown */
	head = snprintf(NULL, 0, "entries=%d bytes=%" PRIu64 " limit=%" PRIu64
			" shown=%d", n, bytes, limit, n);
	room = outlen > (size_t) head + 1 ? outlen - (size_t) head - 1 : 0;
	for (p = text, used = 0; p && *p; p = nl + 1, shown++) {
		if (!(nl = strchr(p, '\n')) || used + (size_t) (nl - p) + 1 > room)
			break;
		used += (size_t) (nl - p) + 1;
	}
	snprintf(out, outlen, "entries=%d bytes=%" PRIu64 " limit=%" PRIu64
		 " shown=%d%s%.*s", n, bytes, limit, shown, shown ? "\n" : "",
		 used ? (int) used - 1 : 0, text ? text : "");
	free(text);
	return 0;
}

extern int nm_bcast_cache_ctl_purge(nm_t *nm, const nm_peer_t *peer,
				    char *args, char *out, size_t outlen)
{
	uid_t uid;
	int n;

	(void) nm;
	if (whose(peer, args, &uid, out, outlen, "cache_purge"))
		return 1;
	if ((n = nm_bcast_cache_purge(uid)) < 0)
		return cache_off(n, out, outlen);
	if (uid == NM_BCAST_CACHE_ALL)
		nm_info("bcast cache: every user's purged by uid %u, entries "
			"removed: %d", (unsigned) peer->uid, n);
	snprintf(out, outlen, "purged=%d", n);
	return 0;
}

extern void nm_bcast_cache_ctl_register(void)
{
	nm_ctl_register("cache_list", nm_bcast_cache_ctl_list);
	nm_ctl_register("cache_purge", nm_bcast_cache_ctl_purge);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_ctl.c - the node manager's local control socket.
 *
 * slurmstepd (through the SPANK plugin), stormctl and tests talk to the NM
 * of their node through a SOCK_SEQPACKET unix socket in BcastDir: message
 * boundaries come free, and SO_PEERCRED tells who asks, so no request is
 * trusted for the identity it claims.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nm.h"
#include "nm_reject.h"
#include "nm_relay_report.h"

#define NM_CTL_MAX_CMDS 32
#define NM_CTL_MSG 4096
/* Replies may be longer: a gang-trace reply carries ~80 bytes a strobe,
 * and at 4 KiB (about 50 strobes) the gang benchmark's reader fell behind
 * 16 nodes' rings at 5 ms quanta.  Clients read SEQPACKET replies whole
 * into a buffer at least this large (the harness reads 64 KiB). */
#define NM_CTL_REPLY 32768

static struct {
	const char *name;
	nm_ctl_f fn;
} cmds[NM_CTL_MAX_CMDS];
static int ncmds;
static int listen_fd = -1;

extern int nm_ctl_register(const char *command, nm_ctl_f fn)
{
	if (ncmds == NM_CTL_MAX_CMDS)
		return -ENOSPC;
	cmds[ncmds].name = command;
	cmds[ncmds].fn = fn;
	ncmds++;
	return 0;
}

static int ctl_ping(nm_t *nm, const nm_peer_t *peer, char *args, char *out,
		    size_t outlen)
{
	snprintf(out, outlen, "node=%s rank=%d nnodes=%d pid=%d", nm->node,
		 nm->rank, nm->nnodes, (int) getpid());
	return 0;
}

extern int nm_ctl_open(nm_t *nm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(nm->sock_path) >= sizeof(sa.sun_path)) {
		nm_error("control socket path too long: %s", nm->sock_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, nm->sock_path);
	/* We hold the node lock, so a socket file left here is stale. */
	unlink(nm->sock_path);
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	if (bind(listen_fd, (struct sockaddr *) &sa, sizeof(sa)) ||
	    chmod(nm->sock_path, 0666) || listen(listen_fd, 64)) {
		int e = errno;

		nm_error("control socket %s: %s", nm->sock_path, strerror(e));
		close(listen_fd);
		listen_fd = -1;
		return -e;
	}
	nm_ctl_register("ping", ctl_ping);
	return 0;
}

/* One request; false when a handler kept the connection. */
static bool serve_one(nm_t *nm, int fd)
{
	char req[NM_CTL_MSG], reply[NM_CTL_REPLY];
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	nm_peer_t peer;
	ssize_t n;
	char *args;
	int i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		return true;
	peer.pid = cred.pid;
	peer.uid = cred.uid;
	peer.gid = cred.gid;
	peer.fd = fd;
	n = recv(fd, req, sizeof(req) - 1, 0);
	if (n <= 0)
		return true;
	req[n] = '\0';
	args = strchr(req, ' ');
	if (args)
		*args++ = '\0';
	else
		args = req + n;
	for (i = 0; i < ncmds; i++)
		if (!strcmp(cmds[i].name, req))
			break;
	if (i == ncmds) {
		nm_reject_count(STORM_REJECT_CTL);
		snprintf(reply, sizeof(reply), "error unknown command '%.64s'",
			 req);
	} else {
		char text[NM_CTL_REPLY - 8] = "";
		int rc = cmds[i].fn(nm, &peer, args, text, sizeof(text));

		if (rc == NM_CTL_KEPT)
			return false;
		snprintf(reply, sizeof(reply), "%s%s%s", rc ? "error" : "ok",
			 text[0] ? " " : "", text);
	}
	(void) send(fd, reply, strlen(reply), MSG_NOSIGNAL);
	return true;
}

extern void nm_ctl_serve(nm_t *nm)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

	while (!nm->stop) {
		int fd, rc = poll(&pfd, 1, 200);

		nm_reject_tick(nm);
		nm_relay_report_tick(nm);
		if (rc <= 0)
			continue;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* A client that never writes must not stall the NM. */
		struct timeval tv = { .tv_sec = 2 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (serve_one(nm, fd))
			close(fd);
	}
}

extern void nm_ctl_close(nm_t *nm)
{
	if (listen_fd >= 0) {
		close(listen_fd);
		listen_fd = -1;
		unlink(nm->sock_path);
	}
}

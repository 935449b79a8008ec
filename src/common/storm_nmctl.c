/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_nmctl.c - node manager control socket, client side (see .h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "storm_nmctl.h"

extern void storm_nm_paths(const char *bcast_dir, const char *node,
			   char *lock, size_t locklen, char *sock,
			   size_t socklen)
{
	if (lock)
		snprintf(lock, locklen, "%s/.nm-%s.lock", bcast_dir, node);
	if (sock)
		snprintf(sock, socklen, "%s/.nm-%s.sock", bcast_dir, node);
}

extern void storm_nm_instance_lock(const char *slurm_conf, const char *node,
				   char *out, size_t len)
{
	char real[PATH_MAX];
	const char *conf = slurm_conf;
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a */

	if (!conf || !conf[0])
		conf = getenv("SLURM_CONF");
	if (!conf || !conf[0])
		conf = "/etc/slurm/slurm.conf";
	/* one file, however it is named (relative, through a link) */
	if (realpath(conf, real))
		conf = real;
	for (const unsigned char *p = (const unsigned char *) conf; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	snprintf(out, len, "%s/nm-%s-%016" PRIx64 ".lock", STORM_NM_RUN_DIR,
		 node, h);
}

extern int storm_nm_request(const char *sock_path, const char *req,
			    char *reply, size_t replylen, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
	ssize_t n;
	int fd, rc = 0;

	if (!replylen)
		return -EINVAL;
	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 ||
	    (n = recv(fd, reply, replylen - 1, 0)) < 0) {
		rc = -errno;
		goto done;
	}
	reply[n] = '\0';
done:
	close(fd);
	return rc;
}

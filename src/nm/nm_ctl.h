/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_ctl.h - the local control socket (nm_ctl.c).
 */
#ifndef STORM_NM_CTL_H
#define STORM_NM_CTL_H

#include <stddef.h>
#include <sys/types.h>

#include "nm.h"

/* A SOCK_SEQPACKET unix socket; one request per message:
 * "<command> <args...>"; one reply per request.  The peer's uid/pid come
 * from SO_PEERCRED, never from the message. */
typedef struct nm_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int fd;			/* the connection (see NM_CTL_KEPT) */
} nm_peer_t;
/* Handler: write text into out; return 0 (reply "ok <text>") or nonzero
 * (reply "error <text>"), or NM_CTL_KEPT: the handler took peer->fd and
 * replies on it (then closes it) later, from another thread. */
#define NM_CTL_KEPT 0x4b505421
typedef int (*nm_ctl_f)(nm_t *nm, const nm_peer_t *peer, char *args,
			char *out, size_t outlen);
extern int nm_ctl_register(const char *command, nm_ctl_f fn);
extern int nm_ctl_open(nm_t *nm);
/* Serve requests until nm->stop; poll timeout in ms between checks. */
extern void nm_ctl_serve(nm_t *nm);
extern void nm_ctl_close(nm_t *nm);

#endif /* STORM_NM_CTL_H */

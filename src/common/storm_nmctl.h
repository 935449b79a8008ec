/*
 * storm_nmctl.h - the client side of the node manager's control socket and
 * the paths of a node manager's runtime files, shared by storm-nm, the SPANK
 * plugin and stormctl (no Slurm dependency).
 */
#ifndef STORM_NMCTL_H
#define STORM_NMCTL_H

#include <stddef.h>

/* The lock and control socket of a node's manager under BcastDir. */
extern void storm_nm_paths(const char *bcast_dir, const char *node,
			   char *lock, size_t locklen, char *sock,
			   size_t socklen);

/*
 * One request, one reply ("ok ..." or "error ...") over a node manager's
 * SOCK_SEQPACKET control socket.  Returns 0 or -errno.
 */
extern int storm_nm_request(const char *sock_path, const char *req,
			    char *reply, size_t replylen, int timeout_ms);

#endif /* STORM_NMCTL_H */

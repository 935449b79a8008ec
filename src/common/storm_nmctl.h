/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * The node manager's instance lock, /run/storm/nm-NODE-HASH.lock: one node
 * manager per node of a cluster, whatever storm.conf says.  Keyed by the
 * node name and slurm.conf's path (HASH, 16 hex digits of its real path;
 * NULL or empty: $SLURM_CONF, else /etc/slurm/slurm.conf), never by
 * storm.conf's content: a storm.conf read while it is rewritten in place
 * (empty, all defaults, another BcastDir) must not make another lock.
 */
#define STORM_NM_RUN_DIR "/run/storm"
extern void storm_nm_instance_lock(const char *slurm_conf, const char *node,
				   char *out, size_t len);

/*
 * One request, one reply ("ok ..." or "error ...") over a node manager's
 * SOCK_SEQPACKET control socket.  Returns 0 or -errno.
 */
extern int storm_nm_request(const char *sock_path, const char *req,
			    char *reply, size_t replylen, int timeout_ms);

#endif /* STORM_NMCTL_H */

/*
 * nm.h - the STORM node manager (storm-nm), one per compute node.
 *
 * The NM joins the STORM fabric (libstormmech) as the node's rank, and is
 * the node's end of every STORM function: it receives broadcast files into
 * the node-local RAM disk, switches job cgroups on the Machine Manager's
 * strobe, and answers COMPARE-AND-WRITE for fault detection.  Functions
 * plug in as modules (nm_module_t) so that each lives in its own file.
 *
 * It is started by the SPANK plugin from slurmd (or by systemd, see
 * contribs/systemd), runs detached so that it survives slurmd restarts, and
 * refuses to run twice for one node (a lock in BcastDir).
 */
#ifndef STORM_NM_H
#define STORM_NM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/common/storm_conf.h"
#include "src/common/storm_nmctl.h"
#include "src/stormmech/stormmech.h"

#define NM_NAME "storm-nm"

typedef struct nm_node {
	char name[64];
	char addr[64];		/* NodeAddr */
	int port;		/* fabric port */
} nm_node_t;

typedef struct nm {
	char node[64];		/* this node's Slurm name */
	char slurm_conf[4096];
	char storm_conf[4096];
	storm_conf_t conf;

	int rank;		/* index of this node in the node table */
	int nnodes;
	nm_node_t *nodes;	/* slurm.conf node table order */

	storm_ctx_t *ctx;	/* this node's fabric endpoint */
	int lock_fd;
	char lock_path[4200];
	char sock_path[4200];
	volatile int stop;	/* set by SIGTERM/SIGINT */
} nm_t;

/* ---- logging (nm_log.c) ---- */
typedef enum { NM_ERROR, NM_INFO, NM_VERBOSE, NM_DEBUG } nm_level_t;
extern int nm_log_open(const char *path, nm_level_t level);
extern void nm_log_set_tag(const char *node);
/* The log's file descriptor (kept by a forked child), or -1. */
extern int nm_log_fd(void);
extern void nm_log(nm_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define nm_error(...) nm_log(NM_ERROR, __VA_ARGS__)
#define nm_info(...) nm_log(NM_INFO, __VA_ARGS__)
#define nm_verbose(...) nm_log(NM_VERBOSE, __VA_ARGS__)
#define nm_debug(...) nm_log(NM_DEBUG, __VA_ARGS__)
/* libstormmech's log callback, routed into the NM log */
extern void nm_log_mech(void *arg, storm_log_level_t lvl, const char *msg);

/* ---- node table (nm_nodes.c) ---- */
/* Fill nm->nodes/nnodes/rank from slurmctld; retries until nm->stop. */
extern int nm_nodes_load(nm_t *nm);
/* Fabric port of the node at index i under the configured Port range. */
extern int nm_node_port(const storm_conf_t *conf, int i);

/* ---- fabric (nm_fabric.c) ---- */
extern int nm_fabric_open(nm_t *nm);
extern void nm_fabric_close(nm_t *nm);

/* ---- local control socket (nm_ctl.c) ----
 * A SOCK_SEQPACKET unix socket; one request per message:
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
/* ---- modules (nm_modules.c) ---- */
typedef struct nm_module {
	const char *name;
	int (*init)(nm_t *nm);	/* after the fabric is up; <0 aborts start */
	void (*fini)(nm_t *nm);	/* in reverse order at exit */
} nm_module_t;
extern const nm_module_t *const nm_modules[];

#endif /* STORM_NM_H */

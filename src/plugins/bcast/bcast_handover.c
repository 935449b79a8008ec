/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_handover.c - srun's hand-over of its executable to the STORM
 * broadcast, shared by the launch plugin (22.05) and the SPANK plugin
 * (23.02 on); see bcast_handover.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "src/common/storm_bcast.h"
#include "bcast_client.h"
#include "bcast_handover.h"

extern void storm_handover_setup(storm_handover_t *h, const char *prefix,
				 const char *slurm_conf_path, bool bcast_flag,
				 const char *bcast_file, bool compress,
				 bool send_libs, const char *exclude)
{
	const char *env = getenv("SLURM_STORM_BCAST");
	char path[4096], err[STORM_CONF_ERRLEN];
	bool force = env && (!strcasecmp(env, "yes") || !strcmp(env, "1"));

	memset(h, 0, sizeof(*h));
	/* storm_tree_free() closes them: never srun's stdin */
	h->tree.fd = h->tree.rfd = -1;
	h->prefix = prefix;
	if (env && (!strcasecmp(env, "no") || !strcmp(env, "0"))) {
		slurm_verbose("%s: SLURM_STORM_BCAST=no: broadcasts are Slurm's own",
			      prefix);
		return;
	}
	storm_conf_path(slurm_conf_path, path, sizeof(path));
	if (storm_conf_load(path, true, &h->conf, err, sizeof(err))) {
		slurm_error("%s: %s; STORM broadcast is off for this srun",
			    prefix, err);
		return;
	}
	if (!bcast_flag && !h->conf.bcast_executable && !force)
		return;
	h->active = true;
	h->keep_path = !bcast_flag;
	h->overlap = h->conf.bcast_overlap;
	if ((env = getenv("SLURM_STORM_BCAST_OVERLAP")))
		h->overlap = !strcasecmp(env, "yes") || !strcmp(env, "1");
	if (bcast_flag && bcast_file && bcast_file[0] == '/')
		h->dest = strdup(bcast_file);
	h->libs = send_libs || h->conf.bcast_libraries;
	if ((env = getenv("SLURM_STORM_BCAST_LIBS")))
		h->libs = !strcasecmp(env, "yes") || !strcmp(env, "1");
	if (h->libs && exclude)
		h->exclude = strdup(exclude);
	if ((env = getenv("SLURM_STORM_FILES")) && env[0])
		h->files = strdup(env);
	/* Compression is Slurm's (sbcast over slurmd); STORM's fabric moves
	 * the file as it is.  Say so rather than drop the option silently. */
	if (compress)
		slurm_info("%s: --compress does not apply to the STORM broadcast: the file is sent uncompressed (SLURM_STORM_BCAST=no gives Slurm's own, compressed broadcast)",
			   prefix);
	slurm_verbose("%s: the executable goes through the STORM broadcast%s%s",
		      prefix, h->dest ? " to " : "", h->dest ? h->dest : "");
}

extern int storm_handover_check(const storm_handover_t *h, const char *path,
				char *err, size_t errlen)
{
	return storm_bcast_check_file(path, h->conf.bcast_max_bytes, err,
				      errlen);
}

/* Why a node-local copy of path would not behave as path itself, or
 * NULL; why[] holds the words. */
static const char *_cannot_keep(const storm_handover_t *h, const char *path,
				const struct stat *st, char *why, size_t len)
{
	int fd;

	if (st->st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len, "it is set-user-ID or set-group-ID, which a copy owned by the user cannot keep");
		return why;
	}
	if (getxattr(path, "security.capability", NULL, 0) >= 0) {
		snprintf(why, len, "it has file capabilities, which a copy cannot keep");
		return why;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(why, len, "it cannot be read (%s)", strerror(errno));
		return why;
	}
	close(fd);
	if ((uint64_t) st->st_size > h->conf.bcast_max_bytes) {
		snprintf(why, len, "it is larger than BcastMaxSize (%" PRIu64
			 " > %" PRIu64 " bytes)", (uint64_t) st->st_size,
			 h->conf.bcast_max_bytes);
		return why;
	}
	return NULL;
}

extern int storm_handover_decide(storm_handover_t *h, const char *path,
				 char *err, size_t errlen)
{
	char why[256];
	struct stat st;

	if (!h->keep_path)
		return storm_handover_check(h, path, err, errlen);
	/* what cannot run at all stops srun, as it always did */
	if (storm_bcast_stat_regular(path, &st, err, errlen))
		return -1;
	if (!_cannot_keep(h, path, &st, why, sizeof(why)))
		return 0;
	/* a site-wide setting must not change what the program does */
	slurm_info("%s: %s is not broadcast: %s; the tasks run it from its own path, as without STORM",
		   h->prefix, path, why);
	h->active = false;
	return 1;
}

/* A plain file name for the copy on the nodes. */
static void _copy_name(const char *path, uint32_t step, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	size_t o;

	base = base ? base + 1 : path;
	snprintf(out, len, "s%u_%.190s", step, base);
	for (o = 0; out[o]; o++)
		if ((unsigned char) out[o] <= ' ' || out[o] == '/' ||
		    (unsigned char) out[o] >= 0x7f)
			out[o] = '_';
}

/* What travels with the executable (bcast_tree.h): a second request,
 * for the bundle; 0 (with or without one) or -1 (srun stops). */
static int _prepare_tree(storm_handover_t *h, const char *path,
			 uint32_t step)
{
	char err[1024], real[PATH_MAX];
	const char *exe_entry = NULL;
	int rc;

	/* with a cache on the nodes the executable is cached too: in the
	 * bundle, at its real path, where the nodes lay it over the path
	 * the task executes (storm_present.c), as a library's copy */
	if (h->keep_path && h->conf.bcast_cache_bytes > 0 &&
	    realpath(path, real))
		exe_entry = real;
	if (!h->libs && !h->files && !exe_entry)
		return 0;
	rc = storm_tree_build(&h->tree, path, h->libs, h->libs && !h->keep_path,
			      h->exclude, h->files, h->conf.bcast_max_bytes,
			      h->conf.bcast_cache_bytes > 0, exe_entry, err,
			      sizeof(err));
	if (h->tree.note[0])
		slurm_info("%s: %s: %sthe tasks load them from their own paths",
			   h->prefix, path, h->tree.note);
	if (rc < 0) {
		slurm_error("%s: %s", h->prefix, err);
		return -1;
	}
	if (!rc)
		return 0;
	h->has_tree = true;
	h->treq = h->req;
	h->treq.path = h->tree.path;
	h->treq.tree = true;
	if (h->tree.slurm_libs) {
		/* Slurm's: "<copy>_libs" beside the copy */
		snprintf(h->tname, sizeof(h->tname), "%.249s_libs", h->name);
	} else {
		h->treq.dest_dir = NULL;
		snprintf(h->tname, sizeof(h->tname), "s%u_tree", step);
	}
	h->treq.dest_name = h->tname;
	h->rreq = h->treq;
	h->rreq.path = h->tree.rfd >= 0 ? h->tree.rpath : NULL;
	h->tree_placed = false;
	if (!(h->tremote = storm_bcast_remote(&h->treq)) ||
	    (h->tree.exe && asprintf(&h->exe_copy, "%s%s", h->tremote,
				     exe_entry) < 0)) {
		h->exe_copy = NULL;
		slurm_error("%s: out of memory", h->prefix);
		return -1;
	}
	slurm_verbose("%s: %d libraries and %d named files or directories (%" PRIu64 " bytes) go to %s",
		      h->prefix, h->tree.libs, h->tree.files, h->tree.size,
		      h->tremote);
	return 0;
}

extern int storm_handover_prepare(storm_handover_t *h, const char *path,
				  uint32_t job, uint32_t step,
				  const char *nodelist)
{
	h->path = strdup(path);
	h->nodes = strdup(nodelist);
	if (!h->path || !h->nodes) {
		slurm_error("%s: out of memory", h->prefix);
		return -1;
	}
	memset(&h->req, 0, sizeof(h->req));
	h->req.conf = &h->conf;
	h->req.path = h->path;
	h->req.job = job;
	h->req.step = step;
	h->req.nodelist = h->nodes;
	if (h->dest) {
		size_t l = strlen(h->dest);
		char *slash;

		snprintf(h->dir, sizeof(h->dir), "%s", h->dest);
		if (l && h->dest[l - 1] == '/') {
			/* a directory: Slurm's name, without the node suffix */
			while (l > 1 && h->dir[l - 1] == '/')
				h->dir[--l] = '\0';
			snprintf(h->name, sizeof(h->name), "slurm_bcast_%u.%u",
				 job, step);
		} else {
			slash = strrchr(h->dir, '/');
			snprintf(h->name, sizeof(h->name), "%s", slash + 1);
			*slash = '\0';
			if (!h->dir[0])
				snprintf(h->dir, sizeof(h->dir), "/");
		}
		if (!storm_bcast_name_ok(h->name)) {
			slurm_error("%s: --bcast=%s: the file name must not start with '.' or contain blanks",
				    h->prefix, h->dest);
			return -1;
		}
		h->req.dest_dir = h->dir;
	} else {
		_copy_name(path, step, h->name, sizeof(h->name));
	}
	h->req.dest_name = h->name;
	return _prepare_tree(h, path, step);
}

/*
 * The bundle as references first (when the nodes keep a cache): when
 * every node placed every file from its own cache, the tree is in place
 * and the bundle itself does not travel.  Runs before the executable's
 * transfer starts, so that srun knows which transfer the tasks wait for.
 * A node that lacked a file, or any failure here, only means the bundle
 * is sent: its transfer says what is wrong, if anything is.
 */
static void _probe(storm_handover_t *h)
{
	char *tremote = NULL, err[STORM_RELAY_MAX_MSG + 64], lerr[512];
	uint8_t *lacked = NULL;
	size_t lacked_len = 0;
	uint64_t full = h->tree.size;
	int rc;

	if (!h->has_tree || !h->rreq.path || h->tree_placed)
		return;
	do
		h->rreq.key = storm_bcast_new_key();
	while (h->rreq.key == h->req.key || h->rreq.key == h->treq.key);
	h->rreq.absent = &lacked;
	h->rreq.absent_len = &lacked_len;
	rc = storm_bcast_run(&h->rreq, &tremote, err, sizeof(err));
	free(tremote);
	h->tree_placed = rc == 0;
	/* only what some node lacks travels, the rest as references */
	if (rc == 1 && lacked) {
		if (storm_tree_lacked(&h->tree, lacked, lacked_len, lerr,
				      sizeof(lerr)))
			slurm_verbose("%s: every file is sent: %s", h->prefix,
				      lerr);
		else
			slurm_verbose("%s: the nodes lack some of the files: %" PRIu64 " of %" PRIu64 " bytes are sent",
				      h->prefix, h->tree.size, full);
	}
	free(lacked);
	slurm_verbose("%s: %" PRIu64 " files' SHA-256 from srun's memo, %" PRIu64 " bytes hashed",
		      h->prefix, h->tree.sha_memo_hits, h->tree.sha_hashed_bytes);
	if (rc == 0)
		slurm_verbose("%s: every node held the %d libraries and named files in its cache: %" PRIu64 " bytes of references sent instead of %" PRIu64,
			      h->prefix, h->tree.libs + h->tree.files,
			      h->tree.rsize, h->tree.size);
	else
		slurm_verbose("%s: sending the libraries and named files (%" PRIu64 " bytes): %s",
			      h->prefix, h->tree.size, err);
}

/* The executable, then its bundle unless the nodes' caches placed it: all
 * or nothing (a task waits for the last one, so it starts only when both
 * are on every node). */
static int _run_all(storm_handover_t *h, char **remote)
{
	char *tremote = NULL;
	int rc = 0;

	if (h->exe_copy) {	/* it is in the bundle */
		if (!(*remote = strdup(h->exe_copy))) {
			snprintf(h->err, sizeof(h->err), "out of memory");
			return -1;
		}
	} else {
		rc = storm_bcast_run(&h->req, remote, h->err, sizeof(h->err));
	}
	h->tree_failed = false;
	if (!rc && h->has_tree && !h->tree_placed) {
		rc = storm_bcast_run(&h->treq, &tremote, h->err,
				     sizeof(h->err));
		h->tree_failed = rc != 0;
		free(tremote);
	}
	return rc;
}

extern int storm_handover_run(storm_handover_t *h)
{
	_probe(h);
	free(h->remote);
	h->remote = NULL;
	h->rc = _run_all(h, &h->remote);
	return h->rc ? -1 : 0;
}

static void *_thread(void *arg)
{
	storm_handover_t *h = arg;
	char *remote = NULL;

	h->rc = _run_all(h, &remote);
	free(remote);	/* h->remote, known before the start */
	/* An overlapped broadcast's failure is said at once: the launch may
	 * still be waiting for a node that is gone (its link cut), which
	 * Slurm gives its MessageTimeout and more. */
	if (h->rc && h->on_failure)
		h->on_failure(h);
	return NULL;
}

extern int storm_handover_start(storm_handover_t *h, char *wait_val,
				size_t len)
{
	struct stat st;
	uint64_t size, wait_key;
	int prc;

	h->req.key = storm_bcast_new_key();
	wait_key = h->req.key;
	if (h->has_tree) {
		do
			h->treq.key = storm_bcast_new_key();
		while (h->treq.key == h->req.key);
		_probe(h);
		/* what the tasks wait for: the last transfer that runs */
		if (!h->tree_placed)
			wait_key = h->treq.key;
		else if (h->exe_copy)
			wait_key = h->rreq.key;
	}
	free(h->remote);
	h->remote = h->exe_copy ? strdup(h->exe_copy) :
				  storm_bcast_remote(&h->req);
	if (!h->remote || stat(h->req.path, &st)) {
		slurm_error("%s: %s: %s", h->prefix, h->req.path,
			    h->remote ? strerror(errno) : "out of memory");
		return -1;
	}
	size = (uint64_t) st.st_size +
	       (h->has_tree && !h->tree_placed ? h->tree.size : 0);
	snprintf(wait_val, len, "%" PRIx64 ":%" PRIu64, wait_key,
		 storm_bcast_wait_ms(&h->conf, size));
	if ((prc = pthread_create(&h->thread, NULL, _thread, h))) {
		slurm_error("%s: cannot start the broadcast: %s", h->prefix,
			    strerror(prc));
		return -1;
	}
	h->threaded = true;
	return 0;
}

extern int storm_handover_join(storm_handover_t *h)
{
	if (h->threaded) {
		pthread_join(h->thread, NULL);
		h->threaded = false;
	}
	return h->rc ? -1 : 0;
}

extern int storm_handover_env(const storm_handover_t *h,
			      int (*set)(void *arg, const char *name,
					 const char *value),
			      void *arg)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char *v;
	int rc = 0;

	if (!h->active || !h->has_tree)
		return 0;
	if (h->tree.binds && ((rc = set(arg, STORM_BCAST_TREE_ENV, h->tremote)) ||
			      (rc = set(arg, STORM_BCAST_BINDS_ENV,
					h->tree.binds))))
		return rc;
	if (h->tree.files && (rc = set(arg, STORM_FILES_DIR_ENV, h->tremote)))
		return rc;
	if (!h->tree.slurm_libs || !h->tree.libs)
		return 0;
	/* as slurmd does for srun --bcast --send-libs */
	if (asprintf(&v, "%s%s%s", h->tremote, old && old[0] ? ":" : "",
		     old && old[0] ? old : "") < 0)
		return -1;
	rc = set(arg, "LD_LIBRARY_PATH", v);
	free(v);
	return rc;
}

extern void storm_handover_say_failure(const storm_handover_t *h,
				       const char *step)
{
	slurm_error("%s: Failed to broadcast %s'%s' for %s: %s. Step launch aborted.",
		    h->prefix, h->tree_failed ?
		    "the libraries and named files of " : "", h->req.path,
		    step, h->err);
}

extern void storm_handover_done(storm_handover_t *h)
{
	storm_handover_join(h);
	free(h->path);
	free(h->nodes);
	free(h->remote);
	free(h->tremote);
	free(h->exe_copy);
	h->path = h->nodes = h->remote = h->tremote = h->exe_copy = NULL;
	storm_tree_free(&h->tree);
	h->has_tree = false;
}

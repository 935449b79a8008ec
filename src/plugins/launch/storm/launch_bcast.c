/*
 * launch_bcast.c - srun's side of the STORM file broadcast, without the
 * fabric: checks the file, and runs the broadcast in a helper process that
 * loads the fabric client module (launch_bcast_client.c).
 *
 * Joining the fabric is the slow part of a broadcast on a small host (about
 * 350 ms here: library constructors, provider probing) and the node table
 * is an RPC.  Both start as soon as srun knows it will broadcast (option
 * parsing), so they overlap with the job allocation and step creation; an
 * srun that does not broadcast never loads libfabric at all.
 *
 * Not in a thread: srun's main thread changes its environment (setenv)
 * while it allocates, and both libfabric and Slurm's auth plugin read it
 * (getenv), which crashes.  So a helper process forked at option parsing
 * (srun is still single-threaded then) joins the fabric with its own copy of
 * the environment, waits on a pipe for the step, broadcasts, and reports.
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch_bcast.h"

extern int storm_bcast_check_file(const char *path, uint64_t max_bytes,
				  char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	if ((uint64_t) st.st_size > max_bytes) {
		snprintf(err, errlen, "%s: File too large (%" PRIu64
			 " bytes, BcastMaxSize=%" PRIu64 ")", path,
			 (uint64_t) st.st_size, max_bytes);
		return -1;
	}
	return 0;
}

static struct {
	pid_t pid;
	int to, from;
	const storm_conf_t *conf;
} helper = { -1, -1, -1, NULL };

typedef struct helper_req {
	uint32_t job, step;
	int has_dest;
	char path[4096];
	char dest_dir[4096];
	char name[256];
	char nodelist[8192];
} helper_req_t;

typedef struct helper_rep {
	int rc;
	char remote[4096];
	char err[4096];
} helper_rep_t;

/* The client module, from the directory this plugin was loaded from. */
static struct {
	void *h;
	void (*prepare)(const storm_conf_t *conf);
	int (*run)(const storm_bcast_req_t *req, char **remote, char *err,
		   size_t errlen);
	void (*release)(void);
} cl;

static int load_client(char *err, size_t errlen)
{
	Dl_info self;
	char path[4096];
	const char *slash;

	if (cl.h)
		return 0;
	if (!dladdr((void *) load_client, &self) || !self.dli_fname ||
	    !(slash = strrchr(self.dli_fname, '/'))) {
		snprintf(err, errlen, "cannot locate the launch plugin's directory");
		return -1;
	}
	snprintf(path, sizeof(path), "%.*s/%s", (int) (slash - self.dli_fname),
		 self.dli_fname, STORM_BCAST_CLIENT_SO);
	cl.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cl.h) {
		snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
		return -1;
	}
	cl.prepare = (void (*)(const storm_conf_t *))
		dlsym(cl.h, "storm_bcast_client_prepare");
	cl.run = (int (*)(const storm_bcast_req_t *, char **, char *, size_t))
		dlsym(cl.h, "storm_bcast_client_run");
	cl.release = (void (*)(void)) dlsym(cl.h, "storm_bcast_client_release");
	if (!cl.prepare || !cl.run || !cl.release) {
		snprintf(err, errlen, "%s: not the STORM broadcast client", path);
		dlclose(cl.h);
		memset(&cl, 0, sizeof(cl));
		return -1;
	}
	return 0;
}

/* In this process: load the module, join, broadcast. */
static int bcast_local(const storm_bcast_req_t *req, char **remote,
		       char *err, size_t errlen)
{
	if (load_client(err, errlen))
		return -1;
	return cl.run(req, remote, err, errlen);
}

static void release_local(void)
{
	if (cl.h)
		cl.release();
}

static int io_full(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

static void helper_main(int in, int out)
{
	static helper_req_t rq;
	static helper_rep_t rep;
	storm_bcast_req_t req = { .conf = helper.conf };
	char *remote = NULL;

	/* a failure to load is reported with the request's answer */
	if (!load_client(rep.err, sizeof(rep.err)))
		cl.prepare(helper.conf);
	if (io_full(in, &rq, sizeof(rq), false))
		return;		/* srun went away before the step existed */
	rq.path[sizeof(rq.path) - 1] = rq.dest_dir[sizeof(rq.dest_dir) - 1] = '\0';
	rq.name[sizeof(rq.name) - 1] = rq.nodelist[sizeof(rq.nodelist) - 1] = '\0';
	req.path = rq.path;
	req.dest_dir = rq.has_dest ? rq.dest_dir : NULL;
	req.dest_name = rq.name;
	req.job = rq.job;
	req.step = rq.step;
	req.nodelist = rq.nodelist;
	rep.rc = bcast_local(&req, &remote, rep.err, sizeof(rep.err));
	if (remote)
		snprintf(rep.remote, sizeof(rep.remote), "%s", remote);
	free(remote);
	(void) io_full(out, &rep, sizeof(rep), true);
}

extern void storm_bcast_prepare(const storm_conf_t *conf)
{
	int a[2], b[2];
	pid_t pid;

	if (helper.pid > 0)
		return;
	helper.conf = conf;
	if (getenv("SLURM_STORM_BCAST_NOFORK"))
		return;		/* debugging: all in srun, at step launch */
	if (pipe2(a, O_CLOEXEC))
		return;
	if (pipe2(b, O_CLOEXEC)) {
		close(a[0]);
		close(a[1]);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		helper_main(a[0], b[1]);
		release_local();
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	if (pid < 0) {
		close(a[1]);
		close(b[0]);
		return;		/* storm_bcast_run() does it in-process */
	}
	helper.pid = pid;
	helper.to = a[1];
	helper.from = b[0];
}

static void helper_reap(void)
{
	if (helper.to >= 0)
		close(helper.to);
	if (helper.from >= 0)
		close(helper.from);
	helper.to = helper.from = -1;
	if (helper.pid > 0)
		while (waitpid(helper.pid, NULL, 0) < 0 && errno == EINTR)
			;
	helper.pid = -1;
}

extern void storm_bcast_cleanup(void)
{
	helper_reap();
	release_local();
}

extern int storm_bcast_run(const storm_bcast_req_t *req, char **remote,
			   char *err, size_t errlen)
{
	static helper_req_t rq;
	static helper_rep_t rep;

	*remote = NULL;
	if (helper.pid <= 0)
		return bcast_local(req, remote, err, errlen);
	memset(&rq, 0, sizeof(rq));
	rq.job = req->job;
	rq.step = req->step;
	rq.has_dest = req->dest_dir != NULL;
	if (snprintf(rq.path, sizeof(rq.path), "%s", req->path) >= (int) sizeof(rq.path) ||
	    snprintf(rq.dest_dir, sizeof(rq.dest_dir), "%s",
		     req->dest_dir ? req->dest_dir : "") >= (int) sizeof(rq.dest_dir) ||
	    snprintf(rq.name, sizeof(rq.name), "%s", req->dest_name) >= (int) sizeof(rq.name) ||
	    snprintf(rq.nodelist, sizeof(rq.nodelist), "%s", req->nodelist) >=
	    (int) sizeof(rq.nodelist)) {
		snprintf(err, errlen, "path or node list too long");
		helper_reap();
		return -1;
	}
	if (io_full(helper.to, &rq, sizeof(rq), true) ||
	    io_full(helper.from, &rep, sizeof(rep), false)) {
		snprintf(err, errlen, "the broadcast helper process died");
		helper_reap();
		return -1;
	}
	helper_reap();
	rep.err[sizeof(rep.err) - 1] = rep.remote[sizeof(rep.remote) - 1] = '\0';
	if (rep.rc) {
		snprintf(err, errlen, "%s", rep.err);
		return -1;
	}
	*remote = strdup(rep.remote);
	if (!*remote) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

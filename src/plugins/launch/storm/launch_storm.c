/*
 * launch_storm.c - srun's launch plugin for STORM.
 *
 * Wraps launch/slurm: step creation, I/O and task launch stay Slurm's; this
 * plugin is where srun hands executables and --bcast files to the STORM
 * broadcast, before the tasks are launched or (BcastOverlap) while they
 * are, each task then waiting for its node's copy before exec.
 *
 * It is installed as launch_slurm.so in the STORM PluginDir, which comes
 * before Slurm's own, so sites keep LaunchType=launch/slurm.  Any other
 * LaunchType changes Slurm's behaviour: srun only builds the MPIR debugger
 * table when LaunchType contains "slurm" (srun.c:392, else every task start
 * fails with "task_id too large"), sattach refuses to run unless it is
 * exactly "launch/slurm" (sattach.c:143), and slurmctld routes job signals
 * through srun instead of slurmd (job_mgr.c:16511, scancel/opt.c:188).
 * The stock plugin is therefore opened by absolute path from Slurm's own
 * plugin directory, never by PluginDir search, which would find us.
 */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/env.h"
#include "src/common/slurm_opt.h"
#include "src/srun/libsrun/launch.h"

#include "src/common/proc_args.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_conf.h"
#include "src/common/storm_wrap.h"

#include "launch_bcast.h"

const char plugin_name[] = "STORM launch plugin (wraps launch/slurm)";
const char plugin_type[] = "launch/slurm";	/* see above; logs say launch/storm */
#define PREFIX "launch/storm"
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static struct {
	int (*setup_srun_opt)(char **rest, slurm_opt_t *opt_local);
	int (*handle_multi_prog)(int command_pos, slurm_opt_t *opt_local);
	int (*create_job_step)(srun_job_t *job, bool use_all_cpus,
			       void (*signal_function)(int),
			       sig_atomic_t *destroy_job,
			       slurm_opt_t *opt_local);
	int (*step_launch)(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
			   uint32_t *global_rc,
			   slurm_step_launch_callbacks_t *step_callbacks,
			   slurm_opt_t *opt_local);
	int (*step_wait)(srun_job_t *job, bool got_alloc,
			 slurm_opt_t *opt_local);
	int (*step_terminate)(void);
	void (*print_status)(void);
	void (*fwd_signal)(int signal);
} base;

/* Same order as the struct above, as in srun's launch.c. */
static const char *const base_syms[] = {
	"launch_p_setup_srun_opt",
	"launch_p_handle_multi_prog_verify",
	"launch_p_create_job_step",
	"launch_p_step_launch",
	"launch_p_step_wait",
	"launch_p_step_terminate",
	"launch_p_print_status",
	"launch_p_fwd_signal",
};
static storm_wrap_t base_lib;

/*
 * The broadcast this srun takes over from Slurm: --bcast[=dest] (srun.c
 * would otherwise run its own bcast_file() after step creation), or every
 * executable with storm.conf BcastExecutable=yes.  SLURM_STORM_BCAST=no
 * leaves everything to stock Slurm (users, benchmarks); =yes broadcasts
 * the executable through STORM even without --bcast.
 */
static struct {
	bool active;
	bool overlap;		/* BcastOverlap, or SLURM_STORM_BCAST_OVERLAP */
	char *dest;		/* --bcast=PATH, else NULL */
	storm_conf_t conf;
} bc;

static void bcast_setup(slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	const char *env = getenv("SLURM_STORM_BCAST");
	char path[4096], err[STORM_CONF_ERRLEN];
	bool force = env && (!strcasecmp(env, "yes") || !strcmp(env, "1"));

	if (env && (!strcasecmp(env, "no") || !strcmp(env, "0"))) {
		verbose("%s: SLURM_STORM_BCAST=no: broadcasts are Slurm's own",
			PREFIX);
		return;
	}
	storm_conf_path(slurm_conf.slurm_conf, path, sizeof(path));
	if (storm_conf_load(path, true, &bc.conf, err, sizeof(err))) {
		error("%s: %s; STORM broadcast is off for this srun", PREFIX, err);
		return;
	}
	if (!sropt->bcast_flag && !bc.conf.bcast_executable && !force)
		return;
	bc.active = true;
	bc.overlap = bc.conf.bcast_overlap;
	if ((env = getenv("SLURM_STORM_BCAST_OVERLAP")))
		bc.overlap = !strcasecmp(env, "yes") || !strcmp(env, "1");
	if (sropt->bcast_flag && sropt->bcast_file &&
	    sropt->bcast_file[0] == '/')
		bc.dest = xstrdup(sropt->bcast_file);
	/* srun.c must not run its own bcast_file() as well */
	sropt->bcast_flag = false;
	/* Compression is Slurm's (sbcast over slurmd); STORM's fabric moves
	 * the file as it is.  Say so rather than drop the option silently. */
	if (sropt->compress != COMPRESS_OFF)
		info("%s: --compress does not apply to the STORM broadcast: the file is sent uncompressed (SLURM_STORM_BCAST=no gives Slurm's own, compressed broadcast)",
		     PREFIX);
	verbose("%s: the executable goes through the STORM broadcast%s%s",
		PREFIX, bc.dest ? " to " : "", bc.dest ? bc.dest : "");
}

/* Resolve and check the executable as srun does for --bcast, before any
 * allocation or step exists (srun's own message, then exit). */
static void bcast_check_exec(int command_pos, slurm_opt_t *opt_local)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	char err[4096], *full, *cmd;

	if (!bc.active)
		return;
	if (sropt->multi_prog || !sropt->argv || !sropt->argv[command_pos]) {
		verbose("%s: --multi-prog: executables are not broadcast", PREFIX);
		bc.active = false;
		return;
	}
	cmd = sropt->argv[command_pos];
	full = search_path(opt_local->chdir, cmd, true, X_OK, true);
	if (!full) {
		/* say why, as precisely as the file system tells */
		if (strchr(cmd, '/') &&
		    storm_bcast_check_file(cmd, bc.conf.bcast_max_bytes, err,
					   sizeof(err)))
			error("%s: %s", PREFIX, err);
		fatal("Can not execute %s", cmd);
	}
	if (storm_bcast_check_file(full, bc.conf.bcast_max_bytes, err,
				   sizeof(err))) {
		error("%s: %s", PREFIX, err);
		fatal("Can not execute %s", cmd);
	}
	xfree(sropt->argv[command_pos]);
	sropt->argv[command_pos] = full;
}

/* A plain file name for the copy on the nodes. */
static void bcast_name(const char *path, uint32_t step, char *out, size_t len)
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

/* One broadcast: the request and the buffers it points into. */
typedef struct bcast_run {
	storm_bcast_req_t req;
	char name[256], dir[4096];
	char *nodes;			/* the step's node list (xstrdup) */
	char *remote;			/* the path on the nodes */
	char err[4096];
	int rc;
	pthread_t thread;
	srun_job_t *job;		/* BcastOverlap: the launched step, whose
					 * failure the thread says itself */
} bcast_run_t;

/* Fill r from the step and --bcast; 0 or SLURM_ERROR (logged). */
static int bcast_prepare(srun_job_t *job, slurm_opt_t *opt_local,
			 bcast_run_t *r)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	slurm_step_layout_t *layout = NULL;

	memset(r, 0, sizeof(*r));
	r->req.conf = &bc.conf;
	if (job->step_ctx && job->step_ctx->step_resp)
		layout = job->step_ctx->step_resp->step_layout;
	if (!layout || !layout->node_list || !sropt->argv || !sropt->argv[0]) {
		error("%s: %ps: no node list or command to broadcast", PREFIX,
		      &job->step_id);
		return SLURM_ERROR;
	}
	r->nodes = xstrdup(layout->node_list);
	r->req.path = sropt->argv[0];
	r->req.job = job->step_id.job_id;
	r->req.step = job->step_id.step_id;
	r->req.nodelist = r->nodes;
	if (bc.dest) {
		size_t l = strlen(bc.dest);
		char *slash;

		snprintf(r->dir, sizeof(r->dir), "%s", bc.dest);
		if (l && bc.dest[l - 1] == '/') {
			/* a directory: Slurm's name, without the node suffix */
			while (l > 1 && r->dir[l - 1] == '/')
				r->dir[--l] = '\0';
			snprintf(r->name, sizeof(r->name), "slurm_bcast_%u.%u",
				 r->req.job, r->req.step);
		} else {
			slash = strrchr(r->dir, '/');
			snprintf(r->name, sizeof(r->name), "%s", slash + 1);
			*slash = '\0';
			if (!r->dir[0])
				snprintf(r->dir, sizeof(r->dir), "/");
		}
		if (!storm_bcast_name_ok(r->name)) {
			error("%s: --bcast=%s: the file name must not start with '.' or contain blanks",
			      PREFIX, bc.dest);
			xfree(r->nodes);
			return SLURM_ERROR;
		}
		r->req.dest_dir = r->dir;
	} else {
		bcast_name(r->req.path, r->req.step, r->name, sizeof(r->name));
	}
	r->req.dest_name = r->name;
	return SLURM_SUCCESS;
}

static void bcast_say_failure(bcast_run_t *r, const slurm_step_id_t *step)
{
	error("%s: Failed to broadcast '%s' for %ps: %s. Step launch aborted.",
	      PREFIX, r->req.path, step, r->err);
}

static void *bcast_thread(void *arg)
{
	bcast_run_t *r = arg;

	r->rc = storm_bcast_run(&r->req, &r->remote, r->err, sizeof(r->err));
	/* An overlapped broadcast's failure is said at once: the launch may
	 * still be waiting for a node that is gone (its link cut), which
	 * Slurm gives its MessageTimeout and more.  The step is killed once
	 * the launch returns (killing it while the launch is in flight left
	 * srun waiting for task exits that a cut node could not send). */
	if (r->rc && r->job)
		bcast_say_failure(r, &r->job->step_id);
	return NULL;
}

/* After the broadcast: srun's message, and argv[0] to the node-local copy
 * (as srun.c does after its own bcast_file()). */
static int bcast_done(srun_job_t *job, slurm_opt_t *opt_local, bcast_run_t *r)
{
	srun_opt_t *sropt = opt_local->srun_opt;

	if (r->rc) {
		if (!r->job)	/* else bcast_thread said it */
			bcast_say_failure(r, &job->step_id);
	} else {
		verbose("%s: %ps: broadcast %s to %s as %s", PREFIX,
			&job->step_id, r->req.path, r->nodes, r->remote);
		xfree(sropt->argv[0]);
		sropt->argv[0] = xstrdup(r->remote);
	}
	free(r->remote);
	r->remote = NULL;
	xfree(r->nodes);
	return r->rc ? SLURM_ERROR : SLURM_SUCCESS;
}

/*
 * BcastOverlap: launch the tasks while the file travels.  argv[0] names
 * the node-local copy from the start; each task waits in the SPANK plugin
 * (slurmstepd, before exec) until its node manager says the file of this
 * transfer key is in place, so no task ever executes a partial or an
 * older file.  If the broadcast fails, srun says why as before and kills
 * the step: the tasks never get past their wait.
 */
static int bcast_overlapped(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
			    uint32_t *global_rc,
			    slurm_step_launch_callbacks_t *step_callbacks,
			    slurm_opt_t *opt_local, bcast_run_t *r)
{
	srun_opt_t *sropt = opt_local->srun_opt;
	struct stat st;
	char *remote, *old;
	int rc, prc;
	bool ok;

	r->req.key = storm_bcast_new_key();
	remote = storm_bcast_remote(&r->req);
	if (!remote || stat(r->req.path, &st)) {
		error("%s: %ps: %s: %s", PREFIX, &job->step_id, r->req.path,
		      remote ? strerror(errno) : "out of memory");
		goto fail;
	}
	env_array_overwrite_fmt(&job->env, STORM_BCAST_WAIT_ENV,
				"%" PRIx64 ":%" PRIu64, r->req.key,
				storm_bcast_wait_ms(&bc.conf,
						    (uint64_t) st.st_size));
	r->job = job;
	if ((prc = pthread_create(&r->thread, NULL, bcast_thread, r))) {
		error("%s: %ps: cannot start the broadcast: %s", PREFIX,
		      &job->step_id, strerror(prc));
		goto fail;
	}
	/* the thread reads r->req.path: srun's own argv[0], freed after */
	old = sropt->argv[0];
	sropt->argv[0] = xstrdup(remote);
	free(remote);
	verbose("%s: launching %ps through launch/slurm while the broadcast runs",
		PREFIX, &job->step_id);
	rc = base.step_launch(job, cio_fds, global_rc, step_callbacks,
			      opt_local);
	pthread_join(r->thread, NULL);
	ok = bcast_done(job, opt_local, r) == SLURM_SUCCESS;
	xfree(old);
	if (ok)
		return rc;
	if (!rc && slurm_kill_job_step(job->step_id.job_id,
				       job->step_id.step_id, SIGKILL))
		error("%s: %ps: cannot kill the step: %s", PREFIX,
		      &job->step_id, slurm_strerror(slurm_get_errno()));
	*global_rc = 1;
	/* when the tasks were launched, srun waits for them to go */
	return rc;
fail:
	/* nothing launched, no broadcast started */
	free(remote);
	xfree(r->nodes);
	*global_rc = 1;
	return SLURM_ERROR;
}

extern int init(void)
{
	char err[4096];

	Dl_info self;

	if (storm_wrap_open(&base_lib, NULL, SLURM_PLUGINDIR, "launch_slurm",
			    base_syms, (void **) &base,
			    sizeof(base_syms) / sizeof(base_syms[0]), err,
			    sizeof(err))) {
		error("%s: cannot wrap launch/slurm: %s", PREFIX, err);
		return SLURM_ERROR;
	}
	if (dladdr((void *) init, &self) && self.dli_fname &&
	    storm_same_file(self.dli_fname, base_lib.path)) {
		error("%s: %s is this plugin, not Slurm's launch/slurm; install the STORM plugins in their own directory",
		      PREFIX, base_lib.path);
		storm_wrap_close(&base_lib, false);
		return SLURM_ERROR;
	}
	verbose("%s: init: wrapping %s", PREFIX, base_lib.path);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	xfree(bc.dest);
	storm_wrap_close(&base_lib, true);
	return SLURM_SUCCESS;
}

extern int launch_p_setup_srun_opt(char **rest, slurm_opt_t *opt_local)
{
	int rc = base.setup_srun_opt(rest, opt_local);

	bcast_setup(opt_local);
	return rc;
}

extern int launch_p_handle_multi_prog_verify(int command_pos,
					     slurm_opt_t *opt_local)
{
	int rc = base.handle_multi_prog(command_pos, opt_local);

	bcast_check_exec(command_pos, opt_local);
	return rc;
}

extern int launch_p_create_job_step(srun_job_t *job, bool use_all_cpus,
				    void (*signal_function)(int),
				    sig_atomic_t *destroy_job,
				    slurm_opt_t *opt_local)
{
	return base.create_job_step(job, use_all_cpus, signal_function,
				    destroy_job, opt_local);
}

extern int launch_p_step_launch(srun_job_t *job, slurm_step_io_fds_t *cio_fds,
				uint32_t *global_rc,
				slurm_step_launch_callbacks_t *step_callbacks,
				slurm_opt_t *opt_local)
{
	bcast_run_t r;

	if (bc.active) {
		if (bcast_prepare(job, opt_local, &r)) {
			*global_rc = 1;
			return SLURM_ERROR;
		}
		if (bc.overlap)
			return bcast_overlapped(job, cio_fds, global_rc,
						step_callbacks, opt_local, &r);
		bcast_thread(&r);
		if (bcast_done(job, opt_local, &r)) {
			/* no task starts anywhere; srun completes the step */
			*global_rc = 1;
			return SLURM_ERROR;
		}
	}
	verbose("%s: launching %ps through launch/slurm", PREFIX, &job->step_id);
	return base.step_launch(job, cio_fds, global_rc, step_callbacks,
				opt_local);
}

extern int launch_p_step_wait(srun_job_t *job, bool got_alloc,
			      slurm_opt_t *opt_local)
{
	return base.step_wait(job, got_alloc, opt_local);
}

extern int launch_p_step_terminate(void)
{
	return base.step_terminate();
}

extern void launch_p_print_status(void)
{
	base.print_status();
}

extern void launch_p_fwd_signal(int signal)
{
	base.fwd_signal(signal);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_storm.c - hosts the STORM Machine Manager inside slurmctld.
 *
 * In Slurm 22.05 a sched plugin only adds threads beside slurmctld's own
 * schedule() (sched_plugin.c), which makes it the natural home for the
 * long-lived Machine Manager thread.  Job selection itself keeps coming
 * from sched/backfill, which this plugin wraps so that a site switching to
 * sched/storm does not lose backfill.
 */
#include "config.h"

#include <pthread.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "src/common/storm_conf.h"
#include "src/common/storm_wrap.h"
#include "src/stormmech/stormmech.h"
#include "src/plugins/compat/compat.h"

#include "mm_gang.h"
#include "mm_signals.h"

const char plugin_name[] = "STORM Machine Manager host (wraps sched/backfill)";
const char plugin_type[] = "sched/storm";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static struct {
	int (*reconfig)(void);
} base;
static const char *const base_syms[] = { "sched_p_reconfig" };
static storm_wrap_t base_lib;

static pthread_mutex_t mm_lock = PTHREAD_MUTEX_INITIALIZER;
static storm_conf_t mm_conf;	/* last good storm.conf; under mm_lock */
static bool mm_conf_ok;

/*
 * The last good storm.conf, copied into StateSaveLocation, for a
 * slurmctld that re-executes itself on 'scontrol reconfigure' (23.11 on,
 * compat.h): the new process finds a broken storm.conf with nothing in
 * memory, and keeps the configuration the old one ran with.
 */
static void _kept_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/" STORM_CONF_KEPT,
		 slurm_conf.state_save_location ?
		 slurm_conf.state_save_location : ".");
}

static void _keep_copy(const char *path)
{
	char kept[4096], tmp[4200], buf[65536];
	FILE *in = fopen(path, "r"), *out = NULL;
	size_t n;
	bool ok = in != NULL;

	_kept_path(kept, sizeof(kept));
	snprintf(tmp, sizeof(tmp), "%s.tmp", kept);
	if (ok)
		ok = (out = fopen(tmp, "w")) != NULL;
	while (ok && (n = fread(buf, 1, sizeof(buf), in)))
		ok = fwrite(buf, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out && fclose(out))
		ok = false;
	if (ok && rename(tmp, kept))
		ok = false;
	if (!ok) {
		/* only a later re-executed slurmctld would miss it */
		debug("%s: cannot keep a copy of %s in %s: %m", plugin_type,
		      path, kept);
		unlink(tmp);
	}
}

/*
 * Load storm.conf.  On error keep the last good configuration (or run with
 * STORM switched off when there never was one) and say why, naming the
 * file, line and key: slurmctld must not die for a typo in our file.
 */
static void _load_conf(const char *why)
{
	char path[4096], kept[4096], err[STORM_CONF_ERRLEN], kerr[STORM_CONF_ERRLEN];
	storm_conf_t conf;
	int rc;

	storm_conf_path(slurm_conf.slurm_conf, path, sizeof(path));
	rc = storm_conf_load(path, true, &conf, err, sizeof(err));
	if (rc && !mm_conf_ok && storm_compat_ctld_reexec()) {
		_kept_path(kept, sizeof(kept));
		if (!storm_conf_load(kept, false, &conf, kerr, sizeof(kerr))) {
			/* the old process's configuration, for this one */
			slurm_mutex_lock(&mm_lock);
			mm_conf = conf;
			mm_conf_ok = true;
			slurm_mutex_unlock(&mm_lock);
			error("%s: %s: %s; keeping the previous configuration (%s)",
			      plugin_type, why, err, kept);
			return;
		}
	}
	if (rc) {
		slurm_mutex_lock(&mm_lock);
		error("%s: %s: %s; %s", plugin_type, why, err,
		      mm_conf_ok ? "keeping the previous configuration" :
				   "STORM scheduling stays off until storm.conf is fixed and 'scontrol reconfigure' is run");
		slurm_mutex_unlock(&mm_lock);
		return;
	}
	slurm_mutex_lock(&mm_lock);
	mm_conf = conf;
	mm_conf_ok = true;
	slurm_mutex_unlock(&mm_lock);
	info("%s: %s: loaded %s: Timeslice=%" PRIu64 "us MaxMPL=%u Policy=%s Provider=%s",
	     plugin_type, why, path, conf.timeslice_us, conf.max_mpl,
	     storm_policy_str(conf.policy), conf.provider);
	_keep_copy(path);
}

extern int init(void)
{
	char err[4096];

	/* loading this plugin brought libfabric in, and with it handlers
	 * that are not slurmctld's */
	mm_signals_reclaim();
	/* the same rxm sizes as every node manager: a sender's buffer size
	 * sets what it sends eagerly, which the receiver's bounce buffers
	 * must hold (mismatched, every confirmation ran into its timeout);
	 * set while slurmctld loads its plugins, before the MM's threads */
	storm_fabric_small_buffers();
	if (storm_wrap_open(&base_lib, slurm_conf.plugindir, SLURM_PLUGINDIR,
			    "sched_backfill", base_syms, (void **) &base, 1,
			    err, sizeof(err))) {
		error("%s: cannot wrap sched/backfill: %s", plugin_type, err);
		return SLURM_ERROR;
	}
	verbose("%s: init: wrapping %s", plugin_type, base_lib.path);
	_load_conf("init");

	/* The Machine Manager (mm_gang.c) runs once storm.conf is good. */
	slurm_mutex_lock(&mm_lock);
	if (mm_conf_ok)
		mm_gang_start(&mm_conf);
	slurm_mutex_unlock(&mm_lock);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	mm_gang_stop();
	storm_wrap_close(&base_lib, true);
	return SLURM_SUCCESS;
}

extern int sched_p_reconfig(void)
{
	_load_conf("reconfigure");
	slurm_mutex_lock(&mm_lock);
	if (mm_conf_ok)
		mm_gang_start(&mm_conf);	/* or reconfigure it */
	slurm_mutex_unlock(&mm_lock);
	return base.reconfig ? base.reconfig() : SLURM_SUCCESS;
}

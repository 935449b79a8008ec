/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_fi_setup.c - what libfabric is told once per process, before its
 * first call: a log hook that counts the connections the tcp provider's
 * handshake refuses; and, for a daemon of our own that asks, the rxm
 * provider's buffer sizes.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fi_ext.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "sm_internal.h"

/*
 * The rxm provider's own buffers, unless the environment sets them.  Its
 * defaults reserve and touch close to 100 MB per endpoint at
 * fi_enable() (thousands of 16 KiB bounce buffers, 128-deep connections)
 * and grow by 17 MB at a time: that is for an MPI rank with thousands of
 * peers and unexpected messages.  Every message of ours but the chunks
 * of a transfer fits in a 4 KiB buffer (a header of a few hundred bytes
 * and a small payload), a transfer's chunks are larger than any bounce
 * buffer and land in our own posted buffers (segmented or by rendezvous),
 * and a connection never has more than a window of chunks and a few
 * control messages in flight.
 */
static const char *const fi_env[][2] = {
	{ "FI_OFI_RXM_BUFFER_SIZE", "4096" },
	{ "FI_OFI_RXM_MSG_TX_SIZE", "64" },
	{ "FI_OFI_RXM_MSG_RX_SIZE", "64" },
};

/*
 * A connection to the fabric port that is not a libfabric peer (random
 * bytes, a truncated or slow handshake, a port scan) never reaches the
 * endpoint: the tcp provider reads its connection header, finds it short
 * or of another protocol version, closes the socket and says so in one
 * warning of its connection-management code.  That warning is the only
 * trace libfabric gives, so the log is imported and those warnings are
 * counted; everything else is printed as libfabric would have (stderr,
 * FI_LOG_LEVEL).
 */
static const char *const level_names[] = { "warn", "trace", "info", "debug" };
static atomic_uint_fast64_t conn_refused;
static int user_level = -1;	/* FI_LOG_LEVEL: -1 none, else FI_LOG_* */
static uint64_t log_interval_ms = 2000;

/* a warning of the tcp provider's connection management: where its
 * handshake refusals are said */
static bool is_tcp_cm_warning(const struct fi_provider *prov,
			      enum fi_log_level level,
			      enum fi_log_subsys subsys)
{
	return level == FI_LOG_WARN && subsys == FI_LOG_EP_CTRL &&
	       prov && prov->name && !strcmp(prov->name, "tcp");
}

static bool is_refusal(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, const char *func)
{
	return is_tcp_cm_warning(prov, level, subsys) &&
	       func && strstr(func, "cm_data");
}

static bool user_wants(enum fi_log_level level, uint64_t flags)
{
	return !(flags & FI_LOG_PROV_FILTERED) && (int) level <= user_level;
}

static int log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, uint64_t flags)
{
	/* the function is known only in log(): every tcp connection warning
	 * is formatted, which costs nothing while no one misbehaves */
	return user_wants(level, flags) || is_tcp_cm_warning(prov, level, subsys);
}

static int log_ready(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, uint64_t flags,
		     uint64_t *showtime)
{
	uint64_t now = storm_mono_ns() / 1000000;

	if (!log_enabled(prov, level, subsys, flags) || now < *showtime)
		return 0;
	*showtime = now + log_interval_ms;
	return 1;
}

static void log_line(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, const char *func, int line,
		     const char *msg)
{
	static const char *const sub[] = { "core", "fabric", "domain",
		"ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr" };

	if (is_refusal(prov, level, subsys, func))
		atomic_fetch_add(&conn_refused, 1);
	if ((int) level > user_level)
		return;
	fprintf(stderr, "libfabric:%d:%ld::%s:%s:%s():%d<%s> %s",
		(int) getpid(), (long) time(NULL), prov ? prov->name : "?",
		(unsigned) subsys < 10 ? sub[subsys] : "?", func ? func : "?",
		line, (unsigned) level < 4 ? level_names[level] : "?", msg);
}

static struct fi_ops_log log_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = log_enabled,
	.ready = log_ready,
	.log = log_line,
};

static struct fid_logging log_fid = { .ops = &log_ops };

static void parse_user_level(void)
{
	const char *s = getenv("FI_LOG_LEVEL");
	const char *iv = getenv("FI_LOG_INTERVAL");

	for (int i = 0; s && i < 4; i++)
		if (!strcasecmp(s, level_names[i]))
			user_level = i;
	if (s && user_level < 0)
		user_level = FI_LOG_WARN;	/* as libfabric: unknown is warn */
	if (iv && atoi(iv) > 0)
		log_interval_ms = (uint64_t) atoi(iv);
}

/*
 * Through the environment, the only way libfabric takes them, so the
 * caller picks the moment: storm-nm before its first thread, sched/storm
 * while slurmctld loads it.  Never from srun (which opens no context): a
 * user's job must not see its MPI's libfabric tuned by us.
 */
void storm_fabric_small_buffers(void)
{
	for (size_t i = 0; i < sizeof(fi_env) / sizeof(fi_env[0]); i++)
		setenv(fi_env[i][0], fi_env[i][1], 0);
}

static void setup(void)
{
	parse_user_level();
	/* Refused: a libfabric older than 1.13, or another log imported
	 * first (by the process that links us).  Its own log then stays and
	 * refusals are not counted; nothing else changes. */
	(void) fi_import_log(FI_VERSION(1, 13), 0, &log_fid);
}

void sm_fi_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, setup);
}

uint64_t sm_fi_conn_refused(void)
{
	return atomic_load(&conn_refused);
}

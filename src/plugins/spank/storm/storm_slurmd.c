/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_slurmd.c - the SPANK plugin inside slurmd.
 *
 * slurmd runs slurm_spank_init in-process at start-up (slurmd.c:2046), so
 * this is where a node checks its storm.conf and starts its node manager
 * (storm-nm) when none runs.  The NM detaches, so it survives slurmd
 * restarts, and it refuses to run twice for a node.  Nothing here may
 * return an error: that would stop slurmd.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/common/storm_nmctl.h"

#include "storm_spank.h"

/* Exit codes of storm-nm (nm_main.c). */
#define NM_EXIT_CONF 1
#define NM_EXIT_RUNNING 3

/*
 * slurmd's own -N (node name) and -f (slurm.conf) arguments: SPANK does not
 * expose them, and with several slurmd per host (-N) the host name does not
 * tell the node.
 */
static void slurmd_args(char *node, size_t nodelen, char *conf, size_t conflen)
{
	char buf[8192], *p, *end;
	ssize_t n = 0;
	int fd;

	node[0] = conf[0] = '\0';
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	end = buf + n;
	for (p = buf; p < end; p += strlen(p) + 1) {
		char *next = p + strlen(p) + 1;

		if (!strcmp(p, "-N") && next < end)
			snprintf(node, nodelen, "%s", next);
		else if (!strncmp(p, "-N", 2) && p[2])
			snprintf(node, nodelen, "%s", p + 2);
		else if (!strcmp(p, "-f") && next < end)
			snprintf(conf, conflen, "%s", next);
	}
	if (!node[0]) {
		char host[256];
		char *dot;

		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		if ((dot = strchr(host, '.')))
			*dot = '\0';
		snprintf(node, nodelen, "%s", host);
	}
	if (!conf[0]) {
		const char *env = getenv("SLURM_CONF");

		snprintf(conf, conflen, "%s",
			 env ? env : "/etc/slurm/slurm.conf");
	}
}

/*
 * storm.conf's NodeManager=, else storm-nm beside this plugin (a build
 * tree's PluginDir), else the installed one.
 */
static void nm_binary(const storm_conf_t *conf, char *out, size_t len)
{
	Dl_info self;

	if (conf->nm_path[0]) {
		snprintf(out, len, "%s", conf->nm_path);
		return;
	}
	if (dladdr((void *) storm_slurmd_init, &self) && self.dli_fname) {
		char tmp[4096];

		snprintf(tmp, sizeof(tmp), "%s", self.dli_fname);
		snprintf(out, len, "%s/storm-nm", dirname(tmp));
		if (access(out, X_OK) == 0)
			return;
	}
	snprintf(out, len, "%s", STORM_NM_PATH);
}

/*
 * Start storm-nm and wait for its verdict (it exits as soon as its
 * configuration is valid and it holds the node lock, then runs detached).
 */
static void start_nm(const storm_conf_t *conf, const char *storm_conf_path)
{
	char node[256], slurm_conf[4096], nm[4096];
	struct timespec deadline, now;
	pid_t pid;
	int status = 0;

	slurmd_args(node, sizeof(node), slurm_conf, sizeof(slurm_conf));
	nm_binary(conf, nm, sizeof(nm));
	if (access(nm, X_OK)) {
		slurm_error("%s: cannot run the node manager %s: %s",
			    STORM_SPANK_PREFIX, nm, strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		slurm_error("%s: fork: %s", STORM_SPANK_PREFIX, strerror(errno));
		return;
	}
	if (pid == 0) {
		char *argv[] = { nm, "--node", node, "--slurm-conf", slurm_conf,
				 "--storm-conf", (char *) storm_conf_path, NULL };
		sigset_t none;

		/* slurmd blocks signals in its threads; the NM needs them. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/*
		 * Nothing of slurmd's but stdio: after a reconfigure (24.11
		 * re-executes slurmd) its listening socket is not
		 * close-on-exec, and a node manager that kept it would keep
		 * the next slurmd from binding its port.
		 */
		if (close_range(3, ~0U, 0)) {
			long max = sysconf(_SC_OPEN_MAX);

			for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
				close((int) fd);
		}
		execv(nm, argv);
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 10;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0) {
			/* SIGCHLD ignored: the verdict is lost, not the NM. */
			slurm_verbose("%s: started node manager for %s (pid %d)",
				      STORM_SPANK_PREFIX, node, (int) pid);
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline.tv_sec) {
			slurm_error("%s: node manager for %s did not report within 10 s",
				    STORM_SPANK_PREFIX, node);
			return;
		}
		usleep(10000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		slurm_info("%s: started node manager %s for node %s",
			   STORM_SPANK_PREFIX, nm, node);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == NM_EXIT_RUNNING)
		slurm_info("%s: node manager for node %s already running",
			   STORM_SPANK_PREFIX, node);
	else
		slurm_error("%s: node manager %s for node %s failed to start (%s %d); see its log",
			    STORM_SPANK_PREFIX, nm, node,
			    WIFEXITED(status) ? "exit" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) :
						WTERMSIG(status));
}

/*
 * The node manager watchdog.  The NM thaws every job it froze when it
 * stops, but a node manager killed with SIGKILL (or crashed) cannot: its
 * gang-scheduled jobs would stay frozen.  So slurmd checks once a second
 * whether the NM still holds its instance lock (storm_nmctl.h: keyed by
 * node and slurm.conf, so a storm.conf read mid-rewrite cannot point it
 * elsewhere), and starts a new one when it does not; the new NM thaws what
 * its predecessor left frozen (nm_cgroup.c) before it does anything else.
 */
static pthread_t wd_thread;
static bool wd_running;
/* the watchdog sleeps a second at a time on wd_cond, so that it wakes
 * once a second, not ten times, and slurmd's exit still ends it at once */
static pthread_mutex_t wd_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond = PTHREAD_COND_INITIALIZER;
static bool wd_stop;
static storm_conf_t wd_conf;
static char wd_conf_path[4096];

static bool nm_alive(const char *lock_path)
{
	int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
	bool alive;

	if (fd < 0)
		return true;	/* never started here: nothing to restart */
	alive = flock(fd, LOCK_SH | LOCK_NB) != 0;
	close(fd);		/* drops our lock, if we got one */
	return alive;
}

static void *watchdog(void *arg)
{
	char node[256], conf[4096], lock[4600];

	slurmd_args(node, sizeof(node), conf, sizeof(conf));
	storm_nm_instance_lock(conf, node, lock, sizeof(lock));
	pthread_mutex_lock(&wd_mutex);
	while (!wd_stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&wd_cond, &wd_mutex, &ts);
		if (wd_stop)
			break;
		pthread_mutex_unlock(&wd_mutex);
		if (nm_alive(lock)) {
			pthread_mutex_lock(&wd_mutex);
			continue;
		}
		slurm_info("%s: node manager for node %s is gone; starting a new one",
			   STORM_SPANK_PREFIX, node);
		start_nm(&wd_conf, wd_conf_path);
		pthread_mutex_lock(&wd_mutex);
	}
	pthread_mutex_unlock(&wd_mutex);
	return NULL;
}

extern int storm_slurmd_init(spank_t sp, int ac, char **av)
{
	storm_conf_t conf;
	char path[4096];

	if (storm_spank_load_conf(ac, av, "slurmd", &conf, path, sizeof(path)))
		return 0;
	slurm_info("%s: init in slurmd: Provider=%s Port=%u-%u BcastDir=%s",
		   STORM_SPANK_PREFIX, conf.provider, conf.port_lo,
		   conf.port_hi, conf.bcast_dir);
	start_nm(&conf, path);
	wd_conf = conf;
	snprintf(wd_conf_path, sizeof(wd_conf_path), "%s", path);
	wd_stop = false;
	if (!wd_running && !pthread_create(&wd_thread, NULL, watchdog, NULL))
		wd_running = true;
	return 0;
}

extern int storm_slurmd_exit(spank_t sp, int ac, char **av)
{
	/* The node manager outlives slurmd on purpose (restarts, upgrades). */
	slurm_verbose("%s: slurmd exit", STORM_SPANK_PREFIX);
	if (wd_running) {
		pthread_mutex_lock(&wd_mutex);
		wd_stop = true;
		pthread_cond_signal(&wd_cond);
		pthread_mutex_unlock(&wd_mutex);
		pthread_join(wd_thread, NULL);
		wd_running = false;
	}
	return 0;
}

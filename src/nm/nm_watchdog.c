/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_watchdog.c - fail open without the node manager (nm_watchdog.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "nm_cgroup.h"
#include "nm_watchdog.h"
#include "src/common/storm_time.h"

/* A job takes a slot when it is first switched out on this node and keeps
 * it until it leaves the table: more slots than jobs can share a node's
 * CPUs at once. */
#define WATCH_SLOTS 512

typedef struct watch_slot {
	_Atomic uint32_t job_id;	/* 0: free */
	_Atomic uint32_t uid;
	_Atomic uint32_t out;		/* switched out by the node manager */
} watch_slot_t;

typedef struct watch_page {
	_Atomic uint64_t last_strobe_ns;	/* CLOCK_MONOTONIC; 0: none yet */
	_Atomic uint64_t failsafe_ns;
	watch_slot_t slot[WATCH_SLOTS];
} watch_page_t;

static struct {
	watch_page_t *page;	/* shared with the watchdog process */
	int fd;			/* the node manager's end of the pipe */
	pid_t pid;
} watchdog = { .fd = -1 };

/* ------------------------------------------------------------ the child */
static int release_all(void)
{
	int n = 0;

	for (int i = 0; i < WATCH_SLOTS; i++) {
		watch_slot_t *s = &watchdog.page->slot[i];
		uint32_t job;

		if (!atomic_load(&s->out) || !(job = atomic_load(&s->job_id)))
			continue;
		n += nm_cg_job_release(job, atomic_load(&s->uid)) > 0;
	}
	return n;
}

static bool any_out(void)
{
	for (int i = 0; i < WATCH_SLOTS; i++)
		if (atomic_load(&watchdog.page->slot[i].out) &&
		    atomic_load(&watchdog.page->slot[i].job_id))
			return true;
	return false;
}

/* Keep only the pipe and the log: above all not the node's lock, which a
 * node manager started after a crash must be able to take. */
static void close_others(int keep1, int keep2)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

static void no_strobe(uint64_t ls, uint64_t now, bool gone)
{
	int n = release_all();

	if (n)
		nm_error("watchdog: no strobe handled for %llu ms%s: released %d job(s) the node manager had switched out",
			 (unsigned long long) ((now - ls) / 1000000),
			 gone ? " and the node manager is gone" :
				" (the node manager is alive but silent)", n);
}

static int wait_ms(uint64_t ls, uint64_t fs, uint64_t handled, uint64_t now)
{
	if (ls && ls != handled)
		return ls + fs > now ? (int) ((ls + fs - now) / 1000000) + 1 : 0;
	return any_out() ? 100 : 1000;
}

static void child_main(nm_t *nm, int rfd)
{
	char tag[96];
	uint64_t handled = 0;
	bool gone = false;

	prctl(PR_SET_NAME, "storm-nm-watch");
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_IGN);
	close_others(rfd, nm_log_fd());
	snprintf(tag, sizeof(tag), "%s watchdog", nm->node);
	nm_log_set_tag(tag);
	if (nm_cg_init(nm)) {
		nm_error("watchdog: no cgroups to watch: exiting");
		_exit(1);
	}
	for (;;) {
		uint64_t ls = atomic_load(&watchdog.page->last_strobe_ns);
		uint64_t fs = atomic_load(&watchdog.page->failsafe_ns);
		uint64_t now = storm_mono_ns();
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		char c;

		if (ls && ls != handled && now >= ls + fs) {
			no_strobe(ls, now, gone);
			handled = ls;
		}
		if (gone && (!ls || ls == handled || !any_out()))
			_exit(0);
		/* once the pipe has said "gone" it stays readable: sleep */
		if (poll(&p, gone ? 0 : 1, wait_ms(ls, fs, handled, now)) <= 0)
			continue;
		ssize_t r = read(rfd, &c, 1);

		if (r == 1 && c == 'q')
			_exit(0);	/* clean exit: it thawed its jobs */
		if (r == 0)
			gone = true;	/* killed: watch until FailSafe */
	}
}

/* ------------------------------------------------------------ the NM */
extern int nm_watchdog_start(nm_t *nm)
{
	int p[2];
	pid_t pid;

	watchdog.page = mmap(NULL, sizeof(*watchdog.page),
			     PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (watchdog.page == MAP_FAILED) {
		watchdog.page = NULL;
		return -errno;
	}
	atomic_store(&watchdog.page->failsafe_ns,
		     nm->conf.failsafe_us * 1000ull);
	if (pipe2(p, O_CLOEXEC)) {
		int rc = -errno;

		munmap(watchdog.page, sizeof(*watchdog.page));
		watchdog.page = NULL;
		return rc;
	}
	pid = fork();
	if (pid < 0) {
		int rc = -errno;

		close(p[0]);
		close(p[1]);
		munmap(watchdog.page, sizeof(*watchdog.page));
		watchdog.page = NULL;
		return rc;
	}
	if (pid == 0) {
		close(p[1]);
		child_main(nm, p[0]);
	}
	close(p[0]);
	watchdog.fd = p[1];
	watchdog.pid = pid;
	nm_info("watchdog: pid %d thaws this node's switched jobs if strobes stop being handled, even without the node manager",
		(int) pid);
	return 0;
}

extern void nm_watchdog_strobe(uint64_t now_ns, uint64_t failsafe_ns)
{
	if (!watchdog.page)
		return;
	atomic_store(&watchdog.page->failsafe_ns, failsafe_ns);
	atomic_store(&watchdog.page->last_strobe_ns, now_ns);
}

/* The job's slot: the one *hint names when it still holds the job (a job
 * keeps its slot until it leaves the table, so switching costs no
 * search), else found or, with take, taken. */
static int slot_of(uint32_t job_id, bool take, const int *hint)
{
	int free_i = -1;

	if (*hint >= 0 && *hint < WATCH_SLOTS &&
	    atomic_load(&watchdog.page->slot[*hint].job_id) == job_id)
		return *hint;
	for (int i = 0; i < WATCH_SLOTS; i++) {
		uint32_t j = atomic_load(&watchdog.page->slot[i].job_id);

		if (j == job_id)
			return i;
		if (!j && free_i < 0)
			free_i = i;
	}
	if (!take || free_i < 0)
		return -1;
	atomic_store(&watchdog.page->slot[free_i].out, 0);
	atomic_store(&watchdog.page->slot[free_i].job_id, job_id);
	return free_i;
}

extern void nm_watchdog_switched(uint32_t job_id, uint32_t uid, bool out,
				 int *hint)
{
	watch_slot_t *s;
	int i;

	if (!watchdog.page || !job_id)
		return;
	if ((i = slot_of(job_id, out, hint)) < 0) {
		if (out)
			nm_error("watchdog: no slot for job %u: it is not watched", job_id);
		*hint = -1;
		return;
	}
	s = &watchdog.page->slot[i];
	atomic_store(&s->uid, uid);
	atomic_store(&s->out, out ? 1 : 0);
	*hint = i;
}

extern void nm_watchdog_forget(uint32_t job_id, int *hint)
{
	int i;

	if (watchdog.page && job_id &&
	    (i = slot_of(job_id, false, hint)) >= 0) {
		atomic_store(&watchdog.page->slot[i].out, 0);
		atomic_store(&watchdog.page->slot[i].job_id, 0);
	}
	*hint = -1;
}

extern void nm_watchdog_stop(void)
{
	if (watchdog.fd < 0)
		return;
	if (write(watchdog.fd, "q", 1) != 1)
		nm_error("watchdog: cannot tell it to stop: %s", strerror(errno));
	close(watchdog.fd);
	watchdog.fd = -1;
}

extern int nm_watchdog_pid(void)
{
	return (int) watchdog.pid;
}

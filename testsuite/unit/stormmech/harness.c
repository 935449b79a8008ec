/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>

#include "harness.h"

const char *h_prov_name(int i)
{
	return i == 0 ? "tcp;ofi_rxm" : "shm";
}

bool h_provider_ok(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int rc;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup(prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (info)
		fi_freeinfo(info);
	return rc == 0;
}

void h_cfg(storm_cfg_t *cfg, const char *prov)
{
	storm_cfg_init(cfg);
	cfg->provider = prov;
	cfg->region_size = 20u << 20;
	cfg->timeout_ms = H_OK_TIMEOUT_MS;
}

uint64_t h_sum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h ^ len;
}

static void quiet_log(void *arg, storm_log_level_t l, const char *m)
{
	if (getenv("STORM_TEST_VERBOSE"))
		fprintf(stderr, "[%d] %s\n", (int)getpid(), m);
}

/*
 * Ports: a block of this harness's own, below Linux's ephemeral range
 * (32768 up), where outgoing connections of other tests and clusters on
 * the host take theirs.  The test programs run side by side (make -j
 * check), and the live members of a test that killed one keep
 * reconnecting to its port for a while: a harness that took that port at
 * once would get their messages (on a loaded host they come late, and
 * count as dropped there).  So a counter shared by every harness on the
 * host hands the blocks out in turn, and a port comes back only after
 * every other block has been used.  Rank r takes block + r, the driver
 * block + n, a caller block + H_MAX + 1; one that is taken tries further
 * ports across the range.
 */
#define H_PORT_LO 20000
#define H_PORT_SPAN 12000
#define H_PORT_BLOCK (H_MAX + 8)
#define H_PORT_COUNTER "/tmp/storm-mech-test-ports"

static int port_block(void)
{
	unsigned n = (unsigned)getpid(), next;
	int fd = open(H_PORT_COUNTER, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && flock(fd, LOCK_EX) == 0) {
		if (pread(fd, &n, sizeof(n), 0) != (ssize_t)sizeof(n))
			n = (unsigned)getpid();
		next = n + 1;
		if (pwrite(fd, &next, sizeof(next), 0) != (ssize_t)sizeof(next))
			n = (unsigned)getpid();
		flock(fd, LOCK_UN);
	}
	if (fd >= 0)
		close(fd);
	return H_PORT_LO + (int)(n % (H_PORT_SPAN / H_PORT_BLOCK)) *
	       H_PORT_BLOCK;
}

static int try_port(int first, int tries)
{
	return H_PORT_LO + (first - H_PORT_LO + tries * 7919) % H_PORT_SPAN;
}

static int open_ctx(struct h_shared *sh, const storm_cfg_t *tmpl, int rank,
		    storm_ctx_t **ctx)
{
	storm_cfg_t cfg = *tmpl;

	cfg.rank = rank;
	for (int tries = 0; tries < 50; tries++) {
		cfg.port = try_port(sh->port_base + rank, tries);
		/* ctx open logs bind failures; keep quiet while retrying */
		if (storm_ctx_open(&cfg, ctx) == 0) {
			storm_set_log_fn(*ctx, quiet_log, NULL,
					 getenv("STORM_TEST_DEBUG") ?
					 STORM_LOG_DEBUG : STORM_LOG_ERROR);
			sh->port[rank] = cfg.port;
			return 0;
		}
	}
	return -EADDRINUSE;
}

static int set_peers(struct h_shared *sh, storm_ctx_t *ctx, int n)
{
	char hp[64];
	for (int r = 0; r <= n; r++) {
		if (r == storm_ctx_rank(ctx))
			continue;
		snprintf(hp, sizeof(hp), "127.0.0.1:%d", sh->port[r]);
		int rc = storm_ctx_set_peer(ctx, r, hp);
		if (rc)
			return rc;
	}
	return 0;
}

/* dest hook: one private buffer per member, like an mmap of a file */
static uint8_t *hook_buf;
static uint64_t hook_len;
static int hook_commits, hook_releases;

static void *hook_dest(void *arg, int root, uint64_t off, uint64_t len)
{
	free(hook_buf);
	hook_buf = malloc(len ? len : 1);
	hook_len = len;
	return hook_buf;
}

static void hook_rel(void *arg, void *dst, uint64_t len, bool committed)
{
	hook_releases++;
}

/* Also counts commits in variable H_HOOK_VAR, through the accessors a
 * callback may call with its ctx locked (the node manager's gang switch
 * does so): a deadlock here hangs the test. */
static void hook_recv(void *arg, int root, uint64_t off, uint64_t len,
		      void *dst)
{
	storm_ctx_t *ctx = arg;
	uint64_t v = 0;
	size_t sz = 0;

	if (dst == hook_buf)
		hook_commits++;
	if (storm_region_ptr(ctx, &sz) && sz &&
	    storm_var_get(ctx, H_HOOK_VAR, &v) == 0)
		storm_var_set(ctx, H_HOOK_VAR, v + 1);
}

static void do_cmd(struct h_shared *sh, storm_ctx_t *ctx, int me)
{
	struct h_res *r = &sh->res[me];
	size_t sz;
	uint8_t *reg = storm_region_ptr(ctx, &sz);

	switch (sh->cmd) {
	case H_SUM:
		r->sum = sh->a + sh->b <= sz ? h_sum(reg + sh->a, sh->b) : 0;
		break;
	case H_FILL:
		memset(reg, (int)sh->a, sz);
		break;
	case H_SETVAR:
		storm_var_set(ctx, (int)sh->a, sh->b);
		break;
	case H_GETVAR:
		storm_var_get(ctx, (int)sh->a, &r->var);
		break;
	case H_CAW: {
		storm_set_t set;
		storm_set_clear(&set);
		storm_set_range(&set, (int)sh->c, (int)sh->d);
		/* H_CAW: all callers write the same value; H_CAW_MINE:
		 * each writes b + its rank */
		r->caw_rc = storm_caw(ctx, &set, sh->ia, (storm_cmp_t)sh->ib,
				      sh->a, sh->ia, sh->b, NULL);
		break;
	}
	case H_CAW_MINE: {
		storm_set_t set;
		storm_set_clear(&set);
		storm_set_range(&set, (int)sh->c, (int)sh->d);
		r->caw_rc = storm_caw(ctx, &set, sh->ia, (storm_cmp_t)sh->ib,
				      sh->a, sh->ia, sh->b + me, NULL);
		break;
	}
	default:
		break;
	}
	for (int e = 0; e < 4; e++)
		storm_event_test(ctx, e, &r->ev[e]);
	r->hook_sum = hook_buf ? h_sum(hook_buf, hook_len) : 0;
	r->hook_commits = hook_commits;
	r->hook_releases = hook_releases;
	storm_ctx_stats(ctx, &r->st);
}

static void member(struct h_shared *sh, const storm_cfg_t *tmpl, int me)
{
	storm_ctx_t *ctx;
	int seen = 0;

	if (open_ctx(sh, tmpl, me, &ctx)) {
		sh->ready[me] = -1;
		_exit(2);
	}
	if (sh->use_dest) {
		storm_set_dest_fn(ctx, hook_dest, hook_rel, NULL);
		storm_set_recv_fn(ctx, hook_recv, ctx);
	}
	sh->ready[me] = 1;
	while (!sh->go)
		usleep(1000);
	if (set_peers(sh, ctx, sh->n))
		_exit(3);
	sh->ready[me] = 2;
	for (;;) {
		storm_progress(ctx, 2000);
		if (sh->cmd_seq != seen) {
			seen = sh->cmd_seq;
			if (sh->target < 0 || sh->target == me) {
				if (sh->cmd == H_EXIT)
					break;
				do_cmd(sh, ctx, me);
				sh->cmd_done[me] = seen;
			}
		}
		if (getppid() == 1)
			break;
	}
	storm_ctx_close(ctx);
	_exit(0);
}

uint64_t h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static int start(struct harness *h, int n, const storm_cfg_t *cfg,
		 const storm_cfg_t *dcfg, int hooked);

int h_start(struct harness *h, int n, const storm_cfg_t *cfg)
{
	return start(h, n, cfg, cfg, 0);
}

int h_start_hooked(struct harness *h, int n, const storm_cfg_t *cfg)
{
	return start(h, n, cfg, cfg, 1);
}

int h_start_driver(struct harness *h, int n, const storm_cfg_t *cfg,
		   const storm_cfg_t *driver)
{
	return start(h, n, cfg, driver, 0);
}

static int start(struct harness *h, int n, const storm_cfg_t *cfg,
		 const storm_cfg_t *dcfg, int hooked)
{
	memset(h, 0, sizeof(*h));
	if (n > H_MAX)
		return -EINVAL;
	h->sh = mmap(NULL, sizeof(*h->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (h->sh == MAP_FAILED)
		return -ENOMEM;
	memset(h->sh, 0, sizeof(*h->sh));
	h->sh->n = h->n = n;
	h->sh->port_base = port_block();
	h->sh->use_dest = hooked;
	h->prov = cfg->provider;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			member(h->sh, cfg, i);
		h->pid[i] = p;
	}
	if (open_ctx(h->sh, dcfg, n, &h->ctx))
		return -EADDRINUSE;
	uint64_t dl = h_now_ms() + H_WAIT_MS;
	for (int i = 0; i < n; i++) {
		while (h->sh->ready[i] == 0 && h_now_ms() < dl)
			usleep(1000);
		if (h->sh->ready[i] != 1)
			return -EIO;
	}
	h->sh->go = 1;
	if (set_peers(h->sh, h->ctx, n))
		return -EIO;
	for (int i = 0; i < n; i++)
		while (h->sh->ready[i] != 2 && h_now_ms() < dl)
			usleep(1000);
	return 0;
}

int h_cmd(struct harness *h, int target, int cmd, uint64_t a, uint64_t b,
	  uint64_t c, uint64_t d, int ia, int ib)
{
	struct h_shared *sh = h->sh;
	sh->cmd = cmd;
	sh->target = target;
	sh->a = a; sh->b = b; sh->c = c; sh->d = d;
	sh->ia = ia; sh->ib = ib;
	__sync_synchronize();
	int seq = ++sh->cmd_seq;
	uint64_t dl = h_now_ms() + H_WAIT_MS;
	for (int i = 0; i < h->n; i++) {
		if (target >= 0 && i != target)
			continue;
		if (h->pid[i] <= 0)
			continue;
		while (sh->cmd_done[i] != seq) {
			if (h_now_ms() > dl)
				return -ETIMEDOUT;
			storm_progress(h->ctx, 1000);
		}
	}
	return 0;
}

storm_ctx_t *h_caller(struct harness *h, const storm_cfg_t *tmpl)
{
	storm_cfg_t cfg = *tmpl;
	char hp[64];

	if (h->caller)
		return NULL;
	cfg.rank = STORM_CLIENT_RANK_FIRST + (int)(getpid() % 200);
	for (int tries = 0; tries < 50 && !h->caller; tries++) {
		/* the members' range, clear of the ports they hold (shm names
		 * its endpoints by port) */
		cfg.port = try_port(h->sh->port_base + H_MAX + 1, tries);
		for (int r = 0; r <= h->n; r++)
			if (h->sh->port[r] == cfg.port)
				cfg.port = 0;
		if (cfg.port && storm_ctx_open(&cfg, &h->caller))
			h->caller = NULL;
	}
	if (!h->caller)
		return NULL;
	h->caller_port = cfg.port;
	storm_set_log_fn(h->caller, quiet_log, NULL,
			 getenv("STORM_TEST_DEBUG") ? STORM_LOG_DEBUG :
			 STORM_LOG_ERROR);
	for (int r = 0; r < h->n; r++) {
		snprintf(hp, sizeof(hp), "127.0.0.1:%d", h->sh->port[r]);
		if (storm_ctx_set_peer(h->caller, r, hp)) {
			storm_ctx_close(h->caller);
			h->caller = NULL;
			return NULL;
		}
	}
	return h->caller;
}

void h_kill(struct harness *h, int i)
{
	if (h->pid[i] <= 0)
		return;
	kill(h->pid[i], SIGKILL);
	waitpid(h->pid[i], NULL, 0);
	h->pid[i] = -1;
}

void h_stop(struct harness *h)
{
	if (!h->sh)
		return;
	h->sh->target = -1;
	h->sh->cmd = H_EXIT;
	__sync_synchronize();
	h->sh->cmd_seq++;
	h->sh->go = 1;
	uint64_t dl = h_now_ms() + 20000;
	for (int i = 0; i < h->n; i++) {
		if (h->pid[i] <= 0)
			continue;
		int st;
		while (waitpid(h->pid[i], &st, WNOHANG) == 0) {
			if (h_now_ms() > dl) {
				kill(h->pid[i], SIGKILL);
				waitpid(h->pid[i], &st, 0);
				break;
			}
			if (h->ctx)
				storm_progress(h->ctx, 1000);
			else
				usleep(1000);
		}
	}
	if (h->caller)
		storm_ctx_close(h->caller);
	if (h->ctx)
		storm_ctx_close(h->ctx);
	/* shm leaves its files behind for killed members */
	if (h->prov && strcmp(h->prov, "shm") == 0) {
		for (int i = 0; i <= h->n; i++) {
			char p[96];
			snprintf(p, sizeof(p), "/dev/shm/storm_127.0.0.1_%d",
				 h->sh->port[i]);
			if (h->sh->port[i])
				unlink(p);
		}
		if (h->caller_port) {
			char p[96];
			snprintf(p, sizeof(p), "/dev/shm/storm_127.0.0.1_%d",
				 h->caller_port);
			unlink(p);
		}
	}
	munmap(h->sh, sizeof(*h->sh));
	h->sh = NULL;
}

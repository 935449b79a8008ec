/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_ctx.c - context: fabric, domain, endpoint, AV, CQ, region, peers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "sm_internal.h"

static void default_log(void *arg, storm_log_level_t lvl, const char *msg)
{
	static const char *nm[] = { "error", "warn", "info", "debug" };
	fprintf(stderr, "stormmech: %s: %s\n", nm[lvl & 3], msg);
}

void sm_log(struct storm_ctx *ctx, storm_log_level_t lvl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!ctx->log_fn || lvl > ctx->log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ctx->log_fn(ctx->log_arg, lvl, buf);
}

void storm_cfg_init(storm_cfg_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->provider = "tcp;ofi_rxm";
	cfg->host = "127.0.0.1";
	cfg->region_size = 16u << 20;
	cfg->nvars = STORM_DEF_NVARS;
	cfg->arity = STORM_DEF_ARITY;
	cfg->bulk_arity = STORM_DEF_BULK_ARITY;
	cfg->chunk = STORM_DEF_CHUNK;
	cfg->window = STORM_DEF_WINDOW;
	cfg->timeout_ms = STORM_DEF_TIMEOUT;
	cfg->busy_poll_us = 50;
	cfg->rx_bufs = 0;	/* window + SM_RX_SPARE */
}

static int split_hostport(const char *hp, char *host, size_t hlen, char *port,
			  size_t plen)
{
	const char *c = strrchr(hp, ':');
	if (!c || c == hp || !c[1] || (size_t)(c - hp) >= hlen ||
	    strlen(c + 1) >= plen)
		return -EINVAL;
	memcpy(host, hp, c - hp);
	host[c - hp] = '\0';
	strcpy(port, c + 1);
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	return 0;
}

/* shm addresses are opaque names; derive them from host:port so that no
 * exchange is needed between nodes of one host */
static void shm_name(const char *host, const char *port, char *out, size_t len)
{
	snprintf(out, len, "storm_%s_%s", host, port);
}

int storm_ctx_set_peer(storm_ctx_t *ctx, int rank, const char *hp)
{
	int rc;

	pthread_mutex_lock(&ctx->lock);
	rc = sm_set_peer_locked(ctx, rank, hp);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int sm_set_peer_locked(struct storm_ctx *ctx, int rank, const char *hp)
{
	char host[64], port[16], name[128];
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int rc = 0;

	if (rank < 0 || rank >= STORM_MAX_RANKS)
		return -EINVAL;
	if (hp && split_hostport(hp, host, sizeof(host), port, sizeof(port)))
		return -EINVAL;
	if (storm_set_has(&ctx->known, rank)) {
		fi_av_remove(ctx->av, &ctx->peer[rank], 1, 0);
		ctx->peer[rank] = FI_ADDR_NOTAVAIL;
		storm_set_remove(&ctx->known, rank);
	}
	if (!hp)
		goto done;
	if (ctx->addr_str) {
		shm_name(host, port, name, sizeof(name));
		rc = fi_av_insert(ctx->av, name, 1, &a, 0, NULL);
	} else {
		rc = fi_av_insertsvc(ctx->av, host, port, &a, 0, NULL);
	}
	if (rc != 1) {
		sm_log(ctx, STORM_LOG_ERROR, "av insert %s for rank %d: %d",
		       hp, rank, rc);
		rc = rc < 0 ? rc : -EINVAL;
		goto done;
	}
	rc = 0;
	ctx->peer[rank] = a;
	storm_set_add(&ctx->known, rank);
done:
	return rc;
}

static int open_fabric(struct storm_ctx *ctx)
{
	struct fi_info *hints;
	char port[16];
	int rc;

	sm_fi_setup();
	hints = fi_allocinfo();
	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->fabric_attr->prov_name = strdup(ctx->provider);
	snprintf(port, sizeof(port), "%d", ctx->cfg.port);
	ctx->addr_str = strcmp(ctx->provider, "shm") == 0;
	hints->addr_format = ctx->addr_str ? FI_ADDR_STR : FI_SOCKADDR_IN;
	/* Control messages (acks, commits, CAW steps, strobes) are sent
	 * inline when they fit: no completion to wait for, so the progress
	 * thread goes back to sleep at once.  rxm offers 64 bytes unless
	 * asked; a provider that refuses the size is asked again without. */
	hints->tx_attr->inject_size = SM_INJECT_WANT;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (ctx->addr_str)
			rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0,
					hints, &ctx->info);
		else
			rc = fi_getinfo(FI_VERSION(1, 17), ctx->host, port,
					FI_SOURCE, hints, &ctx->info);
		if (rc != -FI_ENODATA)
			break;
		hints->tx_attr->inject_size = 0;
	}
	fi_freeinfo(hints);
	if (!rc)
		ctx->inject_max = getenv("STORM_NO_INJECT") ? 0 :
				  ctx->info->tx_attr->inject_size;
	if (rc) {
		sm_log(ctx, STORM_LOG_ERROR, "fi_getinfo(%s): %s", ctx->provider,
		       fi_strerror(-rc));
		return rc;
	}
	rc = fi_fabric(ctx->info->fabric_attr, &ctx->fabric, NULL);
	if (rc)
		return rc;
	rc = fi_domain(ctx->fabric, ctx->info, &ctx->domain, NULL);
	if (rc)
		return rc;
	/* An fd to sleep on lets an idle node wake as soon as a message
	 * arrives instead of at the end of a backoff sleep.  shm's wait
	 * objects never fire (a wait on its CQ fd sleeps through arriving
	 * messages): poll there. */
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .wait_obj = FI_WAIT_FD, .size = 1024 };
	ctx->cq_fd = -1;
	ctx->kick_fd = -1;
	rc = -FI_ENOSYS;
	if (!ctx->addr_str && !getenv("STORM_NO_WAIT_FD"))
		rc = fi_cq_open(ctx->domain, &cqa, &ctx->cq, NULL);
	if (rc == 0 &&
	    fi_control(&ctx->cq->fid, FI_GETWAIT, &ctx->cq_fd) != 0) {
		fi_close(&ctx->cq->fid);
		ctx->cq_fd = -1;
		rc = -FI_ENOSYS;
	}
	if (rc) {
		cqa.wait_obj = FI_WAIT_NONE;
		rc = fi_cq_open(ctx->domain, &cqa, &ctx->cq, NULL);
	}
	if (rc)
		return rc;
	/* a waiter asleep on the CQ fd is woken through it when another
	 * thread's progress finished what it waits for (storm_progress()) */
	if (ctx->cq_fd >= 0)
		ctx->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct fi_av_attr ava = { .type = FI_AV_TABLE, .count = 256 };
	rc = fi_av_open(ctx->domain, &ava, &ctx->av, NULL);
	if (rc)
		return rc;
	rc = fi_endpoint(ctx->domain, ctx->info, &ctx->ep, NULL);
	if (rc)
		return rc;
	if (ctx->addr_str) {
		char name[128];
		shm_name(ctx->host, port, name, sizeof(name));
		rc = fi_setname(&ctx->ep->fid, name, strlen(name) + 1);
		if (rc) {
			sm_log(ctx, STORM_LOG_ERROR, "fi_setname %s: %s", name,
			       fi_strerror(-rc));
			return rc;
		}
	}
	rc = fi_ep_bind(ctx->ep, &ctx->av->fid, 0);
	if (rc)
		return rc;
	rc = fi_ep_bind(ctx->ep, &ctx->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc)
		return rc;
	rc = fi_enable(ctx->ep);
	if (rc) {
		sm_log(ctx, STORM_LOG_ERROR, "fi_enable %s %s:%d: %s",
		       ctx->provider, ctx->host, ctx->cfg.port, fi_strerror(-rc));
		return rc;
	}
	return 0;
}

int storm_ctx_open(const storm_cfg_t *cfg_in, storm_ctx_t **out)
{
	struct storm_ctx *ctx;
	storm_cfg_t def;
	int rc;

	if (!cfg_in || !out)
		return -EINVAL;
	storm_cfg_init(&def);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->cq_fd = ctx->kick_fd = -1;	/* storm_ctx_close() on any path */
	ctx->cfg = *cfg_in;
	storm_cfg_t *c = &ctx->cfg;
	if (!c->provider) c->provider = def.provider;
	if (!c->host) c->host = def.host;
	if (c->nvars <= 0) c->nvars = def.nvars;
	if (c->arity <= 0) c->arity = def.arity;
	if (c->arity > SM_MAX_ARITY) c->arity = SM_MAX_ARITY;
	if (c->bulk_arity <= 0) c->bulk_arity = def.bulk_arity;
	if (c->bulk_arity > SM_MAX_ARITY) c->bulk_arity = SM_MAX_ARITY;
	if (!c->chunk) c->chunk = def.chunk;
	if (c->window <= 0) c->window = def.window;
	if (c->timeout_ms <= 0) c->timeout_ms = def.timeout_ms;
	if (c->busy_poll_us < 0) c->busy_poll_us = 0;
	if (c->rx_bufs <= 0) c->rx_bufs = c->window + SM_RX_SPARE;
	if (c->rank < 0 || c->rank >= STORM_MAX_RANKS || c->chunk > (1u << 30)) {
		free(ctx);
		return -EINVAL;
	}
	snprintf(ctx->provider, sizeof(ctx->provider), "%s", c->provider);
	snprintf(ctx->host, sizeof(ctx->host), "%s", c->host);
	c->provider = ctx->provider;
	c->host = ctx->host;
	c->nodes = NULL;
	ctx->rank = c->rank;
	ctx->log_fn = default_log;
	ctx->log_max = STORM_LOG_WARN;
	ctx->next_id = ((storm_mono_ns() ^ ((uint64_t)getpid() << 16)) &
			0xffffffull) << 32;
	for (int i = 0; i < STORM_MAX_RANKS; i++)
		ctx->peer[i] = FI_ADDR_NOTAVAIL;
	if (ctx->cfg.lock_inherit) {
		pthread_mutexattr_t ma;

		/* a plain mutex where PI is not supported (ENOTSUP) */
		pthread_mutexattr_init(&ma);
		if (pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT) ||
		    pthread_mutex_init(&ctx->lock, &ma))
			pthread_mutex_init(&ctx->lock, NULL);
		pthread_mutexattr_destroy(&ma);
	} else {
		pthread_mutex_init(&ctx->lock, NULL);
	}
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ctx->progressed, &ca);
		pthread_condattr_destroy(&ca);
	}

	ctx->nvars = c->nvars;
	ctx->vars = calloc(c->nvars, sizeof(uint64_t));
	if (!ctx->vars) { rc = -ENOMEM; goto fail; }
	if (c->region) {
		ctx->region = c->region;
		ctx->region_size = c->region_size;
	} else if (c->region_size) {
		/* Mapped, not touched: a node manager writes a few blocks at
		 * fixed offsets of its region and nothing else, so a page is
		 * resident only once something lands in it. */
		size_t len = (c->region_size + 4095) & ~(size_t)4095;
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) { rc = -ENOMEM; goto fail; }
		ctx->own_region = p;
		ctx->region = ctx->own_region;
		ctx->region_size = ctx->own_size = c->region_size;
		ctx->own_map = len;
	}

	rc = open_fabric(ctx);
	if (rc)
		goto fail;
	sm_caps_probe(ctx);
	rc = sm_client_open(ctx);
	if (rc)
		goto fail;

	ctx->nrx = c->rx_bufs;
	ctx->rx_size = sizeof(struct sm_hdr) + c->chunk;
	ctx->rx = calloc(ctx->nrx, sizeof(*ctx->rx));
	if (!ctx->rx) { rc = -ENOMEM; goto fail; }
	for (int i = 0; i < ctx->nrx; i++) {
		ctx->rx[i].kind = SM_CTX_RX;
		/* not touched either: a control message dirties the first
		 * page of a buffer, only a transfer's chunks all of it */
		ctx->rx[i].buf = malloc(ctx->rx_size);
		if (!ctx->rx[i].buf) { rc = -ENOMEM; goto fail; }
		rc = sm_post_rx(ctx, &ctx->rx[i]);
		if (rc)
			goto fail;
	}
	for (int i = 0; cfg_in->nodes && i < cfg_in->nnodes; i++) {
		if (!cfg_in->nodes[i])
			continue;
		rc = storm_ctx_set_peer(ctx, i, cfg_in->nodes[i]);
		if (rc)
			goto fail;
	}
	*out = ctx;
	return 0;
fail:
	storm_ctx_close(ctx);
	return rc;
}

void storm_ctx_close(storm_ctx_t *ctx)
{
	if (!ctx)
		return;
	storm_ctx_stop_progress(ctx);
	if (ctx->kick_fd >= 0)
		close(ctx->kick_fd);
	if (ctx->ep) fi_close(&ctx->ep->fid);
	if (ctx->av) fi_close(&ctx->av->fid);
	if (ctx->cq) fi_close(&ctx->cq->fid);
	if (ctx->domain) fi_close(&ctx->domain->fid);
	if (ctx->fabric) fi_close(&ctx->fabric->fid);
	if (ctx->info) fi_freeinfo(ctx->info);
	/* the endpoint is gone: no send can still reference an op */
	while (ctx->ops) {
		struct storm_op *op = ctx->ops;
		ctx->ops = op->next;
		if (op->dst_hooked && ctx->dest_rel)
			ctx->dest_rel(ctx->dest_arg, op->dst, op->total, false);
		free(op->have);
		free(op);
	}
	while (ctx->pend) {
		struct sm_tx *tx = ctx->pend;
		ctx->pend = tx->next;
		free(tx);
	}
	/* sends to a peer that died may never complete */
	while (ctx->posted) {
		struct sm_tx *tx = ctx->posted;
		ctx->posted = tx->posted_next;
		free(tx);
	}
	for (int i = 0; ctx->rx && i < ctx->nrx; i++)
		free(ctx->rx[i].buf);
	free(ctx->rx);
	free(ctx->vars);
	if (ctx->own_region)
		munmap(ctx->own_region, ctx->own_map);
	pthread_cond_destroy(&ctx->progressed);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

int storm_ctx_rank(const storm_ctx_t *ctx)
{
	return ctx->rank;
}

void storm_set_log_fn(storm_ctx_t *ctx, storm_log_f fn, void *arg,
		      storm_log_level_t max)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->log_fn = fn;
	ctx->log_arg = arg;
	ctx->log_max = max;
	pthread_mutex_unlock(&ctx->lock);
}

void storm_set_recv_fn(storm_ctx_t *ctx, storm_recv_f fn, void *arg)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->recv_fn = fn;
	ctx->recv_arg = arg;
	pthread_mutex_unlock(&ctx->lock);
}

void storm_set_dest_fn(storm_ctx_t *ctx, storm_dest_f fn,
		       storm_dest_release_f rel, void *arg)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->dest_fn = fn;
	ctx->dest_rel = rel;
	ctx->dest_arg = arg;
	pthread_mutex_unlock(&ctx->lock);
}

__thread struct storm_ctx *sm_cb_ctx;

void sm_ctx_lock(struct storm_ctx *ctx)
{
	if (sm_cb_ctx != ctx)
		pthread_mutex_lock(&ctx->lock);
}

void sm_ctx_unlock(struct storm_ctx *ctx)
{
	if (sm_cb_ctx != ctx)
		pthread_mutex_unlock(&ctx->lock);
}

void *storm_region_ptr(storm_ctx_t *ctx, size_t *size)
{
	void *p;
	sm_ctx_lock(ctx);
	p = ctx->region;
	if (size)
		*size = ctx->region_size;
	sm_ctx_unlock(ctx);
	return p;
}

int storm_region_set(storm_ctx_t *ctx, void *buf, size_t size)
{
	pthread_mutex_lock(&ctx->lock);
	if (buf) {
		ctx->region = buf;
		ctx->region_size = size;
	} else {
		ctx->region = ctx->own_region;
		ctx->region_size = ctx->own_size;
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int storm_var_get(storm_ctx_t *ctx, int var, uint64_t *val)
{
	if (var < 0 || var >= ctx->nvars || !val)
		return -EINVAL;
	sm_ctx_lock(ctx);
	*val = ctx->vars[var];
	sm_ctx_unlock(ctx);
	return 0;
}

int storm_var_set(storm_ctx_t *ctx, int var, uint64_t val)
{
	if (var < 0 || var >= ctx->nvars)
		return -EINVAL;
	sm_ctx_lock(ctx);
	ctx->vars[var] = val;
	sm_ctx_unlock(ctx);
	return 0;
}

void storm_ctx_caps(storm_ctx_t *ctx, storm_caps_t *caps)
{
	*caps = ctx->caps;
}

void storm_ctx_stats(storm_ctx_t *ctx, storm_stats_t *st)
{
	pthread_mutex_lock(&ctx->lock);
	*st = ctx->st;
	pthread_mutex_unlock(&ctx->lock);
	st->conn_refused = sm_fi_conn_refused();
}

const char *storm_strerror(int err)
{
	static __thread char buf[96];
	if (err > 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case -ETIMEDOUT: return "timed out (a peer did not answer)";
	case -EIO: return "some members failed";
	case -EAGAIN: return "in progress / try again";
	case -EINVAL: return "invalid argument";
	case -ENOMEM: return "out of memory";
	case -ENOENT: return "not a member / unknown";
	case -EHOSTUNREACH: return "peer address unknown";
	case -EBUSY: return "busy";
	}
	if (-err >= FI_ERRNO_OFFSET)
		return fi_strerror(-err);
	snprintf(buf, sizeof(buf), "%s", strerror(-err));
	return buf;
}

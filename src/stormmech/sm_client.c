/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_client.c - client ranks: a transient root outside the node table.
 *
 * srun on a login node is not in the node table, yet it must be the root
 * of an XFER-AND-SIGNAL and the origin of a COMPARE-AND-WRITE, and the
 * nodes that talk to it (the root's children, the serializer) need its
 * address.  Ranks STORM_CLIENT_RANK_FIRST..LAST are reserved for such
 * clients: a ctx opened with one of them puts its own "host:port" in every
 * message it sends, and a receiver learns (or updates) the address of a
 * client rank from the message, per operation.  Only client ranks are
 * learned this way, and only well-formed addresses; node ranks come from
 * the node table as before.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm_internal.h"

bool storm_rank_is_client(int rank)
{
	return rank >= STORM_CLIENT_RANK_FIRST && rank <= STORM_CLIENT_RANK_LAST;
}

/* "a.b.c.d:port" with port 1..65535; nothing else is learned. */
int sm_client_addr_ok(const char *a, size_t maxlen)
{
	char host[INET_ADDRSTRLEN];
	struct in_addr in;
	const char *c;
	size_t len = strnlen(a, maxlen);
	long port = 0;

	if (len == 0 || len >= maxlen)
		return 0;
	c = strrchr(a, ':');
	if (!c || c == a || (size_t)(c - a) >= sizeof(host) || !c[1] ||
	    strlen(c + 1) > 5)
		return 0;
	memcpy(host, a, c - a);
	host[c - a] = '\0';
	if (inet_pton(AF_INET, host, &in) != 1)
		return 0;
	for (const char *p = c + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		port = port * 10 + (*p - '0');
	}
	return port >= 1 && port <= 65535;
}

/* At open: a client ctx finds its real address (port 0 picks one). */
int sm_client_open(struct storm_ctx *ctx)
{
	struct sockaddr_in sa;
	size_t len = sizeof(sa);
	char host[INET_ADDRSTRLEN];
	int rc;

	ctx->is_client = storm_rank_is_client(ctx->rank);
	if (!ctx->is_client)
		return 0;
	if (ctx->addr_str) {
		/* shm names are derived from host:port: no free-port choice */
		if (ctx->cfg.port <= 0)
			return -EINVAL;
		if (strlen(ctx->host) > 40 || ctx->cfg.port > 65535)
			return -EINVAL;
		snprintf(ctx->self_addr, sizeof(ctx->self_addr), "%.40s:%u",
			 ctx->host, (unsigned)(uint16_t)ctx->cfg.port);
		return 0;
	}
	rc = fi_getname(&ctx->ep->fid, &sa, &len);
	if (rc || len < sizeof(sa) || sa.sin_family != AF_INET ||
	    !inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host))) {
		sm_log(ctx, STORM_LOG_ERROR, "client: cannot read own address: %s",
		       rc ? fi_strerror(-rc) : "not IPv4");
		return rc ? rc : -EINVAL;
	}
	snprintf(ctx->self_addr, sizeof(ctx->self_addr), "%s:%u", host,
		 (unsigned)ntohs(sa.sin_port));
	if (!sm_client_addr_ok(ctx->self_addr, sizeof(ctx->self_addr)))
		return -EINVAL;
	return 0;
}

void sm_client_hdr_init(struct storm_ctx *ctx, struct sm_hdr *h)
{
	if (ctx->is_client)
		memcpy(h->client_addr, ctx->self_addr, sizeof(h->client_addr));
}

/*
 * Called with the lock held for every received header, before the sender
 * check.  Returns 0, or -EPERM if a client rank sent a malformed address
 * (the message is then dropped and counted as a bad sender).
 */
int sm_client_learn(struct storm_ctx *ctx, const struct sm_hdr *h)
{
	char *known;

	if (h->src >= STORM_MAX_RANKS || !storm_rank_is_client((int)h->src))
		return 0;
	if (!sm_client_addr_ok(h->client_addr, sizeof(h->client_addr)))
		return -EPERM;
	known = ctx->client_addr[h->src - STORM_CLIENT_RANK_FIRST];
	if (storm_set_has(&ctx->known, (int)h->src) &&
	    !strncmp(known, h->client_addr, sizeof(h->client_addr)))
		return 0;
	if (sm_set_peer_locked(ctx, (int)h->src, h->client_addr))
		return -EPERM;
	memcpy(known, h->client_addr, sizeof(h->client_addr));
	known[sizeof(h->client_addr) - 1] = '\0';
	sm_log(ctx, STORM_LOG_DEBUG, "client rank %u is at %s", h->src, known);
	return 0;
}

int storm_ctx_addr(storm_ctx_t *ctx, char *buf, size_t len)
{
	int n;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->self_addr[0])
		n = snprintf(buf, len, "%s", ctx->self_addr);
	else
		n = snprintf(buf, len, "%s:%d", ctx->host, ctx->cfg.port);
	pthread_mutex_unlock(&ctx->lock);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

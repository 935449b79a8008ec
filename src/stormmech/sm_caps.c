/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_caps.c - what the opened provider offers beyond tagged messages.
 *
 * Reported once at open (log line, storm_ctx_caps()) so that a site can
 * see what its fabric could do; the mechanisms do not use it.  Every
 * mechanism is a reduction or a pipeline over a tree of nodes, so native
 * atomics or RMA events would save at most one software hop per node,
 * and a second path would double what has to be tested on every
 * provider.  Both mechanisms therefore run over messages, which every
 * FI_EP_RDM provider has.
 */
#include <string.h>
#include <stdlib.h>

#include "sm_internal.h"

static bool probe(struct storm_ctx *ctx, uint64_t caps, bool want_cq_data)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	bool ok = false;

	if (!hints)
		return false;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup(ctx->provider);
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) == 0) {
		ok = true;
		if (want_cq_data)
			ok = info->domain_attr->cq_data_size >= 4;
		fi_freeinfo(info);
	}
	fi_freeinfo(hints);
	return ok;
}

void sm_caps_probe(struct storm_ctx *ctx)
{
	storm_caps_t *c = &ctx->caps;

	c->provider = ctx->info->fabric_attr->prov_name;
	c->native_atomics = probe(ctx, FI_MSG | FI_ATOMIC, false);
	c->rma_event = probe(ctx, FI_MSG | FI_RMA | FI_RMA_EVENT, false);
	c->remote_cq_data = probe(ctx, FI_MSG | FI_RMA, true);
	sm_log(ctx, STORM_LOG_INFO,
	       "provider %s: atomics %d rma_event %d cq_data %d (mechanisms use messages)",
	       c->provider, c->native_atomics, c->rma_event, c->remote_cq_data);
}

/*
 * sm_caps.c - what the provider offers, and which path each mechanism
 * takes.  The table is filled once at open; mechanisms call through
 * ctx->path and never test the provider name.
 */
#include <string.h>
#include <stdlib.h>

#include "sm_internal.h"

int sm_xfer_start_msg(struct storm_ctx *ctx, struct storm_op *op);
int sm_caw_submit_msg(struct storm_ctx *ctx, struct storm_op *op, int ser);

/* Message emulation: works on every FI_EP_RDM provider with FI_MSG. */
const struct sm_path_ops sm_msg_path = {
	.name = "msg",
	.xfer_start = sm_xfer_start_msg,
	.caw_submit = sm_caw_submit_msg,
};

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
	/* Every mechanism is a reduction or a pipeline over a tree, so even
	 * native atomics would save one software hop per node at most; the
	 * message path is the only one implemented so far. */
	ctx->path = &sm_msg_path;
	c->xfer_path = ctx->path->name;
	c->caw_path = ctx->path->name;
	sm_log(ctx, STORM_LOG_INFO,
	       "provider %s: atomics %d rma_event %d cq_data %d, path %s",
	       c->provider, c->native_atomics, c->rma_event, c->remote_cq_data,
	       ctx->path->name);
}

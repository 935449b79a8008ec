/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_fabric_msg.c - libFuzzer target: a STORM message as it arrives from
 * a peer, through the one way in every received message takes
 * (sm_dispatch(): sm_hdr_check(), then the XFER or COMPARE-AND-WRITE
 * handler), on a real endpoint (tcp;ofi_rxm on 127.0.0.1) of a 4-rank
 * fabric whose other ranks never answer.
 *
 * Junk sent to a node's fabric port is reset inside libfabric before it
 * reaches STORM (it does not speak libfabric's TCP handshake), so STORM's
 * own checks are fuzzed here, behind the transport: the first byte picks
 * the message type and the sender; the header starts as a valid one of
 * that type from a known peer and is XORed with the next bytes; the rest
 * is the payload.  An input of zeros is a well-formed message, and coverage
 * steers from there into every check and what follows it.  Operations it
 * starts time out (50 ms) and are reaped by the progress pass after each
 * input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/stormmech/sm_internal.h"

#define NRANKS 4

static storm_ctx_t *ctx;
static uint8_t *buf;

static void quiet_log(void *arg, storm_log_level_t lvl, const char *msg)
{
	(void) arg;
	(void) lvl;
	(void) msg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char addrs[NRANKS][32];
	static const char *nodes[NRANKS];
	storm_cfg_t cfg;
	int port = 20000 + (int) (getpid() % 20000);

	(void) argc;
	(void) argv;
	for (int i = 0; i < NRANKS; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", port + i);
		nodes[i] = addrs[i];
	}
	storm_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = port;
	cfg.rank = 0;
	cfg.nodes = nodes;
	cfg.nnodes = NRANKS;
	cfg.region_size = 64 * 1024;
	cfg.timeout_ms = 50;
	if (storm_ctx_open(&cfg, &ctx)) {
		fprintf(stderr, "fuzz_fabric_msg: cannot open an endpoint on 127.0.0.1:%d\n",
			port);
		abort();
	}
	storm_set_log_fn(ctx, quiet_log, NULL, STORM_LOG_ERROR);
	buf = calloc(1, ctx->rx_size);
	if (!buf)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sm_hdr *h = (struct sm_hdr *) buf;
	size_t hx, len, payload;
	const uint8_t *p;
	int type, src;

	if (!size)
		return 0;
	type = 1 + data[0] % (SM_TYPE_MAX - 1);
	src = 1 + (data[0] / (SM_TYPE_MAX - 1)) % (NRANKS - 1);
	data++;
	size--;
	hx = size < sizeof(*h) ? size : sizeof(*h);
	payload = size - hx;
	if (sizeof(*h) + payload > ctx->rx_size)
		payload = ctx->rx_size - sizeof(*h);
	len = sizeof(*h) + payload;

	memset(buf, 0, sizeof(*h));
	pthread_mutex_lock(&ctx->lock);
	sm_hdr_init(ctx, h, type, NULL);
	pthread_mutex_unlock(&ctx->lock);
	h->src = (uint32_t) src;
	h->root = (uint32_t) src;
	h->op_id = 1;
	h->arity = 2;
	h->timeout_ms = 50;
	h->payload = (uint32_t) (type == SM_DATA ? payload : 0);
	h->total = h->payload;
	h->chunk = h->payload ? h->payload : 1;
	h->rev = STORM_NO_EVENT;
	h->origin = (uint32_t) src;
	for (int r = 0; r < NRANKS; r++)
		storm_set_add(&h->set, r);
	p = data;
	for (size_t i = 0; i < hx; i++)
		((uint8_t *) h)[i] ^= p[i];
	memcpy(buf + sizeof(*h), data + hx, payload);

	pthread_mutex_lock(&ctx->lock);
	sm_dispatch(ctx, buf, len);
	pthread_mutex_unlock(&ctx->lock);
	storm_progress(ctx, 0);
	return 0;
}

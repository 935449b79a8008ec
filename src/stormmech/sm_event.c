/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_event.c - TEST-EVENT: local counters.  Counters never reset, so a
 * waiter asks for "count >= target" and cannot miss a signal that fired
 * before it started waiting.
 */
#include <errno.h>

#include "sm_internal.h"

int sm_wait(struct storm_ctx *ctx, bool (*done)(void *), void *arg,
	    int timeout_ms);

void sm_event_signal(struct storm_ctx *ctx, int ev)
{
	if (ev >= 0 && ev < STORM_MAX_EVENTS) {
		atomic_fetch_add(&ctx->ev[ev], 1);
		ctx->wake_gen++;
	}
}

int storm_event_test(storm_ctx_t *ctx, int ev, uint64_t *count)
{
	if (ev < 0 || ev >= STORM_MAX_EVENTS || !count)
		return -EINVAL;
	*count = atomic_load(&ctx->ev[ev]);
	return 0;
}

struct ev_wait {
	struct storm_ctx *ctx;
	int ev;
	uint64_t target;
};

static bool ev_done(void *arg)
{
	struct ev_wait *w = arg;
	return atomic_load(&w->ctx->ev[w->ev]) >= w->target;
}

int storm_event_wait(storm_ctx_t *ctx, int ev, uint64_t target, int timeout_ms)
{
	struct ev_wait w = { ctx, ev, target };

	if (ev < 0 || ev >= STORM_MAX_EVENTS)
		return -EINVAL;
	if (timeout_ms < 0)
		timeout_ms = ctx->cfg.timeout_ms;
	return sm_wait(ctx, ev_done, &w, timeout_ms);
}

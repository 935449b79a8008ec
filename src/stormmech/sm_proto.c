/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_proto.c - wire header, validation, sending.
 *
 * Nothing in a received header is trusted until sm_hdr_check() and the
 * handler's op-specific checks have passed; failures are counted in
 * ctx->st and the message is dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm_internal.h"

void sm_hdr_init(struct storm_ctx *ctx, struct sm_hdr *h, int type,
		 const struct storm_op *op)
{
	memset(h, 0, sizeof(*h));
	h->magic = SM_MAGIC;
	h->version = SM_VERSION;
	h->type = (uint8_t)type;
	h->src = (uint32_t)ctx->rank;
	h->wvar = UINT32_MAX;
	sm_client_hdr_init(ctx, h);
	if (!op)
		return;
	h->root = op->root;
	h->op_id = op->id;
	h->set = op->set;
	h->arity = (uint16_t)op->arity;
	h->offset = op->offset;
	h->total = op->total;
	h->chunk = (uint32_t)op->chunk;
	h->timeout_ms = (uint32_t)op->timeout_ms;
	h->var = (uint32_t)op->var;
	h->wvar = op->wvar < 0 ? UINT32_MAX : (uint32_t)op->wvar;
	h->cmp = (uint16_t)op->cmp;
	h->value = op->value;
	h->wvalue = op->wvalue;
	h->origin = op->origin;
	h->origin_op = op->origin_op;
	h->rev = op->remote_ev;
	h->xflags = op->xflags;
}

/* generic checks; op-specific ones live in the handlers */
int sm_hdr_check(struct storm_ctx *ctx, const struct sm_hdr *h, size_t len)
{
	if (len < sizeof(*h) || h->magic != SM_MAGIC ||
	    h->version != SM_VERSION || h->type == 0 ||
	    h->type >= SM_TYPE_MAX || h->payload != len - sizeof(*h) ||
	    h->arity < 1 || h->arity > SM_MAX_ARITY ||
	    h->root >= STORM_MAX_RANKS || h->timeout_ms == 0 ||
	    h->timeout_ms > 3600000 || h->cmp > STORM_NE ||
	    h->rev < STORM_NO_EVENT || h->rev >= STORM_MAX_EVENTS ||
	    (h->xflags & ~(uint32_t)STORM_XFER_FLAGS)) {
		ctx->st.rx_bad_header++;
		return -EINVAL;
	}
	if (h->type != SM_DATA && h->payload != 0) {
		ctx->st.rx_bad_header++;
		return -EINVAL;
	}
	if (sm_client_learn(ctx, h)) {
		ctx->st.rx_bad_sender++;
		return -EPERM;
	}
	if (h->src >= STORM_MAX_RANKS || !storm_set_has(&ctx->known, h->src) ||
	    h->src == (uint32_t)ctx->rank) {
		ctx->st.rx_bad_sender++;
		return -EPERM;
	}
	return 0;
}

bool sm_cmp_eval(int cmp, uint64_t a, uint64_t b)
{
	switch (cmp) {
	case STORM_GE: return a >= b;
	case STORM_LT: return a < b;
	case STORM_EQ: return a == b;
	case STORM_NE: return a != b;
	}
	return false;
}

void sm_tx_posted(struct storm_ctx *ctx, struct sm_tx *tx)
{
	tx->posted = true;
	ctx->tx_posted++;
	tx->posted_prev = NULL;
	tx->posted_next = ctx->posted;
	if (ctx->posted)
		ctx->posted->posted_prev = tx;
	ctx->posted = tx;
}

/* Sends the provider refuses with EAGAIN wait in ctx->pend, in order, and
 * are posted again from every progress pass: a handler never blocks. */
static int post_tx(struct storm_ctx *ctx, struct sm_tx *tx)
{
	struct iovec iov[2] = {
		{ .iov_base = &tx->hdr, .iov_len = sizeof(tx->hdr) },
		{ .iov_base = (void *)tx->payload, .iov_len = tx->plen },
	};
	struct fi_msg msg = {
		.msg_iov = iov,
		.iov_count = tx->plen ? 2 : 1,
		.addr = ctx->peer[tx->dest],
		.context = &tx->fctx,
	};
	int rc = (int)fi_sendmsg(ctx->ep, &msg, FI_COMPLETION);

	if (!rc)
		sm_tx_posted(ctx, tx);
	return rc;
}

static void tx_failed(struct storm_ctx *ctx, struct sm_tx *tx, int rc)
{
	ctx->st.tx_errors++;
	sm_log(ctx, STORM_LOG_DEBUG, "send to %d: %s", tx->dest,
	       fi_strerror(-rc));
	sm_xfer_tx_done(ctx, tx, rc);
}

static bool dest_pending(const struct storm_ctx *ctx, int dest)
{
	for (const struct sm_tx *t = ctx->pend; t; t = t->next)
		if (t->dest == dest)
			return true;
	return false;
}

/* Order is kept per destination only: a peer that stops draining (dead,
 * stopped) must not hold up sends to everybody else.  A send that waited
 * longer than the timeout, or whose child was given up, fails. */
int sm_flush_pending(struct storm_ctx *ctx)
{
	storm_set_t blocked;
	struct sm_tx **pp = &ctx->pend, *last = NULL, *dead = NULL;
	uint64_t now = 0;
	int n = 0;

	if (!ctx->pend)
		return 0;
	storm_set_clear(&blocked);
	while (*pp) {
		struct sm_tx *tx = *pp;
		int rc;

		if (storm_set_has(&blocked, tx->dest)) {
			last = tx;
			pp = &tx->next;
			continue;
		}
		if (!now)
			now = storm_mono_ns();
		if (!storm_set_has(&ctx->known, tx->dest))
			rc = -EHOSTUNREACH;
		else if (tx->op && tx->child >= 0 &&
			 tx->op->ch[tx->child].failed)
			rc = -ECANCELED;
		else if (now - tx->queued_ns >
			 (uint64_t)ctx->cfg.timeout_ms * 1000000ull)
			rc = -ETIMEDOUT;
		else
			rc = post_tx(ctx, tx);
		if (rc == -FI_EAGAIN) {
			storm_set_add(&blocked, tx->dest);
			last = tx;
			pp = &tx->next;
			continue;
		}
		*pp = tx->next;
		n++;
		if (rc) {
			/* handled after the walk: handlers may queue sends */
			tx->plen = (size_t)-rc;
			tx->next = dead;
			dead = tx;
		} else {
			ctx->st.tx_msgs++;
		}
	}
	ctx->pend_tail = last;
	while (dead) {
		struct sm_tx *tx = dead;
		dead = tx->next;
		tx_failed(ctx, tx, -(int)tx->plen);
	}
	return n;
}

/* A message nobody waits on the completion of (no chunk window to
 * credit), small enough to go inline: 0 sent, -FI_EAGAIN queue it as
 * usual, -E2BIG too big to go inline, else the error.  A peer that dies
 * after this shows as a missing answer, within the operation's timeout,
 * as for any lost message. */
static int try_inject(struct storm_ctx *ctx, int dest, const struct sm_hdr *h,
		      const void *payload, size_t plen)
{
	uint8_t buf[SM_INJECT_WANT];
	struct sm_hdr *wh = (struct sm_hdr *)buf;

	if (sizeof(*h) + plen > ctx->inject_max || sizeof(*h) + plen > sizeof(buf))
		return -E2BIG;
	memcpy(buf, h, sizeof(*h));
	wh->payload = (uint32_t)plen;
	if (plen)
		memcpy(buf + sizeof(*h), payload, plen);
	return (int)fi_inject(ctx->ep, buf, sizeof(*h) + plen,
			      ctx->peer[dest]);
}

static bool dest_known(const struct storm_ctx *ctx, int dest)
{
	return dest >= 0 && dest < STORM_MAX_RANKS &&
	       storm_set_has(&ctx->known, dest);
}

int sm_send_inline(struct storm_ctx *ctx, int dest, const struct sm_hdr *h,
		   const void *payload, size_t plen)
{
	int rc;

	if (!dest_known(ctx, dest))
		return -EHOSTUNREACH;
	if (dest_pending(ctx, dest))
		return -FI_EAGAIN;	/* behind queued sends: keep the order */
	rc = try_inject(ctx, dest, h, payload, plen);
	if (rc == 0)
		ctx->st.tx_msgs++;
	return rc;
}

int sm_send(struct storm_ctx *ctx, int dest, const struct sm_hdr *h,
	    const void *payload, size_t plen, struct storm_op *op, int child)
{
	struct sm_tx *tx;
	bool pending;
	int rc;

	if (child < 0) {
		/* nobody waits on its completion: inline when it fits */
		rc = sm_send_inline(ctx, dest, h, payload, plen);
		if (rc == 0 || rc == -EHOSTUNREACH)
			return rc;
		if (rc != -FI_EAGAIN && rc != -E2BIG) {
			ctx->st.tx_errors++;
			return rc;
		}
		pending = rc == -FI_EAGAIN;	/* queue it, in order */
	} else {
		if (!dest_known(ctx, dest))
			return -EHOSTUNREACH;
		pending = dest_pending(ctx, dest);
	}
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return -ENOMEM;
	tx->kind = SM_CTX_TX;
	tx->op = op;
	tx->child = child;
	tx->dest = dest;
	tx->hdr = *h;
	tx->hdr.payload = (uint32_t)plen;
	tx->payload = payload;
	tx->plen = plen;
	rc = pending ? -FI_EAGAIN : post_tx(ctx, tx);
	if (rc && rc != -FI_EAGAIN) {
		ctx->st.tx_errors++;
		free(tx);
		return rc;
	}
	if (op)
		op->refs++;
	if (rc == -FI_EAGAIN) {
		tx->queued_ns = storm_mono_ns();
		if (ctx->pend_tail)
			ctx->pend_tail->next = tx;
		else
			ctx->pend = tx;
		ctx->pend_tail = tx;
		return 0;
	}
	ctx->st.tx_msgs++;
	return 0;
}

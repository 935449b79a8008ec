/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_caw.c - COMPARE-AND-WRITE.
 *
 * Serialization point: the lowest rank of the set runs requests one at a
 * time (ctx->caw_q), so identical concurrent callers see one winner.  Each
 * request is a compare round (REQ down, REPLY up, AND-reduced) and, when
 * true and asked, a write round (WRITE down, WACK up) before the next
 * request starts.
 *
 * A request runs with its origin's timeout (never above the serializer's
 * own): the origin waits twice that for the result, so a member that does
 * not answer is named in it, by its parent or by the serializer, before
 * the origin gives up on the serializer.  With the serializer's timeout a
 * short-waiting origin (the Machine Manager) could only blame the
 * serializer for any stalled member below it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm_internal.h"

static int lowest(const storm_set_t *s)
{
	return storm_set_next(s, 0);
}

static uint64_t child_deadline(const struct storm_op *op, uint64_t now)
{
	uint64_t t = (uint64_t)op->timeout_ms * 1000000ull;
	if (op->tree.depth > 0 && op->tree.height > 0)
		t = t * (op->tree.height - op->tree.depth) / op->tree.height;
	return now + t;
}

static bool local_cmp(struct storm_ctx *ctx, const struct storm_op *op)
{
	if (op->var < 0 || op->var >= ctx->nvars)
		return false;
	return sm_cmp_eval(op->cmp, ctx->vars[op->var], op->value);
}

static void local_write(struct storm_ctx *ctx, const struct storm_op *op)
{
	if (op->wvar >= 0 && op->wvar < ctx->nvars)
		ctx->vars[op->wvar] = op->wvalue;
}

/* fill the op from a header and send it down to the children */
static void fan_out(struct storm_ctx *ctx, struct storm_op *op, int type)
{
	struct sm_hdr h;

	for (int i = 0; i < op->tree.nchild; i++) {
		op->ch[i].rank = op->tree.child[i];
		op->ch[i].acked = op->ch[i].failed = false;
	}
	sm_hdr_init(ctx, &h, type, op);
	for (int i = 0; i < op->tree.nchild; i++)
		if (sm_send(ctx, op->ch[i].rank, &h, NULL, 0, NULL, -1))
			sm_fail_child(ctx, op, i);
	op->deadline_ns = child_deadline(op, storm_mono_ns());
}

static void start_next(struct storm_ctx *ctx);

static void deliver_result(struct storm_ctx *ctx, const struct storm_op *op,
			   int result, const storm_set_t *failed, int status)
{
	if (op->origin == (uint32_t)ctx->rank) {
		for (struct storm_op *o = ctx->ops; o; o = o->next) {
			if (o->kind == SM_K_CAW_ORIGIN && o->id == op->origin_op &&
			    o->phase != SM_P_DONE) {
				o->result = result;
				o->failed = *failed;
				sm_op_finish(ctx, o, status);
				break;
			}
		}
		return;
	}
	struct sm_hdr h;
	sm_hdr_init(ctx, &h, SM_CAW_RESULT, op);
	h.result = (uint8_t)result;
	h.failed = *failed;
	h.status = status;
	sm_send(ctx, (int)op->origin, &h, NULL, 0, NULL, -1);
}

static void check_done(struct storm_ctx *ctx, struct storm_op *op)
{
	if (op->phase != SM_P_RUN || !sm_children_done(op))
		return;
	bool reached = storm_set_count(&op->failed) == 0;

	if (!op->is_root) {
		struct sm_hdr h;
		sm_hdr_init(ctx, &h, op->kind == SM_K_CAW_CMP ? SM_CAW_REPLY
							      : SM_CAW_WACK, op);
		h.result = (uint8_t)(op->result ? 1 : 0);
		h.failed = op->failed;
		sm_send(ctx, op->tree.parent, &h, NULL, 0, NULL, -1);
		sm_op_finish(ctx, op, 0);
		return;
	}
	/* serializer */
	int res = op->result && reached;
	if (op->kind == SM_K_CAW_CMP && res && op->wvar >= 0) {
		struct storm_op *w = sm_op_new(ctx, SM_K_CAW_WRITE);
		if (w) {
			uint64_t id = ctx->next_id++;
			struct storm_op *link = w->next;
			*w = *op;
			w->next = link;
			w->kind = SM_K_CAW_WRITE;
			w->id = id;
			w->phase = SM_P_RUN;
			w->result = 1;
			w->refs = 0;
			storm_set_clear(&w->failed);
			local_write(ctx, w);
			ctx->caw_cur = w;
			sm_op_finish(ctx, op, 0);
			fan_out(ctx, w, SM_CAW_WRITE);
			check_done(ctx, w);
			return;
		}
		res = 0;
	}
	deliver_result(ctx, op, res, &op->failed, 0);
	sm_op_finish(ctx, op, 0);
	ctx->caw_cur = NULL;
	start_next(ctx);
}

static void start_next(struct storm_ctx *ctx)
{
	while (!ctx->caw_cur && ctx->caw_len) {
		struct sm_hdr *q = &ctx->caw_q[ctx->caw_head].h;
		ctx->caw_head = (ctx->caw_head + 1) % SM_CAW_QUEUE;
		ctx->caw_len--;

		struct storm_op *op = sm_op_new(ctx, SM_K_CAW_CMP);
		if (!op)
			return;
		op->is_root = true;
		op->root = (uint32_t)ctx->rank;
		op->id = ctx->next_id++;
		op->set = q->set;
		op->arity = ctx->cfg.arity;
		op->timeout_ms = ctx->cfg.timeout_ms;
		if (q->timeout_ms < (uint32_t)op->timeout_ms)
			op->timeout_ms = (int)q->timeout_ms;
		op->var = (int)q->var;
		op->cmp = q->cmp;
		op->value = q->value;
		op->wvar = q->wvar == UINT32_MAX ? -1 : (int)q->wvar;
		op->wvalue = q->wvalue;
		op->origin = q->origin;
		op->origin_op = q->origin_op;
		sm_tree_build(&op->set, ctx->rank, op->arity, ctx->rank,
			      &op->tree);
		op->result = local_cmp(ctx, op);
		ctx->caw_cur = op;
		fan_out(ctx, op, SM_CAW_REQ);
		check_done(ctx, op);
	}
}

static void enqueue(struct storm_ctx *ctx, const struct sm_hdr *h)
{
	if (ctx->caw_len >= SM_CAW_QUEUE) {
		struct storm_op tmp;
		storm_set_t none;
		memset(&tmp, 0, sizeof(tmp));
		storm_set_clear(&none);
		tmp.origin = h->origin;
		tmp.origin_op = h->origin_op;
		tmp.root = (uint32_t)ctx->rank;
		tmp.set = h->set;
		tmp.arity = 1;
		tmp.timeout_ms = ctx->cfg.timeout_ms;
		tmp.wvar = -1;
		deliver_result(ctx, &tmp, 0, &none, -EBUSY);
		return;
	}
	ctx->caw_q[(ctx->caw_head + ctx->caw_len) % SM_CAW_QUEUE].h = *h;
	ctx->caw_len++;
	start_next(ctx);
}

int sm_caw_submit_msg(struct storm_ctx *ctx, struct storm_op *op, int ser)
{
	struct sm_hdr h;
	sm_hdr_init(ctx, &h, SM_CAW_SUBMIT, op);
	if (ser == ctx->rank) {
		enqueue(ctx, &h);
		return 0;
	}
	return sm_send(ctx, ser, &h, NULL, 0, NULL, -1);
}

static bool origin_done(void *arg)
{
	return ((struct storm_op *)arg)->phase == SM_P_DONE;
}

int storm_caw(storm_ctx_t *ctx, const storm_set_t *set, int var,
	      storm_cmp_t cmp, uint64_t value, int wvar, uint64_t wvalue,
	      storm_set_t *unreachable)
{
	struct storm_op *op;
	int rc, ser;

	if (!ctx || !set || var < 0 || var >= ctx->nvars || cmp < STORM_GE ||
	    cmp > STORM_NE || wvar >= ctx->nvars || wvar < -1)
		return -EINVAL;
	if (unreachable)
		storm_set_clear(unreachable);
	ser = lowest(set);
	if (ser < 0)
		return 1;
	pthread_mutex_lock(&ctx->lock);
	op = sm_op_new(ctx, SM_K_CAW_ORIGIN);
	if (!op) {
		pthread_mutex_unlock(&ctx->lock);
		return -ENOMEM;
	}
	op->user_owned = true;
	op->root = (uint32_t)ctx->rank;
	op->id = ctx->next_id++;
	op->set = *set;
	op->arity = ctx->cfg.arity;
	op->timeout_ms = ctx->cfg.timeout_ms;
	op->var = var;
	op->cmp = cmp;
	op->value = value;
	op->wvar = wvar;
	op->wvalue = wvalue;
	op->origin = (uint32_t)ctx->rank;
	op->origin_op = op->id;
	/* the serializer may have a queue in front of us: twice the tree's
	 * bound before we call it unreachable */
	op->deadline_ns = storm_mono_ns() + 2ull * op->timeout_ms * 1000000ull;
	rc = sm_caw_submit_msg(ctx, op, ser);
	pthread_mutex_unlock(&ctx->lock);

	if (rc) {
		pthread_mutex_lock(&ctx->lock);
		storm_set_add(&op->failed, ser);
		sm_op_finish(ctx, op, rc);
		pthread_mutex_unlock(&ctx->lock);
	} else {
		sm_wait(ctx, origin_done, op, 2 * op->timeout_ms + 1000);
	}
	pthread_mutex_lock(&ctx->lock);
	if (op->phase != SM_P_DONE) {
		storm_set_add(&op->failed, ser);
		sm_op_finish(ctx, op, -ETIMEDOUT);
	}
	if (unreachable)
		*unreachable = op->failed;
	if (op->status == -EBUSY)
		rc = -EBUSY;
	else
		rc = (op->status == 0 && op->result &&
		      storm_set_count(&op->failed) == 0) ? 1 : 0;
	op->user_owned = false;
	sm_op_reap(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

/* ---------------------------------------------------------- receive */
static struct storm_op *member_op(struct storm_ctx *ctx,
				  const struct sm_hdr *h, int kind)
{
	struct sm_tree t;

	if ((int)h->root != lowest(&h->set) ||
	    sm_tree_build(&h->set, (int)h->root, h->arity, ctx->rank, &t) ||
	    t.parent != (int)h->src) {
		ctx->st.rx_bad_sender++;
		return NULL;
	}
	if (sm_op_find(ctx, h->root, h->op_id, kind) ||
	    sm_op_is_stale(ctx, h->root, h->op_id)) {
		ctx->st.rx_stale++;
		return NULL;
	}
	struct storm_op *op = sm_op_from_hdr(ctx, kind, h, &t);
	if (!op)
		return NULL;
	op->var = (int)h->var;
	op->cmp = h->cmp;
	op->value = h->value;
	op->wvar = h->wvar == UINT32_MAX ? -1 : (int)h->wvar;
	op->wvalue = h->wvalue;
	op->origin = h->origin;
	op->origin_op = h->origin_op;
	op->result = 1;
	return op;
}

static void rx_up(struct storm_ctx *ctx, const struct sm_hdr *h, int kind)
{
	struct storm_op *op = sm_op_find(ctx, h->root, h->op_id, kind);
	if (!op) {
		ctx->st.rx_stale++;
		return;
	}
	int ci = -1;
	for (int i = 0; i < op->tree.nchild; i++)
		if ((uint32_t)op->ch[i].rank == h->src)
			ci = i;
	if (ci < 0) {
		ctx->st.rx_bad_sender++;
		return;
	}
	if (op->ch[ci].acked || op->ch[ci].failed) {
		ctx->st.rx_stale++;
		return;
	}
	storm_set_t sub;
	storm_set_clear(&sub);
	sm_tree_subtree(&op->set, (int)op->root, op->arity, (int)h->src, &sub);
	for (int w = 0; w < STORM_MAX_RANKS / 64; w++)
		op->failed.bits[w] |= h->failed.bits[w] & sub.bits[w];
	if (!h->result)
		op->result = 0;
	op->ch[ci].acked = true;
	check_done(ctx, op);
}

void sm_caw_rx(struct storm_ctx *ctx, const struct sm_hdr *h)
{
	struct storm_op *op;

	switch (h->type) {
	case SM_CAW_SUBMIT:
		if (lowest(&h->set) != ctx->rank || h->src != h->origin) {
			ctx->st.rx_bad_sender++;
			return;
		}
		enqueue(ctx, h);
		return;
	case SM_CAW_REQ:
		op = member_op(ctx, h, SM_K_CAW_CMP);
		if (!op)
			return;
		op->result = local_cmp(ctx, op);
		fan_out(ctx, op, SM_CAW_REQ);
		check_done(ctx, op);
		return;
	case SM_CAW_WRITE:
		op = member_op(ctx, h, SM_K_CAW_WRITE);
		if (!op)
			return;
		local_write(ctx, op);
		fan_out(ctx, op, SM_CAW_WRITE);
		check_done(ctx, op);
		return;
	case SM_CAW_REPLY:
		rx_up(ctx, h, SM_K_CAW_CMP);
		return;
	case SM_CAW_WACK:
		rx_up(ctx, h, SM_K_CAW_WRITE);
		return;
	case SM_CAW_RESULT:
		for (op = ctx->ops; op; op = op->next) {
			if (op->kind == SM_K_CAW_ORIGIN &&
			    op->id == h->origin_op && op->phase != SM_P_DONE)
				break;
		}
		if (!op || h->origin != (uint32_t)ctx->rank) {
			ctx->st.rx_stale++;
			return;
		}
		if ((int)h->src != lowest(&op->set)) {
			ctx->st.rx_bad_sender++;
			return;
		}
		op->result = h->result;
		op->failed = h->failed;
		sm_op_finish(ctx, op, h->status);
		return;
	}
	ctx->st.rx_bad_header++;
}

void sm_caw_timer(struct storm_ctx *ctx, struct storm_op *op, uint64_t now)
{
	if (now < op->deadline_ns)
		return;
	if (op->kind == SM_K_CAW_ORIGIN) {
		storm_set_add(&op->failed, lowest(&op->set));
		sm_op_finish(ctx, op, -ETIMEDOUT);
		return;
	}
	for (int i = 0; i < op->tree.nchild; i++)
		if (!op->ch[i].acked)
			sm_fail_child(ctx, op, i);
	check_done(ctx, op);
}

int storm_caw_lost(storm_ctx_t *ctx, const storm_set_t *set,
		   const storm_set_t *unreachable, storm_set_t *lost)
{
	int ser;

	if (!ctx || !set || !unreachable || !lost)
		return -EINVAL;
	storm_set_clear(lost);
	ser = lowest(set);
	if (ser < 0)
		return 0;
	/* the serializer's tree: its rank as root, the arity every member
	 * is configured with (the serializer uses its own) */
	sm_tree_lost(set, ser, ctx->cfg.arity, unreachable, lost);
	return 0;
}

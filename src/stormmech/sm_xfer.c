/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_xfer.c - XFER-AND-SIGNAL: pipelined k-ary tree multicast, ack
 * reduction, commit/abort; and the op bookkeeping shared with sm_caw.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/eventfd.h>
#include "sm_internal.h"

/* ------------------------------------------------------------ ops */
/* New work for a thread asleep on its fds (deep_sleep): wake it through
 * kick_fd, so that the work's sends and timers run at once. */
void sm_kick_sleeper(struct storm_ctx *ctx)
{
	if (atomic_load(&ctx->deep_sleep) && ctx->kick_fd >= 0)
		(void)eventfd_write(ctx->kick_fd, 1);
}

struct storm_op *sm_op_new(struct storm_ctx *ctx, int kind)
{
	struct storm_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->ctx = ctx;
	op->kind = kind;
	op->phase = SM_P_RUN;
	op->wvar = -1;
	op->local_ev = op->remote_ev = STORM_NO_EVENT;
	op->next = ctx->ops;
	ctx->ops = op;
	sm_kick_sleeper(ctx);
	return op;
}

/* A member's operation for a received header: identity, set and its place
 * in the tree, from the (already checked) header. */
struct storm_op *sm_op_from_hdr(struct storm_ctx *ctx, int kind,
				const struct sm_hdr *h, const struct sm_tree *t)
{
	struct storm_op *op = sm_op_new(ctx, kind);

	if (!op)
		return NULL;
	op->root = h->root;
	op->id = h->op_id;
	op->set = h->set;
	op->arity = h->arity;
	op->tree = *t;
	op->timeout_ms = (int)h->timeout_ms;
	return op;
}

struct storm_op *sm_op_find(struct storm_ctx *ctx, uint32_t root, uint64_t id,
			    int kind)
{
	for (struct storm_op *op = ctx->ops; op; op = op->next)
		if (op->id == id && op->root == root && op->kind == kind &&
		    op->phase != SM_P_DONE)
			return op;
	return NULL;
}

bool sm_op_is_stale(struct storm_ctx *ctx, uint32_t root, uint64_t id)
{
	for (int i = 0; i < SM_DONE_RING; i++)
		if (ctx->done[i].id == id && ctx->done[i].root == root)
			return true;
	return false;
}

void sm_op_finish(struct storm_ctx *ctx, struct storm_op *op, int status)
{
	if (op->phase == SM_P_DONE)
		return;
	op->phase = SM_P_DONE;
	op->status = status;
	ctx->wake_gen++;
	ctx->done[ctx->done_pos].root = op->root;
	ctx->done[ctx->done_pos].id = op->id;
	ctx->done_pos = (ctx->done_pos + 1) % SM_DONE_RING;
}

void sm_op_reap(struct storm_ctx *ctx)
{
	struct storm_op **pp = &ctx->ops;

	while (*pp) {
		struct storm_op *op = *pp;
		if (op->phase != SM_P_DONE || op->refs > 0 || op->user_owned ||
		    op == ctx->caw_cur) {
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		/* released only now: no send can still read the buffer */
		if (op->dst_hooked && ctx->dest_rel)
			ctx->dest_rel(ctx->dest_arg, op->dst, op->total,
				      op->status == 0);
		free(op->have);
		free(op);
	}
}

void sm_fail_child(struct storm_ctx *ctx, struct storm_op *op, int ci)
{
	struct sm_child *c = &op->ch[ci];
	if (c->failed || c->acked)
		return;
	c->failed = true;
	sm_tree_subtree(&op->set, (int)op->root, op->arity, c->rank,
			&op->failed);
}

static void init_children(struct storm_ctx *ctx, struct storm_op *op)
{
	for (int i = 0; i < op->tree.nchild; i++) {
		op->ch[i].rank = op->tree.child[i];
		if (!storm_set_has(&ctx->known, op->ch[i].rank))
			sm_fail_child(ctx, op, i);
	}
}

/* Deadline for a node's children: the root gets the whole timeout, a
 * node at depth d gets (H-d)/H of it, so that a missing leaf is reported by
 * its parent before the root gives up on the parent. */
static uint64_t child_deadline(const struct storm_op *op, uint64_t now)
{
	uint64_t t = (uint64_t)op->timeout_ms * 1000000ull;
	if (op->tree.depth > 0 && op->tree.height > 0)
		t = t * (op->tree.height - op->tree.depth) / op->tree.height;
	return now + t;
}

/* ---------------------------------------------------------- pipeline */
static size_t chunk_len(const struct storm_op *op, uint32_t idx)
{
	uint64_t off = (uint64_t)idx * op->chunk;
	if (op->total <= off)
		return 0;
	return op->total - off < op->chunk ? op->total - off : op->chunk;
}

static void pump(struct storm_ctx *ctx, struct storm_op *op)
{
	const uint8_t *base = op->is_root ? op->src : op->dst;
	struct sm_hdr h;

	sm_hdr_init(ctx, &h, SM_DATA, op);
	for (int i = 0; i < op->tree.nchild; i++) {
		struct sm_child *c = &op->ch[i];
		while (!c->failed && c->next < op->prefix &&
		       c->inflight < ctx->cfg.window) {
			h.chunk_idx = c->next;
			size_t len = chunk_len(op, c->next);
			int rc;

			/* A one-chunk block that fits the inject size (a
			 * strobe) goes inline: no send completion to wait
			 * for, so the sender sleeps until the acks instead of
			 * polling for completions, which on a shared host
			 * preempted the nodes switching on the strobe. */
			if (op->nchunks == 1) {
				rc = sm_send_inline(ctx, c->rank, &h,
						    len ? base : NULL, len);
				if (rc == 0) {
					c->next++;
					continue;
				}
				if (rc != -FI_EAGAIN && rc != -E2BIG) {
					sm_fail_child(ctx, op, i);
					break;
				}
			}
			rc = sm_send(ctx, c->rank, &h,
					 len ? base + (uint64_t)c->next * op->chunk : NULL,
					 len, op, i);
			if (rc) {
				sm_fail_child(ctx, op, i);
				break;
			}
			c->next++;
			c->inflight++;
		}
	}
}

static void send_down(struct storm_ctx *ctx, struct storm_op *op, int type)
{
	struct sm_hdr h;
	sm_hdr_init(ctx, &h, type, op);
	for (int i = 0; i < op->tree.nchild; i++)
		if (!op->ch[i].failed)
			sm_send(ctx, op->ch[i].rank, &h, NULL, 0, NULL, -1);
}

static void commit_local(struct storm_ctx *ctx, struct storm_op *op)
{
	if (ctx->recv_fn) {
		sm_cb_ctx = ctx;	/* ctx is locked: see sm_ctx_lock() */
		ctx->recv_fn(ctx->recv_arg, (int)op->root, op->offset,
			     op->total, op->dst);
		sm_cb_ctx = NULL;
	}
	sm_event_signal(ctx, op->remote_ev);
}

static void check_done(struct storm_ctx *ctx, struct storm_op *op)
{
	if (op->phase != SM_P_RUN || op->nhave < op->nchunks ||
	    !sm_children_done(op))
		return;
	bool ok = storm_set_count(&op->failed) == 0;
	bool on_arrival = op->xflags & STORM_XFER_ON_ARRIVAL;
	if (!op->is_root) {
		struct sm_hdr h;
		sm_hdr_init(ctx, &h, SM_ACK, op);
		h.failed = op->failed;
		h.status = ok ? 0 : -EIO;
		if (op->tree.parent >= 0)
			sm_send(ctx, op->tree.parent, &h, NULL, 0, NULL, -1);
		if (on_arrival) {	/* signalled already; no commit comes */
			sm_op_finish(ctx, op, ok ? 0 : -EIO);
			return;
		}
		op->phase = SM_P_WAIT_COMMIT;
		op->gc_ns = storm_mono_ns() + 2ull * op->timeout_ms * 1000000ull;
		return;
	}
	if (!on_arrival) {
		send_down(ctx, op, ok ? SM_COMMIT : SM_ABORT);
		if (ok && op->dst)
			commit_local(ctx, op);
	}
	sm_event_signal(ctx, op->local_ev);
	sm_op_finish(ctx, op, ok ? 0 : -EIO);
}

/* --------------------------------------------------------------- root */
int sm_xfer_start_msg(struct storm_ctx *ctx, struct storm_op *op)
{
	pump(ctx, op);
	check_done(ctx, op);
	return 0;
}

int storm_xfer(storm_ctx_t *ctx, const storm_set_t *set, const void *src,
	       size_t len, uint64_t off, int lev, int rev, storm_op_t **out)
{
	return storm_xfer_flags(ctx, set, src, len, off, lev, rev, 0, out);
}

/* A block of more than one chunk goes down a tree of bulk_arity (1: a
 * chain), where every interior node sends one copy over its one link;
 * shorter messages (strobes, manifests) down the shallower k-ary tree. */
static int op_arity(const struct storm_ctx *ctx, size_t len)
{
	return len > ctx->cfg.chunk ? ctx->cfg.bulk_arity : ctx->cfg.arity;
}

static int xfer_begin(storm_ctx_t *ctx, const storm_set_t *set,
		      const void *src, size_t len, uint64_t off, int lev,
		      int rev, unsigned flags, bool stream, storm_op_t **out)
{
	struct storm_op *op;
	int rc;

	if (!ctx || !set || !out || (len && !src) ||
	    lev < STORM_NO_EVENT || lev >= STORM_MAX_EVENTS ||
	    rev < STORM_NO_EVENT || rev >= STORM_MAX_EVENTS ||
	    off + len < off || (flags & ~STORM_XFER_FLAGS))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	bool member = storm_set_has(set, ctx->rank);
	if ((member && (off + len > ctx->region_size)) ||
	    (stream && (member || (flags & STORM_XFER_ON_ARRIVAL)))) {
		rc = -EINVAL;
		goto out;
	}
	op = sm_op_new(ctx, SM_K_XFER);
	if (!op) {
		rc = -ENOMEM;
		goto out;
	}
	op->is_root = true;
	op->user_owned = true;
	op->root = (uint32_t)ctx->rank;
	op->id = ctx->next_id++;
	op->set = *set;
	op->arity = op_arity(ctx, len);
	op->chunk = ctx->cfg.chunk;
	op->timeout_ms = ctx->cfg.timeout_ms;
	op->offset = off;
	op->total = len;
	op->nchunks = len ? (uint32_t)((len + op->chunk - 1) / op->chunk) : 1;
	/* a stream's chunks are sent as storm_xfer_supply() makes them whole */
	op->nhave = op->prefix = stream && len ? 0 : op->nchunks;
	op->src = src;
	op->local_ev = lev;
	op->remote_ev = rev;
	op->xflags = flags;
	sm_tree_build(set, ctx->rank, op->arity, ctx->rank, &op->tree);
	op->deadline_ns = child_deadline(op, storm_mono_ns());
	if (member) {
		op->dst = ctx->region + off;
		if (len && op->dst != (const uint8_t *)src)
			memmove(op->dst, src, len);
	}
	init_children(ctx, op);
	rc = sm_xfer_start_msg(ctx, op);
	/* the root as a member holds the block from the start */
	if (!rc && member && (flags & STORM_XFER_ON_ARRIVAL))
		commit_local(ctx, op);
	*out = op;
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int storm_xfer_flags(storm_ctx_t *ctx, const storm_set_t *set,
		     const void *src, size_t len, uint64_t off, int lev,
		     int rev, unsigned flags, storm_op_t **out)
{
	return xfer_begin(ctx, set, src, len, off, lev, rev, flags, false, out);
}

int storm_xfer_stream(storm_ctx_t *ctx, const storm_set_t *set,
		      const void *src, size_t len, uint64_t off, int lev,
		      int rev, storm_op_t **out)
{
	return xfer_begin(ctx, set, src, len, off, lev, rev, 0, true, out);
}

int storm_xfer_supply(storm_op_t *op, uint64_t avail)
{
	struct storm_ctx *ctx;
	int rc = 0;

	if (!op || !op->is_root || op->kind != SM_K_XFER)
		return -EINVAL;
	ctx = op->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (op->phase != SM_P_RUN) {
		rc = op->status ? op->status : -EALREADY;
		goto out;
	}
	uint32_t whole = avail >= op->total ? op->nchunks :
			 (uint32_t)(avail / op->chunk);
	if (whole > op->prefix) {
		op->prefix = op->nhave = whole;
		/* the children's clock runs from the latest data: a slow
		 * source is not a dead child */
		op->deadline_ns = child_deadline(op, storm_mono_ns());
		pump(ctx, op);
		check_done(ctx, op);
		sm_kick_sleeper(ctx);
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int storm_op_cancel(storm_op_t *op)
{
	struct storm_ctx *ctx;

	if (!op || !op->is_root || op->kind != SM_K_XFER)
		return -EINVAL;
	ctx = op->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (op->phase == SM_P_RUN) {
		send_down(ctx, op, SM_ABORT);
		sm_event_signal(ctx, op->local_ev);
		sm_op_finish(ctx, op, -ECANCELED);
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int storm_op_test(storm_op_t *op, storm_set_t *failed)
{
	struct storm_ctx *ctx = op->ctx;
	int rc;

	pthread_mutex_lock(&ctx->lock);
	if (!atomic_load(&ctx->pthr_run))
		sm_progress_once(ctx);
	rc = op->phase == SM_P_DONE ? op->status : -EAGAIN;
	if (failed)
		*failed = op->failed;
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

static bool op_done(void *arg)
{
	return ((struct storm_op *)arg)->phase == SM_P_DONE;
}

int storm_op_wait(storm_op_t *op, int timeout_ms, storm_set_t *failed)
{
	struct storm_ctx *ctx = op->ctx;
	if (timeout_ms < 0)
		timeout_ms = 2 * ctx->cfg.timeout_ms;
	int rc = sm_wait(ctx, op_done, op, timeout_ms);
	pthread_mutex_lock(&ctx->lock);
	if (!rc)
		rc = op->status;
	if (failed)
		*failed = op->failed;
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int storm_op_lost(storm_op_t *op, storm_set_t *lost)
{
	struct storm_ctx *ctx;

	if (!op || !lost)
		return -EINVAL;
	ctx = op->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (op->kind == SM_K_XFER)
		sm_tree_lost(&op->set, (int)op->root, op->arity, &op->failed,
			     lost);
	else
		storm_set_clear(lost);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void storm_op_free(storm_op_t *op)
{
	if (!op)
		return;
	struct storm_ctx *ctx = op->ctx;
	pthread_mutex_lock(&ctx->lock);
	op->user_owned = false;
	sm_op_reap(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

int storm_op_wait_free(storm_op_t *op, storm_set_t *failed, storm_set_t *lost)
{
	int rc = storm_op_wait(op, -1, failed);

	if (lost) {
		storm_set_clear(lost);
		if (rc)
			storm_op_lost(op, lost);
	}
	storm_op_free(op);
	return rc;
}

int storm_xfer_sync(storm_ctx_t *ctx, const storm_set_t *set, const void *src,
		    size_t len, uint64_t off, int rev, storm_set_t *failed)
{
	return storm_xfer_sync_flags(ctx, set, src, len, off, rev, 0, failed);
}

int storm_xfer_sync_flags(storm_ctx_t *ctx, const storm_set_t *set,
			  const void *src, size_t len, uint64_t off, int rev,
			  unsigned flags, storm_set_t *failed)
{
	storm_op_t *op;
	int rc = storm_xfer_flags(ctx, set, src, len, off, STORM_NO_EVENT, rev,
				  flags, &op);
	if (rc)
		return rc;
	return storm_op_wait_free(op, failed, NULL);
}

/* ------------------------------------------------------------ member */
static int child_index(const struct storm_op *op, uint32_t rank)
{
	for (int i = 0; i < op->tree.nchild; i++)
		if ((uint32_t)op->ch[i].rank == rank)
			return i;
	return -1;
}

static struct storm_op *new_member_op(struct storm_ctx *ctx,
				      const struct sm_hdr *h)
{
	struct sm_tree t;
	uint8_t *dst = NULL;
	bool hooked = false;

	if (!storm_set_has(&h->set, ctx->rank) ||
	    sm_tree_build(&h->set, (int)h->root, h->arity, ctx->rank, &t) ||
	    t.parent != (int)h->src) {
		ctx->st.rx_bad_sender++;
		return NULL;
	}
	if (ctx->dest_fn) {
		dst = ctx->dest_fn(ctx->dest_arg, (int)h->root, h->offset,
				   h->total);
		hooked = dst != NULL;
	}
	if (!dst) {
		if (h->offset > ctx->region_size ||
		    h->total > ctx->region_size - h->offset) {
			ctx->st.rx_bad_range++;
			return NULL;
		}
		dst = ctx->region + h->offset;
	}
	struct storm_op *op = sm_op_from_hdr(ctx, SM_K_XFER, h, &t);
	if (!op)
		return NULL;
	op->chunk = h->chunk;
	op->offset = h->offset;
	op->total = h->total;
	op->nchunks = h->total ? (uint32_t)((h->total + h->chunk - 1) / h->chunk)
			       : 1;
	op->dst = dst;
	op->dst_hooked = hooked;
	op->have = calloc(op->nchunks, 1);
	op->remote_ev = h->rev;
	op->xflags = h->xflags;
	if (!op->have) {
		sm_op_finish(ctx, op, -ENOMEM);
		return NULL;
	}
	uint64_t now = storm_mono_ns();
	op->deadline_ns = child_deadline(op, now);
	op->gc_ns = now + 2ull * op->timeout_ms * 1000000ull;
	init_children(ctx, op);
	return op;
}

static void rx_data(struct storm_ctx *ctx, const struct sm_hdr *h,
		    const uint8_t *payload)
{
	struct storm_op *op;

	/* limits first: the chunk must fit our receive buffers and the
	 * block must be addressable */
	if (h->chunk == 0 || h->chunk > ctx->cfg.chunk ||
	    h->total > (uint64_t)h->chunk * UINT32_MAX ||
	    h->offset + h->total < h->offset) {
		ctx->st.rx_bad_range++;
		return;
	}
	uint32_t nch = h->total ? (uint32_t)((h->total + h->chunk - 1) / h->chunk)
				: 1;
	uint64_t coff = (uint64_t)h->chunk_idx * h->chunk;
	size_t want = h->total > coff ? (h->total - coff < h->chunk ?
					 h->total - coff : h->chunk) : 0;
	if (h->chunk_idx >= nch || h->payload != want) {
		ctx->st.rx_bad_range++;
		return;
	}
	op = sm_op_find(ctx, h->root, h->op_id, SM_K_XFER);
	if (!op) {
		if (sm_op_is_stale(ctx, h->root, h->op_id)) {
			ctx->st.rx_stale++;
			return;
		}
		op = new_member_op(ctx, h);
		if (!op)
			return;
	} else if (op->is_root || (int)h->src != op->tree.parent) {
		ctx->st.rx_bad_sender++;
		return;
	} else if (op->total != h->total || op->offset != h->offset ||
		   op->chunk != h->chunk) {
		ctx->st.rx_bad_range++;
		return;
	}
	if (op->have[h->chunk_idx] || op->phase != SM_P_RUN) {
		ctx->st.rx_stale++;
		return;
	}
	if (want)
		memcpy(op->dst + coff, payload, want);
	ctx->st.bytes_in += want;
	op->have[h->chunk_idx] = 1;
	op->nhave++;
	while (op->prefix < op->nchunks && op->have[op->prefix])
		op->prefix++;
	uint64_t now = storm_mono_ns();
	op->gc_ns = now + 2ull * op->timeout_ms * 1000000ull;
	/* the children's clock starts when this node holds everything: a
	 * slow stream on a loaded host is not a dead child */
	if (op->nhave == op->nchunks)
		op->deadline_ns = child_deadline(op, now);
	pump(ctx, op);
	/* passed on first: the children's copies are on their way */
	if (op->nhave == op->nchunks && (op->xflags & STORM_XFER_ON_ARRIVAL))
		commit_local(ctx, op);
	check_done(ctx, op);
}

static void rx_ack(struct storm_ctx *ctx, const struct sm_hdr *h)
{
	struct storm_op *op = sm_op_find(ctx, h->root, h->op_id, SM_K_XFER);
	if (!op) {
		ctx->st.rx_stale++;
		return;
	}
	int ci = child_index(op, h->src);
	if (ci < 0) {
		ctx->st.rx_bad_sender++;
		return;
	}
	if (op->ch[ci].acked || op->ch[ci].failed || op->phase != SM_P_RUN) {
		ctx->st.rx_stale++;
		return;
	}
	/* a child may only report ranks of its own subtree */
	storm_set_t sub, f;
	storm_set_clear(&sub);
	sm_tree_subtree(&op->set, (int)op->root, op->arity, (int)h->src, &sub);
	for (int w = 0; w < STORM_MAX_RANKS / 64; w++) {
		f.bits[w] = h->failed.bits[w] & sub.bits[w];
		op->failed.bits[w] |= f.bits[w];
	}
	op->ch[ci].acked = true;
	check_done(ctx, op);
}

static void rx_down(struct storm_ctx *ctx, const struct sm_hdr *h)
{
	struct storm_op *op = sm_op_find(ctx, h->root, h->op_id, SM_K_XFER);
	if (!op) {
		/* an ABORT may reach a node that never got data */
		ctx->st.rx_stale++;
		return;
	}
	if (op->is_root || (int)h->src != op->tree.parent) {
		ctx->st.rx_bad_sender++;
		return;
	}
	if (h->type == SM_COMMIT) {
		if (op->phase != SM_P_WAIT_COMMIT) {
			ctx->st.rx_stale++;
			return;
		}
		send_down(ctx, op, SM_COMMIT);
		commit_local(ctx, op);
		sm_op_finish(ctx, op, 0);
	} else {
		send_down(ctx, op, SM_ABORT);
		sm_op_finish(ctx, op, -EIO);
	}
}

void sm_xfer_rx(struct storm_ctx *ctx, const struct sm_hdr *h,
		const uint8_t *payload)
{
	switch (h->type) {
	case SM_DATA: rx_data(ctx, h, payload); break;
	case SM_ACK: rx_ack(ctx, h); break;
	default: rx_down(ctx, h); break;
	}
}

/* every live child has been sent, and has taken, every chunk */
static bool all_sent(const struct storm_op *op)
{
	for (int i = 0; i < op->tree.nchild; i++) {
		const struct sm_child *c = &op->ch[i];
		if (!c->failed && (c->next < op->nchunks || c->inflight))
			return false;
	}
	return true;
}

void sm_xfer_tx_done(struct storm_ctx *ctx, struct sm_tx *tx, int err)
{
	struct storm_op *op = tx->op;

	if (tx->posted) {
		ctx->tx_posted--;
		if (tx->posted_prev)
			tx->posted_prev->posted_next = tx->posted_next;
		else
			ctx->posted = tx->posted_next;
		if (tx->posted_next)
			tx->posted_next->posted_prev = tx->posted_prev;
	}
	if (op) {
		op->refs--;
		if (tx->child >= 0 && tx->child < op->tree.nchild) {
			op->ch[tx->child].inflight--;
			if (err)
				sm_fail_child(ctx, op, tx->child);
			/* every chunk has left: the children's clock
			 * starts again, so that the time a deep chain's
			 * last chunks take to drain down it counts from
			 * here (the root gets the whole timeout, a node at
			 * depth d (H-d)/H of it) */
			if (!err && op->nhave == op->nchunks && all_sent(op))
				op->deadline_ns = child_deadline(op, storm_mono_ns());
			if (op->phase == SM_P_RUN) {
				if (op->kind == SM_K_XFER)
					pump(ctx, op);
				check_done(ctx, op);
			}
		}
	}
	free(tx);
}

void sm_xfer_timer(struct storm_ctx *ctx, struct storm_op *op, uint64_t now)
{
	if (!op->is_root && now > op->gc_ns) {
		/* never committed: drop, never signal */
		sm_op_finish(ctx, op, -ETIMEDOUT);
		return;
	}
	if (op->phase != SM_P_RUN || now < op->deadline_ns ||
	    op->nhave < op->nchunks)
		return;
	for (int i = 0; i < op->tree.nchild; i++)
		if (!op->ch[i].acked)
			sm_fail_child(ctx, op, i);
	check_done(ctx, op);
}

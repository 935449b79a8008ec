/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_progress.c - the progress engine: CQ polling, dispatch, timers, the
 * bounded wait with backoff, and the optional progress thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* ppoll */
#endif
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sm_internal.h"

int sm_post_rx(struct storm_ctx *ctx, struct sm_rx *rx)
{
	int rc;
	for (int i = 0; i < 1000; i++) {
		rc = (int)fi_recv(ctx->ep, rx->buf, ctx->rx_size, NULL,
				  FI_ADDR_UNSPEC, &rx->fctx);
		if (rc != -FI_EAGAIN)
			break;
		fi_cq_read(ctx->cq, NULL, 0);
	}
	if (rc)
		sm_log(ctx, STORM_LOG_ERROR, "fi_recv: %s", fi_strerror(-rc));
	return rc;
}

void sm_dispatch(struct storm_ctx *ctx, const uint8_t *buf, size_t len)
{
	const struct sm_hdr *h = (const struct sm_hdr *)buf;

	if (sm_hdr_check(ctx, h, len)) {
		ctx->st.rx_dropped++;
		return;
	}
	uint64_t before = ctx->st.rx_bad_header + ctx->st.rx_bad_range +
			  ctx->st.rx_bad_sender + ctx->st.rx_stale;
	switch (h->type) {
	case SM_DATA: case SM_ACK: case SM_COMMIT: case SM_ABORT:
		sm_xfer_rx(ctx, h, buf + sizeof(*h));
		break;
	default:
		sm_caw_rx(ctx, h);
		break;
	}
	if (ctx->st.rx_bad_header + ctx->st.rx_bad_range +
	    ctx->st.rx_bad_sender + ctx->st.rx_stale != before)
		ctx->st.rx_dropped++;
	else
		ctx->st.rx_msgs++;
}

static void handle_comp(struct storm_ctx *ctx, void *opctx, size_t len, int err)
{
	int kind = ((struct sm_rx *)opctx)->kind;   /* same offset in sm_tx */

	if (kind == SM_CTX_RX) {
		struct sm_rx *rx = opctx;
		if (err) {
			ctx->st.rx_errors++;
			ctx->st.rx_dropped++;
		} else {
			sm_dispatch(ctx, (const uint8_t *)rx->buf, len);
		}
		sm_post_rx(ctx, rx);
	} else {
		struct sm_tx *tx = opctx;
		if (err)
			ctx->st.tx_errors++;
		sm_xfer_tx_done(ctx, tx, err);
	}
}

static void timers(struct storm_ctx *ctx)
{
	uint64_t now = storm_mono_ns();

	/* deadlines are in ms; one look per 200 us is plenty */
	if (now - ctx->last_timer_ns < 200000)
		return;
	ctx->last_timer_ns = now;
	for (struct storm_op *op = ctx->ops, *nx; op; op = nx) {
		nx = op->next;
		if (op->phase == SM_P_DONE)
			continue;
		if (op->kind == SM_K_XFER)
			sm_xfer_timer(ctx, op, now);
		else
			sm_caw_timer(ctx, op, now);
	}
}

int sm_progress_once(struct storm_ctx *ctx)
{
	struct fi_cq_msg_entry ent[16];
	int n = 0;

	n += sm_flush_pending(ctx);
	for (int round = 0; round < 8; round++) {
		ssize_t got = fi_cq_read(ctx->cq, ent, 16);
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry e;
			memset(&e, 0, sizeof(e));
			if (fi_cq_readerr(ctx->cq, &e, 0) == 1 && e.op_context) {
				handle_comp(ctx, e.op_context, e.len,
					    e.err ? -(int)e.err : -EIO);
				n++;
			}
			continue;
		}
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++)
			handle_comp(ctx, ent[i].op_context, ent[i].len, 0);
		n += (int)got;
		if (got < 16)
			break;
	}
	if (n)
		n += sm_flush_pending(ctx);
	timers(ctx);
	sm_op_reap(ctx);
	return n;
}

/* Spin (yielding) for busy_poll_us after the last activity, then sleep
 * with exponential backoff capped at 200 us; on the CQ's fd when the
 * provider has one, so that a message ends the sleep early.  Called
 * without the ctx lock. */
void sm_backoff(struct storm_ctx *ctx, int *spins, uint64_t idle_since,
		int max_us)
{
	if (storm_mono_ns() - idle_since <
	    (uint64_t)ctx->cfg.busy_poll_us * 1000) {
		sched_yield();
		return;
	}
	if (max_us <= 0)
		max_us = 1;
	int us = 1 << (*spins < 8 ? *spins : 8);
	if (us > 200)
		us = 200;
	if (us > max_us)
		us = max_us;
	(*spins)++;
	struct timespec ts = { 0, us * 1000L };
	/* rxm needs progress calls for rendezvous steps that raise no fd
	 * event, so the fd only shortens the same backoff sleep */
	if (ctx->cq_fd >= 0) {
		struct fid *f = &ctx->cq->fid;
		pthread_mutex_lock(&ctx->lock);
		int rc = fi_trywait(ctx->fabric, &f, 1);
		pthread_mutex_unlock(&ctx->lock);
		if (rc == FI_SUCCESS) {
			struct pollfd p = { .fd = ctx->cq_fd, .events = POLLIN };
			ppoll(&p, 1, &ts, NULL);
		}
		return;
	}
	nanosleep(&ts, NULL);
}

/* How long a progress thread with nothing to send sleeps on the CQ fd at
 * most.  With operations open only their timers (ms deadlines) need a
 * look; with none, the cap is a safety net: the CQ fd and kick_fd end the
 * sleep. */
#define SM_WAIT_OPS_SLEEP_US 1000
#define SM_QUIET_SLEEP_US 200000

/* 0 while this side has sends in flight (the provider may need progress
 * calls that raise no fd event, as rxm's rendezvous does): then the
 * bounded backoff applies.  Otherwise what can happen next is a message
 * (the CQ fd fires), a timer, or a local call (sm_op_new kicks). */
static int sm_quiet_us(const struct storm_ctx *ctx)
{
	if (ctx->tx_posted || ctx->pend)
		return 0;
	if (ctx->caw_cur || ctx->caw_len)
		return SM_WAIT_OPS_SLEEP_US;
	for (const struct storm_op *op = ctx->ops; op; op = op->next)
		if (op->phase != SM_P_DONE)
			return SM_WAIT_OPS_SLEEP_US;
	return SM_QUIET_SLEEP_US;
}

/* How long a side that drives progress may now sleep on the CQ fd: 0
 * while it must keep polling (no CQ fd, within busy_poll_us of its last
 * activity, or sends in flight).  Called with the lock held. */
static int sm_deep_sleep_us(const struct storm_ctx *ctx, uint64_t idle,
			    uint64_t now)
{
	if (ctx->cq_fd < 0 ||
	    now - idle < (uint64_t)ctx->cfg.busy_poll_us * 1000)
		return 0;
	return sm_quiet_us(ctx);
}

/* Sleep on the CQ fd and kick_fd until either fires or us pass; with the
 * lock held on entry (fi_trywait needs it), released on return. */
static void deep_sleep(struct storm_ctx *ctx, int us)
{
	struct fid *f = &ctx->cq->fid;
	struct pollfd p[2] = {
		{ .fd = ctx->cq_fd, .events = POLLIN },
		{ .fd = ctx->kick_fd, .events = POLLIN },
	};
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };
	eventfd_t v;

	atomic_store(&ctx->deep_sleep, true);
	int rc = fi_trywait(ctx->fabric, &f, 1);
	pthread_mutex_unlock(&ctx->lock);
	if (rc == FI_SUCCESS)
		ppoll(p, 2, &ts, NULL);
	atomic_store(&ctx->deep_sleep, false);
	if (p[1].revents & POLLIN)
		(void)eventfd_read(ctx->kick_fd, &v);
}

/*
 * With the progress thread running, a waiter only sleeps until the thread
 * reports a change it may be waiting for (wake_gen).  The periodic recheck
 * is a safety net only: every wake-up of an idle real-time waiter costs
 * the jobs a context switch (a recheck every quantum would wake each
 * waiting thread hundreds of times a second, for nothing, when nothing
 * switches).
 */
#define SM_WAIT_RECHECK_NS (100 * 1000000ull)

static int sm_wait_for_thread(struct storm_ctx *ctx, bool (*done)(void *),
			      void *arg, uint64_t dl)
{
	int rc = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!done(arg)) {
		uint64_t now = storm_mono_ns(), until;
		struct timespec ts;

		if (now >= dl) {
			rc = -ETIMEDOUT;
			break;
		}
		if (!atomic_load(&ctx->pthr_run)) {
			rc = -EAGAIN;	/* thread stopped: poll ourselves */
			break;
		}
		until = now + SM_WAIT_RECHECK_NS < dl ? now + SM_WAIT_RECHECK_NS : dl;
		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		pthread_cond_timedwait(&ctx->progressed, &ctx->lock, &ts);
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int sm_wait(struct storm_ctx *ctx, bool (*done)(void *), void *arg,
	    int timeout_ms)
{
	uint64_t start = storm_mono_ns(), idle = start;
	uint64_t dl = start + (uint64_t)timeout_ms * 1000000ull;
	int spins = 0;

	if (atomic_load(&ctx->pthr_run)) {
		int rc = sm_wait_for_thread(ctx, done, arg, dl);

		if (rc != -EAGAIN)
			return rc;
	}
	for (;;) {
		int n = 0, quiet_us;
		pthread_mutex_lock(&ctx->lock);
		bool d = done(arg);
		if (!d && !atomic_load(&ctx->pthr_run)) {
			n = sm_progress_once(ctx);
			d = done(arg);
		}
		uint64_t now = storm_mono_ns();
		/* Nothing to send and nothing came: the caller drives progress
		 * (no progress thread), so sleep as the thread would, on the
		 * CQ fd until a message, a timer or the deadline.  One wake-up
		 * per answer, where the backoff's growing sleeps took several
		 * (and a handoff to a progress thread two more). */
		if (!d && n == 0 && now < dl && !atomic_load(&ctx->pthr_run) &&
		    (quiet_us = sm_deep_sleep_us(ctx, idle, now)) > 0) {
			uint64_t left_us = (dl - now) / 1000 + 1;

			deep_sleep(ctx, left_us < (uint64_t)quiet_us ?
					(int)left_us : quiet_us);
			continue;
		}
		pthread_mutex_unlock(&ctx->lock);
		if (d)
			return 0;
		if (now >= dl)
			return -ETIMEDOUT;
		if (n > 0) {
			idle = now;
			spins = 0;
		} else {
			sm_backoff(ctx, &spins, idle, (int)((dl - now) / 1000));
		}
	}
}

int storm_progress(storm_ctx_t *ctx, int timeout_us)
{
	uint64_t start = storm_mono_ns(), idle = start;
	uint64_t dl = start + (uint64_t)(timeout_us > 0 ? timeout_us : 0) * 1000;
	int total = 0, spins = 0;

	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		int n = sm_progress_once(ctx);
		/* another thread may be asleep on the CQ fd in a wait that
		 * this pass just finished: the completions it would have woken
		 * for are taken */
		if (n > 0)
			sm_kick_sleeper(ctx);
		pthread_mutex_unlock(&ctx->lock);
		if (n < 0)
			return n;
		total += n;
		uint64_t now = storm_mono_ns();
		if (now >= dl)
			return total;
		if (n > 0) {
			idle = now;
			spins = 0;
		} else {
			sm_backoff(ctx, &spins, idle, (int)((dl - now) / 1000));
		}
	}
}

static void *progress_main(void *arg)
{
	struct storm_ctx *ctx = arg;
	uint64_t idle = storm_mono_ns();
	int spins = 0, quiet_us;

	while (atomic_load(&ctx->pthr_run)) {
		pthread_mutex_lock(&ctx->lock);
		int n = sm_progress_once(ctx);
		/* told after unlocking, so that woken waiters find the lock free */
		bool tell = ctx->wake_gen != ctx->wake_told;

		ctx->wake_told = ctx->wake_gen;
		if (n > 0) {
			pthread_mutex_unlock(&ctx->lock);
			if (tell)
				pthread_cond_broadcast(&ctx->progressed);
			idle = storm_mono_ns();
			spins = 0;
		} else if (ctx->kick_fd >= 0 &&
			   (quiet_us = sm_deep_sleep_us(ctx, idle,
							storm_mono_ns())) > 0) {
			if (tell)	/* a timer finished an operation */
				pthread_cond_broadcast(&ctx->progressed);
			deep_sleep(ctx, quiet_us);
		} else {
			pthread_mutex_unlock(&ctx->lock);
			if (tell)
				pthread_cond_broadcast(&ctx->progressed);
			sm_backoff(ctx, &spins, idle, 1000);
		}
	}
	return NULL;
}

int storm_ctx_start_progress(storm_ctx_t *ctx, int rt_priority)
{
	int rc;

	if (ctx->pthr_started)
		return -EBUSY;
	/* without an eventfd the thread keeps the bounded backoff sleeps */
	if (ctx->kick_fd < 0)
		ctx->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	atomic_store(&ctx->pthr_run, true);
	rc = pthread_create(&ctx->pthr, NULL, progress_main, ctx);
	if (rc) {
		atomic_store(&ctx->pthr_run, false);
		return -rc;
	}
	ctx->pthr_started = true;
	if (rt_priority > 0) {
		struct sched_param sp = { .sched_priority = rt_priority };
		rc = pthread_setschedparam(ctx->pthr, SCHED_FIFO, &sp);
		pthread_mutex_lock(&ctx->lock);
		if (rc)
			sm_log(ctx, STORM_LOG_WARN,
			       "progress thread: SCHED_FIFO %d refused (%s), "
			       "running at normal priority", rt_priority,
			       strerror(rc));
		else
			sm_log(ctx, STORM_LOG_INFO,
			       "progress thread: SCHED_FIFO priority %d",
			       rt_priority);
		pthread_mutex_unlock(&ctx->lock);
	} else {
		pthread_mutex_lock(&ctx->lock);
		sm_log(ctx, STORM_LOG_INFO,
		       "progress thread: normal priority");
		pthread_mutex_unlock(&ctx->lock);
	}
	return 0;
}

void storm_ctx_stop_progress(storm_ctx_t *ctx)
{
	if (!ctx->pthr_started)
		return;
	atomic_store(&ctx->pthr_run, false);
	pthread_mutex_lock(&ctx->lock);
	pthread_cond_broadcast(&ctx->progressed);
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->kick_fd >= 0)
		(void)eventfd_write(ctx->kick_fd, 1);
	pthread_join(ctx->pthr, NULL);
	ctx->pthr_started = false;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_internal.h - private objects of libstormmech.
 *
 * One ctx = one RDM endpoint, one AV, one CQ shared by send and receive.
 * All ctx state is protected by ctx->lock; the progress engine, the API and
 * the optional progress thread all take it.
 */
#ifndef SM_INTERNAL_H
#define SM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "stormmech.h"
/* relative: the library is built without the tree's top in its path */
#include "../common/storm_time.h"

#define SM_MAGIC    0x4d525453u   /* "STRM" little endian */
#define SM_VERSION  3   /* 2: client address in every header; 3: xflags */
#define SM_MAX_ARITY 32
#define SM_DONE_RING 256          /* finished ops remembered for staleness */
#define SM_CAW_QUEUE 64           /* pending requests at a serializer */
#define SM_INJECT_WANT 1024       /* header + small payload, sent inline */
/* Receive buffers posted beyond a window of chunks: the control messages
 * (acks, CAW steps, strobes) that arrive between a parent's chunks. */
#define SM_RX_SPARE 4

enum sm_type {
	SM_DATA = 1,       /* root -> down: a chunk */
	SM_ACK,            /* up: subtree holds every chunk (failed set) */
	SM_COMMIT,         /* down: signal */
	SM_ABORT,          /* down: drop */
	SM_CAW_SUBMIT,     /* origin -> serializer */
	SM_CAW_REQ,        /* serializer -> down: compare */
	SM_CAW_REPLY,      /* up: AND of compare (failed set) */
	SM_CAW_WRITE,      /* serializer -> down: write */
	SM_CAW_WACK,       /* up: write applied (failed set) */
	SM_CAW_RESULT,     /* serializer -> origin */
	SM_TYPE_MAX
};

/* Wire header; every message starts with it.  Host byte order: the library
 * talks between nodes of one cluster (documented limit). */
struct sm_hdr {
	uint32_t magic;
	uint16_t version;
	uint8_t  type;
	uint8_t  result;        /* CAW reply/result: 1 true, 0 false */
	uint32_t src;           /* sender rank */
	uint32_t root;          /* root of the tree for this op */
	uint64_t op_id;
	uint64_t offset;        /* XFER: destination offset */
	uint64_t total;         /* XFER: block length */
	uint32_t chunk_idx;
	uint32_t payload;       /* bytes after the header */
	uint32_t chunk;         /* root's chunk size */
	uint16_t arity;
	uint16_t cmp;
	uint32_t var;
	uint32_t wvar;          /* UINT32_MAX: no write */
	uint64_t value;
	uint64_t wvalue;
	uint32_t origin;        /* CAW: rank that asked */
	int32_t  status;
	uint64_t origin_op;     /* CAW: origin's op id */
	uint32_t timeout_ms;    /* root's timeout, bounds members' waits */
	int32_t  rev;           /* XFER: remote event on members */
	uint32_t xflags;        /* XFER: STORM_XFER_* of the root's call */
	storm_set_t set;
	storm_set_t failed;
	char client_addr[48];   /* sender's "host:port" if a client rank */
};

/* ------------------------------------------------------------- tree */
struct sm_tree {
	int n;                  /* nodes in tree (root + members) */
	int pos;                /* my position, -1 if not in tree */
	int parent;             /* rank, -1 for root */
	int nchild;
	int child[SM_MAX_ARITY];
	int depth, height;      /* my depth; height of whole tree */
};
int  sm_tree_build(const storm_set_t *set, int root, int arity, int me,
		   struct sm_tree *t);
int  sm_tree_rank_at(const storm_set_t *set, int root, int pos);
/* adds the ranks of the subtree under `rank` to out */
void sm_tree_subtree(const storm_set_t *set, int root, int arity, int rank,
		     storm_set_t *out);
/* lost = the members of failed whose parent is not in failed (the root,
 * if failed, too): where a failed set made of whole subtrees
 * (sm_fail_child()) was cut off */
void sm_tree_lost(const storm_set_t *set, int root, int arity,
		  const storm_set_t *failed, storm_set_t *lost);

/* ------------------------------------------------------------- ops */
enum sm_kind { SM_K_XFER = 1, SM_K_CAW_CMP, SM_K_CAW_WRITE, SM_K_CAW_ORIGIN };
enum sm_phase { SM_P_RUN = 1, SM_P_WAIT_COMMIT, SM_P_DONE };

struct sm_child {
	int rank;
	uint32_t next;          /* next chunk to send */
	int inflight;
	bool acked, failed;
};

struct storm_op {
	struct storm_op *next;
	struct storm_ctx *ctx;
	int kind, phase;
	bool is_root;
	bool user_owned;        /* a storm_op_t handle still refers to it */
	int refs;               /* sends in flight referencing dst/src */
	uint32_t root;
	uint64_t id;
	storm_set_t set;
	int arity;
	struct sm_tree tree;
	struct sm_child ch[SM_MAX_ARITY];
	storm_set_t failed;
	uint64_t deadline_ns;   /* children must have answered by then */
	uint64_t gc_ns;         /* member: forget after this */
	int timeout_ms;
	int status;             /* final: 0, -EIO, ... */
	bool up_sent;
	/* XFER */
	const uint8_t *src;
	uint8_t *dst;
	bool dst_hooked;
	uint64_t offset, total;
	size_t chunk;
	uint32_t nchunks, nhave, prefix;
	uint8_t *have;
	int local_ev, remote_ev;
	unsigned xflags;        /* STORM_XFER_* */
	/* CAW */
	int var, wvar;
	int cmp;
	uint64_t value, wvalue;
	int result;             /* AND so far */
	uint32_t origin;
	uint64_t origin_op;
};

/* ------------------------------------------------------------- ctx */
enum sm_ctx_kind { SM_CTX_RX = 1, SM_CTX_TX };

struct sm_rx {
	struct fi_context2 fctx;
	int kind;
	uint8_t *buf;
};

struct sm_tx {
	struct fi_context2 fctx;
	int kind;
	struct storm_op *op;    /* holds a ref, may be NULL */
	int child;              /* index in op->ch for DATA, else -1 */
	int dest;
	const void *payload;
	size_t plen;
	struct sm_tx *next;     /* in ctx->pend */
	bool posted;            /* handed to the provider: counted in tx_posted */
	struct sm_tx *posted_prev, *posted_next; /* in ctx->posted */
	uint64_t queued_ns;
	struct sm_hdr hdr;
};

/* Both mechanisms run over tagged messages (FI_MSG), which every
 * FI_EP_RDM provider has; see sm_caps.c for why there is no RMA or
 * native-atomic path. */
int sm_xfer_start_msg(struct storm_ctx *ctx, struct storm_op *op);
/* A send the provider took: counted, and on ctx->posted until it
 * completes, so that closing the context frees it if it never does.
 * Caller holds ctx->lock. */
void sm_tx_posted(struct storm_ctx *ctx, struct sm_tx *tx);
int sm_caw_submit_msg(struct storm_ctx *ctx, struct storm_op *op, int ser);

struct sm_caw_req {
	struct sm_hdr h;
};

struct storm_ctx {
	pthread_mutex_t lock;
	storm_cfg_t cfg;
	char provider[64];
	char host[64];
	int rank;

	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	int cq_fd;              /* -1: no wait object, sleep instead */
	bool addr_str;          /* shm: names, not sockaddrs */

	fi_addr_t peer[STORM_MAX_RANKS];
	storm_set_t known;

	uint8_t *region, *own_region;
	size_t region_size, own_size;
	size_t own_map;         /* own_region's mapping, in whole pages */
	uint64_t *vars;
	int nvars;

	struct sm_rx *rx;
	int nrx;
	size_t rx_size;
	size_t inject_max;      /* provider's inject size; 0: never inject */

	atomic_uint_fast64_t ev[STORM_MAX_EVENTS];
	storm_stats_t st;

	struct storm_op *ops;
	uint64_t next_id;
	struct { uint32_t root; uint64_t id; } done[SM_DONE_RING];
	int done_pos;

	/* serializer queue for CAW */
	struct sm_caw_req caw_q[SM_CAW_QUEUE];
	int caw_head, caw_len;
	struct storm_op *caw_cur;   /* running compare or write */

	struct sm_tx *pend, *pend_tail;  /* sends waiting for EAGAIN */
	int tx_posted;                   /* sends the provider has not completed */
	struct sm_tx *posted;            /* those sends: freed at close when a
					  * peer died and no completion came */

	storm_caps_t caps;

	storm_log_f log_fn;
	void *log_arg;
	storm_log_level_t log_max;
	storm_recv_f recv_fn;
	void *recv_arg;
	storm_dest_f dest_fn;
	storm_dest_release_f dest_rel;
	void *dest_arg;

	bool is_client;         /* sm_client.c */
	char self_addr[48];
	char client_addr[STORM_MAX_RANKS - STORM_CLIENT_RANK_FIRST][48];

	/* Broadcast by the progress thread whenever it handled a completion,
	 * so that waiters sleep on it instead of polling the CQ themselves
	 * (a real-time waiter polling a CQ that only the lower-priority
	 * progress thread drains would spin forever). */
	pthread_cond_t progressed;
	/* Bumped (under lock) whenever something a waiter tests changes: an
	 * event signalled, an operation finished.  The progress thread
	 * broadcasts `progressed` only when it moved: every spurious wake-up
	 * of a real-time waiter is a context switch taken from the jobs
	 * (perf on a node manager at a 2 ms quantum: most of its time). */
	uint64_t wake_gen, wake_told;
	/* The progress thread sleeps long on the CQ fd only when nothing is
	 * in flight (sm_quiet); an operation started by another thread then
	 * wakes it through kick_fd (an eventfd), so its sends and timers are
	 * progressed at once; a waiter that drives progress itself is woken
	 * the same way when another thread's storm_progress() finished its
	 * operation.  -1 without a CQ fd (or without an eventfd). */
	int kick_fd;
	atomic_bool deep_sleep;
	pthread_t pthr;
	atomic_bool pthr_run;
	bool pthr_started;
	uint64_t last_timer_ns;
};

/* Every child of op has answered, by an ack or by failing. */
static inline bool sm_children_done(const struct storm_op *op)
{
	for (int i = 0; i < op->tree.nchild; i++)
		if (!op->ch[i].acked && !op->ch[i].failed)
			return false;
	return true;
}

/* sm_ctx.c */
void sm_log(struct storm_ctx *ctx, storm_log_level_t lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* sm_client.c */
int  sm_client_open(struct storm_ctx *ctx);
void sm_client_hdr_init(struct storm_ctx *ctx, struct sm_hdr *h);
int  sm_client_learn(struct storm_ctx *ctx, const struct sm_hdr *h);
int  sm_client_addr_ok(const char *a, size_t maxlen);
/* sm_ctx.c: storm_ctx_set_peer with ctx->lock held */
int  sm_set_peer_locked(struct storm_ctx *ctx, int rank, const char *hp);

/* sm_fi_setup.c: once per process, before libfabric's first call */
void sm_fi_setup(void);
/* connections the tcp provider's handshake refused in this process */
uint64_t sm_fi_conn_refused(void);

/* sm_caps.c */
void sm_caps_probe(struct storm_ctx *ctx);

/* sm_proto.c */
void sm_hdr_init(struct storm_ctx *ctx, struct sm_hdr *h, int type,
		 const struct storm_op *op);
int  sm_hdr_check(struct storm_ctx *ctx, const struct sm_hdr *h, size_t len);
int  sm_send(struct storm_ctx *ctx, int dest, const struct sm_hdr *h,
	     const void *payload, size_t plen, struct storm_op *op, int child);
/* fi_inject now or not at all: 0 sent (no completion will come),
 * -FI_EAGAIN (queue or provider busy), -E2BIG (too big), or an error */
int  sm_send_inline(struct storm_ctx *ctx, int dest, const struct sm_hdr *h,
		    const void *payload, size_t plen);
bool sm_cmp_eval(int cmp, uint64_t a, uint64_t b);
int  sm_flush_pending(struct storm_ctx *ctx);

/* sm_progress.c */
int  sm_progress_once(struct storm_ctx *ctx);
int  sm_post_rx(struct storm_ctx *ctx, struct sm_rx *rx);
void sm_backoff(struct storm_ctx *ctx, int *spins, uint64_t start_ns,
		int max_us);
int  sm_wait(struct storm_ctx *ctx, bool (*done)(void *), void *arg,
	     int timeout_ms);

/* sm_op bookkeeping (sm_xfer.c) */
struct storm_op *sm_op_new(struct storm_ctx *ctx, int kind);
/* wake a thread asleep on the CQ fd and kick_fd (deep_sleep) */
void sm_kick_sleeper(struct storm_ctx *ctx);
struct storm_op *sm_op_from_hdr(struct storm_ctx *ctx, int kind,
				const struct sm_hdr *h, const struct sm_tree *t);
struct storm_op *sm_op_find(struct storm_ctx *ctx, uint32_t root, uint64_t id,
			    int kind);
void sm_op_finish(struct storm_ctx *ctx, struct storm_op *op, int status);
void sm_op_reap(struct storm_ctx *ctx);
bool sm_op_is_stale(struct storm_ctx *ctx, uint32_t root, uint64_t id);
void sm_fail_child(struct storm_ctx *ctx, struct storm_op *op, int ci);

/* message handlers */
void sm_xfer_rx(struct storm_ctx *ctx, const struct sm_hdr *h,
		const uint8_t *payload);
void sm_xfer_tx_done(struct storm_ctx *ctx, struct sm_tx *tx, int err);
void sm_xfer_timer(struct storm_ctx *ctx, struct storm_op *op, uint64_t now);
void sm_caw_rx(struct storm_ctx *ctx, const struct sm_hdr *h);
/* A received message of len bytes: checked (sm_hdr_check()), then handed
 * to its handler, and counted.  Under ctx->lock.  The one way in for
 * everything a peer sends (and for the fabric fuzz target). */
void sm_dispatch(struct storm_ctx *ctx, const uint8_t *buf, size_t len);
void sm_caw_timer(struct storm_ctx *ctx, struct storm_op *op, uint64_t now);
void sm_event_signal(struct storm_ctx *ctx, int ev);

/*
 * The ctx whose receive callback this thread is running (ctx->lock held),
 * else NULL.  The public accessors a callback may call (storm_var_get/set,
 * storm_region_ptr, storm_event_test) take the lock through sm_ctx_lock(),
 * which skips it for that ctx instead of deadlocking on it.
 */
extern __thread struct storm_ctx *sm_cb_ctx;
void sm_ctx_lock(struct storm_ctx *ctx);
void sm_ctx_unlock(struct storm_ctx *ctx);

#endif

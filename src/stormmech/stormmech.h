/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormmech.h - the three STORM mechanisms over libfabric.
 *
 *   XFER-AND-SIGNAL  storm_xfer()        put a block at the same offset of
 *                                        every member's global region
 *   TEST-EVENT       storm_event_test()  poll / block on a local counter
 *                    storm_event_wait()
 *   COMPARE-AND-WRITE storm_caw()        AND-reduce "var op value" over a
 *                                        set, optionally write a variable
 *
 * No Slurm headers; a PIC convenience library linked into plugins and the
 * node manager.  No global state: any number of contexts may live in one
 * process.  Nothing is printed to stdout; diagnostics go through the
 * log callback (storm_set_log_fn(), default: stderr).
 *
 * ------------------------------------------------------------------------
 * Model
 *   A context (storm_ctx_t) is one endpoint of one node.  Nodes are ranks
 *   0..STORM_MAX_RANKS-1; each rank has an address "host:port".  A node
 *   table may be given at open and changed later with storm_ctx_set_peer()
 *   (nodes join and rejoin).
 *
 *   Every operation runs over a k-ary tree whose root is the caller and whose
 *   other nodes are the members of the set in ascending rank order (root
 *   first, then members; the root is removed from the member list when it
 *   is a member).  The root may be outside the set.  Every message carries
 *   the set, the root and k, so each node derives its parent and children on
 *   its own; nothing is agreed in advance except the rank->address table.
 *
 * XFER-AND-SIGNAL (two phases, all-or-nothing)
 *   1. data: the block is cut into chunks; the root sends them to its
 *      children, each interior node copies a chunk into its destination
 *      (one copy per byte per node, from the provider's receive buffer)
 *      and forwards it from there as soon as it arrives (pipelined), with
 *      at most `window` chunks in flight per child (a send counts as in
 *      flight until the provider completes it; for large chunks rxm and shm
 *      complete a send only after the receiver has pulled it, so this is
 *      real back-pressure);
 *   2. ack reduction: a node acks its parent when it holds every chunk and
 *      all its children acked, carrying the ranks that failed below it;
 *      a child that does not ack in time counts as failed with its whole
 *      subtree;
 *      Timeouts: the root gives its children timeout_ms from the start,
 *      renewed once when every chunk has left it; a node at depth d gives
 *      its children (H-d)/H of timeout_ms once it holds every chunk (H =
 *      tree height), so a dead node is reported by its parent before the
 *      root gives up on the parent.  A dead peer thus becomes -EIO at most
 *      timeout_ms after the data stopped flowing, never a hang;
 *   3. the root sends COMMIT (all succeeded) or ABORT down the tree.  Only
 *      COMMIT signals the remote event and calls the receive callback.  A
 *      member that never sees COMMIT drops the transfer after 2*timeout_ms.
 *   Known limit: COMMIT is not acknowledged; a member whose parent dies
 *   between its ack and forwarding COMMIT will not signal although the root
 *   reported success (it is then detected by the next COMPARE-AND-WRITE).
 *
 * COMPARE-AND-WRITE (serialized, two phases when writing)
 *   The caller sends the request to the set's lowest rank (the serializer),
 *   which runs requests one at a time as root of the tree: compare and
 *   AND-reduce up the tree; if true and a write was asked, a second round
 *   writes down the tree and is acked back before the next request starts.
 *   So all COMPARE-AND-WRITEs on sets with the same lowest rank are
 *   sequentially consistent (one winner among identical concurrent
 *   callers).  Sets with different lowest ranks are not ordered against
 *   each other.  A request runs with its caller's timeout (at most the
 *   serializer's own), depth-scaled down the tree as for a transfer, so a
 *   member that does not answer is named in the result before the caller
 *   gives up on the serializer (then only the serializer is named).
 *
 * Capabilities
 *   At open the provider's native atomics, FI_RMA_EVENT remote counters and
 *   remote CQ data are probed and recorded (storm_ctx_caps()) for the
 *   site to see.  Every mechanism runs over messages (fi_sendmsg/fi_recv
 *   with a validated header) on every provider: each is a reduction or a
 *   pipeline over a tree, where a native path would save at most one
 *   software hop per node (sm_caps.c).
 *
 * Addressing
 *   tcp;ofi_rxm: "host:port" is an IPv4 address the endpoint binds.
 *   shm: the endpoint name is derived deterministically from host:port
 *   ("storm_<host>_<port>"), so no address exchange is needed on one host.
 *
 * Thread safety
 *   Every function taking a ctx is thread-safe (one mutex per ctx).  Waits
 *   drive progress themselves unless the progress thread runs, then they
 *   sleep with backoff.  Callbacks (log, recv, dest) are called with the
 *   ctx lock held: they must not call back into the same ctx.
 *   storm_ctx_close() must not race with other calls on the same ctx.
 *
 * Progress
 *   tcp;ofi_rxm and shm need manual progress.  A node forwards and answers
 *   only while someone drives progress: storm_progress() from the
 *   application, any storm_*_wait(), or the internal progress thread
 *   (storm_ctx_start_progress()).  Waits spin briefly (busy_poll_us,
 *   yielding), then sleep with exponential backoff capped at 200 us; when
 *   the provider has a CQ fd (tcp;ofi_rxm) the sleep is a ppoll on it, so
 *   a message ends it early (STORM_NO_WAIT_FD=1 in the environment turns
 *   that off).  No wait spins a core forever and every wait is bounded.
 *   With the progress thread, waiters are woken only when an event fired
 *   or an operation finished, and small control messages go out with
 *   fi_inject (STORM_NO_INJECT=1 turns that off): each wake-up of a
 *   real-time thread is a context switch taken from the node's jobs.
 *   A SCHED_FIFO progress thread competes with other real-time threads on
 *   the node: pick its priority below the node manager's switch thread.
 *
 * Bulk blocks (more than one chunk) go down a chain by default
 * (bulk_arity 1): on a switched network every node has one link of rate
 * R, and an interior node of a k-ary tree sends k copies over it, so a
 * tree costs about k*S/R where a pipelined chain costs S/R plus one chunk
 * time per hop.  Short messages keep the k-ary tree: a chain would put a
 * hop's latency per node on every strobe.
 *
 * Defaults: chunk 512 KiB, window 4, arity 4, timeout 5 s.  The chunk and
 * window are STORM's values (smaller chunks did not help over tcp;ofi_rxm,
 * where each message costs more than its bytes); arity 4 keeps the tree
 * depth at 2 for
 * 16 nodes.  testsuite/bench/mech/run-mech-bench --sweep measures chunk,
 * window and arity for 16 endpoints, the way to retune them for a host
 * (doc/bench/mech.json holds a sweep's output).
 *
 * Errors: functions return 0 or a negative errno code (-ETIMEDOUT,
 * -EIO when members failed, -EINVAL, -ENOMEM, -EAGAIN, ...), or a negative
 * libfabric code; storm_strerror() names both.
 */
#ifndef STORMMECH_H
#define STORMMECH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STORM_MAX_RANKS     1024    /* ranks 0..1023; sets are bitmaps */
#define STORM_MAX_EVENTS    64      /* event counters per ctx */
#define STORM_NO_EVENT      (-1)
#define STORM_DEF_CHUNK     (512u * 1024)
#define STORM_DEF_WINDOW    4
#define STORM_DEF_ARITY     4
#define STORM_DEF_BULK_ARITY 1
#define STORM_DEF_TIMEOUT   5000    /* ms */
#define STORM_DEF_NVARS     16

/* ---------------------------------------------------------------- sets */
typedef struct storm_set {
	uint64_t bits[STORM_MAX_RANKS / 64];
} storm_set_t;

void storm_set_clear(storm_set_t *s);
/* "0-3,7,9-12"; 0 or -EINVAL (s unchanged on error) */
int  storm_set_parse(storm_set_t *s, const char *str);
/* writes "0-3,7" form; returns needed length like snprintf */
int  storm_set_format(const storm_set_t *s, char *buf, size_t len);
int  storm_set_add(storm_set_t *s, int rank);     /* -EINVAL out of range */
int  storm_set_remove(storm_set_t *s, int rank);
bool storm_set_has(const storm_set_t *s, int rank);
int  storm_set_count(const storm_set_t *s);
/* first member >= from, or -1: for (r = storm_set_next(s, 0); r >= 0;
 * r = storm_set_next(s, r + 1)) */
int  storm_set_next(const storm_set_t *s, int from);
void storm_set_range(storm_set_t *s, int first, int last); /* adds */

/* ------------------------------------------------------------- clients */
/*
 * Ranks STORM_CLIENT_RANK_FIRST..LAST are transient clients (a tool on a login
 * node): not in the node table, but free to be the root of XFER-AND-SIGNAL
 * and the origin of COMPARE-AND-WRITE.  A ctx opened with a client rank
 * puts its own "host:port" (IPv4) in every message; a node that receives a
 * message from a client rank learns (or updates) that rank's address from
 * it, so the root's children and the serializer can answer.  Only client
 * ranks are learned this way and only well-formed addresses.  With port 0
 * (tcp;ofi_rxm) a client ctx binds any free port; storm_ctx_addr() tells
 * which.  Two clients using the same rank at the same time disturb each
 * other's operations (they fail, nothing is corrupted): pick it at random.
 */
#define STORM_CLIENT_RANK_FIRST 768
#define STORM_CLIENT_RANK_LAST  (STORM_MAX_RANKS - 1)

/* ------------------------------------------------------------- context */
typedef struct storm_ctx storm_ctx_t;

typedef enum storm_log_level {
	STORM_LOG_ERROR = 0,
	STORM_LOG_WARN  = 1,
	STORM_LOG_INFO  = 2,
	STORM_LOG_DEBUG = 3,
} storm_log_level_t;

typedef void (*storm_log_f)(void *arg, storm_log_level_t lvl, const char *msg);

/*
 * Called on a member when a transfer is committed (after the data is in
 * place and COMMIT has been forwarded to its children, before the remote
 * event is signalled), or with STORM_XFER_ON_ARRIVAL as soon as the member
 * holds the block and has passed it on.  dst is where the data is.  It runs
 * on the thread that drives progress (the progress thread when one runs)
 * with the ctx locked, so it sees the data without a thread wake-up; keep
 * it short.
 * It may call storm_var_get/set, storm_region_ptr and storm_event_test on
 * this ctx and no other storm_* function on it.
 */
typedef void (*storm_recv_f)(void *arg, int root, uint64_t offset,
			     uint64_t len, void *dst);

/*
 * Called on a member when the first chunk of a new transfer arrives.
 * Return a buffer of at least len bytes to receive straight into it (e.g.
 * the mmap of a tmpfs file), or NULL to use the global region at offset.
 * The buffer must stay valid until storm_dest_release_f is called for it
 * (after COMMIT or ABORT/timeout, once no send reads it any more).
 */
typedef void *(*storm_dest_f)(void *arg, int root, uint64_t offset,
			      uint64_t len);
/* Called when a transfer that used a storm_dest_f buffer ends; committed
 * tells whether the data is complete and valid. */
typedef void (*storm_dest_release_f)(void *arg, void *dst, uint64_t len,
				     bool committed);

typedef struct storm_cfg {
	const char *provider;      /* "tcp;ofi_rxm" (NULL) or "shm" */
	const char *host;          /* local address to bind, "127.0.0.1" */
	int port;                  /* local port (names the shm endpoint) */
	int rank;                  /* this node's rank */
	const char *const *nodes;  /* optional: nodes[rank] = "host:port" */
	int nnodes;
	size_t region_size;        /* global region; allocated unless ... */
	void *region;              /* ... a caller buffer is given here */
	int nvars;                 /* uint64 variables (STORM_DEF_NVARS) */
	int arity;                 /* tree arity k (STORM_DEF_ARITY) */
	int bulk_arity;            /* arity for blocks of more than one chunk
				    * (STORM_DEF_BULK_ARITY; 1: a chain) */
	size_t chunk;              /* chunk size (STORM_DEF_CHUNK) */
	int window;                /* chunks in flight per child */
	int timeout_ms;            /* bound for every wait (STORM_DEF_TIMEOUT) */
	int busy_poll_us;          /* spin before sleeping in waits (50) */
	int rx_bufs;               /* posted receive buffers of a chunk each
				    * (0: window + 4) */
	/* The context lock with priority inheritance (false): for a process
	 * whose real-time threads share the context with ordinary ones whose
	 * receive callbacks run long under the lock (a node manager's
	 * heartbeat beside a broadcast's manifest): on a loaded host a
	 * preempted ordinary holder would keep the real-time one waiting. */
	bool lock_inherit;
} storm_cfg_t;

void storm_cfg_init(storm_cfg_t *cfg);  /* fills defaults */

int  storm_ctx_open(const storm_cfg_t *cfg, storm_ctx_t **out);
void storm_ctx_close(storm_ctx_t *ctx);
/* add or replace the address of a rank ("host:port"); NULL removes it */
int  storm_ctx_set_peer(storm_ctx_t *ctx, int rank, const char *hostport);
int  storm_ctx_rank(const storm_ctx_t *ctx);
void storm_set_log_fn(storm_ctx_t *ctx, storm_log_f fn, void *arg,
		      storm_log_level_t max_level);
void storm_set_recv_fn(storm_ctx_t *ctx, storm_recv_f fn, void *arg);
void storm_set_dest_fn(storm_ctx_t *ctx, storm_dest_f fn,
		       storm_dest_release_f rel, void *arg);

void  *storm_region_ptr(storm_ctx_t *ctx, size_t *size);
/* re-point the region at a caller buffer (no transfer may be in flight
 * towards this node); NULL restores the ctx-owned region */
int    storm_region_set(storm_ctx_t *ctx, void *buf, size_t size);
int    storm_var_get(storm_ctx_t *ctx, int var, uint64_t *val);
int    storm_var_set(storm_ctx_t *ctx, int var, uint64_t val);

typedef struct storm_caps {
	const char *provider;     /* provider actually opened */
	bool native_atomics;      /* fi_compare_atomic uint64 */
	bool rma_event;           /* FI_RMA_EVENT remote counters */
	bool remote_cq_data;      /* FI_REMOTE_CQ_DATA */
} storm_caps_t;
/* what the opened provider offers beyond messages (reported, not used:
 * every mechanism runs over messages) */
void storm_ctx_caps(storm_ctx_t *ctx, storm_caps_t *caps);

typedef struct storm_stats {
	uint64_t rx_msgs;         /* valid messages handled */
	uint64_t rx_dropped;      /* total rejected */
	uint64_t rx_bad_header;   /* magic/version/type/size */
	uint64_t rx_bad_range;    /* offset/len/chunk outside limits */
	uint64_t rx_bad_sender;   /* unknown sender or not in the tree */
	uint64_t rx_stale;        /* for an op unknown or finished */
	uint64_t rx_errors;       /* provider receive errors (truncation) */
	uint64_t tx_msgs;
	uint64_t tx_errors;
	uint64_t bytes_in;        /* payload bytes copied into destinations */
	/* connections to this process's fabric ports that the provider
	 * refused in its handshake, before any message (tcp: not a
	 * libfabric peer); counted for the whole process */
	uint64_t conn_refused;
} storm_stats_t;
void storm_ctx_stats(storm_ctx_t *ctx, storm_stats_t *st);

/* Sizes libfabric's rxm buffers for STORM's traffic (a few KiB per
 * message, a window of chunks per connection) instead of an MPI rank's
 * (about 100 MB per endpoint).  Sets FI_OFI_RXM_BUFFER_SIZE and
 * FI_OFI_RXM_MSG_{TX,RX}_SIZE in the environment where unset, before any
 * context.  Every process of one fabric must call it or none: a sender's
 * buffer size decides what it sends eagerly into the receiver's. */
void storm_fabric_small_buffers(void);

/* ------------------------------------------------------------ progress */
/* drive progress for up to timeout_us (0: one pass); returns number of
 * completions handled or a negative error */
int  storm_progress(storm_ctx_t *ctx, int timeout_us);
/* internal progress thread; tries SCHED_FIFO rt_priority (>0), falls back
 * to normal priority and logs which it got */
int  storm_ctx_start_progress(storm_ctx_t *ctx, int rt_priority);
void storm_ctx_stop_progress(storm_ctx_t *ctx);

/* -------------------------------------------------------------- events */
/* TEST-EVENT: events are monotonically increasing counters 0..63; each
 * transfer increments its event exactly once. */
int  storm_event_test(storm_ctx_t *ctx, int ev, uint64_t *count);
/* block until count >= target or timeout_ms (<0: cfg timeout);
 * 0, -ETIMEDOUT or -EINVAL */
int  storm_event_wait(storm_ctx_t *ctx, int ev, uint64_t target,
		      int timeout_ms);

/* ----------------------------------------------------- XFER-AND-SIGNAL */
typedef struct storm_op storm_op_t;

/*
 * Non-blocking put of [src, src+len) to dst_offset of every member of set.
 * src must stay untouched until the op completes.  local_ev is incremented
 * once when the op completes (success or failure: check storm_op_wait);
 * remote_ev is incremented once on every member, only if every member got
 * the whole block.
 */
int storm_xfer(storm_ctx_t *ctx, const storm_set_t *set, const void *src,
	       size_t len, uint64_t dst_offset, int local_ev, int remote_ev,
	       storm_op_t **op);

/*
 * STORM_XFER_ON_ARRIVAL: each member signals remote_ev (and calls the recv
 * callback) as soon as it holds the whole block, after passing it on to
 * its children, instead of after a commit round that tells it every
 * member has it: the semantics of the original XFER-AND-SIGNAL.  One
 * message per member instead of two (no COMMIT), and no wait for the
 * slowest member before anyone acts.  The root still learns every failed
 * member from the acknowledgements (storm_op_wait's failed set).  Fit for
 * a small, self-validating message that the next one replaces (a strobe);
 * not for a block a member must not use unless all have it.
 */
#define STORM_XFER_ON_ARRIVAL 1u
#define STORM_XFER_FLAGS      STORM_XFER_ON_ARRIVAL	/* every known flag */
int storm_xfer_flags(storm_ctx_t *ctx, const storm_set_t *set,
		     const void *src, size_t len, uint64_t dst_offset,
		     int local_ev, int remote_ev, unsigned flags,
		     storm_op_t **op);
/* 0 done ok, -EAGAIN still running, -EIO some member failed (failed set
 * filled if not NULL), other negative error */
int  storm_op_test(storm_op_t *op, storm_set_t *failed);
int  storm_op_wait(storm_op_t *op, int timeout_ms, storm_set_t *failed);
/*
 * Of the failed members, the ones that did not answer their own parent in
 * the transfer's tree: down, or their link cut.  The rest of the failed
 * set is only what lay below them.  Known at once from the acknowledgements,
 * so naming the culprit costs no probe (a probe of a dead member waits out
 * a timeout).  0, or -EINVAL.
 */
int  storm_op_lost(storm_op_t *op, storm_set_t *lost);
void storm_op_free(storm_op_t *op);   /* waits/cancels if still running */
/*
 * storm_op_wait(op, -1, failed), then, if it failed, the members it lost
 * (storm_op_lost()) in lost, then storm_op_free(op): for callers that name
 * who a transfer lost, which must be read before the op is freed.  failed
 * and lost may be NULL; lost is empty when the op did not fail.
 */
int  storm_op_wait_free(storm_op_t *op, storm_set_t *failed,
			storm_set_t *lost);

/*
 * A streamed XFER-AND-SIGNAL: the root (which must not be a member of
 * set) does not hold the block yet.  It forwards each chunk as soon as
 * storm_xfer_supply() says the first `avail` bytes of src are in place,
 * so a relay receiving a file over another link passes it on as it
 * arrives instead of after the last byte.  Members see an ordinary
 * transfer; they commit only once all hold the whole block.  Supplying
 * fewer bytes than before is a no-op; supplying len completes the block.
 * storm_op_cancel() aborts a root's transfer still running (every member
 * drops what it received); the op then completes with -ECANCELED.
 */
int storm_xfer_stream(storm_ctx_t *ctx, const storm_set_t *set,
		      const void *src, size_t len, uint64_t dst_offset,
		      int local_ev, int remote_ev, storm_op_t **op);
int storm_xfer_supply(storm_op_t *op, uint64_t avail);
int storm_op_cancel(storm_op_t *op);

/* convenience: xfer + wait + free */
int storm_xfer_sync(storm_ctx_t *ctx, const storm_set_t *set, const void *src,
		    size_t len, uint64_t dst_offset, int remote_ev,
		    storm_set_t *failed);
int storm_xfer_sync_flags(storm_ctx_t *ctx, const storm_set_t *set,
			  const void *src, size_t len, uint64_t dst_offset,
			  int remote_ev, unsigned flags, storm_set_t *failed);

/* --------------------------------------------------- COMPARE-AND-WRITE */
typedef enum storm_cmp {
	STORM_GE = 0,
	STORM_LT = 1,
	STORM_EQ = 2,
	STORM_NE = 3,
} storm_cmp_t;

/*
 * Returns 1 (true on every member), 0 (false somewhere, or a member did not
 * answer: then `unreachable` holds the ranks that did not answer within the
 * timeout) or a negative error.  When write_var >= 0 and the comparison is
 * true everywhere, write_value is stored in write_var on every member before
 * this returns.  Blocking, bounded by the ctx timeout.
 */
int storm_caw(storm_ctx_t *ctx, const storm_set_t *set, int var,
	      storm_cmp_t op, uint64_t value, int write_var,
	      uint64_t write_value, storm_set_t *unreachable);

/*
 * Of the members a COMPARE-AND-WRITE over set reported unreachable, the
 * ones that did not answer their own parent in its tree (rooted at the
 * serializer, the lowest rank of set): down, or their link cut.  The rest
 * of unreachable lay below them and may be alive; asking each alone costs
 * a live one a round trip, a dead one twice the timeout.  Assumes every
 * member runs with ctx's arity.  0, or -EINVAL.
 */
int storm_caw_lost(storm_ctx_t *ctx, const storm_set_t *set,
		   const storm_set_t *unreachable, storm_set_t *lost);

const char *storm_strerror(int err);

/*
 * Signals taken at load time.  libfabric's PSM provider pulls in
 * libinfinipath, whose constructor catches SIGINT, SIGTERM, SIGABRT,
 * SIGSEGV, SIGBUS and SIGILL with a handler that prints a backtrace and
 * calls exit(1) in whichever thread the signal hits.  A daemon that loads
 * libfabric after installing its own handlers (slurmctld loading a plugin)
 * loses them: a SIGTERM ends it without its shutdown, its exit handlers
 * run under its live threads' feet, and a crash leaves no core.
 *
 * storm_signal_taken() tells whether sig's handler lives in such a
 * library.  storm_signals_reclaim() asks want() (may be NULL) for the
 * action to install instead of each one (act holds SIG_DFL on entry),
 * installs it, and sets bit sig of *reclaimed for each; 0 or -errno.
 */
typedef void (*storm_signal_want_f)(int sig, struct sigaction *act,
				    void *arg);
bool storm_signal_taken(int sig);
int  storm_signals_reclaim(storm_signal_want_f want, void *arg,
			   uint64_t *reclaimed);

bool storm_rank_is_client(int rank);
/* this endpoint's "host:port" (the real port of a client opened with 0) */
int  storm_ctx_addr(storm_ctx_t *ctx, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* STORMMECH_H */

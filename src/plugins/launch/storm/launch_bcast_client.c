/*
 * launch_bcast_client.c - the fabric side of srun's STORM broadcast, built
 * as its own module (storm_bcast_client.so beside the plugins).
 *
 * srun joins the fabric as a transient client rank (stormmech.h: client
 * ranks carry their address in every message, so the nodes learn it per
 * operation) and is the root of every operation: manifest, readiness
 * check, the file itself, confirmation.  Protocol: src/common/storm_bcast.h.
 *
 * Why a separate module: loading libfabric costs about 200 ms here before
 * any call (the constructors of libpsm2 and libinfinipath, which Debian's
 * libfabric links, sleep), and its first fi_getinfo() another 150 ms or more
 * (the verbs provider reads /proc/kallsyms twice).  Linked into
 * launch_storm.so, every srun paid that, broadcast or not.  launch_bcast.c
 * dlopen()s this module only in the helper process of an srun that
 * broadcasts.
 *
 * Plain C with Slurm's public API (slurm_load_node, hostlists), resolved
 * from the srun that loads it; logging is the caller's (it gets a message).
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <munge.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "launch_bcast.h"
#include "src/common/storm_bcast.h"
#include "src/stormmech/stormmech.h"

typedef struct node_tab {
	int n;
	char (*name)[64];
	char (*addr)[64];
} node_tab_t;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The node table in slurmctld's order: a node's rank is its index. */
static int load_nodes(node_tab_t *t, char *err, size_t errlen)
{
	node_info_msg_t *msg = NULL;

	if (slurm_load_node((time_t) 0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		snprintf(err, errlen, "cannot load the node table: %s",
			 slurm_strerror(slurm_get_errno()));
		return -1;
	}
	t->n = (int) msg->record_count;
	t->name = calloc(t->n ? t->n : 1, sizeof(*t->name));
	t->addr = calloc(t->n ? t->n : 1, sizeof(*t->addr));
	if (!t->name || !t->addr) {
		slurm_free_node_info_msg(msg);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < t->n; i++) {
		node_info_t *n = &msg->node_array[i];

		snprintf(t->name[i], sizeof(t->name[i]), "%s",
			 n->name ? n->name : "");
		snprintf(t->addr[i], sizeof(t->addr[i]), "%s",
			 n->node_addr ? n->node_addr : t->name[i]);
	}
	slurm_free_node_info_msg(msg);
	return 0;
}

static int node_port(const storm_conf_t *c, int i)
{
	return c->port_hi > c->port_lo ? c->port_lo + i : c->port_lo;
}

/* Names of the ranks of a set, "node1,node5" (truncated politely). */
static void set_names(const node_tab_t *t, const storm_set_t *s, char *out,
		      size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int r = storm_set_next(s, 0); r >= 0; r = storm_set_next(s, r + 1)) {
		const char *nm = r < t->n ? t->name[r] : "?";
		int k = snprintf(out + o, len - o, "%s%s", o ? "," : "", nm);

		if (k < 0 || (size_t) k >= len - o) {
			if (len > 4)
				strcpy(out + len - 4, "...");
			return;
		}
		o += k;
	}
}

/* The local address that reaches the nodes (the route to the first one). */
static int local_addr(const char *peer, char *out, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM };
	struct addrinfo *ai = NULL;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd, rc = -1;

	if (getaddrinfo(peer, "9", &hints, &ai) || !ai)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen) &&
	    !getsockname(fd, (struct sockaddr *) &sa, &sl) &&
	    inet_ntop(AF_INET, &sa.sin_addr, out, len))
		rc = 0;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return rc;
}

/* Which state does node `rank` report for this transfer (0: none yet)? */
static int node_state(storm_ctx_t *ctx, int rank, int var, uint64_t key)
{
	static const int states[] = {
		STORM_BCAST_READY, STORM_BCAST_DONE, STORM_BCAST_EPERM,
		STORM_BCAST_ENOSPC, STORM_BCAST_EFBIG, STORM_BCAST_EIO,
		STORM_BCAST_EBADMSG, STORM_BCAST_ABORTED,
	};
	storm_set_t one, unr;

	storm_set_clear(&one);
	storm_set_add(&one, rank);
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		int r = storm_caw(ctx, &one, var, STORM_EQ,
				  STORM_BCAST_VAL(key, states[i]), -1, 0, &unr);

		if (r == 1)
			return states[i];
		if (r < 0 || storm_set_count(&unr))
			return -1;
	}
	return 0;
}

/*
 * Wait until every node of set reports `want` (COMPARE-AND-WRITE).  A node
 * that refused is reported at once with its reason; one that does not
 * answer, when the fabric says so; one that never gets there, at timeout.
 */
static int wait_state(storm_ctx_t *ctx, const node_tab_t *t,
		      const storm_set_t *set, int var, uint64_t key, int want,
		      int timeout_ms, char *err, size_t errlen)
{
	double deadline = now_ms() + timeout_ms;
	storm_set_t unr;
	char names[1024];

	for (int round = 0;; round++) {
		int r = storm_caw(ctx, set, var, STORM_EQ,
				  STORM_BCAST_VAL(key, want), -1, 0, &unr);
		size_t o = 0;
		bool refused = false;
		storm_set_t pending;

		if (r == 1)
			return 0;
		if (r < 0) {
			snprintf(err, errlen, "COMPARE-AND-WRITE failed: %s",
				 storm_strerror(r));
			return -1;
		}
		if (storm_set_count(&unr)) {
			/* the tree reports the subtree it could not reach: ask
			 * each node alone to name the ones really gone */
			storm_set_t dead;

			storm_set_clear(&dead);
			for (int n = storm_set_next(set, 0); n >= 0;
			     n = storm_set_next(set, n + 1))
				if (node_state(ctx, n, var, key) < 0)
					storm_set_add(&dead, n);
			set_names(t, storm_set_count(&dead) ? &dead : &unr, names,
				  sizeof(names));
			snprintf(err, errlen, "node(s) %s did not answer (node manager down or unreachable)",
				 names);
			return -1;
		}
		/* Usually a node is just not there yet (the commit travels
		 * down the tree while this runs from the serializer): retry a
		 * few times before asking each node what it says. */
		if (round % 8 != 7 && now_ms() < deadline) {
			usleep(round < 8 ? 200 : 2000);
			continue;
		}
		/* Some node is not there yet or refused: ask each one. */
		storm_set_clear(&pending);
		err[0] = '\0';
		for (int n = storm_set_next(set, 0); n >= 0;
		     n = storm_set_next(set, n + 1)) {
			int st = node_state(ctx, n, var, key);

			if (st == want)
				continue;
			if (st < 0) {
				snprintf(err, errlen, "node %s did not answer (node manager down or unreachable)",
					 n < t->n ? t->name[n] : "?");
				return -1;
			}
			if (st >= STORM_BCAST_EPERM) {
				int k = snprintf(err + o, errlen - o, "%snode %s: %s",
						 o ? "; " : "", t->name[n],
						 storm_bcast_state_str(st));
				if (k > 0 && (size_t) k < errlen - o)
					o += k;
				refused = true;
			} else {
				storm_set_add(&pending, n);
			}
		}
		if (refused)
			return -1;
		if (!storm_set_count(&pending))
			continue;	/* everyone got there meanwhile */
		if (now_ms() > deadline) {
			set_names(t, &pending, names, sizeof(names));
			snprintf(err, errlen, "node(s) %s did not confirm within %d ms",
				 names, timeout_ms);
			return -1;
		}
		usleep(2000);
	}
}

/* The fabric endpoint and node table, prepared ahead of the step (see
 * launch_bcast.c for when and in which process). */
static struct {
	bool done;
	const storm_conf_t *conf;
	node_tab_t t;
	storm_ctx_t *ctx;
	uint64_t key;
	int rank;
	int rc;
	char err[512];
	double ms;
} pre;

static void mech_log(void *arg, storm_log_level_t lvl, const char *msg)
{
	fprintf(stderr, "storm-bcast: stormmech: %s\n", msg);
}

static void prepare(void)
{
	const storm_conf_t *conf = pre.conf;
	char host_addr[64];
	storm_cfg_t cfg;
	double t0 = now_ms();
	int mrc;

	pre.done = true;
	pre.rc = -1;
	if (load_nodes(&pre.t, pre.err, sizeof(pre.err)))
		return;
	if (!pre.t.n || local_addr(pre.t.addr[0], host_addr, sizeof(host_addr)))
		snprintf(host_addr, sizeof(host_addr), "127.0.0.1");
	if (getrandom(&pre.key, sizeof(pre.key), 0) != sizeof(pre.key))
		pre.key = ((uint64_t) getpid() << 24) ^ (uint64_t) (t0 * 1000);
	pre.key &= STORM_BCAST_KEY_MASK;
	if (!pre.key)
		pre.key = 1;
	pre.rank = STORM_CLIENT_RANK_FIRST +
		(int) (pre.key % (STORM_CLIENT_RANK_LAST - STORM_CLIENT_RANK_FIRST + 1));
	storm_cfg_init(&cfg);
	cfg.provider = conf->provider;
	cfg.host = host_addr;
	cfg.port = 0;		/* any free port; announced in every message */
	cfg.rank = pre.rank;
	cfg.region_size = 0;	/* the root is not a member: no region */
	cfg.arity = (int) conf->tree_arity;
	cfg.chunk = conf->chunk_bytes;
	cfg.window = (int) conf->window;
	cfg.timeout_ms = (int) (conf->timeout_us / 1000);
	cfg.rx_bufs = 8;
	cfg.nvars = STORM_BCAST_NVARS;	/* storm_caw() checks var < nvars */
	mrc = storm_ctx_open(&cfg, &pre.ctx);
	if (mrc) {
		snprintf(pre.err, sizeof(pre.err),
			 "cannot join the STORM fabric from %s (provider %s): %s",
			 host_addr, conf->provider, storm_strerror(mrc));
		pre.ctx = NULL;
		return;
	}
	if (getenv("SLURM_STORM_BCAST_DEBUG"))
		storm_set_log_fn(pre.ctx, mech_log, NULL, STORM_LOG_DEBUG);
	else
		storm_set_log_fn(pre.ctx, NULL, NULL, STORM_LOG_ERROR);
	pre.ms = now_ms() - t0;
	pre.rc = 0;
}

static void release_pre(void)
{
	if (pre.ctx)
		storm_ctx_close(pre.ctx);
	pre.ctx = NULL;
	free(pre.t.name);
	free(pre.t.addr);
	memset(&pre.t, 0, sizeof(pre.t));
}

extern void storm_bcast_client_prepare(const storm_conf_t *conf)
{
	if (pre.done)
		return;
	pre.conf = conf;
	prepare();
}

extern void storm_bcast_client_release(void)
{
	release_pre();
}

extern int storm_bcast_client_run(const storm_bcast_req_t *req, char **remote,
				  char *err, size_t errlen)
{
	const storm_conf_t *conf = req->conf;
	node_tab_t t = { 0 };
	storm_ctx_t *ctx = NULL;
	storm_set_t set, failed;
	hostlist_t hl = NULL;
	char *host, names[1024], payload[2048], *cred = NULL;
	void *map = NULL;
	uint64_t size = 0, key = 0, hash;
	struct stat st;
	int fd = -1, rc = -1, nset = 0, rank = 0, var, mrc, timeout_ms;
	double prep_ms;
	double t0 = now_ms(), t_setup, t_manifest, t_data, t_done;

	*remote = NULL;
	err[0] = '\0';
	fd = open(req->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", req->path, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", req->path);
		goto done;
	}
	size = (uint64_t) st.st_size;
	if (size > conf->bcast_max_bytes) {
		snprintf(err, errlen, "%s: File too large (%" PRIu64
			 " bytes, BcastMaxSize=%" PRIu64 ")", req->path, size,
			 conf->bcast_max_bytes);
		goto done;
	}
	if (size) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (map == MAP_FAILED) {
			map = NULL;
			snprintf(err, errlen, "mmap %s: %s", req->path,
				 strerror(errno));
			goto done;
		}
	}
	hash = storm_bcast_hash(size ? map : "", size);

	/* the fabric endpoint and node table (prepared in the background) */
	if (!pre.done) {
		pre.conf = conf;
		prepare();
	}
	if (pre.rc) {
		snprintf(err, errlen, "%s", pre.err[0] ? pre.err : "cannot prepare");
		goto done;
	}
	ctx = pre.ctx;
	pre.ctx = NULL;		/* one broadcast per endpoint; closed below */
	t = pre.t;
	memset(&pre.t, 0, sizeof(pre.t));
	key = pre.key;
	rank = pre.rank;
	/* step nodes -> ranks */
	storm_set_clear(&set);
	hl = slurm_hostlist_create(req->nodelist);
	if (!hl) {
		snprintf(err, errlen, "bad node list '%s'", req->nodelist);
		goto done;
	}
	while ((host = slurm_hostlist_shift(hl))) {
		int i;

		for (i = 0; i < t.n; i++)
			if (!strcmp(t.name[i], host))
				break;
		if (i == t.n || i >= STORM_CLIENT_RANK_FIRST) {
			snprintf(err, errlen, "node %s is not in the node table", host);
			free(host);
			goto done;
		}
		storm_set_add(&set, i);
		free(host);
	}
	nset = storm_set_count(&set);
	if (!nset) {
		snprintf(err, errlen, "empty node list");
		goto done;
	}

	var = STORM_BCAST_VAR_BASE +
	      (rank - STORM_CLIENT_RANK_FIRST) % STORM_BCAST_VAR_SLOTS;
	timeout_ms = (int) (conf->timeout_us / 1000);
	for (int r = storm_set_next(&set, 0); r >= 0; r = storm_set_next(&set, r + 1)) {
		char hp[96];

		snprintf(hp, sizeof(hp), "%s:%d", t.addr[r], node_port(conf, r));
		if ((mrc = storm_ctx_set_peer(ctx, r, hp))) {
			snprintf(err, errlen, "node %s: bad fabric address %s: %s",
				 t.name[r], hp, storm_strerror(mrc));
			goto done;
		}
	}

	/* 1. the manifest: a munge credential the NMs verify */
	snprintf(payload, sizeof(payload),
		 "storm-bcast-1 job=%u step=%u uid=%u gid=%u key=%" PRIx64
		 " size=%" PRIu64 " mode=%o hash=%" PRIx64 " dir=%s name=%s",
		 req->job, req->step, (unsigned) getuid(), (unsigned) getgid(),
		 key, size, (unsigned) (st.st_mode & 07777), hash,
		 req->dest_dir ? req->dest_dir : "-", req->dest_name);
	munge_err_t me = munge_encode(&cred, NULL, payload, (int) strlen(payload) + 1);
	if (me != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "cannot create a munge credential: %s",
			 munge_strerror(me));
		goto done;
	}
	t_setup = now_ms();
	prep_ms = pre.ms;
	mrc = storm_xfer_sync(ctx, &set, cred, strlen(cred),
			      STORM_BCAST_MANIFEST | key, STORM_NO_EVENT,
			      &failed);
	if (mrc) {
		set_names(&t, &failed, names, sizeof(names));
		snprintf(err, errlen, "node(s) %s did not receive the broadcast request: %s",
			 storm_set_count(&failed) ? names : "?",
			 storm_strerror(mrc));
		goto done;
	}
	/* 2. every NM accepted it and prepared the file */
	if (wait_state(ctx, &t, &set, var, key, STORM_BCAST_READY, timeout_ms,
		       err, errlen))
		goto done;
	t_manifest = now_ms();
	/* 3. the file, straight into every node's tmpfs */
	mrc = storm_xfer_sync(ctx, &set, size ? map : "", size,
			      STORM_BCAST_DATA | key, STORM_NO_EVENT, &failed);
	t_data = now_ms();
	if (mrc) {
		set_names(&t, &failed, names, sizeof(names));
		snprintf(err, errlen, "transfer failed on node(s) %s: %s; no node keeps the file",
			 storm_set_count(&failed) ? names : "?",
			 storm_strerror(mrc));
		goto done;
	}
	/* 4. every node holds it, in place */
	if (wait_state(ctx, &t, &set, var, key, STORM_BCAST_DONE, timeout_ms,
		       err, errlen))
		goto done;
	t_done = now_ms();

	if (req->dest_dir)
		rc = asprintf(remote, "%s/%s", req->dest_dir, req->dest_name);
	else
		rc = asprintf(remote, "%s/job_%u/%s", conf->bcast_dir, req->job,
			      req->dest_name);
	if (rc < 0) {
		*remote = NULL;
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto done;
	}
	rc = 0;
	if (getenv("SLURM_STORM_BCAST_TIMING"))
		fprintf(stderr, "storm-bcast: file=%s bytes=%" PRIu64 " nodes=%d "
			"fabric_open_ms=%.3f setup_ms=%.3f manifest_ms=%.3f data_ms=%.3f confirm_ms=%.3f "
			"transfer_ms=%.3f\n", req->path, size, nset, prep_ms, t_setup - t0,
			t_manifest - t_setup, t_data - t_manifest, t_done - t_data,
			t_done - t0);
done:
	if (ctx)
		storm_ctx_close(ctx);
	free(cred);
	if (hl)
		slurm_hostlist_destroy(hl);
	if (map)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	free(t.name);
	free(t.addr);
	return rc;
}

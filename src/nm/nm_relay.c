/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay.c - the node manager's door for srun's broadcasts: a TCP port
 * (storm.conf BcastPort) where srun hands over a file for the nodes of a
 * step, and this node manager, as the step's first node, multicasts it to
 * the others over the fabric (protocol: src/common/storm_bcast.h).
 *
 * Why a relay: srun joining the fabric itself costs it hundreds of
 * milliseconds before the first byte moves (loading libfabric runs
 * the constructors of libpsm2 and libinfinipath, which sleep; the first
 * fi_getinfo() probes verbs through /proc/kallsyms), and a new endpoint
 * then pays for its connections.  The node managers are on the fabric
 * all along, connected to each other after the first broadcast.
 *
 * Trust: the relay checks srun's munge credential exactly as every other
 * node does (nm_bcast_accept), forwards that same credential with its job
 * attestation (nm_bcast.c), and each node checks the credential again for
 * itself.  The file goes on to the other nodes as it arrives from srun;
 * the checksum bound into the credential is verified by the relay once
 * the last byte is in (a mismatch cancels the transfer everywhere) and by
 * every node on its own copy before it reports the file held, so no node
 * commits a file that is not srun's.
 *
 * Threads: the door (nm_relay_door.c) accepts connections and reads each
 * request under BcastRequestTimeout in one thread, so a connection that
 * has proved nothing holds no thread and no slot.  A complete request gets
 * a thread, bounded by the configured Timeout on every socket and fabric
 * wait; at most RELAY_MAX_VERIFY of them check credentials at once, and a
 * verified broadcast then takes one of its user's RELAY_MAX_PER_USER
 * slots (RELAY_MAX_BCASTS in all), so one user's connections cannot take
 * another user's launches away.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "nm.h"
#include "nm_bcast.h"
#include "nm_bcast_absent.h"
#include "nm_relay_door.h"
#include "nm_relay_report.h"
#include "nm_relay_req.h"
#include "nm_relay_state.h"
#include "nm_reject.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_time.h"

#define RELAY_MAX_VERIFY 16	/* credentials being checked at once */
#define RELAY_MAX_PER_USER 8	/* verified broadcasts of one user */
#define RELAY_MAX_BCASTS 32	/* verified broadcasts in all */
#define RELAY_MAX_THREADS (RELAY_MAX_VERIFY + RELAY_MAX_BCASTS)

/* One request from the door, in its own thread. */
typedef struct conn {
	int fd;
	nm_relay_req_t *req;
	bool verifying;		/* holds a verification slot */
} conn_t;

static struct {
	nm_t *nm;
	int lfd;
	int port;
	bool door_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a connection ended */
	volatile bool stop;
	int conn[RELAY_MAX_THREADS];	/* connections with a thread (-1: free) */
	int nconn;
	int nverify;
	struct { uid_t uid; int n; } user[RELAY_MAX_BCASTS];
	int nbcast;
} relay = { .lfd = -1, .lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER };

/* The credential is checked (or failed): free the verification slot. */
static void verified(conn_t *c)
{
	pthread_mutex_lock(&relay.lock);
	if (c->verifying)
		relay.nverify--;
	c->verifying = false;
	pthread_mutex_unlock(&relay.lock);
}

/* One of uid's broadcast slots, or an answer why not. */
static int user_slot_take(uid_t uid, char *err, size_t errlen)
{
	int free_i = -1, rc = 0;

	pthread_mutex_lock(&relay.lock);
	for (int i = 0; i < RELAY_MAX_BCASTS; i++) {
		if (relay.user[i].n && relay.user[i].uid == uid) {
			if (relay.user[i].n >= RELAY_MAX_PER_USER) {
				snprintf(err, errlen, "node manager busy: user %u has %d broadcasts through this node at once, try again",
					 (unsigned) uid, relay.user[i].n);
				rc = -1;
			} else
				relay.user[i].n++;
			goto out;
		}
		if (!relay.user[i].n && free_i < 0)
			free_i = i;
	}
	if (relay.nbcast >= RELAY_MAX_BCASTS || free_i < 0) {
		snprintf(err, errlen, "node manager busy: too many broadcasts at once, try again");
		rc = -1;
		goto out;
	}
	relay.user[free_i].uid = uid;
	relay.user[free_i].n = 1;
out:
	if (!rc)
		relay.nbcast++;
	pthread_mutex_unlock(&relay.lock);
	return rc;
}

static void user_slot_give(uid_t uid)
{
	pthread_mutex_lock(&relay.lock);
	for (int i = 0; i < RELAY_MAX_BCASTS; i++)
		if (relay.user[i].n && relay.user[i].uid == uid) {
			relay.user[i].n--;
			relay.nbcast--;
			break;
		}
	pthread_mutex_unlock(&relay.lock);
}

/* The error of a transfer that did not reach `failed`: fmt takes their
 * names, then the error.  Names the members that are really gone (`lost`:
 * each did not answer its parent, storm_op_lost()), not the whole subtree
 * the tree lost with them; the acknowledgements tell, so no probe waits
 * out a timeout on a dead node before srun hears of it. */
static void xfer_error(const storm_set_t *failed, const storm_set_t *lost,
		       int mrc, const char *fmt, char *err, size_t errlen)
{
	char names[1024];

	nm_relay_set_names(storm_set_count(lost) ? lost : failed, names,
			   sizeof(names));
	snprintf(err, errlen, fmt, storm_set_count(failed) ? names : "?",
		 storm_strerror(mrc));
}

/* Wait for a transfer, then free it: 0, or -1 with err set (fmt as for
 * xfer_error()). */
static int xfer_wait(storm_op_t *op, const char *fmt, char *err,
		     size_t errlen)
{
	storm_set_t failed, lost;
	int mrc = storm_op_wait_free(op, &failed, &lost);

	if (!mrc)
		return 0;
	xfer_error(&failed, &lost, mrc, fmt, err, errlen);
	return -1;
}

/* XFER-AND-SIGNAL to the whole set; on failure, err says which nodes it
 * did not reach (fmt takes their names, then the error). */
static int xfer_all(const storm_set_t *set, const void *data, uint64_t len,
		    uint64_t offset, const char *fmt, char *err, size_t errlen)
{
	storm_op_t *op;
	storm_set_t none;
	int mrc = storm_xfer_flags(relay.nm->ctx, set, data, len, offset,
				   STORM_NO_EVENT, STORM_NO_EVENT, 0, &op);

	if (!mrc)
		return xfer_wait(op, fmt, err, errlen);
	storm_set_clear(&none);
	xfer_error(&none, &none, mrc, fmt, err, errlen);
	return -1;
}

/*
 * Step 1 of storm_bcast.h: the manifest (srun's credential and, when it
 * fits, this node's job attestation).  Sent before srun sends the file, so
 * that the nodes check it and prepare their files meanwhile.
 */
static int send_manifest(const storm_set_t *set, const char *cred,
			 const char *attest, uint64_t key, char *err,
			 size_t errlen)
{
	char *man = NULL;
	int rc;

	if (attest && strlen(cred) + 1 + strlen(attest) <= STORM_BCAST_MAX_MANIFEST &&
	    asprintf(&man, "%s\n%s", cred, attest) < 0)
		man = NULL;
	rc = xfer_all(set, man ? man : cred, strlen(man ? man : cred),
		      STORM_BCAST_MANIFEST | key,
		      "node(s) %s did not receive the broadcast request: %s",
		      err, errlen);
	free(man);
	return rc;
}

/* Read len bytes of the file from srun into map, telling the transfer
 * after every read how much of it is in place; 0 or -errno. */
static int receive_streaming(int fd, uint8_t *map, uint64_t len,
			     storm_op_t *op, uint64_t key)
{
	uint64_t got = 0;

	while (got < len) {
		uint64_t want = len - got;
		ssize_t n = read(fd, map + got, want < (1 << 20) ? want : (1 << 20));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		got += (uint64_t) n;
		if (op)
			storm_xfer_supply(op, got);
		nm_relay_report_received(key, got);
	}
	return 0;
}

/*
 * Steps 2-4 of storm_bcast.h: the file comes from srun and goes on to the
 * step's other nodes as it arrives (a chain by default, BcastArity), so
 * the relay's link carries it in and out at the same time instead of one
 * after the other.  The checksum bound into the credential is checked
 * here once the last byte is in, and by every node on its own copy before
 * it reports the file held: a bad file is cancelled everywhere.
 * t: [ready, received, multicast done].
 */
static int multicast(int fd, const storm_set_t *set, uint64_t key,
		     nm_bcast_file_t *f, uint8_t *map, uint64_t size,
		     double *t, uint64_t *unread, char *err, size_t errlen)
{
	storm_op_t *op = NULL;
	int rc, mrc;

	nm_relay_report_phase(key, STORM_RELAY_READY);
	if (storm_set_count(set) &&
	    nm_relay_wait_state(set, key, STORM_BCAST_READY, size, err,
				errlen))
		return -1;
	t[0] = storm_mono_ms();
	nm_relay_report_phase(key, STORM_RELAY_DATA);
	if (storm_set_count(set) &&
	    (mrc = storm_xfer_stream(relay.nm->ctx, set, map, size,
				     STORM_BCAST_DATA | key, STORM_NO_EVENT,
				     STORM_NO_EVENT, &op))) {
		snprintf(err, errlen, "cannot start the transfer: %s",
			 storm_strerror(mrc));
		return -1;
	}
	rc = size ? receive_streaming(fd, map, size, op, key) : 0;
	*unread = 0;
	t[1] = storm_mono_ms();
	if (rc) {
		snprintf(err, errlen, "srun stopped sending the file: %s",
			 strerror(-rc));
		goto fail;
	}
	if (!nm_bcast_file_verify(f)) {
		snprintf(err, errlen, "node %s: %s (the file changed while srun sent it?)",
			 relay.nm->node, storm_bcast_state_str(STORM_BCAST_EBADMSG));
		goto fail;
	}
	if (!op) {
		t[2] = t[1];
		return 0;
	}
	storm_xfer_supply(op, size);
	rc = xfer_wait(op, "transfer failed on node(s) %s: %s; no node keeps the file",
		       err, errlen);
	t[2] = storm_mono_ms();
	nm_relay_report_phase(key, STORM_RELAY_CONFIRM);
	if (rc)
		return -1;
	/* -2: only references some node lacks (storm_bcast.h) */
	return nm_relay_wait_state(set, key, STORM_BCAST_DONE, size, err,
				   errlen);
fail:
	if (op) {
		storm_op_cancel(op);
		storm_op_free(op);
	}
	return -1;
}

/* Step 5 of storm_bcast.h: every node holds the file, the tasks waiting
 * for it (BcastOverlap) may go. */
static int send_go(const storm_set_t *set, uint64_t key, char *err,
		   size_t errlen)
{
	nm_relay_report_phase(key, STORM_RELAY_GO);
	if (storm_set_count(set) &&
	    xfer_all(set, "", 0, STORM_BCAST_GO | key,
		     "node(s) %s did not receive the go-ahead: %s", err, errlen))
		return -1;
	nm_bcast_go(relay.nm->rank, key);
	return 0;
}

/*
 * Some nodes lacked references of a bundle: the union of what each lacks,
 * this node's own included (its copy is extracted now, which places what
 * it holds), once every node that reported ABSENT has told it, within
 * Timeout; *bits NULL when a report is missing (srun sends every file).
 */
static void gather_absent(const storm_set_t *set, uint64_t key,
			  nm_bcast_file_t *f, uint8_t **bits, size_t *len)
{
	int want = nm_relay_count_state(set, key, STORM_BCAST_ABSENT);
	double deadline = storm_mono_ms() + relay.nm->conf.timeout_us / 1000.0;

	if (f && nm_bcast_finish(f, true) == STORM_BCAST_ABSENT)
		want++;
	while (nm_bcast_absent_reports(key) < want &&
	       storm_mono_ms() < deadline && !relay.stop) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	if (nm_bcast_absent_reports(key) >= want) {
		*bits = nm_bcast_absent_take(key, len);
		return;
	}
	nm_verbose("relay: %d of %d nodes said what they lack: every file is sent",
		   nm_bcast_absent_reports(key), want);
	free(nm_bcast_absent_take(key, len));
	*len = 0;
}

/* -------------------------------------------------------------- srun */
/* The step's nodes as ranks; this node must be one of them. */
static int parse_nodes(const char *list, storm_set_t *set, char *err,
		       size_t errlen)
{
	struct hostlist *hl = slurm_hostlist_create(list);
	char *host;
	int rc = 0;

	storm_set_clear(set);
	if (!hl) {
		snprintf(err, errlen, "bad node list '%.200s'", list);
		return -1;
	}
	while (!rc && (host = slurm_hostlist_shift(hl))) {
		int i;

		for (i = 0; i < relay.nm->nnodes; i++)
			if (!strcmp(relay.nm->nodes[i].name, host))
				break;
		if (i == relay.nm->nnodes) {
			snprintf(err, errlen, "node %s is not in the node table",
				 host);
			rc = -1;
		} else {
			storm_set_add(set, i);
		}
		free(host);
	}
	slurm_hostlist_destroy(hl);
	if (!rc && !storm_set_has(set, relay.nm->rank)) {
		snprintf(err, errlen, "this node (%s) is not one of the step's nodes %.200s",
			 relay.nm->node, list);
		rc = -1;
	}
	return rc;
}

/* Read and drop up to len bytes (bounded by the socket's timeout). */
static void drain(int fd, uint64_t len)
{
	static char sink[65536];

	while (len) {
		ssize_t n = read(fd, sink, len < sizeof(sink) ? len : sizeof(sink));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		len -= (uint64_t) n;
	}
}

/*
 * One request from srun; fills msg with the answer's text.  Returns
 * STORM_RELAY_REP_OK when every node of the step holds the file,
 * STORM_RELAY_REP_ABSENT when a bundle's references were all that some
 * nodes lacked, STORM_RELAY_REP_FAILED otherwise.  *unread: file bytes
 * srun has yet to send when it fails early, so that they can be read off
 * before the answer (srun reads it only once the file is out).
 */
static int serve(conn_t *c, char *msg, size_t msglen, uint64_t *unread,
		 uint8_t **bits, size_t *bits_len)
{
	const nm_relay_req_t *rq = c->req;
	int fd = c->fd;
	nm_bcast_file_t *f = NULL;
	storm_set_t set;
	const char *cred = nm_relay_req_cred(rq), *nodes = nm_relay_req_nodes(rq);
	char err[2048];
	uint64_t key = rq->key, size = 0;
	uint8_t *map;
	double t0 = storm_mono_ms(), t_man, t_mc[3] = { 0, 0, 0 }, t_end, t_go;
	double t_begin = t0;
	int st, rc = -1, mrc;
	uid_t uid = (uid_t) -1;
	bool reported = false, absent = false;

	err[0] = '\0';
	if (rq->hdr.size <= relay.nm->conf.bcast_max_bytes)
		*unread = rq->hdr.size;
	if (rq->hdr.size > relay.nm->conf.bcast_max_bytes) {
		snprintf(err, sizeof(err), "node %s: %s", relay.nm->node,
			 storm_bcast_state_str(STORM_BCAST_EFBIG));
		goto done;
	}
	if (parse_nodes(nodes, &set, err, sizeof(err)))
		goto done;
	st = nm_bcast_accept(cred, key, &f);
	verified(c);
	if (st != STORM_BCAST_READY) {
		nm_reject_count(STORM_REJECT_BCAST);
		snprintf(err, sizeof(err), "node %s: %s", relay.nm->node,
			 storm_bcast_state_str(st));
		goto done;
	}
	if (user_slot_take(nm_bcast_file_uid(f), err, sizeof(err)))
		goto done;
	uid = nm_bcast_file_uid(f);
	map = nm_bcast_file_map(f, &size);
	if (size != rq->hdr.size) {
		snprintf(err, sizeof(err), "malformed request (%" PRIu64 " bytes announced, the credential says %" PRIu64 ")",
			 rq->hdr.size, size);
		goto done;
	}
	storm_set_remove(&set, relay.nm->rank);
	nm_relay_report_begin(key, nm_bcast_file_job(f), size,
			      storm_set_count(&set));
	t_begin = storm_mono_ms();
	reported = true;
	if (storm_set_count(&set) &&
	    send_manifest(&set, cred, nm_bcast_file_attest(f), key, err,
			  sizeof(err)))
		goto done;
	t_man = storm_mono_ms();
	if ((mrc = multicast(fd, &set, key, f, map, size, t_mc, unread, err,
			     sizeof(err)))) {
		if ((absent = mrc == -2)) {
			gather_absent(&set, key, f, bits, bits_len);
			f = NULL;
		}
		goto done;
	}
	st = nm_bcast_finish(f, true);
	f = NULL;
	if (st != STORM_BCAST_DONE) {
		if ((absent = st == STORM_BCAST_ABSENT))
			gather_absent(&set, key, NULL, bits, bits_len);
		snprintf(err, sizeof(err), "node %s: %s", relay.nm->node,
			 storm_bcast_state_str(st));
		goto done;
	}
	t_end = storm_mono_ms();
	if (send_go(&set, key, err, sizeof(err)))
		goto done;
	t_go = storm_mono_ms();
	/* recv (srun to this node) and data (this node to the last one's
	 * acknowledgement) both start at ready and overlap */
	snprintf(msg, msglen, "relay=%s check_ms=%.3f ready_ms=%.3f recv_ms=%.3f data_ms=%.3f confirm_ms=%.3f go_ms=%.3f",
		 relay.nm->node, t_man - t0, t_mc[0] - t_man, t_mc[1] - t_mc[0],
		 t_mc[2] - t_mc[0], t_end - t_mc[2], t_go - t_end);
	nm_verbose("relay: %" PRIu64 " bytes to %s: %s", size, nodes, msg);
	rc = 0;
done:
	if (reported)
		nm_relay_report_end(key, size, rc == 0,
				    (uint64_t) ((storm_mono_ms() - t_begin) * 1000.0));
	if (f)
		nm_bcast_finish(f, false);
	if (uid != (uid_t) -1)
		user_slot_give(uid);
	if (rc && absent) {
		snprintf(msg, msglen, "%s", err);
		nm_verbose("relay: %s lack some of the files referenced: %s",
			   nodes, err);
		return STORM_RELAY_REP_ABSENT;
	}
	if (rc) {
		snprintf(msg, msglen, "%s", err);
		nm_error("relay: broadcast to %s failed: %s", nodes, err);
	}
	return rc ? STORM_RELAY_REP_FAILED : STORM_RELAY_REP_OK;
}

static void conn_release(conn_t *c)
{
	pthread_mutex_lock(&relay.lock);
	if (c->verifying)
		relay.nverify--;
	c->verifying = false;
	for (int i = 0; i < RELAY_MAX_THREADS; i++)
		if (relay.conn[i] == c->fd) {
			relay.conn[i] = -1;
			relay.nconn--;
		}
	pthread_cond_broadcast(&relay.cond);
	pthread_mutex_unlock(&relay.lock);
	close(c->fd);
	nm_relay_req_free(c->req);
	free(c->req);
	free(c);
}

static void reply(int fd, int status, const char *msg, const uint8_t *bits,
		  size_t bits_len)
{
	storm_relay_rep_t rep = { 0 };
	size_t len = strlen(msg);

	if (len > STORM_RELAY_MAX_MSG)
		len = STORM_RELAY_MAX_MSG;
	if (!bits || bits_len > STORM_RELAY_MAX_ABSENT)
		bits_len = 0;
	rep.magic = htonl(STORM_RELAY_REP_MAGIC);
	rep.status = htonl((uint32_t) status);
	rep.msg_len = htonl((uint32_t) len);
	rep.absent_len = htonl((uint32_t) bits_len);
	if (storm_bcast_io(fd, &rep, sizeof(rep), true) ||
	    storm_bcast_io(fd, (char *) msg, len, true) ||
	    (bits_len && storm_bcast_io(fd, (void *) bits, bits_len, true)))
		nm_verbose("relay: srun went away before the answer");
}

static void *conn_main(void *arg)
{
	conn_t *c = arg;
	char msg[STORM_RELAY_MAX_MSG];
	uint64_t unread = 0;
	uint8_t *bits = NULL;
	size_t bits_len = 0;
	int status = serve(c, msg, sizeof(msg), &unread, &bits, &bits_len);

	drain(c->fd, unread);
	reply(c->fd, status, msg, bits, bits_len);
	free(bits);
	/* Close only once the peer has read the answer and closed its side:
	 * closing with unread bytes would reset the connection and lose it. */
	shutdown(c->fd, SHUT_WR);
	drain(c->fd, 1 << 20);
	conn_release(c);
	return NULL;
}

static void set_timeouts(int fd)
{
	uint64_t us = relay.nm->conf.timeout_us;
	struct timeval tv = { .tv_sec = (time_t) (us / 1000000),
			      .tv_usec = (suseconds_t) (us % 1000000) };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A thread slot and a verification slot for a complete request, or an
 * answer why not. */
static const char *conn_admit(int fd)
{
	const char *why = NULL;
	int slot = -1;

	pthread_mutex_lock(&relay.lock);
	for (int i = 0; i < RELAY_MAX_THREADS && slot < 0; i++)
		if (relay.conn[i] < 0)
			slot = i;
	if (relay.nverify >= RELAY_MAX_VERIFY)
		why = "node manager busy: too many requests being verified at once, try again";
	else if (slot < 0)
		why = "node manager busy: too many broadcasts at once, try again";
	else {
		relay.conn[slot] = fd;
		relay.nconn++;
		relay.nverify++;
	}
	pthread_mutex_unlock(&relay.lock);
	return why;
}

/* The door's callback: a complete, well-formed request on fd. */
static void on_request(int fd, nm_relay_req_t *req, void *arg)
{
	conn_t *c = calloc(1, sizeof(*c));
	const char *why = c ? conn_admit(fd) : "node manager out of memory";
	pthread_attr_t at;
	pthread_t th;

	(void) arg;
	set_timeouts(fd);
	if (why) {
		reply(fd, STORM_RELAY_REP_FAILED, why, NULL, 0);
		close(fd);
		nm_relay_req_free(req);
		free(req);
		free(c);
		return;
	}
	*c = (conn_t) { .fd = fd, .req = req, .verifying = true };
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, conn_main, c)) {
		reply(fd, STORM_RELAY_REP_FAILED,
		      "node manager cannot start a thread", NULL, 0);
		conn_release(c);
	}
	pthread_attr_destroy(&at);
}

/* ------------------------------------------------------------ module */
static int relay_init(nm_t *nm)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	const char *addr = nm->nodes[nm->rank].addr;
	char port[16];
	int one = 1, rc;

	relay.nm = nm;
	relay.stop = false;
	nm_relay_state_init(nm, &relay.stop);
	for (int i = 0; i < RELAY_MAX_THREADS; i++)
		relay.conn[i] = -1;
	relay.port = storm_conf_port(nm->conf.bcast_port_lo,
				     nm->conf.bcast_port_hi, nm->rank);
	snprintf(port, sizeof(port), "%d", relay.port);
	if ((rc = getaddrinfo(addr, port, &hints, &ai)) || !ai) {
		nm_error("relay: cannot resolve %s: %s", addr, gai_strerror(rc));
		return -EINVAL;
	}
	relay.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (relay.lfd < 0 ||
	    setsockopt(relay.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(relay.lfd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(relay.lfd, 512)) {
		rc = -errno;
		nm_error("relay: cannot listen on %s:%d (BcastPort): %s", addr,
			 relay.port, strerror(-rc));
		freeaddrinfo(ai);
		if (relay.lfd >= 0)
			close(relay.lfd);
		relay.lfd = -1;
		return rc;
	}
	freeaddrinfo(ai);
	if ((rc = nm_relay_door_start(relay.lfd, nm->conf.bcast_request_us,
				      on_request, NULL))) {
		nm_error("relay: cannot start the door on BcastPort: %s",
			 strerror(-rc));
		close(relay.lfd);
		relay.lfd = -1;
		return rc;
	}
	relay.door_started = true;
	nm_info("relay: srun hands broadcasts to %s:%d (BcastPort)", addr,
		relay.port);
	return 0;
}

static void relay_fini(nm_t *nm)
{
	struct timespec ts;

	pthread_mutex_lock(&relay.lock);
	relay.stop = true;	/* waits in nm_relay_wait_state end within 2 ms */
	pthread_mutex_unlock(&relay.lock);
	if (relay.door_started)
		nm_relay_door_stop();
	relay.door_started = false;
	if (relay.lfd >= 0)
		close(relay.lfd);
	relay.lfd = -1;
	/* Connections end on their own within Timeout; cut their sockets so
	 * that a transfer from srun stops now (its file is unlinked). */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2 * (time_t) (nm->conf.timeout_us / 1000000) + 5;
	pthread_mutex_lock(&relay.lock);
	for (int i = 0; i < RELAY_MAX_THREADS; i++)
		if (relay.conn[i] >= 0)
			shutdown(relay.conn[i], SHUT_RDWR);
	while (relay.nconn > 0)
		if (pthread_cond_timedwait(&relay.cond, &relay.lock, &ts) ==
		    ETIMEDOUT)
			break;
	if (relay.nconn > 0)
		nm_error("relay: %d broadcast(s) still running at exit",
			 relay.nconn);
	pthread_mutex_unlock(&relay.lock);
}

const nm_module_t nm_relay_module = {
	.name = "relay",
	.init = relay_init,
	.fini = relay_fini,
};

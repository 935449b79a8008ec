/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_client.c - srun's side of the STORM file broadcast: checks the file,
 * then hands it over one TCP connection to the node manager of the step's
 * first node (the relay, storm-nm's BcastPort), which multicasts it to the
 * step's other nodes over the fabric and answers when every node holds it
 * (protocol: src/common/storm_bcast.h).
 *
 * srun itself never loads libfabric: joining the fabric costs an srun
 * hundreds of milliseconds (library constructors that sleep, provider
 * probing, new connections), more than a whole transfer.  What srun sends is
 * authenticated by its munge credential, which names the job, the step,
 * the user and the file's size and checksum; every node checks it.
 */
#include "config.h"
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <munge.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "bcast_client.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_time.h"

extern int storm_bcast_stat_regular(const char *path, struct stat *st,
				    char *err, size_t errlen)
{
	if (stat(path, st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	return 0;
}

extern int storm_bcast_check_file(const char *path, uint64_t max_bytes,
				  char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (storm_bcast_stat_regular(path, &st, err, errlen))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	if ((uint64_t) st.st_size > max_bytes) {
		snprintf(err, errlen, "%s: File too large (%" PRIu64
			 " bytes, BcastMaxSize=%" PRIu64 ")", path,
			 (uint64_t) st.st_size, max_bytes);
		return -1;
	}
	return 0;
}

/* The relay: the step's first node, its address and its index in the
 * node table (the node managers' ranks; BcastPort counts from it). */
static int find_relay(const char *nodelist, char *name, size_t namelen,
		      char *addr, size_t addrlen, int *index, int *nnodes,
		      char *err, size_t errlen)
{
	node_info_msg_t *msg = NULL;
	struct hostlist *hl = slurm_hostlist_create(nodelist);
	char *first = hl ? slurm_hostlist_shift(hl) : NULL;
	int rc = -1;

	if (!first) {
		snprintf(err, errlen, "bad node list '%s'", nodelist);
		goto done;
	}
	*nnodes = slurm_hostlist_count(hl) + 1;
	snprintf(name, namelen, "%s", first);
	if (slurm_load_node((time_t) 0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		snprintf(err, errlen, "cannot load the node table: %s",
			 slurm_strerror(errno));
		goto done;
	}
	for (uint32_t i = 0; i < msg->record_count; i++) {
		node_info_t *n = &msg->node_array[i];

		if (!n->name || strcmp(n->name, first))
			continue;
		snprintf(addr, addrlen, "%s", n->node_addr ? n->node_addr : n->name);
		*index = (int) i;
		rc = 0;
		break;
	}
	if (rc)
		snprintf(err, errlen, "node %s is not in the node table", first);
done:
	if (msg)
		slurm_free_node_info_msg(msg);
	free(first);
	if (hl)
		slurm_hostlist_destroy(hl);
	return rc;
}

/* A TCP connection to addr:port within timeout_ms; fd or -errno. */
static int connect_to(const char *addr, int port, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char ps[16];
	int fd, rc, one = 1, e = 0;
	socklen_t el = sizeof(e);
	struct pollfd p;

	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(addr, ps, &hints, &ai) || !ai)
		return -EHOSTUNREACH;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		freeaddrinfo(ai);
		return rc;
	}
	rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc && errno != EINPROGRESS) {
		rc = -errno;
		goto fail;
	}
	if (rc) {
		p.fd = fd;
		p.events = POLLOUT;
		rc = poll(&p, 1, timeout_ms);
		if (rc <= 0) {
			rc = rc ? -errno : -ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
			rc = -(e ? e : errno);
			goto fail;
		}
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		goto fail_errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail_errno:
	rc = -errno;
fail:
	close(fd);
	return rc;
}

static void set_timeout(int fd, int opt, uint64_t ms)
{
	struct timeval tv = { .tv_sec = (time_t) (ms / 1000),
			      .tv_usec = (suseconds_t) (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/*
 * After a stall: are the relay's host or link down (data sent and never
 * acknowledged, retransmitted by TCP), or is the relay only not reading
 * (everything acknowledged, its window closed: it will answer)?  TCP's
 * own acknowledgements tell, so a cut relay is named when the stall is
 * seen instead of after a wait for an answer that cannot come.
 */
static bool path_dead(int sock)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(sock, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return false;
	return ti.tcpi_unacked > 0 &&
	       (ti.tcpi_retransmits > 0 || ti.tcpi_backoff > 0);
}

extern uint64_t storm_bcast_new_key(void)
{
	uint64_t key = 0;

	if (getrandom(&key, sizeof(key), 0) != sizeof(key)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		key = ((uint64_t) getpid() << 24) ^ (uint64_t) ts.tv_nsec ^
		      ((uint64_t) ts.tv_sec << 30);
	}
	key &= STORM_BCAST_KEY_MASK;
	return key ? key : 1;
}

extern char *storm_bcast_remote(const storm_bcast_req_t *req)
{
	char *remote = NULL;
	int rc;

	if (req->dest_dir)
		rc = asprintf(&remote, "%s/%s", req->dest_dir, req->dest_name);
	else
		rc = asprintf(&remote, "%s/job_%u/%s", req->conf->bcast_dir,
			      req->job, req->dest_name);
	return rc < 0 ? NULL : remote;
}

extern uint64_t storm_bcast_wait_ms(const storm_conf_t *conf, uint64_t size)
{
	return 4 * (conf->timeout_us / 1000) + 2000 + size / 10000;
}

extern int storm_bcast_run(const storm_bcast_req_t *req, char **remote,
			   char *err, size_t errlen)
{
	const storm_conf_t *conf = req->conf;
	storm_relay_req_t rq = { 0 };
	storm_relay_rep_t rep;
	char relay[64], addr[64], payload[2048], rmsg[STORM_RELAY_MAX_MSG + 1];
	char *cred = NULL;
	void *map = NULL;
	uint64_t size = 0, key = 0, hash;
	struct stat st;
	int fd = -1, sock = -1, rc = -1, index = 0, nnodes = 0, port, io = 0;
	uint64_t timeout_ms = conf->timeout_us / 1000;
	double t0 = storm_mono_ms(), t_conn, t_sent;
	munge_err_t me;
	off_t off = 0;

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
	key = req->key ? req->key & STORM_BCAST_KEY_MASK : storm_bcast_new_key();
	if (find_relay(req->nodelist, relay, sizeof(relay), addr, sizeof(addr),
		       &index, &nnodes, err, errlen))
		goto done;
	port = storm_conf_port(conf->bcast_port_lo, conf->bcast_port_hi, index);

	/* the manifest: a munge credential every node verifies */
	snprintf(payload, sizeof(payload),
		 "storm-bcast-1 job=%u step=%u uid=%u gid=%u key=%" PRIx64
		 " size=%" PRIu64 " mode=%o hash=%" PRIx64 " dir=%s name=%s%s",
		 req->job, req->step, (unsigned) getuid(), (unsigned) getgid(),
		 key, size, req->tree ? 0700u : (unsigned) (st.st_mode & 07777),
		 hash, req->dest_dir ? req->dest_dir : "-", req->dest_name,
		 req->tree ? " " STORM_BCAST_KIND_TREE : "");
	me = munge_encode(&cred, NULL, payload, (int) strlen(payload) + 1);
	if (me != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "cannot create a munge credential: %s",
			 munge_strerror(me));
		goto done;
	}

	sock = connect_to(addr, port, (int) timeout_ms);
	if (sock < 0) {
		snprintf(err, errlen, "cannot reach the node manager of %s (the step's first node) at %s:%d: %s",
			 relay, addr, port, strerror(-sock));
		goto done;
	}
	t_conn = storm_mono_ms();
	/* The relay bounds each of its own waits by Timeout (the manifest,
	 * two confirmations, the data once it stops flowing). */
	set_timeout(sock, SO_SNDTIMEO, timeout_ms);
	set_timeout(sock, SO_RCVTIMEO, storm_bcast_wait_ms(conf, size));
	rq.magic = htonl(STORM_RELAY_MAGIC);
	rq.cred_len = htonl((uint32_t) strlen(cred));
	rq.nodes_len = htonl((uint32_t) strlen(req->nodelist));
	rq.key = htobe64(key);
	rq.size = htobe64(size);
	if ((io = storm_bcast_io(sock, &rq, sizeof(rq), true)) ||
	    (io = storm_bcast_io(sock, cred, strlen(cred), true)) ||
	    (io = storm_bcast_io(sock, (void *) req->nodelist,
				 strlen(req->nodelist), true)))
		goto lost;
	while ((uint64_t) off < size) {
		double t_call = storm_mono_ms();
		ssize_t n = sendfile(sock, fd, &off, size - (uint64_t) off);
		int e = n < 0 ? errno : 0;	/* before the calls below */

		/* the call waited out Timeout (SO_SNDTIMEO times each call:
		 * one that moved a few bytes first returns them, and the next
		 * waits again).  Data sent and never acknowledged: the relay's
		 * host or link is down, and no answer can come */
		if (storm_mono_ms() - t_call >= (double) timeout_ms &&
		    path_dead(sock)) {
			io = -EHOSTUNREACH;
			goto lost;
		}
		if (e == EINTR)
			continue;
		if (e == EAGAIN || e == EWOULDBLOCK) {
			/* nothing moved for Timeout, and the relay is there,
			 * only not reading: it stopped to answer, or waits on
			 * its nodes.  Give its answer twice Timeout, not the
			 * transfer's whole allowance: the relay names a node
			 * that stopped at its own Timeout after the stall,
			 * then asks each node alone, which on a loaded host
			 * takes seconds more; with only Timeout srun said
			 * "stopped answering" instead of naming the node */
			set_timeout(sock, SO_RCVTIMEO, 2 * timeout_ms);
		}
		if (n <= 0)
			break;	/* the relay may have said why: read on */
	}
	t_sent = storm_mono_ms();
	if ((io = storm_bcast_io(sock, &rep, sizeof(rep), false)))
		goto lost;
	if (ntohl(rep.magic) != STORM_RELAY_REP_MAGIC ||
	    ntohl(rep.msg_len) > STORM_RELAY_MAX_MSG) {
		io = -EPROTO;
		goto lost;
	}
	rep.msg_len = ntohl(rep.msg_len);
	if ((io = storm_bcast_io(sock, rmsg, rep.msg_len, false)))
		goto lost;
	rmsg[rep.msg_len] = '\0';
	if (ntohl(rep.status) == STORM_RELAY_REP_ABSENT && req->tree) {
		uint32_t alen = ntohl(rep.absent_len);
		uint8_t *bits = NULL;

		snprintf(err, errlen, "%s", rmsg);
		rc = 1;
		if (!alen || alen > STORM_RELAY_MAX_ABSENT || !req->absent ||
		    !(bits = malloc(alen)))
			goto done;
		if (storm_bcast_io(sock, bits, alen, false)) {
			free(bits);	/* not known: every file goes */
			goto done;
		}
		*req->absent = bits;
		*req->absent_len = alen;
		goto done;
	}
	if (ntohl(rep.status)) {
		snprintf(err, errlen, "%s", rmsg);
		goto done;
	}
	if ((uint64_t) off < size) {
		io = -EPROTO;
		goto lost;	/* "done" for a file it did not get: not a relay */
	}

	*remote = storm_bcast_remote(req);
	if (!*remote) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	rc = 0;
	if (getenv("SLURM_STORM_BCAST_TIMING"))
		fprintf(stderr, "storm-bcast: file=%s bytes=%" PRIu64 " nodes=%d "
			"setup_ms=%.3f send_ms=%.3f %s transfer_ms=%.3f\n",
			req->path, size, nnodes, t_conn - t0, t_sent - t_conn,
			rmsg, storm_mono_ms() - t0);
	goto done;
lost:
	snprintf(err, errlen, "the node manager of %s (the step's first node, %s:%d) stopped answering: %s",
		 relay, addr, port, io == -ECONNRESET ? "connection closed" :
		 io == -EAGAIN || io == -EWOULDBLOCK ?
		 "no answer within Timeout (node manager or its link down)" :
		 io == -EHOSTUNREACH ?
		 "nothing sent to it was acknowledged for Timeout (its host or its link is down)" :
		 strerror(-io));
done:
	if (sock >= 0)
		close(sock);
	free(cred);
	if (map)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	return rc;
}

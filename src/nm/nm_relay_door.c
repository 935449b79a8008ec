/*
 * nm_relay_door.c - the relay's door on BcastPort (nm_relay_door.h).
 *
 * Why one thread and a table instead of a thread per connection: before
 * its request is complete and its credential verified, a connection has
 * proved nothing, so it must not take what a broadcast needs (a thread, a
 * broadcast slot, a buffer sized by what it announces).  Anyone on a node
 * can open connections to this port; here they cost a table entry and the
 * bytes they actually sent, for at most BcastRequestTimeout.  When the
 * table is full the oldest pending connection makes room: srun sends its
 * whole request right after connecting, so the oldest entry is the least
 * likely to be a launch.
 *
 * A refused connection is answered (the reply of storm_bcast.h) and then
 * read to its end before it is closed: closing with unread bytes would
 * reset the connection and lose the answer.  That lingering is bounded by
 * the same deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nm.h"
#include "nm_reject.h"
#include "nm_relay_door.h"

#define DOOR_MAX_PENDING 512
#define DOOR_ACCEPT_BURST 64
#define DOOR_REPORT_NS (10ull * 1000000000ull)

typedef struct pending {
	int fd;
	bool closing;		/* answered; reading to the end */
	uint64_t deadline_ns;
	uint64_t seq;		/* accept order: the lowest is evicted */
	nm_relay_req_t *req;
} pending_t;

static struct {
	int lfd;
	uint64_t request_ns;
	nm_relay_door_cb cb;
	void *arg;
	pthread_t thread;
	bool started;
	volatile bool stop;
	pending_t p[DOOR_MAX_PENDING];
	int n;
	uint64_t seq;
	pthread_mutex_t lock;		/* st */
	nm_relay_door_stats_t st;
	nm_relay_door_stats_t reported;	/* at the last summary line */
	uint64_t next_report_ns;
} door = { .lfd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void count(uint64_t *field)
{
	pthread_mutex_lock(&door.lock);
	(*field)++;
	pthread_mutex_unlock(&door.lock);
}

/* One summary line per interval instead of a line per refused connection:
 * junk on the port must not flood the log. */
static void report(uint64_t now)
{
	nm_relay_door_stats_t s, *r = &door.reported;
	uint64_t refused;

	if (now < door.next_report_ns)
		return;
	door.next_report_ns = now + DOOR_REPORT_NS;
	nm_relay_door_stats(&s);
	refused = (s.malformed - r->malformed) + (s.incomplete - r->incomplete) +
		  (s.timed_out - r->timed_out) + (s.evicted - r->evicted);
	if (refused)
		nm_info("relay: refused %" PRIu64 " connection(s) on BcastPort in the last %llu s: malformed %" PRIu64 ", closed mid-request %" PRIu64 ", not complete within BcastRequestTimeout %" PRIu64 ", evicted %" PRIu64,
			refused, DOOR_REPORT_NS / 1000000000ull,
			s.malformed - r->malformed, s.incomplete - r->incomplete,
			s.timed_out - r->timed_out, s.evicted - r->evicted);
	*r = s;
}

/* The reply of storm_bcast.h, without blocking: it is small and the
 * socket's buffer is empty, so it goes out whole or the peer is gone. */
static void answer(int fd, const char *msg)
{
	storm_relay_rep_t rep = { 0 };
	char buf[sizeof(rep) + STORM_RELAY_MAX_MSG];
	size_t len = strlen(msg);

	if (len > STORM_RELAY_MAX_MSG)
		len = STORM_RELAY_MAX_MSG;
	rep.magic = htonl(STORM_RELAY_REP_MAGIC);
	rep.status = htonl(1);
	rep.msg_len = htonl((uint32_t) len);
	memcpy(buf, &rep, sizeof(rep));
	memcpy(buf + sizeof(rep), msg, len);
	if (send(fd, buf, sizeof(rep) + len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		nm_debug("relay: cannot answer a refused connection: %s",
			 strerror(errno));
}

static void drop(int i)
{
	pending_t *e = &door.p[i];

	close(e->fd);
	if (e->req) {
		nm_relay_req_free(e->req);
		free(e->req);
	}
	door.p[i] = door.p[--door.n];
}

/* Answer, stop sending, and read what the peer still sends until it
 * closes or the deadline passes. */
static void refuse(int i, const char *msg, uint64_t *field)
{
	pending_t *e = &door.p[i];

	count(field);
	nm_reject_count(STORM_REJECT_BCAST);
	nm_debug("relay: connection refused: %s", msg);
	answer(e->fd, msg);
	shutdown(e->fd, SHUT_WR);
	e->closing = true;
	if (e->req) {
		nm_relay_req_free(e->req);
		free(e->req);
		e->req = NULL;
	}
}

static void evict_oldest(void)
{
	int old = 0;

	for (int i = 1; i < door.n; i++)
		if (door.p[i].seq < door.p[old].seq)
			old = i;
	count(&door.st.evicted);
	nm_reject_count(STORM_REJECT_BCAST);
	drop(old);
}

static void take(int fd, uint64_t now)
{
	int one = 1;
	pending_t *e;
	nm_relay_req_t *req = calloc(1, sizeof(*req));

	if (!req) {
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (door.n == DOOR_MAX_PENDING)
		evict_oldest();
	e = &door.p[door.n++];
	*e = (pending_t) { .fd = fd, .deadline_ns = now + door.request_ns,
			   .seq = door.seq++, .req = req };
	count(&door.st.accepted);
}

static void accept_some(uint64_t now)
{
	for (int k = 0; k < DOOR_ACCEPT_BURST; k++) {
		int fd = accept4(door.lfd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR && errno != ECONNABORTED)
				nm_error("relay: accept on BcastPort: %s",
					 strerror(errno));
			return;
		}
		take(fd, now);
	}
}

/* The request is complete: hand the connection on, blocking again. */
static void hand_on(int i)
{
	pending_t *e = &door.p[i];
	int fd = e->fd, fl = fcntl(fd, F_GETFL);
	nm_relay_req_t *req = e->req;

	count(&door.st.complete);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	door.p[i] = door.p[--door.n];
	door.cb(fd, req, door.arg);
}

/* Read what entry i has for us; returns whether it left the table. */
static bool serve_one(int i)
{
	pending_t *e = &door.p[i];
	char buf[4096], err[256];
	size_t want = e->closing ? sizeof(buf) :
		      nm_relay_req_want(e->req, sizeof(buf));
	ssize_t n = recv(e->fd, buf, want, MSG_DONTWAIT);
	int rc;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return false;
	if (n <= 0) {
		if (!e->closing)
			refuse(i, "no request: connection closed before the request was complete",
			       &door.st.incomplete);
		drop(i);
		return true;
	}
	if (e->closing)
		return false;
	rc = nm_relay_req_feed(e->req, buf, (size_t) n, err, sizeof(err));
	if (rc == NM_RELAY_REQ_DONE) {
		hand_on(i);
		return true;
	}
	if (rc < 0) {
		refuse(i, err, &door.st.malformed);
		e->deadline_ns = now_ns() + door.request_ns;
	}
	return false;
}

static void expire(uint64_t now)
{
	for (int i = 0; i < door.n;) {
		pending_t *e = &door.p[i];

		if (e->deadline_ns > now) {
			i++;
			continue;
		}
		if (!e->closing) {
			refuse(i, "no request within BcastRequestTimeout",
			       &door.st.timed_out);
			e->deadline_ns = now + door.request_ns;
			i++;
			continue;
		}
		drop(i);
	}
}

static int poll_timeout_ms(uint64_t now)
{
	uint64_t first = now + 200000000ull;

	for (int i = 0; i < door.n; i++)
		if (door.p[i].deadline_ns < first)
			first = door.p[i].deadline_ns;
	return first <= now ? 0 : (int) ((first - now + 999999) / 1000000);
}

static void *door_main(void *arg)
{
	static struct pollfd pf[DOOR_MAX_PENDING + 1];

	(void) arg;
	while (!door.stop) {
		int n = door.n, k;
		uint64_t now = now_ns();

		pf[0] = (struct pollfd) { .fd = door.lfd, .events = POLLIN };
		for (int i = 0; i < n; i++)
			pf[i + 1] = (struct pollfd) { .fd = door.p[i].fd,
						      .events = POLLIN };
		k = poll(pf, (nfds_t) n + 1, poll_timeout_ms(now));
		now = now_ns();
		/* entries move when one leaves: walk from the end, so that
		 * pf[i + 1] still describes door.p[i] for every i not yet seen */
		for (int i = n - 1; k > 0 && i >= 0; i--)
			if (pf[i + 1].revents && i < door.n &&
			    door.p[i].fd == pf[i + 1].fd)
				serve_one(i);
		expire(now);
		if (k > 0 && (pf[0].revents & POLLIN))
			accept_some(now);
		report(now);
	}
	return NULL;
}

extern int nm_relay_door_start(int lfd, uint64_t request_us,
			       nm_relay_door_cb cb, void *arg)
{
	int fl = fcntl(lfd, F_GETFL), rc;

	if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	door.lfd = lfd;
	door.request_ns = request_us * 1000ull;
	door.cb = cb;
	door.arg = arg;
	door.stop = false;
	door.n = 0;
	door.next_report_ns = now_ns() + DOOR_REPORT_NS;
	if ((rc = pthread_create(&door.thread, NULL, door_main, NULL)))
		return -rc;
	door.started = true;
	return 0;
}

extern void nm_relay_door_stop(void)
{
	door.stop = true;
	if (door.started)
		pthread_join(door.thread, NULL);
	door.started = false;
	while (door.n)
		drop(door.n - 1);
	report(UINT64_MAX);
}

extern void nm_relay_door_stats(nm_relay_door_stats_t *st)
{
	pthread_mutex_lock(&door.lock);
	*st = door.st;
	pthread_mutex_unlock(&door.lock);
}

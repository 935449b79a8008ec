/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_state.c - what the step's nodes report to the relay
 * (nm_relay_state.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nm_relay_report.h"
#include "nm_relay_state.h"
#include "src/common/storm_bcast.h"
#include "src/common/storm_time.h"

static struct {
	nm_t *nm;
	volatile bool *stop;
} relay_state;

extern void nm_relay_state_init(nm_t *nm, volatile bool *stop)
{
	relay_state.nm = nm;
	relay_state.stop = stop;
}

extern const char *nm_relay_node_name(int rank)
{
	return rank >= 0 && rank < relay_state.nm->nnodes ?
	       relay_state.nm->nodes[rank].name : "?";
}

/* Names of the ranks of a set, "node1,node5" (truncated politely). */
extern void nm_relay_set_names(const storm_set_t *s, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int r = storm_set_next(s, 0); r >= 0; r = storm_set_next(s, r + 1)) {
		int k = snprintf(out + o, len - o, "%s%s", o ? "," : "",
				 nm_relay_node_name(r));

		if (k < 0 || (size_t) k >= len - o) {
			if (len > 4)
				strcpy(out + len - 4, "...");
			return;
		}
		o += k;
	}
}

/* Which state does node `rank` report for this transfer (0: none yet,
 * -1: no answer)? */
static int node_state(int rank, int var, uint64_t key)
{
	static const int states[] = {
		STORM_BCAST_READY, STORM_BCAST_DONE, STORM_BCAST_EPERM,
		STORM_BCAST_ENOSPC, STORM_BCAST_EFBIG, STORM_BCAST_EIO,
		STORM_BCAST_EBADMSG, STORM_BCAST_ABORTED, STORM_BCAST_EBADTREE,
		STORM_BCAST_ABSENT,
	};
	storm_set_t one, unr;

	storm_set_clear(&one);
	storm_set_add(&one, rank);
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		int r = storm_caw(relay_state.nm->ctx, &one, var, STORM_EQ,
				  STORM_BCAST_VAL(key, states[i]), -1, 0, &unr);

		if (r == 1)
			return states[i];
		if (r < 0 || storm_set_count(&unr))
			return -1;
	}
	return 0;
}

extern int nm_relay_count_state(const storm_set_t *set, uint64_t key, int st)
{
	int var = storm_bcast_var(key), n = 0;

	for (int r = storm_set_next(set, 0); r >= 0; r = storm_set_next(set, r + 1))
		n += node_state(r, var, key) == st;
	return n;
}

/* One COMPARE-AND-WRITE(var == want) over the whole set: 1 every node is
 * there, 0 not yet, -1 with err set when it failed or a node did not
 * answer. */
static int ask_all(const storm_set_t *set, uint64_t key, int want, char *err,
		   size_t errlen)
{
	storm_set_t unr, dead;
	char names[1024];
	int r = storm_caw(relay_state.nm->ctx, set, storm_bcast_var(key),
			  STORM_EQ, STORM_BCAST_VAL(key, want), -1, 0, &unr);

	if (r == 1)
		return 1;
	if (r < 0) {
		snprintf(err, errlen, "COMPARE-AND-WRITE failed: %s",
			 storm_strerror(r));
		return -1;
	}
	if (storm_set_count(&unr)) {
		/* the tree reports the subtree it could not reach; the gone
		 * are the ones that did not answer their parent, known without
		 * asking each alone (a dead one would cost twice Timeout) */
		if (storm_caw_lost(relay_state.nm->ctx, set, &unr, &dead) ||
		    !storm_set_count(&dead))
			dead = unr;
		nm_relay_set_names(&dead, names, sizeof(names));
		snprintf(err, errlen, "node(s) %s did not answer (node manager down or unreachable)",
			 names);
		return -1;
	}
	return 0;
}

/* Ask each node of set for its state: 0 with the ones not at `want` yet
 * in pending, or -1 with err set when a node refused (every refusal, with
 * its reason) or did not answer; -2 when every refusal was ABSENT. */
static int ask_each(const storm_set_t *set, uint64_t key, int want,
		    storm_set_t *pending, char *err, size_t errlen)
{
	int var = storm_bcast_var(key);
	bool refused = false, only_absent = true;
	size_t o = 0;

	storm_set_clear(pending);
	err[0] = '\0';
	for (int n = storm_set_next(set, 0); n >= 0;
	     n = storm_set_next(set, n + 1)) {
		int st = node_state(n, var, key);

		if (st == want)
			continue;
		if (st < 0) {
			snprintf(err, errlen, "node %s did not answer (node manager down or unreachable)",
				 nm_relay_node_name(n));
			return -1;
		}
		if (st >= STORM_BCAST_EPERM) {
			int k = snprintf(err + o, errlen - o, "%snode %s: %s",
					 o ? "; " : "", nm_relay_node_name(n),
					 storm_bcast_state_str(st));
			if (k > 0 && (size_t) k < errlen - o)
				o += k;
			refused = true;
			only_absent = only_absent && st == STORM_BCAST_ABSENT;
		} else {
			storm_set_add(pending, n);
		}
	}
	return !refused ? 0 : only_absent ? -2 : -1;
}

/*
 * Sleep us microseconds; false when the node manager stops meanwhile, so
 * that a stopping NM does not wait out a broadcast's Timeout.  A node's
 * state changes on that node and nothing tells the relay, so between two
 * questions there is only time to wait for.  (Nodes signalling the relay
 * when their variable moves was tried: after the relay's link was cut and
 * restored, its next broadcast failed to reach the others, where it works
 * without the signals.)
 */
static bool pause_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000L };

	nanosleep(&ts, NULL);
	return !*relay_state.stop;
}

/* What the relay now knows of its nodes, for its report to the Machine
 * Manager (nm_relay_report.h): the set minus the ones still pending. */
static void progress(const storm_set_t *set, const storm_set_t *pending,
		     uint64_t key, int want)
{
	storm_set_t reached = *set;

	if (pending)
		for (int n = storm_set_next(pending, 0); n >= 0;
		     n = storm_set_next(pending, n + 1))
			storm_set_remove(&reached, n);
	nm_relay_report_nodes(key, want == STORM_BCAST_READY ? &reached : NULL,
			      want == STORM_BCAST_DONE ? &reached : NULL);
}

/*
 * Getting to READY allocates and pre-faults the file on every node, and
 * DONE checks each copy's checksum: work that grows with the file, done
 * while the node answers every question.  On a host short of free huge
 * pages the kernel may compact memory for seconds before a file of some
 * hundred MiB is in place.  So the wait is Timeout plus a second for every
 * NM_RELAY_BYTES_PER_S bytes: a node that does not get there is still
 * reported, a big file on a busy node is not taken for one.
 */
#define NM_RELAY_BYTES_PER_S (64ull << 20)

extern int nm_relay_wait_ms(uint64_t timeout_us, uint64_t size)
{
	uint64_t ms = timeout_us / 1000 + size / NM_RELAY_BYTES_PER_S * 1000 +
		      size % NM_RELAY_BYTES_PER_S * 1000 / NM_RELAY_BYTES_PER_S;

	return ms > INT32_MAX ? INT32_MAX : (int) ms;
}

/*
 * Wait until every node of set reports `want` (COMPARE-AND-WRITE).  A node
 * that refused is reported at once with its reason; one that does not
 * answer, when the fabric says so; one that never gets there, at timeout.
 */
extern int nm_relay_wait_state(const storm_set_t *set, uint64_t key, int want,
		      uint64_t size, char *err, size_t errlen)
{
	int timeout_ms = nm_relay_wait_ms(relay_state.nm->conf.timeout_us,
					  size);
	double deadline = storm_mono_ms() + timeout_ms;
	storm_set_t pending;
	char names[1024];

	for (int round = 0; !*relay_state.stop; round++) {
		int r = ask_all(set, key, want, err, errlen);

		if (r > 0)
			progress(set, NULL, key, want);
		if (r)
			return r > 0 ? 0 : -1;
		/* Usually a node is just not there yet (the commit travels
		 * down the tree while this runs from the serializer): ask the
		 * set again a few times before asking each node. */
		if (round % 8 != 7 && storm_mono_ms() < deadline) {
			if (!pause_us(round < 8 ? 200 : 2000))
				break;
			continue;
		}
		if ((r = ask_each(set, key, want, &pending, err, errlen)))
			return r;
		progress(set, &pending, key, want);
		if (!storm_set_count(&pending))
			continue;	/* everyone got there meanwhile */
		if (storm_mono_ms() > deadline) {
			nm_relay_set_names(&pending, names, sizeof(names));
			snprintf(err, errlen, "node(s) %s did not confirm within %d ms",
				 names, timeout_ms);
			return -1;
		}
		if (!pause_us(2000))
			break;
	}
	snprintf(err, errlen, "node %s: node manager stopping",
		 relay_state.nm->node);
	return -1;
}


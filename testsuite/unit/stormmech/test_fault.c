/* SPDX-License-Identifier: GPL-2.0-or-later */
/* a member killed in the middle of a transfer or a COMPARE-AND-WRITE:
 * error within the timeout, nobody signalled, nobody hangs.  The
 * operation that fails runs from an impatient caller (h_caller) with a
 * short timeout; every one expected to succeed (warm-up, the survivors
 * afterwards) runs from the driver with the generous default. */
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "mech_test.h"

#define TMO H_FAIL_TIMEOUT_MS

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* members' remote-event counts, polled until they stop changing */
static void snapshot_ev(struct harness *h, uint64_t *ev)
{
	h_cmd(h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
	for (int r = 0; r < h->n; r++)
		ev[r] = h->pid[r] > 0 ? h->sh->res[r].ev[1] : 0;
}

/* N=8, root 8 outside, k=4: rank 0 is interior (children 4-7), rank 2 a
 * leaf */
static void kill_in_xfer(int prov_i, int victim)
{
	const char *prov = PROV_OR_SKIP(prov_i);
	storm_cfg_t cfg;
	struct harness h;
	const int N = 8;
	size_t len = 12u << 20;
	uint64_t ev0[H_MAX], ev1[H_MAX];
	storm_set_t failed;
	storm_op_t *op;

	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, N, &cfg);
	storm_cfg_t fcfg = cfg;
	fcfg.timeout_ms = TMO;
	storm_ctx_t *caller = h_caller(&h, &fcfg);
	ck_assert_ptr_nonnull(caller);
	storm_set_t set = range_set(0, N - 1);
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, 5);
	/* warm up: the members' connections exist (the caller's tree has the
	 * driver's shape), so the victim dies mid-stream */
	ck_assert_int_eq(storm_xfer_sync(h.ctx, &set, buf, 4096, 0, 1, NULL),
			 0);
	storm_progress(h.ctx, 200000);
	snapshot_ev(&h, ev0);

	kill(h.pid[victim], SIGSTOP);
	ck_assert_int_eq(storm_xfer(caller, &set, buf, len, 0, 0, 1, &op), 0);
	double t0 = now_s();
	storm_progress(caller, 300000);     /* the victim stalls mid-way */
	h_kill(&h, victim);
	int rc = storm_op_wait(op, (int)(H_FAIL_BOUND_S(TMO) * 1000), &failed);
	double dt = now_s() - t0;
	storm_set_t lost;
	char ls[64];

	ck_assert_int_eq(storm_op_lost(op, &lost), 0);
	storm_op_free(op);
	ck_assert_int_eq(rc, -EIO);
	ck_assert(storm_set_has(&failed, victim));
	/* the culprit alone, not the members it cut off */
	storm_set_format(&lost, ls, sizeof(ls));
	ck_assert_int_eq(storm_set_count(&lost), 1);
	ck_assert_msg(storm_set_has(&lost, victim), "lost %s", ls);
	ck_assert_msg(dt < H_FAIL_BOUND_S(TMO), "error after %.1f s", dt);
	if (victim == 0)
		for (int r = 4; r < 8; r++)
			ck_assert(storm_set_has(&failed, r));
	/* nobody signals: wait past the members' forget time */
	storm_progress(caller, 2 * TMO * 1000 + 500000);
	snapshot_ev(&h, ev1);
	for (int r = 0; r < N; r++)
		ck_assert_msg(h.pid[r] <= 0 || ev1[r] == ev0[r], "rank %d signalled a failed "
			      "transfer", r);
	/* the survivors keep working.  Known gap: on shm, large sends from
	 * the root stall after a receiver died in the middle of a CMA/SAR
	 * transfer (seen with libfabric 1.17), so this part runs on the
	 * other providers only. */
	if (strcmp(prov, "shm") == 0) {
		fprintf(stderr, "NOTE: shm: survivors-after-kill check skipped "
			"(known provider limitation)\n");
		free(buf);
		h_stop(&h);
		return;
	}
	storm_set_t alive = set;
	storm_set_remove(&alive, victim);
	len = 1u << 20;
	rc = storm_xfer_sync(h.ctx, &alive, buf, len, 0, 1, &failed);
	if (rc && getenv("STORM_TEST_VERBOSE")) {
		h_cmd(&h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
		for (int r = 0; r < N; r++) {
			storm_stats_t *st = &h.sh->res[r].st;
			fprintf(stderr, "rank %d pid %d rx %lu drop %lu hdr %lu "
				"range %lu sender %lu stale %lu err %lu tx %lu "
				"txerr %lu in %lu\n", r, h.pid[r], st->rx_msgs,
				st->rx_dropped, st->rx_bad_header,
				st->rx_bad_range, st->rx_bad_sender,
				st->rx_stale, st->rx_errors, st->tx_msgs,
				st->tx_errors, st->bytes_in);
		}
		storm_stats_t st;
		storm_ctx_stats(h.ctx, &st);
		fprintf(stderr, "root rx %lu tx %lu txerr %lu\n", st.rx_msgs,
			st.tx_msgs, st.tx_errors);
	}
	char fs[256];
	storm_set_format(&failed, fs, sizeof(fs));
	ck_assert_msg(rc == 0, "survivors: %s, failed %s", storm_strerror(rc),
		      fs);
	h_cmd(&h, -1, H_SUM, 0, len, 0, 0, 0, 0);
	for (int r = 0; r < N; r++)
		if (h.pid[r] > 0)
			ck_assert(h.sh->res[r].sum == h_sum(buf, len));
	free(buf);
	h_stop(&h);
}

START_TEST(xfer_kill_interior) { kill_in_xfer(_i, 0); }
END_TEST
START_TEST(xfer_kill_leaf) { kill_in_xfer(_i, 2); }
END_TEST

/* the victim is stopped, the CAW starts, a helper kills it mid-way */
static void kill_in_caw(int prov_i, int victim)
{
	const char *prov = PROV_OR_SKIP(prov_i);
	storm_cfg_t cfg;
	struct harness h;
	const int N = 6;
	storm_set_t un;

	h_cfg(&cfg, prov);
	cfg.arity = 2;
	START_OR_FAIL(&h, N, &cfg);
	storm_cfg_t fcfg = cfg;
	fcfg.timeout_ms = TMO;
	storm_ctx_t *caller = h_caller(&h, &fcfg);
	ck_assert_ptr_nonnull(caller);
	storm_set_t set = range_set(0, N - 1);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, &un), 1);
	kill(h.pid[victim], SIGSTOP);
	pid_t killer = fork();
	if (killer == 0) {
		usleep(300000);
		kill(h.pid[victim], SIGKILL);
		_exit(0);
	}
	double t0 = now_s();
	int rc = storm_caw(caller, &set, 0, STORM_EQ, 0, 1, 42, &un);
	double dt = now_s() - t0;
	waitpid(killer, NULL, 0);
	h_kill(&h, victim);
	ck_assert_int_eq(rc, 0);
	ck_assert(storm_set_has(&un, victim));
	ck_assert_msg(dt < H_FAIL_BOUND_S(TMO), "answer after %.1f s", dt);
	/* the culprit alone, not the members below it in the tree */
	storm_set_t lost;
	char ls[64];

	ck_assert_int_eq(storm_caw_lost(caller, &set, &un, &lost), 0);
	storm_set_format(&lost, ls, sizeof(ls));
	ck_assert_msg(storm_set_count(&lost) == 1 && storm_set_has(&lost, victim),
		      "lost %s", ls);
	/* no write happened anywhere */
	for (int r = 0; r < N; r++) {
		if (h.pid[r] <= 0)
			continue;
		h_cmd(&h, r, H_GETVAR, 1, 0, 0, 0, 0, 0);
		ck_assert_int_eq(h.sh->res[r].var, 0);
	}
	/* fault detection goes on: without the victim it is true again */
	storm_set_remove(&set, victim);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, &un), 1);
	h_stop(&h);
}

/*
 * N=6, k=2, serializer rank 0: ranks 1 and 2 below it, 3 and 4 below 1.
 * The members wait long (a node manager's Timeout), the impatient caller
 * briefly (the Machine Manager's ack timeout).  Leaf 4, stopped, is named
 * in the result, well before the members' own timeout: not its parent,
 * not the serializer.  Continued, it answers again (to the driver, which
 * waits as long as the members).
 */
START_TEST(caw_stopped_leaf_named)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg, fcfg;
	struct harness h;
	const int N = 6, victim = 4;
	storm_set_t un;
	char un_s[64];

	h_cfg(&cfg, prov);
	/* clearly longer than the bound on the caller's answer below */
	cfg.timeout_ms = 2 * H_OK_TIMEOUT_MS;
	cfg.arity = 2;
	START_OR_FAIL(&h, N, &cfg);
	fcfg = cfg;
	/* what is named is what did not answer in time: the live members
	 * must answer the caller within it on a loaded host too, so its
	 * connections are made first (by CAWs that all answer) and the
	 * timeout is longer than a loaded host stalls a process */
	fcfg.timeout_ms = 4 * TMO;
	storm_ctx_t *caller = h_caller(&h, &fcfg);
	ck_assert_ptr_nonnull(caller);
	storm_set_t set = range_set(0, N - 1);
	int rc = storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, &un);
	ck_assert_int_eq(rc, 1);
	for (int tries = 0; tries < 10 &&
	     (rc = storm_caw(caller, &set, 0, STORM_EQ, 0, -1, 0, &un)) != 1; tries++)
		;
	ck_assert_int_eq(rc, 1);
	kill(h.pid[victim], SIGSTOP);
	double t0 = now_s();
	rc = storm_caw(caller, &set, 0, STORM_EQ, 0, -1, 0, &un);
	double dt = now_s() - t0;
	storm_set_format(&un, un_s, sizeof(un_s));
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(storm_set_count(&un) == 1 && storm_set_has(&un, victim),
		      "unreachable %s", un_s);
	ck_assert_msg(dt < H_FAIL_BOUND_S(fcfg.timeout_ms) &&
		      dt < cfg.timeout_ms / 1000.0,
		      "answer after %.1f s", dt);
	kill(h.pid[victim], SIGCONT);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, -1, 0, &un), 1);
	h_stop(&h);
}
END_TEST

START_TEST(caw_kill_member) { kill_in_caw(_i, 2); }
END_TEST
START_TEST(caw_kill_serializer) { kill_in_caw(_i, 0); }
END_TEST

int main(void)
{
	TCase *tc[2];
	tc[0] = tcase_create("xfer");
	tcase_add_loop_test(tc[0], xfer_kill_interior, 0, H_NPROV);
	tcase_add_loop_test(tc[0], xfer_kill_leaf, 0, H_NPROV);
	tc[1] = tcase_create("caw");
	tcase_add_loop_test(tc[1], caw_kill_member, 0, H_NPROV);
	tcase_add_loop_test(tc[1], caw_kill_serializer, 0, H_NPROV);
	tcase_add_loop_test(tc[1], caw_stopped_leaf_named, 0, H_NPROV);
	for (int i = 0; i < 2; i++)
		tcase_set_timeout(tc[i], 300);
	return mech_run(mech_suite("stormmech-fault", tc, 2));
}

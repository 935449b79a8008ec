/* SPDX-License-Identifier: GPL-2.0-or-later */
/* XFER-AND-SIGNAL and TEST-EVENT: integrity, events, set shapes */
#include <signal.h>
#include "mech_test.h"

#define CHUNK STORM_DEF_CHUNK

/*
 * Members signal as the transfer reaches them (or its COMMIT does), after
 * the root's op may have completed: wait until every live member of set
 * has event ev >= want[r] (gives up after H_WAIT_MS; the caller's checks
 * then fail with the figures).
 */
static void wait_members_ev(struct harness *h, const storm_set_t *set,
			    int ev, const uint64_t *want)
{
	uint64_t dl = h_now_ms() + H_WAIT_MS;

	while (h_now_ms() < dl) {
		int behind = 0;

		h_cmd(h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
		for (int r = 0; r < h->n; r++)
			behind += h->pid[r] > 0 && storm_set_has(set, r) &&
				  h->sh->res[r].ev[ev] < want[r];
		if (!behind)
			return;
		storm_progress(h->ctx, 50000);
	}
}

/* rank r dropped nothing; if it did, say what */
static void no_drops(const struct harness *h, int r)
{
	const storm_stats_t *st = &h->sh->res[r].st;

	ck_assert_msg(st->rx_dropped == 0,
		      "rank %d dropped %lu: bad header %lu, range %lu, sender %lu, stale %lu, receive errors %lu",
		      r, (unsigned long)st->rx_dropped,
		      (unsigned long)st->rx_bad_header,
		      (unsigned long)st->rx_bad_range,
		      (unsigned long)st->rx_bad_sender,
		      (unsigned long)st->rx_stale,
		      (unsigned long)st->rx_errors);
}

/* one transfer of len bytes to `set`, checked on every member */
static void xfer_and_check(struct harness *h, const storm_set_t *set,
			   size_t len, uint64_t off, unsigned seed,
			   uint64_t *expect_ev)
{
	uint8_t *buf = malloc(len ? len : 1);
	storm_set_t failed;
	storm_op_t *op;
	uint64_t lev0, lev1;

	fill_pattern(buf, len, seed);
	storm_event_test(h->ctx, 0, &lev0);
	ck_assert_int_eq(storm_xfer(h->ctx, set, buf, len, off, 0, 1, &op), 0);
	ck_assert_int_eq(storm_op_wait(op, -1, &failed), 0);
	ck_assert_int_eq(storm_set_count(&failed), 0);
	storm_op_free(op);
	storm_event_test(h->ctx, 0, &lev1);
	ck_assert_int_eq(lev1, lev0 + 1);   /* local event once */
	for (int r = 0; r < h->n; r++)
		if (storm_set_has(set, r))
			expect_ev[r]++;
	wait_members_ev(h, set, 1, expect_ev);
	ck_assert_int_eq(h_cmd(h, -1, H_SUM, off, len, 0, 0, 0, 0), 0);
	uint64_t want = h_sum(buf, len);
	for (int r = 0; r < h->n; r++) {
		if (storm_set_has(set, r)) {
			ck_assert_msg(h->sh->res[r].sum == want,
				      "rank %d: bad checksum for len %zu", r, len);
		}
		/* remote event exactly once per transfer, only on members */
		ck_assert_msg(h->sh->res[r].ev[1] == expect_ev[r],
			      "rank %d: remote event %lu, want %lu", r,
			      (unsigned long)h->sh->res[r].ev[1],
			      (unsigned long)expect_ev[r]);
		no_drops(h, r);
	}
	free(buf);
}

START_TEST(sizes_4)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	uint64_t ev[H_MAX] = { 0 };
	size_t sizes[] = { 0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 12u << 20 };

	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, 4, &cfg);
	storm_set_t set = range_set(0, 3);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		xfer_and_check(&h, &set, sizes[i], i * 8191, i + 1, ev);
	h_stop(&h);
}
END_TEST

START_TEST(big_16)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	uint64_t ev[H_MAX] = { 0 };

	h_cfg(&cfg, prov);
	/* a chain of 16: the deepest node's children get 1/15 of it, which
	 * must cover a 12 MiB hop on a host at load average 40 */
	cfg.timeout_ms = 120000;
	START_OR_FAIL(&h, 16, &cfg);
	storm_set_t set = range_set(0, 15);
	xfer_and_check(&h, &set, 12u << 20, 0, 7, ev);
	xfer_and_check(&h, &set, CHUNK + 1, 100, 8, ev);
	h_stop(&h);
}
END_TEST

/* odd shapes: root inside the set, holes, a single member, an empty set */
START_TEST(shapes)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	uint64_t ev[H_MAX] = { 0 };
	storm_set_t set;

	h_cfg(&cfg, prov);
	cfg.arity = 2;
	START_OR_FAIL(&h, 6, &cfg);
	storm_set_parse(&set, "0,2,5");
	xfer_and_check(&h, &set, 3 * CHUNK + 17, 64, 11, ev);
	storm_set_parse(&set, "4");
	xfer_and_check(&h, &set, 1000, 0, 12, ev);
	storm_set_clear(&set);
	xfer_and_check(&h, &set, 1000, 0, 13, ev);
	/* root (rank 6) inside the set: its own region gets the data too */
	storm_set_parse(&set, "1-3,6");
	uint64_t rev0, rev1;
	storm_event_test(h.ctx, 1, &rev0);
	xfer_and_check(&h, &set, 2 * CHUNK, 4096, 14, ev);
	storm_event_test(h.ctx, 1, &rev1);
	ck_assert_int_eq(rev1, rev0 + 1);
	uint8_t *buf = malloc(2 * CHUNK);
	fill_pattern(buf, 2 * CHUNK, 14);
	uint8_t *reg = storm_region_ptr(h.ctx, NULL);
	ck_assert(memcmp(reg + 4096, buf, 2 * CHUNK) == 0);
	free(buf);
	/* out of the receivers' region: rejected by every member, so
	 * reported at the timeout: sent by an impatient caller */
	storm_set_t failed;
	storm_cfg_t fcfg = cfg;
	fcfg.timeout_ms = H_FAIL_TIMEOUT_MS;
	storm_ctx_t *caller = h_caller(&h, &fcfg);
	ck_assert_ptr_nonnull(caller);
	set = range_set(0, 1);
	char small[16] = "x";
	int rc = storm_xfer_sync(caller, &set, small, sizeof(small),
				 (20u << 20) - 8, 1, &failed);
	ck_assert_int_eq(rc, -EIO);
	ck_assert_int_eq(storm_set_count(&failed), 2);
	h_cmd(&h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
	ck_assert_int_eq(h.sh->res[0].ev[1], ev[0]);
	h_stop(&h);
}
END_TEST

/* pipelining with several concurrent ops and a tiny window */
START_TEST(concurrent_ops)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	enum { NOPS = 6, LEN = 700 * 1024 };

	h_cfg(&cfg, prov);
	cfg.window = 1;
	cfg.chunk = 64 * 1024;
	START_OR_FAIL(&h, 5, &cfg);
	storm_set_t set = range_set(0, 4);
	uint8_t *buf = malloc((size_t)NOPS * LEN);
	storm_op_t *op[NOPS];
	fill_pattern(buf, (size_t)NOPS * LEN, 99);
	for (int i = 0; i < NOPS; i++)
		ck_assert_int_eq(storm_xfer(h.ctx, &set, buf + (size_t)i * LEN,
					    LEN, (uint64_t)i * LEN, 2, 3,
					    &op[i]), 0);
	ck_assert_int_eq(storm_event_wait(h.ctx, 2, NOPS, H_WAIT_MS), 0);
	for (int i = 0; i < NOPS; i++) {
		ck_assert_int_eq(storm_op_wait(op[i], -1, NULL), 0);
		storm_op_free(op[i]);
	}
	uint64_t want[H_MAX];
	for (int r = 0; r < 5; r++)
		want[r] = NOPS;
	wait_members_ev(&h, &set, 3, want);
	h_cmd(&h, -1, H_SUM, 0, (size_t)NOPS * LEN, 0, 0, 0, 0);
	for (int r = 0; r < 5; r++) {
		ck_assert(h.sh->res[r].sum == h_sum(buf, (size_t)NOPS * LEN));
		ck_assert_int_eq(h.sh->res[r].ev[3], NOPS);
	}
	free(buf);
	h_stop(&h);
}
END_TEST

/* receive straight into a caller buffer (the node manager's path) */
START_TEST(dest_hook)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	size_t len = 2 * CHUNK + 3;

	h_cfg(&cfg, prov);
	ck_assert_int_eq(h_start_hooked(&h, 3, &cfg), 0);
	storm_set_t set = range_set(0, 2);
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, 21);
	ck_assert_int_eq(storm_xfer_sync(h.ctx, &set, buf, len, 1 << 20, 1,
					 NULL), 0);
	for (uint64_t dl = h_now_ms() + H_WAIT_MS; h_now_ms() < dl;) {
		h_cmd(&h, -1, H_SUM, 1 << 20, len, 0, 0, 0, 0);
		if (h.sh->res[0].hook_releases && h.sh->res[1].hook_releases &&
		    h.sh->res[2].hook_releases)
			break;
		storm_progress(h.ctx, 20000);
	}
	ck_assert_int_eq(h_cmd(&h, -1, H_GETVAR, H_HOOK_VAR, 0, 0, 0, 0, 0),
			 0);
	for (int r = 0; r < 3; r++) {
		ck_assert_int_eq(h.sh->res[r].var, 1);
		ck_assert(h.sh->res[r].hook_sum == h_sum(buf, len));
		ck_assert_int_eq(h.sh->res[r].hook_commits, 1);
		ck_assert_int_eq(h.sh->res[r].hook_releases, 1);
		ck_assert_int_eq(h.sh->res[r].ev[1], 1);
		/* the region was not written */
		ck_assert(h.sh->res[r].sum != h_sum(buf, len));
	}
	free(buf);
	h_stop(&h);
}
END_TEST

/* members' valid messages received so far (H_SUM refreshes the stats) */
static void rx_counts(struct harness *h, uint64_t *rx)
{
	h_cmd(h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
	for (int r = 0; r < h->n; r++)
		rx[r] = h->pid[r] > 0 ? h->sh->res[r].st.rx_msgs : 0;
}

/*
 * STORM_XFER_ON_ARRIVAL: same data and one remote event per member as the
 * committed transfer, one message fewer per member (no COMMIT: a leaf
 * receives 1 message instead of 2), and a member that does not answer
 * keeps only itself from being signalled, not everyone.
 */
START_TEST(on_arrival)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	const int N = 8, LEAF = 2, STOPPED = 3;	/* root 8, k=4: 1-3 leaves */
	uint64_t ev[H_MAX] = { 0 }, rx0[H_MAX], rx1[H_MAX];
	uint8_t small[56], *big;
	size_t blen = 2 * CHUNK + 5;
	storm_set_t set, failed;

	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, N, &cfg);
	set = range_set(0, N - 1);
	/* warm up (connections), then the committed transfer's count */
	xfer_and_check(&h, &set, sizeof(small), 0, 40, ev);
	rx_counts(&h, rx0);
	xfer_and_check(&h, &set, sizeof(small), 0, 41, ev);
	rx_counts(&h, rx1);
	ck_assert_int_eq(rx1[LEAF] - rx0[LEAF], 2);	/* DATA, COMMIT */

	fill_pattern(small, sizeof(small), 42);
	ck_assert_int_eq(storm_xfer_sync_flags(h.ctx, &set, small,
					       sizeof(small), 0, 1,
					       STORM_XFER_ON_ARRIVAL, &failed),
			 0);
	ck_assert_int_eq(storm_set_count(&failed), 0);
	for (int r = 0; r < N; r++)
		ev[r]++;
	wait_members_ev(&h, &set, 1, ev);
	rx_counts(&h, rx0);
	ck_assert_int_eq(rx0[LEAF] - rx1[LEAF], 1);	/* DATA only */
	h_cmd(&h, -1, H_SUM, 0, sizeof(small), 0, 0, 0, 0);
	for (int r = 0; r < N; r++) {
		ck_assert(h.sh->res[r].sum == h_sum(small, sizeof(small)));
		ck_assert_int_eq(h.sh->res[r].ev[1], ev[r]);
		no_drops(&h, r);
	}

	/* several chunks: signalled once, when the last one is in */
	big = malloc(blen);
	fill_pattern(big, blen, 43);
	ck_assert_int_eq(storm_xfer_sync_flags(h.ctx, &set, big, blen, 4096, 1,
					       STORM_XFER_ON_ARRIVAL, NULL), 0);
	for (int r = 0; r < N; r++)
		ev[r]++;
	wait_members_ev(&h, &set, 1, ev);
	h_cmd(&h, -1, H_SUM, 4096, blen, 0, 0, 0, 0);
	for (int r = 0; r < N; r++) {
		ck_assert(h.sh->res[r].sum == h_sum(big, blen));
		ck_assert_int_eq(h.sh->res[r].ev[1], ev[r]);
	}
	free(big);

	/* a stopped member is reported failed, at the timeout of an
	 * impatient caller; the others act anyway.  On a loaded host a live
	 * member may miss that timeout too (the caller's connections are
	 * new): it is then named as well, and still acts, once, as checked
	 * below, so the report is only required to name the stopped one. */
	storm_cfg_t fcfg = cfg;
	fcfg.timeout_ms = H_FAIL_TIMEOUT_MS;
	storm_ctx_t *caller = h_caller(&h, &fcfg);
	ck_assert_ptr_nonnull(caller);
	kill(h.pid[STOPPED], SIGSTOP);
	fill_pattern(small, sizeof(small), 44);
	ck_assert_int_eq(storm_xfer_sync_flags(caller, &set, small,
					       sizeof(small), 0, 1,
					       STORM_XFER_ON_ARRIVAL, &failed),
			 -EIO);
	ck_assert(storm_set_has(&failed, STOPPED));
	h_kill(&h, STOPPED);
	for (int r = 0; r < N; r++)
		ev[r]++;
	wait_members_ev(&h, &set, 1, ev);
	h_cmd(&h, -1, H_SUM, 0, sizeof(small), 0, 0, 0, 0);
	for (int r = 0; r < N; r++) {
		if (r == STOPPED)
			continue;
		ck_assert(h.sh->res[r].sum == h_sum(small, sizeof(small)));
		ck_assert_msg(h.sh->res[r].ev[1] == ev[r],
			      "rank %d: remote event %lu, want %lu", r,
			      (unsigned long)h.sh->res[r].ev[1],
			      (unsigned long)ev[r]);
	}
	/* an unknown flag is refused before anything is sent */
	ck_assert_int_eq(storm_xfer_sync_flags(h.ctx, &set, small,
					       sizeof(small), 0, 1, 0x80,
					       NULL), -EINVAL);
	h_stop(&h);
}
END_TEST

/* A streamed transfer: the root forwards what it has been given so far,
 * completes only once given everything, and a cancelled stream commits
 * nowhere (no remote event on any member). */
START_TEST(stream)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	uint64_t ev[H_MAX] = { 0 };
	const size_t len = 3 * CHUNK + 7;
	uint8_t *buf = malloc(len);
	storm_set_t failed, set;
	storm_op_t *op;

	ck_assert_ptr_nonnull(buf);
	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, 6, &cfg);
	set = range_set(0, 5);
	fill_pattern(buf, len, 11);
	ck_assert_int_eq(storm_xfer_stream(h.ctx, &set, buf, len, 64, 0, 1, &op), 0);
	ck_assert_int_eq(storm_xfer_supply(op, CHUNK + 5), 0);
	ck_assert_int_eq(storm_xfer_supply(op, 10), 0);	/* less: no-op */
	storm_progress(h.ctx, 20000);
	ck_assert_int_eq(storm_op_test(op, NULL), -EAGAIN);
	ck_assert_int_eq(storm_xfer_supply(op, len), 0);
	ck_assert_int_eq(storm_op_wait(op, -1, &failed), 0);
	ck_assert_int_eq(storm_set_count(&failed), 0);
	storm_op_free(op);
	for (int r = 0; r < 6; r++)
		ev[r]++;
	wait_members_ev(&h, &set, 1, ev);
	h_cmd(&h, -1, H_SUM, 64, len, 0, 0, 0, 0);
	for (int r = 0; r < 6; r++) {
		ck_assert_msg(h.sh->res[r].sum == h_sum(buf, len),
			      "rank %d: bad checksum after a stream", r);
		ck_assert_int_eq(h.sh->res[r].ev[1], ev[r]);
	}

	/* cancelled half-way: nobody commits */
	fill_pattern(buf, len, 12);
	ck_assert_int_eq(storm_xfer_stream(h.ctx, &set, buf, len, 64, 0, 1, &op), 0);
	ck_assert_int_eq(storm_xfer_supply(op, 2 * CHUNK), 0);
	storm_progress(h.ctx, 20000);
	ck_assert_int_eq(storm_op_cancel(op), 0);
	ck_assert_int_eq(storm_op_wait(op, -1, NULL), -ECANCELED);
	ck_assert_int_eq(storm_xfer_supply(op, len), -ECANCELED);
	storm_op_free(op);
	storm_progress(h.ctx, 200000);
	h_cmd(&h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
	for (int r = 0; r < 6; r++)
		ck_assert_msg(h.sh->res[r].ev[1] == ev[r],
			      "rank %d: a cancelled stream signalled", r);

	/* the root may not be a member of its own stream */
	storm_set_add(&set, storm_ctx_rank(h.ctx));
	ck_assert_int_eq(storm_xfer_stream(h.ctx, &set, buf, len, 0, 0, 1, &op),
			 -EINVAL);
	free(buf);
	h_stop(&h);
}
END_TEST

int main(void)
{
	TCase *tc[7];
	tc[0] = tcase_create("sizes");
	tcase_add_loop_test(tc[0], sizes_4, 0, H_NPROV);
	tc[1] = tcase_create("big16");
	tcase_add_loop_test(tc[1], big_16, 0, H_NPROV);
	tc[2] = tcase_create("shapes");
	tcase_add_loop_test(tc[2], shapes, 0, H_NPROV);
	tc[3] = tcase_create("concurrent");
	tcase_add_loop_test(tc[3], concurrent_ops, 0, H_NPROV);
	tc[4] = tcase_create("dest_hook");
	tcase_add_loop_test(tc[4], dest_hook, 0, H_NPROV);
	tc[5] = tcase_create("on_arrival");
	tcase_add_loop_test(tc[5], on_arrival, 0, H_NPROV);
	tc[6] = tcase_create("stream");
	tcase_add_loop_test(tc[6], stream, 0, H_NPROV);
	for (int i = 0; i < 7; i++)
		tcase_set_timeout(tc[i], 300);
	return mech_run(mech_suite("stormmech-xfer", tc, 7));
}

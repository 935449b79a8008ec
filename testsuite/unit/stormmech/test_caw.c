/* SPDX-License-Identifier: GPL-2.0-or-later */
/* COMPARE-AND-WRITE: true, false on one member, writes, concurrency */
#include "mech_test.h"

static uint64_t var_on(struct harness *h, int r, int var)
{
	h_cmd(h, r, H_GETVAR, (uint64_t)var, 0, 0, 0, 0, 0);
	return h->sh->res[r].var;
}

START_TEST(caw_basic)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	storm_set_t un;
	const int N = 7;

	h_cfg(&cfg, prov);
	cfg.arity = 2;
	START_OR_FAIL(&h, N, &cfg);
	storm_set_t set = range_set(0, N - 1);
	/* true everywhere, with a write */
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, 1, 7, &un), 1);
	ck_assert_int_eq(storm_set_count(&un), 0);
	for (int r = 0; r < N; r++)
		ck_assert_int_eq(var_on(&h, r, 1), 7);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 1, STORM_GE, 7, -1, 0, &un), 1);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 1, STORM_LT, 8, -1, 0, &un), 1);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 1, STORM_NE, 3, -1, 0, &un), 1);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 1, STORM_LT, 7, -1, 0, &un), 0);
	/* false on one member: no write anywhere, nobody unreachable */
	h_cmd(&h, 4, H_SETVAR, 0, 5, 0, 0, 0, 0);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, 1, 9, &un), 0);
	ck_assert_int_eq(storm_set_count(&un), 0);
	for (int r = 0; r < N; r++)
		ck_assert_int_eq(var_on(&h, r, 1), 7);
	/* a set that leaves rank 4 out is true */
	storm_set_t s2;
	storm_set_parse(&s2, "0-3,5-6");
	ck_assert_int_eq(storm_caw(h.ctx, &s2, 0, STORM_EQ, 0, -1, 0, &un), 1);
	storm_set_parse(&s2, "4");
	ck_assert_int_eq(storm_caw(h.ctx, &s2, 0, STORM_GE, 5, -1, 0, &un), 1);
	/* a member calling over a set that contains itself */
	h_cmd(&h, 3, H_CAW, 0, 11, 2, 5, 2, STORM_EQ);
	ck_assert_int_eq(h.sh->res[3].caw_rc, 1);
	for (int r = 0; r < N; r++)
		ck_assert_int_eq(var_on(&h, r, 2), (r >= 2 && r <= 5) ? 11 : 0);
	/* empty set: vacuously true; bad args rejected */
	storm_set_clear(&s2);
	ck_assert_int_eq(storm_caw(h.ctx, &s2, 0, STORM_EQ, 1, -1, 0, &un), 1);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 99, STORM_EQ, 1, -1, 0, &un),
			 -EINVAL);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, 9, 1, -1, 0, &un), -EINVAL);
	/* with the internal progress thread driving the driver's ctx */
	ck_assert_int_eq(storm_ctx_start_progress(h.ctx, 0), 0);
	ck_assert_int_eq(storm_caw(h.ctx, &set, 1, STORM_EQ, 7, 1, 8, &un), 1);
	char msg[64] = "progress thread";
	ck_assert_int_eq(storm_xfer_sync(h.ctx, &set, msg, sizeof(msg), 0, 2,
					 NULL), 0);
	storm_ctx_stop_progress(h.ctx);
	h_stop(&h);
}
END_TEST

/* all members race "var == 0 -> var = 1": exactly one wins per round */
START_TEST(caw_concurrent_same)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	const int N = 6;

	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, N, &cfg);
	for (int round = 0; round < 4; round++) {
		int var = 3 + round;
		h_cmd(&h, -1, H_CAW, 0, 1, 0, N - 1, var, STORM_EQ);
		int wins = 0;
		for (int r = 0; r < N; r++) {
			ck_assert_int_ge(h.sh->res[r].caw_rc, 0);
			wins += h.sh->res[r].caw_rc;
		}
		ck_assert_int_eq(wins, 1);
		for (int r = 0; r < N; r++)
			ck_assert_int_eq(var_on(&h, r, var), 1);
	}
	h_stop(&h);
}
END_TEST

/* callers differing only in the value written: one final value everywhere */
START_TEST(caw_concurrent_values)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg;
	struct harness h;
	const int N = 8;

	h_cfg(&cfg, prov);
	cfg.arity = 3;
	START_OR_FAIL(&h, N, &cfg);
	for (int round = 0; round < 3; round++) {
		h_cmd(&h, -1, H_CAW_MINE, 0, 100 * (round + 1), 0, N - 1, 9,
		      STORM_GE);
		uint64_t v0 = var_on(&h, 0, 9);
		ck_assert(v0 >= 100u * (round + 1) && v0 < 100u * (round + 1) + N);
		for (int r = 0; r < N; r++) {
			ck_assert_int_eq(h.sh->res[r].caw_rc, 1);
			ck_assert_int_eq(var_on(&h, r, 9), v0);
		}
	}
	h_stop(&h);
}
END_TEST

int main(void)
{
	TCase *tc[3];
	tc[0] = tcase_create("basic");
	tcase_add_loop_test(tc[0], caw_basic, 0, H_NPROV);
	tc[1] = tcase_create("same");
	tcase_add_loop_test(tc[1], caw_concurrent_same, 0, H_NPROV);
	tc[2] = tcase_create("values");
	tcase_add_loop_test(tc[2], caw_concurrent_values, 0, H_NPROV);
	for (int i = 0; i < 3; i++)
		tcase_set_timeout(tc[i], 300);
	return mech_run(mech_suite("stormmech-caw", tc, 3));
}

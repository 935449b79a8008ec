/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_gang_plan.c - the node manager's switching decisions
 * (src/nm/nm_gang_plan.c): the mode a strobe is taken in, what a strobe
 * leaves to time on arrival (at once, at its instant, late), the timed
 * switches one by one (a late thread catches up, never over the strobe's
 * own switch), the watcher's next wake-up, and what counts as a long
 * freeze.
 */
#include <check.h>
#include <stdint.h>

#include "src/nm/nm_gang_plan.h"

#include "check_run.h"

#define US 1000ULL
#define MS 1000000ULL
#define REAL0 (1700000000ULL * 1000000000ULL)	/* a CLOCK_REALTIME instant */
#define MONO0 (5000ULL * MS)			/* the same, CLOCK_MONOTONIC */

/* A strobe of slot `slot` of `nslots`, covering `nquanta` 2 ms quanta, the
 * next boundary 2 ms after it was sent; at_ns 0: no instant. */
static storm_gang_strobe_t strobe(uint32_t slot, uint32_t nslots,
				  uint32_t nquanta, uint64_t at_ns)
{
	return (storm_gang_strobe_t) {
		.magic = STORM_GANG_MAGIC, .slot = slot, .nslots = nslots,
		.nquanta = nquanta, .quantum_us = 2000, .next_in_us = 2000,
		.at_ns = at_ns,
	};
}

START_TEST(mode_follows_instant_and_clock)
{
	storm_gang_strobe_t s = strobe(0, 2, 1, 0);

	/* no instant named: SwitchAt=arrival */
	ck_assert_uint_eq(nm_gang_plan_mode(&s, true, 0),
			  STORM_GANG_AT_ARRIVAL);
	s.at_ns = REAL0;
	/* the offset not yet estimated */
	ck_assert_uint_eq(nm_gang_plan_mode(&s, false, 0),
			  STORM_GANG_AT_FALLBACK);
	/* uncertain by more than a quarter of the 2 ms quantum */
	ck_assert_uint_eq(nm_gang_plan_mode(&s, true, 600 * US),
			  STORM_GANG_AT_FALLBACK);
	ck_assert_uint_eq(nm_gang_plan_mode(&s, true, 400 * US),
			  STORM_GANG_AT_ANNOUNCED);
}
END_TEST

START_TEST(on_arrival_switches_now_and_times_the_rest)
{
	storm_gang_strobe_t s = strobe(1, 3, 4, 0);
	nm_gang_subs_t subs;

	ck_assert_int_eq(nm_gang_plan_strobe(&s, STORM_GANG_AT_ARRIVAL, 0,
					     REAL0, MONO0, &subs),
			 NM_GANG_TAKE_NOW);
	/* three more, from the next slot, the first at the next boundary */
	ck_assert_uint_eq(subs.left, 3);
	ck_assert_uint_eq(subs.slot, 2);
	ck_assert_uint_eq(subs.q, 1);
	ck_assert_uint_eq(subs.due_ns, MONO0 + 2 * MS);
	ck_assert_uint_eq(subs.q_ns, 2 * MS);
}
END_TEST

START_TEST(one_slot_has_nothing_to_time)
{
	storm_gang_strobe_t s = strobe(0, 1, 4, REAL0 + 1 * MS);
	nm_gang_subs_t subs;

	/* even announced: nothing time-shares, no instant to keep */
	ck_assert_int_eq(nm_gang_plan_strobe(&s, STORM_GANG_AT_ANNOUNCED, 0,
					     REAL0, MONO0, &subs),
			 NM_GANG_TAKE_NOW);
	ck_assert_uint_eq(subs.left, 0);
}
END_TEST

START_TEST(announced_waits_for_its_instant)
{
	/* the MM's instant 1 ms after arrival on its clock; this node's
	 * clock 300 us ahead of the MM's */
	storm_gang_strobe_t s = strobe(1, 2, 3, REAL0 + 1 * MS);
	nm_gang_subs_t subs;

	ck_assert_int_eq(nm_gang_plan_strobe(&s, STORM_GANG_AT_ANNOUNCED,
					     300 * US, REAL0, MONO0, &subs),
			 NM_GANG_TAKE_AT);
	/* the strobe's own switch and its two timed ones */
	ck_assert_uint_eq(subs.left, 3);
	ck_assert_uint_eq(subs.slot, 1);
	ck_assert_uint_eq(subs.q, 0);
	ck_assert_uint_eq(subs.due_ns, MONO0 + 1300 * US);
	ck_assert_uint_eq(subs.gap_ns, 2 * MS);
}
END_TEST

START_TEST(late_strobe_keeps_the_instants_rhythm)
{
	/* arrives 700 us after its instant */
	storm_gang_strobe_t s = strobe(0, 2, 3, REAL0 - 700 * US);
	nm_gang_subs_t subs;

	ck_assert_int_eq(nm_gang_plan_strobe(&s, STORM_GANG_AT_ANNOUNCED, 0,
					     REAL0, MONO0, &subs),
			 NM_GANG_TAKE_LATE);
	ck_assert_uint_eq(subs.left, 2);
	ck_assert_uint_eq(subs.slot, 1);
	ck_assert_uint_eq(subs.q, 1);
	/* the next boundary counts from the instant, not the arrival */
	ck_assert_uint_eq(subs.due_ns, MONO0 - 700 * US + 2 * MS);
}
END_TEST

START_TEST(timed_switches_step_through_the_slots)
{
	storm_gang_strobe_t s = strobe(1, 3, 4, REAL0 + 1 * MS);
	nm_gang_subs_t subs;
	uint32_t slot, q;
	uint64_t t;

	nm_gang_plan_strobe(&s, STORM_GANG_AT_ANNOUNCED, 0, REAL0, MONO0,
			    &subs);
	t = subs.due_ns;
	/* nothing before its instant */
	ck_assert(!nm_gang_plan_next_switch(&subs, 3, t - 1, &slot, &q));
	/* the strobe's own, then one a quantum: slots 1, 2, 0, 1 */
	for (uint32_t i = 0; i < 4; i++) {
		ck_assert(nm_gang_plan_next_switch(&subs, 3, t, &slot, &q));
		ck_assert_uint_eq(q, i);
		ck_assert_uint_eq(slot, (1 + i) % 3);
		ck_assert(!nm_gang_plan_next_switch(&subs, 3, t, &slot, &q));
		t = subs.due_ns;
	}
	ck_assert_uint_eq(subs.left, 0);
	ck_assert(!nm_gang_plan_next_switch(&subs, 3, t + 100 * MS, &slot,
					    &q));
}
END_TEST

START_TEST(late_thread_catches_up_but_not_past_the_end)
{
	nm_gang_subs_t subs = { .left = 5, .slot = 1, .q = 1,
				.due_ns = MONO0, .q_ns = 2 * MS };
	uint32_t slot, q;

	/* 2.5 quanta late: switches 1 and 2 are skipped, 3 is taken */
	ck_assert(nm_gang_plan_next_switch(&subs, 4, MONO0 + 5 * MS, &slot,
					   &q));
	ck_assert_uint_eq(q, 3);
	ck_assert_uint_eq(slot, 3);
	ck_assert_uint_eq(subs.left, 2);
	ck_assert_uint_eq(subs.due_ns, MONO0 + 6 * MS);
	ck_assert_uint_eq(subs.slot, 0);
	/* far later: the last one, no further */
	ck_assert(nm_gang_plan_next_switch(&subs, 4, MONO0 + 1000 * MS,
					   &slot, &q));
	ck_assert_uint_eq(q, 5);
	ck_assert_uint_eq(subs.left, 0);
}
END_TEST

START_TEST(strobes_own_switch_is_never_skipped)
{
	nm_gang_subs_t subs = { .left = 3, .slot = 2, .q = 0,
				.due_ns = MONO0, .q_ns = 2 * MS,
				.gap_ns = 1500 * US };
	uint32_t slot, q;

	ck_assert(nm_gang_plan_next_switch(&subs, 3, MONO0 + 10 * MS, &slot,
					   &q));
	ck_assert_uint_eq(q, 0);
	ck_assert_uint_eq(slot, 2);
	/* the next is the gap after the instant */
	ck_assert_uint_eq(subs.due_ns, MONO0 + 1500 * US);
	ck_assert_uint_eq(subs.q, 1);
	ck_assert_uint_eq(subs.left, 2);
}
END_TEST

START_TEST(zero_slots_count_as_one)
{
	nm_gang_subs_t subs = { .left = 2, .slot = 0, .q = 1,
				.due_ns = MONO0, .q_ns = 2 * MS };
	uint32_t slot, q;

	ck_assert(nm_gang_plan_next_switch(&subs, 0, MONO0, &slot, &q));
	ck_assert_uint_eq(slot, 0);
}
END_TEST

START_TEST(deadline_bounds_the_sleep)
{
	nm_gang_subs_t none = { 0 };
	nm_gang_subs_t soon = { .left = 1, .due_ns = MONO0 + 7 * MS };
	uint64_t now = MONO0;

	/* the fail-safe far off: the longest sleep */
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 10000 * MS,
						NM_GANG_WAIT_MAX_MS, &none),
			  now + NM_GANG_WAIT_MAX_MS * MS);
	/* while a job is frozen, the scan's period instead */
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 10000 * MS, 100,
						&none),
			  now + 100 * MS);
	/* the fail-safe due (or past): not sooner than the shortest sleep */
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now - 1 * MS,
						NM_GANG_WAIT_MAX_MS, &none),
			  now + NM_GANG_WAIT_MIN_MS * MS);
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 40 * MS,
						NM_GANG_WAIT_MAX_MS, &none),
			  now + 40 * MS);
	/* a timed switch sooner wins, even inside the shortest sleep */
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 40 * MS,
						NM_GANG_WAIT_MAX_MS, &soon),
			  MONO0 + 7 * MS);
	soon.due_ns = MONO0 + 1 * MS;
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 40 * MS,
						NM_GANG_WAIT_MAX_MS, &soon),
			  MONO0 + 1 * MS);
	/* none left: its stale due is ignored */
	soon.left = 0;
	ck_assert_uint_eq(nm_gang_plan_deadline(now, now + 40 * MS,
						NM_GANG_WAIT_MAX_MS, &soon),
			  now + 40 * MS);
}
END_TEST

START_TEST(long_freeze_is_two_rounds)
{
	storm_gang_strobe_t s = strobe(0, 3, 1, 0);

	ck_assert_uint_eq(nm_gang_plan_long_ns(&s), 2 * 2 * 2 * MS);
	s.nslots = 1;
	ck_assert_uint_eq(nm_gang_plan_long_ns(&s), 0);
}
END_TEST

START_TEST(handover_quanta_push_the_fail_safe_back)
{
	/* strobe(slot, nslots, nquanta, at): 2 ms quanta */
	storm_gang_strobe_t s = strobe(0, 2, 1, 0);
	uint64_t fs = 1000 * MS;

	ck_assert_uint_eq(nm_gang_plan_failsafe_ns(&s, fs), fs);
	/* StrobeInterval: at most half of FailSafe, which stays as it is */
	s.nquanta = 250;
	ck_assert_uint_eq(nm_gang_plan_failsafe_ns(&s, fs), fs);
	/* a handover of 10 s: FailSafe after its last quantum */
	s.nquanta = 5000;
	ck_assert_uint_eq(nm_gang_plan_failsafe_ns(&s, fs), fs + 10000 * MS);
	/* one slot: nothing to time, nothing to wait for */
	s.nslots = 1;
	ck_assert_uint_eq(nm_gang_plan_failsafe_ns(&s, fs), fs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nm_gang_plan");
	TCase *tc = tcase_create("plan");

	tcase_add_test(tc, mode_follows_instant_and_clock);
	tcase_add_test(tc, on_arrival_switches_now_and_times_the_rest);
	tcase_add_test(tc, one_slot_has_nothing_to_time);
	tcase_add_test(tc, announced_waits_for_its_instant);
	tcase_add_test(tc, late_strobe_keeps_the_instants_rhythm);
	tcase_add_test(tc, timed_switches_step_through_the_slots);
	tcase_add_test(tc, late_thread_catches_up_but_not_past_the_end);
	tcase_add_test(tc, strobes_own_switch_is_never_skipped);
	tcase_add_test(tc, zero_slots_count_as_one);
	tcase_add_test(tc, deadline_bounds_the_sleep);
	tcase_add_test(tc, long_freeze_is_two_rounds);
	tcase_add_test(tc, handover_quanta_push_the_fail_safe_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

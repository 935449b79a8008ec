/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_clock.c - announced instants (src/common/storm_clock.c): the
 * four-timestamp sample, the least-delay filter, when an estimate is good
 * enough for a quantum, the conversion of an instant to a node's clock,
 * the instants of a strobe's timed switches, and the lead; and the clock
 * readers every part shares (src/common/storm_time.h).
 */
#include <check.h>
#include <stdint.h>
#include <time.h>

#include "src/common/storm_clock.h"
#include "src/common/storm_time.h"

#include "check_run.h"

#define MS 1000000ULL
#define US 1000ULL
#define T0 (1700000000ULL * 1000000000ULL)

/* A node 5 ms ahead of the MM; the request takes d1, the reply d2, the
 * node holds the request h before it answers. */
static storm_clock_sample_t exchange(int64_t offset, uint64_t d1,
				     uint64_t h, uint64_t d2)
{
	uint64_t t1 = T0, t2 = t1 + d1 + offset, t3 = t2 + h;
	uint64_t t4 = t3 - offset + d2;
	storm_clock_sample_t s;

	ck_assert_int_eq(storm_clock_sample(t1, t2, t3, t4, &s), 0);
	return s;
}

START_TEST(sample_symmetric_is_exact)
{
	storm_clock_sample_t s = exchange(5 * MS, 100 * US, 3 * MS, 100 * US);

	ck_assert_int_eq(s.offset_ns, (int64_t) (5 * MS));
	ck_assert_uint_eq(s.delay_ns, 200 * US);	/* the hold is not delay */
	s = exchange(-(int64_t) (5 * MS), 40 * US, 0, 40 * US);
	ck_assert_int_eq(s.offset_ns, -(int64_t) (5 * MS));
}
END_TEST

START_TEST(sample_asymmetric_within_half_delay)
{
	/* all of the delay on one leg: the error is half the delay, which is
	 * what the uncertainty says */
	storm_clock_sample_t s = exchange(5 * MS, 900 * US, 10 * US, 100 * US);
	int64_t err = s.offset_ns - (int64_t) (5 * MS);

	ck_assert_uint_eq(s.delay_ns, 1000 * US);
	ck_assert_int_eq(err, 400 * (int64_t) US);
	ck_assert_int_le(err < 0 ? -err : err, (int64_t) s.delay_ns / 2);
}
END_TEST

START_TEST(sample_rejects_impossible)
{
	storm_clock_sample_t s;

	/* the reply before the request */
	ck_assert_int_eq(storm_clock_sample(T0, T0, T0 + 1, T0 - 1, &s), -1);
	/* the node sent before it received */
	ck_assert_int_eq(storm_clock_sample(T0, T0 + 5, T0 + 4, T0 + 10, &s), -1);
	/* the node held it longer than the round trip took */
	ck_assert_int_eq(storm_clock_sample(T0, T0, T0 + 100, T0 + 50, &s), -1);
}
END_TEST

START_TEST(filter_takes_least_delay)
{
	storm_clock_filter_t f;
	storm_clock_sample_t s;
	int64_t off;
	uint64_t unc;

	storm_clock_filter_init(&f);
	ck_assert(!storm_clock_filter_best(&f, &off, &unc));
	s = exchange(5 * MS, 2 * MS, 0, 100 * US);	/* busy host: skewed */
	storm_clock_filter_add(&f, &s);
	s = exchange(5 * MS, 60 * US, 0, 40 * US);	/* quick */
	storm_clock_filter_add(&f, &s);
	s = exchange(5 * MS, 100 * US, 0, 3 * MS);
	storm_clock_filter_add(&f, &s);
	ck_assert(storm_clock_filter_best(&f, &off, &unc));
	ck_assert_int_eq(off, (int64_t) (5 * MS + 10 * US));
	ck_assert_uint_eq(unc, 50 * US);
}
END_TEST

START_TEST(filter_forgets_old_samples)
{
	storm_clock_filter_t f;
	storm_clock_sample_t s;
	int64_t off;
	uint64_t unc;

	storm_clock_filter_init(&f);
	/* a quick sample of an old offset, then a window of slower ones of
	 * the new: the old one leaves the window */
	s = exchange(1 * MS, 10 * US, 0, 10 * US);
	storm_clock_filter_add(&f, &s);
	for (int i = 0; i < STORM_CLOCK_WINDOW - 1; i++) {
		s = exchange(2 * MS, 200 * US, 0, 200 * US);
		storm_clock_filter_add(&f, &s);
	}
	ck_assert(storm_clock_filter_best(&f, &off, &unc));
	ck_assert_int_eq(off, (int64_t) (1 * MS));
	s = exchange(2 * MS, 200 * US, 0, 200 * US);
	storm_clock_filter_add(&f, &s);
	ck_assert(storm_clock_filter_best(&f, &off, &unc));
	ck_assert_int_eq(off, (int64_t) (2 * MS));
	ck_assert_uint_eq(unc, 200 * US);
	ck_assert_uint_eq(f.n, STORM_CLOCK_WINDOW);
}
END_TEST

START_TEST(usable_is_a_fraction_of_the_quantum)
{
	ck_assert(storm_clock_usable(500 * US, 2 * MS));
	ck_assert(!storm_clock_usable(501 * US, 2 * MS));
	ck_assert(storm_clock_usable(0, 1 * MS));
	ck_assert(!storm_clock_usable(0, 0));
}
END_TEST

START_TEST(instant_to_node_clock)
{
	ck_assert_uint_eq(storm_clock_to_node(T0, 5 * MS), T0 + 5 * MS);
	ck_assert_uint_eq(storm_clock_to_node(T0, -(int64_t) (5 * MS)),
			  T0 - 5 * MS);
	ck_assert_uint_eq(storm_clock_to_node(10, -20), 0);
}
END_TEST

START_TEST(switch_instants_of_a_strobe)
{
	/* own switch at `at`, the next one next_in later, then a quantum */
	ck_assert_uint_eq(storm_clock_switch_at(T0, 2 * MS, 2 * MS, 0), T0);
	ck_assert_uint_eq(storm_clock_switch_at(T0, 2 * MS, 2 * MS, 1),
			  T0 + 2 * MS);
	ck_assert_uint_eq(storm_clock_switch_at(T0, 2 * MS, 2 * MS, 3),
			  T0 + 6 * MS);
	/* a strobe for the rest of a span: the first boundary is nearer */
	ck_assert_uint_eq(storm_clock_switch_at(T0, 700 * US, 2 * MS, 2),
			  T0 + 2700 * US);
	/* two nodes 5 ms apart agree on every instant once converted */
	for (uint32_t k = 0; k < 5; k++)
		ck_assert_uint_eq(
			storm_clock_to_node(storm_clock_switch_at(T0, 2 * MS, 2 * MS, k),
					    5 * MS) -
			storm_clock_to_node(storm_clock_switch_at(T0, 2 * MS, 2 * MS, k),
					    -(int64_t) (5 * MS)),
			10 * MS);
}
END_TEST

START_TEST(lead_follows_delivery_within_bounds)
{
	ck_assert_uint_eq(storm_clock_lead(0, 2 * MS), STORM_CLOCK_LEAD_MIN_NS);
	ck_assert_uint_eq(storm_clock_lead(400 * US, 5 * MS), 1000 * US);
	/* never past 3/4 of the quantum: the next strobe comes a quantum on */
	ck_assert_uint_eq(storm_clock_lead(5 * MS, 2 * MS), 1500 * US);
	ck_assert_uint_eq(storm_clock_lead(5 * MS, 300 * US), 225 * US);
}
END_TEST

START_TEST(delivery_rises_at_once_and_decays)
{
	uint64_t d = storm_clock_delivery_track(0, 320 * US);

	ck_assert_uint_eq(d, 320 * US);
	d = storm_clock_delivery_track(d, 100 * US);
	ck_assert_uint_eq(d, 310 * US);
	d = storm_clock_delivery_track(d, 900 * US);
	ck_assert_uint_eq(d, 900 * US);
	for (int i = 0; i < 200; i++)
		d = storm_clock_delivery_track(d, 100 * US);
	ck_assert_uint_eq(d, 100 * US);
}
END_TEST

/* A clock reading as clock_gettime() gives it, in ns. */
static uint64_t read_ns(clockid_t clk)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(clk, &ts), 0);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

START_TEST(readers_are_the_clocks_in_ns)
{
	/* each reader lies between two direct readings of its clock */
	uint64_t a = read_ns(CLOCK_MONOTONIC), m = storm_mono_ns();
	uint64_t b = read_ns(CLOCK_MONOTONIC);

	ck_assert_uint_le(a, m);
	ck_assert_uint_le(m, b);
	a = read_ns(CLOCK_REALTIME);
	m = storm_real_ns();
	b = read_ns(CLOCK_REALTIME);
	ck_assert_uint_le(a, m);
	ck_assert_uint_le(m, b);
	a = read_ns(CLOCK_MONOTONIC);
	m = storm_time_ns(CLOCK_MONOTONIC);
	b = read_ns(CLOCK_MONOTONIC);
	ck_assert_uint_le(a, m);
	ck_assert_uint_le(m, b);
	/* an id that names no clock reads as 0, not as garbage */
	ck_assert_uint_eq(storm_time_ns((clockid_t) 0x7fff), 0);
}
END_TEST

START_TEST(readers_agree_on_units)
{
	uint64_t a = read_ns(CLOCK_MONOTONIC), us = storm_mono_us();
	double ms = storm_mono_ms();
	uint64_t b = read_ns(CLOCK_MONOTONIC);

	ck_assert_uint_le(a / 1000, us);
	ck_assert_uint_le(us, b / 1000);
	ck_assert(ms >= (double) (a / 1000000));
	ck_assert(ms <= (double) (b / 1000000 + 1));
}
END_TEST

START_TEST(monotonic_never_goes_back)
{
	uint64_t last = storm_mono_ns();

	for (int i = 0; i < 10000; i++) {
		uint64_t now = storm_mono_ns();

		ck_assert_uint_ge(now, last);
		last = now;
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_clock");
	TCase *tc = tcase_create("clock");

	tcase_add_test(tc, sample_symmetric_is_exact);
	tcase_add_test(tc, sample_asymmetric_within_half_delay);
	tcase_add_test(tc, sample_rejects_impossible);
	tcase_add_test(tc, filter_takes_least_delay);
	tcase_add_test(tc, filter_forgets_old_samples);
	tcase_add_test(tc, usable_is_a_fraction_of_the_quantum);
	tcase_add_test(tc, instant_to_node_clock);
	tcase_add_test(tc, switch_instants_of_a_strobe);
	tcase_add_test(tc, lead_follows_delivery_within_bounds);
	tcase_add_test(tc, delivery_rises_at_once_and_decays);
	suite_add_tcase(s, tc);
	tc = tcase_create("readers");
	tcase_add_test(tc, readers_are_the_clocks_in_ns);
	tcase_add_test(tc, readers_agree_on_units);
	tcase_add_test(tc, monotonic_never_goes_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

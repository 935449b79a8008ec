/*
 * test_mm_silence.c - the Machine Manager's silence rules (mm_silence.c):
 * quiet at half of SuspectTime, due at SuspectTime, a host's stall is no
 * node's silence, and nobody heard drains nobody.
 */
#include <check.h>
#include <stdlib.h>

#include "src/plugins/sched/storm/mm_silence.h"

#include "check_run.h"

#define MS 1000000ULL
#define SUSPECT (250 * MS)

/* Ticks every tick_ns from *now to until; node i beats every beat_ns
 * while alive[i] (beats at multiples of beat_ns). */
static void run(mm_silence_t *s, uint64_t *now, uint64_t until,
		uint64_t tick_ns, uint64_t beat_ns, const bool *alive)
{
	for (; *now < until; *now += tick_ns) {
		for (int i = 0; i < s->nnodes; i++)
			if (alive[i] && *now % beat_ns < tick_ns)
				mm_silence_heard(s, i, *now);
		mm_silence_slept(s, *now, *now);
		mm_silence_tick(s, *now);
	}
}

START_TEST(beating_node_never_quiet)
{
	mm_silence_t s;
	bool alive[2] = { true, true };
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mm_silence_init(&s, 2, SUSPECT), 0);
	for (uint64_t end = now + 5000 * MS; now < end;) {
		run(&s, &now, now + 5 * MS, 5 * MS, 62 * MS, alive);
		for (int i = 0; i < 2; i++) {
			ck_assert(!s.nodes[i].quiet);
			ck_assert(!mm_silence_due(&s, i));
		}
	}
	mm_silence_free(&s);
}
END_TEST

START_TEST(stopped_node_quiet_then_due)
{
	mm_silence_t s;
	bool alive[3] = { true, true, true };
	uint64_t now = 1000 * MS, stop;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT), 0);
	run(&s, &now, now + 1000 * MS, 5 * MS, 62 * MS, alive);
	alive[1] = false;
	stop = now;
	while (!s.nodes[1].quiet) {
		run(&s, &now, now + 5 * MS, 5 * MS, 62 * MS, alive);
		ck_assert(!mm_silence_due(&s, 1));
	}
	/* quiet past half of SuspectTime from its last beat, not before */
	ck_assert_uint_gt(s.nodes[1].silent_ns, SUSPECT / 2);
	ck_assert_uint_le(now - stop, SUSPECT / 2 + 62 * MS + 5 * MS);
	while (!mm_silence_due(&s, 1))
		run(&s, &now, now + 5 * MS, 5 * MS, 62 * MS, alive);
	ck_assert_uint_gt(s.nodes[1].silent_ns, SUSPECT);
	ck_assert_uint_le(now - stop, SUSPECT + 5 * MS);
	ck_assert(!mm_silence_due(&s, 0) && !mm_silence_due(&s, 2));
	ck_assert(!s.nodes[0].quiet && !s.nodes[2].quiet);
	/* heard again: neither quiet nor due */
	mm_silence_heard(&s, 1, now);
	mm_silence_tick(&s, now + MS);
	ck_assert(!s.nodes[1].quiet && !mm_silence_due(&s, 1));
	mm_silence_free(&s);
}
END_TEST

/* Heard between ticks: silent since then, not since the tick before. */
START_TEST(silence_counts_from_arrival)
{
	mm_silence_t s;

	ck_assert_int_eq(mm_silence_init(&s, 1, SUSPECT), 0);
	mm_silence_tick(&s, 100 * MS);
	mm_silence_heard(&s, 0, 103 * MS);
	mm_silence_tick(&s, 110 * MS);
	ck_assert_uint_eq(s.nodes[0].silent_ns, 7 * MS);
	mm_silence_tick(&s, 120 * MS);
	ck_assert_uint_eq(s.nodes[0].silent_ns, 17 * MS);
	/* an older stamp (an acknowledgement seen late) changes nothing */
	mm_silence_heard(&s, 0, 101 * MS);
	mm_silence_tick(&s, 130 * MS);
	ck_assert_uint_eq(s.nodes[0].silent_ns, 27 * MS);
	mm_silence_free(&s);
}
END_TEST

/* The listener overslept by 400 ms: the host stalled, and so did the
 * heartbeats; nobody's silence grows by it. */
START_TEST(stall_is_not_silence)
{
	mm_silence_t s;
	bool alive[2] = { true, true };
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mm_silence_init(&s, 2, SUSPECT), 0);
	run(&s, &now, now + 500 * MS, 5 * MS, 62 * MS, alive);
	mm_silence_tick(&s, now);
	mm_silence_slept(&s, now + 5 * MS, now + 405 * MS);
	now += 405 * MS;
	mm_silence_tick(&s, now);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_lt(s.nodes[i].silent_ns, 100 * MS);
		ck_assert(!mm_silence_due(&s, i));
	}
	/* a few ms late is no stall */
	mm_silence_slept(&s, now + 5 * MS, now + 15 * MS);
	ck_assert_uint_eq(s.stalled_ns, 0);
	mm_silence_free(&s);
}
END_TEST

/* Every node manager stopped at once: nobody drained, ever; heard again,
 * the silence is forgiven, and one that stays silent is due SuspectTime
 * later. */
START_TEST(nobody_heard_drains_none)
{
	mm_silence_t s;
	bool alive[4] = { true, true, true, true };
	uint64_t now = 1000 * MS, back;
	unsigned seen = 0;

	ck_assert_int_eq(mm_silence_init(&s, 4, SUSPECT), 0);
	run(&s, &now, now + 500 * MS, 5 * MS, 62 * MS, alive);
	for (uint64_t end = now + 3000 * MS; now < end; now += 5 * MS) {
		seen |= mm_silence_tick(&s, now);
		for (int i = 0; i < 4; i++)
			ck_assert(!mm_silence_due(&s, i));
	}
	ck_assert(seen & MM_SILENCE_NOBODY);
	ck_assert(s.all_silent);
	/* three come back, node 3 does not */
	alive[3] = false;
	mm_silence_heard(&s, 0, now);
	ck_assert(mm_silence_tick(&s, now) & MM_SILENCE_FORGIVEN);
	for (int i = 0; i < 4; i++) {
		ck_assert(!s.nodes[i].quiet);
		ck_assert(!mm_silence_due(&s, i));
	}
	back = now;
	while (!mm_silence_due(&s, 3)) {
		run(&s, &now, now + 5 * MS, 5 * MS, 62 * MS, alive);
		ck_assert_uint_lt(now - back, SUSPECT + 70 * MS);
	}
	ck_assert_uint_gt(now - back, SUSPECT);
	for (int i = 0; i < 3; i++)
		ck_assert(!mm_silence_due(&s, i));
	mm_silence_free(&s);
}
END_TEST

/* One node only: its silence is its own, the nobody rule needs two. */
START_TEST(single_node_is_drained)
{
	mm_silence_t s;

	ck_assert_int_eq(mm_silence_init(&s, 1, SUSPECT), 0);
	mm_silence_heard(&s, 0, 10 * MS);
	for (uint64_t now = 10 * MS; now <= 300 * MS; now += 5 * MS)
		mm_silence_tick(&s, now);
	ck_assert(mm_silence_due(&s, 0));
	ck_assert(!s.all_silent);
	mm_silence_free(&s);
}
END_TEST

/* Never heard: a node manager not started yet is neither quiet nor due
 * (SuspectQuanta and the start-up grace cover it), and does not count
 * for the nobody rule. */
START_TEST(never_heard_is_not_judged)
{
	mm_silence_t s;
	bool alive[3] = { true, true, false };
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT), 0);
	run(&s, &now, now + 2000 * MS, 5 * MS, 62 * MS, alive);
	ck_assert(!s.nodes[2].quiet);
	ck_assert(!mm_silence_due(&s, 2));
	ck_assert_uint_eq(s.nodes[2].silent_ns, 0);
	ck_assert(!mm_silence_due(&s, 5) && !mm_silence_due(&s, -1));
	mm_silence_heard(&s, 7, now);	/* out of range: ignored */
	mm_silence_free(&s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mm_silence");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, beating_node_never_quiet);
	tcase_add_test(tc, stopped_node_quiet_then_due);
	tcase_add_test(tc, silence_counts_from_arrival);
	tcase_add_test(tc, stall_is_not_silence);
	tcase_add_test(tc, nobody_heard_drains_none);
	tcase_add_test(tc, single_node_is_drained);
	tcase_add_test(tc, never_heard_is_not_judged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

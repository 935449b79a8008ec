/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mm_silence.c - the Machine Manager's silence rules (mm_silence.c):
 * quiet at half of SuspectTime, due at SuspectTime, a stall of the
 * listener, of slurmctld or of the host is no node's silence, and a
 * silence every node shares drains nobody.
 */
#include <check.h>
#include <stdlib.h>

#include "src/plugins/sched/storm/mm_silence.h"

#include "check_run.h"

#define MS 1000000ULL
#define SUSPECT (250 * MS)
#define TICK (5 * MS)
#define BEAT (SUSPECT / 4)

/* Ticks every tick_ns from *now to until; node i beats every beat_ns
 * while alive[i] (beats at multiples of beat_ns). */
static void run(mm_silence_t *s, uint64_t *now, uint64_t until,
		uint64_t tick_ns, uint64_t beat_ns, const bool *alive)
{
	for (; *now < until; *now += tick_ns) {
		for (int i = 0; i < s->nnodes; i++)
			if (alive[i] && *now % beat_ns < tick_ns)
				mm_silence_heard(s, i, *now);
		mm_silence_tick(s, *now);
	}
}

START_TEST(beating_node_never_quiet)
{
	mm_silence_t s;
	bool alive[2] = { true, true };
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mm_silence_init(&s, 2, SUSPECT, TICK), 0);
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

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
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
	/* the others beat in step with it here, so the newest beat of any
	 * node passes SuspectTime after its last one at most a beat later */
	ck_assert_uint_le(now - stop, SUSPECT + BEAT + TICK);
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

	ck_assert_int_eq(mm_silence_init(&s, 1, SUSPECT, TICK), 0);
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

/* The listener did not run for 400 ms (descheduled, or back late from
 * the fabric's progress or a lock): the beats of that time are taken in at
 * once when it resumes, one live node's a pass later; nobody is quiet or
 * due, and every silence counts from the end of the late pass. */
START_TEST(late_pass_is_not_silence)
{
	mm_silence_t s;
	bool alive[3] = { true, true, true };
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
	run(&s, &now, now + 500 * MS, TICK, BEAT, alive);
	now += 400 * MS;
	mm_silence_heard(&s, 0, now);
	mm_silence_heard(&s, 2, now);
	ck_assert(mm_silence_tick(&s, now) & MM_SILENCE_STALL);
	ck_assert_uint_ge(s.stall_ns, 400 * MS);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(s.nodes[i].silent_ns, 0);
		ck_assert(!s.nodes[i].quiet && !mm_silence_due(&s, i));
	}
	now += TICK;
	mm_silence_heard(&s, 1, now);
	ck_assert(!(mm_silence_tick(&s, now) & MM_SILENCE_STALL));
	run(&s, &now, now + 1000 * MS, TICK, BEAT, alive);
	for (int i = 0; i < 3; i++)
		ck_assert(!s.nodes[i].quiet && !mm_silence_due(&s, i));
	mm_silence_free(&s);
}
END_TEST

/* slurmctld stopped (SIGSTOP) for 0.7 s and for 2 s: no pass at all.
 * When it resumes, the first pass takes in the beats of half of the nodes
 * (queued meanwhile); the others' come over the next passes, up to most of
 * a beat later (their senders had given up on the stopped receiver).
 * Nobody is quiet or drained. */
static uint64_t first_beat_after(int i)
{
	return i < 4 ? 0 : (uint64_t)(i - 3) * BEAT / 5;
}

START_TEST(stopped_controller_drains_none)
{
	const uint64_t stops[] = { 700 * MS, 2000 * MS };
	mm_silence_t s;
	bool alive[8];
	uint64_t now = 1000 * MS;

	for (int i = 0; i < 8; i++)
		alive[i] = true;
	ck_assert_int_eq(mm_silence_init(&s, 8, SUSPECT, TICK), 0);
	run(&s, &now, now + 500 * MS, TICK, BEAT, alive);
	for (size_t k = 0; k < sizeof(stops) / sizeof(stops[0]); k++) {
		uint64_t back = now + stops[k];

		for (now = back; now < back + 1000 * MS; now += TICK) {
			unsigned what;

			for (int i = 0; i < 8; i++)
				if (now >= back + first_beat_after(i) &&
				    (now - back - first_beat_after(i)) % BEAT <
				    TICK)
					mm_silence_heard(&s, i, now);
			what = mm_silence_tick(&s, now);
			ck_assert(now == back ? (what & MM_SILENCE_STALL) :
				  !(what & MM_SILENCE_STALL));
			for (int i = 0; i < 8; i++) {
				ck_assert(!mm_silence_due(&s, i));
				ck_assert(!s.nodes[i].quiet);
			}
		}
	}
	mm_silence_free(&s);
}
END_TEST

/* A node that died during a stall is still drained: SuspectTime after the
 * stall ended, since its silence before and during the stall was not
 * observed. */
START_TEST(dead_in_a_stall_due_after_it)
{
	mm_silence_t s;
	bool alive[3] = { true, true, true };
	uint64_t now = 1000 * MS, back;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
	run(&s, &now, now + 500 * MS, TICK, BEAT, alive);
	alive[2] = false;
	now += 300 * MS;
	mm_silence_tick(&s, now);
	back = now;
	while (!mm_silence_due(&s, 2)) {
		run(&s, &now, now + TICK, TICK, BEAT, alive);
		ck_assert_uint_le(now - back, SUSPECT + BEAT + TICK);
	}
	ck_assert_uint_gt(now - back, SUSPECT);
	ck_assert(!mm_silence_due(&s, 0) && !mm_silence_due(&s, 1));
	mm_silence_free(&s);
}
END_TEST

/* Passes late by less than the stall limit, again and again (a listener at
 * normal priority on a busy host): the time is observed and counted, so a
 * dead node is still due within SuspectTime and a beat of its last. */
START_TEST(late_passes_under_the_limit_count)
{
	mm_silence_t s;
	bool alive[3] = { true, true, true };
	uint64_t now = 1000 * MS, stop;
	uint64_t step;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
	step = s.stall_limit_ns - MS;
	run(&s, &now, now + 500 * MS, TICK, BEAT, alive);
	alive[1] = false;
	now -= TICK;		/* the last pass run() made */
	stop = now;
	while (!mm_silence_due(&s, 1)) {
		unsigned what;

		now += step;
		for (int i = 0; i < 3; i++)
			if (alive[i])
				mm_silence_heard(&s, i, now);
		what = mm_silence_tick(&s, now);
		ck_assert(!(what & MM_SILENCE_STALL));
		ck_assert_uint_le(now - stop, SUSPECT + 2 * step);
	}
	ck_assert(!mm_silence_due(&s, 0) && !mm_silence_due(&s, 2));
	mm_silence_free(&s);
}
END_TEST

/* Due only once another node was heard SuspectTime after it: a node whose
 * observed silence passed SuspectTime while the newest beat of anyone was
 * older than that waits for the next one. */
START_TEST(due_relative_to_the_newest_beat)
{
	mm_silence_t s;
	uint64_t now;

	ck_assert_int_eq(mm_silence_init(&s, 2, SUSPECT, TICK), 0);
	mm_silence_heard(&s, 0, 100 * MS);
	mm_silence_heard(&s, 1, 100 * MS);
	for (now = 100 * MS; now <= 300 * MS; now += TICK) {
		if (now % BEAT < TICK)
			mm_silence_heard(&s, 0, now);
		mm_silence_tick(&s, now);
	}
	mm_silence_heard(&s, 0, 300 * MS);
	for (; now <= 360 * MS; now += TICK)
		mm_silence_tick(&s, now);
	ck_assert_uint_gt(s.nodes[1].silent_ns, SUSPECT);
	ck_assert(!s.all_silent);
	ck_assert(!mm_silence_due(&s, 1));
	mm_silence_heard(&s, 0, now);
	mm_silence_tick(&s, now);
	ck_assert(mm_silence_due(&s, 1));
	ck_assert(!mm_silence_due(&s, 0));
	mm_silence_free(&s);
}
END_TEST

/* The stall limit: three ticks, at least 20 ms or a quarter of
 * SuspectTime, whichever is less. */
START_TEST(stall_limit)
{
	ck_assert_uint_eq(mm_silence_stall_ns(250 * MS, 15625000ULL),
			  46875000ULL);
	ck_assert_uint_eq(mm_silence_stall_ns(100 * MS, 6250000ULL), 20 * MS);
	ck_assert_uint_eq(mm_silence_stall_ns(20 * MS, 1250000ULL), 5 * MS);
	ck_assert_uint_eq(mm_silence_stall_ns(600000 * MS, 50 * MS),
			  150 * MS);
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

	ck_assert_int_eq(mm_silence_init(&s, 4, SUSPECT, TICK), 0);
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

/* A stall of the listener in the middle of a whole silence (slurmctld
 * busy while every node manager is stopped) restarts every silence but
 * does not end the episode: nobody was heard.  It ends when somebody is,
 * with the time of that in heard_again_ns. */
START_TEST(stall_in_whole_silence_does_not_end_it)
{
	mm_silence_t s;
	bool alive[3] = { true, true, true };
	uint64_t now = 1000 * MS;
	unsigned what;

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
	run(&s, &now, now + 500 * MS, TICK, BEAT, alive);
	for (int k = 0; k < 10; k++) {
		now += 1000 * MS;	/* a stall: no pass for a second */
		what = mm_silence_tick(&s, now);
		ck_assert(what & MM_SILENCE_STALL);
		ck_assert(!(what & MM_SILENCE_FORGIVEN));
		run(&s, &now, now + SUSPECT, TICK, BEAT, (bool[3]) { 0 });
		ck_assert(s.all_silent);
		ck_assert_uint_eq(s.heard_again_ns, 0);
		for (int i = 0; i < 3; i++)
			ck_assert(!mm_silence_due(&s, i));
	}
	mm_silence_heard(&s, 1, now);
	ck_assert(mm_silence_tick(&s, now) & MM_SILENCE_FORGIVEN);
	ck_assert_uint_eq(s.heard_again_ns, now);
	ck_assert(!s.all_silent);
	mm_silence_free(&s);
}
END_TEST

/* One node only: its silence is its own, the nobody rule needs two. */
START_TEST(single_node_is_drained)
{
	mm_silence_t s;

	ck_assert_int_eq(mm_silence_init(&s, 1, SUSPECT, TICK), 0);
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

	ck_assert_int_eq(mm_silence_init(&s, 3, SUSPECT, TICK), 0);
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
	tcase_add_test(tc, late_pass_is_not_silence);
	tcase_add_test(tc, stopped_controller_drains_none);
	tcase_add_test(tc, dead_in_a_stall_due_after_it);
	tcase_add_test(tc, late_passes_under_the_limit_count);
	tcase_add_test(tc, due_relative_to_the_newest_beat);
	tcase_add_test(tc, stall_limit);
	tcase_add_test(tc, nobody_heard_drains_none);
	tcase_add_test(tc, stall_in_whole_silence_does_not_end_it);
	tcase_add_test(tc, single_node_is_drained);
	tcase_add_test(tc, never_heard_is_not_judged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

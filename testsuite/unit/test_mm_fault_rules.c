/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mm_fault_rules.c - the Machine Manager's suspect and drain rules
 * (mm_fault_rules.c), alone and together with the listener's silence
 * rules (mm_silence.c) in a small simulation of both threads: silence of
 * every node at once drains nobody however long it lasts, the nodes may
 * come back one by one, and a single dead node is still drained.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "src/plugins/sched/storm/mm_fault_rules.h"
#include "src/plugins/sched/storm/mm_silence.h"

#include "check_run.h"

#define MS 1000000ULL
#define SEC 1000000000ULL
#define SUSPECT (250 * MS)
#define BEAT (SUSPECT / 4)		/* the node managers' heartbeat */
#define TICK (SUSPECT / 16)		/* the listener's pass */
#define NMAX 8

/* ---------------------------------------------------------- the rules */

static const mm_rules_conf_t conf5 = { .suspect_quanta = 5,
				       .suspect_ns = SUSPECT };

static mm_rules_cluster_t cluster(const mm_rules_tally_t *t)
{
	return (mm_rules_cluster_t) { .tally = t,
				      .since_start_ns = 100000 * MS };
}

/* Quanta in which another node answered: only those count. */
START_TEST(misses_count_when_another_answered)
{
	mm_rules_tally_t t = { 0 };
	mm_rules_node_t dead = { .acked_once = true };
	mm_rules_cluster_t c = cluster(&t);

	mm_rules_answered(&t, true);
	mm_rules_answered(&t, true);
	mm_rules_quantum_end(&t);
	/* nobody answers for 20 quanta: 20 misses, none of them counts */
	for (int q = 0; q < 20; q++) {
		mm_rules_missed(&t, &dead.misses, &dead.miss_quanta);
		mm_rules_quantum_end(&t);
	}
	ck_assert_uint_eq(dead.misses, 20);
	ck_assert_uint_eq(mm_rules_misses(&dead, &c), 0);
	ck_assert(!mm_rules_suspect(&conf5, &dead, &c, 0));
	/* another node answers again: from then on each quantum counts */
	for (int q = 1; q <= 5; q++) {
		mm_rules_answered(&t, false);
		mm_rules_missed(&t, &dead.misses, &dead.miss_quanta);
		mm_rules_quantum_end(&t);
		ck_assert_uint_eq(mm_rules_misses(&dead, &c), q);
	}
	ck_assert(mm_rules_suspect(&conf5, &dead, &c, 0));
	/* never more than it missed: a new miss after answered quanta */
	dead.misses = 0;
	mm_rules_missed(&t, &dead.misses, &dead.miss_quanta);
	for (int q = 0; q < 5; q++) {
		mm_rules_answered(&t, false);
		mm_rules_quantum_end(&t);
	}
	ck_assert_uint_eq(mm_rules_misses(&dead, &c), 1);
}
END_TEST

/* Fewer than two nodes ever answered: nobody to compare with, every miss
 * counts. */
START_TEST(lone_node_misses_count)
{
	mm_rules_tally_t t = { 0 };
	mm_rules_node_t n = { .acked_once = true };
	mm_rules_cluster_t c = cluster(&t);

	mm_rules_answered(&t, true);
	mm_rules_quantum_end(&t);
	for (int q = 0; q < 5; q++) {
		mm_rules_missed(&t, &n.misses, &n.miss_quanta);
		mm_rules_quantum_end(&t);
	}
	ck_assert_uint_eq(mm_rules_misses(&n, &c), 5);
	ck_assert(mm_rules_suspect(&conf5, &n, &c, 0));
}
END_TEST

/* Nobody heard, and SuspectTime after someone is heard again: the
 * controller's side; then the node's own. */
START_TEST(controller_side_and_its_grace)
{
	mm_rules_tally_t t = { .quanta = 100, .answering = 3 };
	mm_rules_node_t n = { .acked_once = true, .misses = 50,
			      .miss_quanta = 10 };
	mm_rules_cluster_t c = cluster(&t);
	uint64_t back = 5000 * MS;

	ck_assert(mm_rules_suspect(&conf5, &n, &c, back));
	c.nobody_heard = true;
	ck_assert(mm_rules_controller_side(&conf5, &c, back));
	ck_assert(!mm_rules_suspect(&conf5, &n, &c, back));
	c.nobody_heard = false;
	c.heard_again_ns = back;
	ck_assert(!mm_rules_suspect(&conf5, &n, &c, back));
	ck_assert(!mm_rules_suspect(&conf5, &n, &c, back + SUSPECT - 1));
	ck_assert(mm_rules_suspect(&conf5, &n, &c, back + SUSPECT));
	ck_assert(!mm_rules_controller_side(&conf5, &c, back + SUSPECT));
	/* a clock read just before the listener's end of the episode (the
	 * other thread) is within the grace too */
	ck_assert(mm_rules_controller_side(&conf5, &c, back - MS));
}
END_TEST

/* Never answered this MM: a node manager still starting gets the start
 * grace; drained ones are not drained again. */
START_TEST(start_grace_and_drained)
{
	mm_rules_tally_t t = { .quanta = 100, .answering = 3 };
	mm_rules_node_t n = { .misses = 50, .miss_quanta = 10 };
	mm_rules_cluster_t c = cluster(&t);

	c.since_start_ns = MM_START_GRACE_NS - 1;
	ck_assert(!mm_rules_suspect(&conf5, &n, &c, 0));
	c.since_start_ns = MM_START_GRACE_NS;
	ck_assert(mm_rules_suspect(&conf5, &n, &c, 0));
	n.drained = true;
	ck_assert(!mm_rules_suspect(&conf5, &n, &c, 0));
}
END_TEST

START_TEST(silent_over_suspect_time)
{
	mm_rules_node_t n = { .silent_ns = SUSPECT + 1 };

	ck_assert(!mm_rules_silent(&conf5, &n));	/* never heard */
	n.heard_ns = 1;
	ck_assert(mm_rules_silent(&conf5, &n));
	n.silent_ns = SUSPECT;
	ck_assert(!mm_rules_silent(&conf5, &n));
}
END_TEST

START_TEST(probe_timing)
{
	ck_assert_uint_eq(mm_rules_probe_backoff_ns(1), 100 * MS);
	ck_assert_uint_eq(mm_rules_probe_backoff_ns(2), 200 * MS);
	ck_assert_uint_eq(mm_rules_probe_backoff_ns(4), 800 * MS);
	ck_assert_uint_eq(mm_rules_probe_backoff_ns(5), MM_PROBE_DEAD_NS);
	ck_assert_uint_eq(mm_rules_probe_backoff_ns(1000), MM_PROBE_DEAD_NS);
	/* quiet: never (it would make the probe wait out its timeout) */
	ck_assert(!mm_rules_probe_now(true, true, 0, true, 10));
	ck_assert(mm_rules_probe_now(false, false, 0, true, 10));
	ck_assert(mm_rules_probe_now(false, true, 10, false, 10));
	ck_assert(!mm_rules_probe_now(false, true, 11, false, 10));
	ck_assert(!mm_rules_probe_now(false, false, 0, false, 10));
	ck_assert(!mm_rules_forget_peer(0) && !mm_rules_forget_peer(9));
	ck_assert(mm_rules_forget_peer(10) && mm_rules_forget_peer(20));
	ck_assert(!mm_rules_forget_peer(21));
}
END_TEST

/* FailSafe=500ms, Timeslice=40ms, ack timeout 160 ms: a dead node's probe
 * costs 320 ms. */
START_TEST(probe_fits_failsafe)
{
	uint64_t fs = 500 * MS, q = 40 * MS, probe = 320 * MS;

	/* no strobe yet: nothing to open */
	ck_assert(mm_rules_probe_fits(10 * SEC, 0, fs, q, probe));
	/* after a clean quantum: 40 + 320 + 40 <= 500 */
	ck_assert(mm_rules_probe_fits(SEC + 40 * MS, SEC, fs, q, probe));
	/* exactly at the edge */
	ck_assert(mm_rules_probe_fits(SEC + 140 * MS, SEC, fs, q, probe));
	ck_assert(!mm_rules_probe_fits(SEC + 141 * MS, SEC, fs, q, probe));
	/* after an operation waited out the ack timeout on a dead node */
	ck_assert(!mm_rules_probe_fits(SEC + 200 * MS, SEC, fs, q, probe));
	/* the default FailSafe=1s leaves room for it */
	ck_assert(mm_rules_probe_fits(SEC + 200 * MS, SEC, SEC, q, probe));
	/* a FailSafe shorter than a probe never fits */
	ck_assert(!mm_rules_probe_fits(SEC, SEC, 200 * MS, q, probe));
}
END_TEST

/* ------------------------------------------------- both threads at once */

/*
 * The listener (mm_silence.c) every TICK and the MM thread (these rules)
 * every quantum, on one clock.  A node whose node manager runs and is
 * reachable beats every BEAT (each at a phase of its own) and answers
 * every quantum; one that does not, neither.  Whichever thread's rule
 * says so drains it, once.
 */
typedef struct sim {
	int n;
	uint64_t quantum_ns;
	mm_rules_conf_t conf;
	mm_silence_t s;
	mm_rules_tally_t tally;
	bool up[NMAX];			/* running and reachable */
	bool acked_once[NMAX];
	uint32_t misses[NMAX];
	uint64_t miss_quanta[NMAX];
	uint64_t drained_at[NMAX];	/* 0: not drained */
	int drains;
	uint64_t now, next_quantum;
} sim_t;

static void sim_init(sim_t *m, int n, uint64_t quantum_ns, uint32_t quanta)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->quantum_ns = quantum_ns;
	m->conf = (mm_rules_conf_t) { .suspect_quanta = quanta,
				      .suspect_ns = SUSPECT };
	ck_assert_int_eq(mm_silence_init(&m->s, n, SUSPECT, TICK), 0);
	for (int i = 0; i < n; i++)
		m->up[i] = true;
	m->now = 1000 * MS;
	m->next_quantum = m->now;
}

static void drain(sim_t *m, int i)
{
	if (m->drained_at[i])
		return;
	m->drained_at[i] = m->now;
	m->drains++;
}

static void mm_quantum(sim_t *m, uint64_t t)
{
	mm_rules_cluster_t c = {
		.tally = &m->tally,
		.nobody_heard = m->s.all_silent,
		.heard_again_ns = m->s.heard_again_ns,
		.since_start_ns = t,
	};

	for (int i = 0; i < m->n; i++) {
		if (m->up[i]) {
			mm_rules_answered(&m->tally, !m->acked_once[i]);
			m->acked_once[i] = true;
			m->misses[i] = 0;
			mm_silence_heard(&m->s, i, t);	/* ack_heard_ns */
		} else {
			mm_rules_missed(&m->tally, &m->misses[i],
					&m->miss_quanta[i]);
		}
	}
	mm_rules_quantum_end(&m->tally);
	for (int i = 0; i < m->n; i++) {
		mm_rules_node_t n = {
			.drained = m->drained_at[i] != 0,
			.acked_once = m->acked_once[i],
			.misses = m->misses[i],
			.miss_quanta = m->miss_quanta[i],
			.heard_ns = m->s.nodes[i].heard_ns,
			.silent_ns = m->s.nodes[i].silent_ns,
		};

		if (mm_rules_suspect(&m->conf, &n, &c, t))
			drain(m, i);
	}
}

/* Both threads until `until`. */
static void sim_run(sim_t *m, uint64_t until)
{
	for (; m->now < until; m->now += TICK) {
		for (int i = 0; i < m->n; i++)
			if (m->up[i] &&
			    (m->now + i * BEAT / m->n) % BEAT < TICK)
				mm_silence_heard(&m->s, i, m->now);
		mm_silence_tick(&m->s, m->now);
		for (int i = 0; i < m->n; i++)
			if (mm_silence_due(&m->s, i))
				drain(m, i);
		for (; m->next_quantum <= m->now;
		     m->next_quantum += m->quantum_ns)
			mm_quantum(m, m->next_quantum);
	}
}

static void set_all(sim_t *m, bool up)
{
	for (int i = 0; i < m->n; i++)
		m->up[i] = up;
}

/* Quanta of the idle heartbeat (50 ms) and of a short Timeslice (2 ms),
 * where SuspectQuanta misses come before the listener finds nobody
 * heard. */
static const uint64_t quanta_ns[] = { 50 * MS, 2 * MS };
static const uint64_t silences_ns[] = { 1000 * MS, 10000 * MS, 60000 * MS };

/* Every node silent at once, for 1 s, 10 s and 60 s (every node manager
 * stopped, or the controller's link cut), then back at once: nobody
 * drained. */
START_TEST(whole_silence_drains_none)
{
	for (size_t q = 0; q < 2; q++) {
		for (size_t k = 0; k < 3; k++) {
			sim_t m;

			sim_init(&m, 4, quanta_ns[q], 50);
			sim_run(&m, m.now + 2000 * MS);
			set_all(&m, false);
			sim_run(&m, m.now + silences_ns[k]);
			ck_assert(m.s.all_silent);
			set_all(&m, true);
			sim_run(&m, m.now + 5000 * MS);
			ck_assert_msg(m.drains == 0,
				      "%d drained after %llu ms of silence at %llu us quanta",
				      m.drains,
				      (unsigned long long) (silences_ns[k] / MS),
				      (unsigned long long) (quanta_ns[q] / 1000));
			ck_assert(!m.s.all_silent);
			mm_silence_free(&m.s);
		}
	}
}
END_TEST

/*
 * After 60 s of silence the nodes come back one by one, the last
 * 0.6 SuspectTime after the first: nobody is drained; a fifth that never
 * comes back is drained SuspectTime after the first one came back at the
 * earliest, not at once for its 60 s of silence, and within a heartbeat
 * and two passes of that.
 */
START_TEST(staggered_return)
{
	for (size_t q = 0; q < 2; q++) {
		sim_t m;
		uint64_t back;

		sim_init(&m, 5, quanta_ns[q], 5);
		sim_run(&m, m.now + 2000 * MS);
		set_all(&m, false);
		sim_run(&m, m.now + 60000 * MS);
		back = m.now;
		for (int i = 0; i < 4; i++) {
			m.up[i] = true;
			sim_run(&m, m.now + SUSPECT / 5);
		}
		sim_run(&m, back + SUSPECT + BEAT + 2 * TICK);
		for (int i = 0; i < 4; i++)
			ck_assert_msg(!m.drained_at[i], "node %d drained", i);
		ck_assert(m.drained_at[4]);
		ck_assert_uint_ge(m.drained_at[4], back + SUSPECT);
		sim_run(&m, m.now + 5000 * MS);
		ck_assert_int_eq(m.drains, 1);
		mm_silence_free(&m.s);
	}
}
END_TEST

/* A node that died during the whole silence is drained once the others
 * are back, SuspectTime after them. */
START_TEST(dead_during_whole_silence)
{
	sim_t m;
	uint64_t back;

	sim_init(&m, 4, 20 * MS, 5);
	sim_run(&m, m.now + 2000 * MS);
	set_all(&m, false);
	sim_run(&m, m.now + 10000 * MS);
	back = m.now;
	m.up[0] = m.up[1] = m.up[3] = true;
	sim_run(&m, back + SUSPECT + BEAT + 2 * TICK);
	ck_assert(m.drained_at[2] >= back + SUSPECT);
	ck_assert_int_eq(m.drains, 1);
	mm_silence_free(&m.s);
}
END_TEST

/* One node dies among live ones, before a whole silence and after one:
 * drained within the detection time each time (SuspectTime and a beat by
 * its silence, or SuspectQuanta answered quanta and one more by its
 * misses, whichever comes first), nobody else. */
static void one_dies(sim_t *m, int victim, uint32_t quanta)
{
	uint64_t died = m->now;
	uint64_t by_misses = (quanta + 1) * m->quantum_ns;
	uint64_t by_silence = SUSPECT + BEAT + 2 * TICK;
	uint64_t limit = by_misses < by_silence ? by_misses : by_silence;

	m->up[victim] = false;
	while (!m->drained_at[victim]) {
		sim_run(m, m->now + TICK);
		ck_assert_uint_le(m->now - died, limit + TICK);
	}
	for (int i = 0; i < m->n; i++)
		ck_assert(i == victim || !m->drained_at[i]);
}

START_TEST(single_dead_node_before_and_after)
{
	const uint32_t quanta[] = { 5, 50 };

	for (size_t k = 0; k < 2; k++) {
		sim_t m;

		sim_init(&m, 4, 20 * MS, quanta[k]);
		sim_run(&m, m.now + 2000 * MS);
		one_dies(&m, 1, quanta[k]);
		m.up[1] = true;
		sim_run(&m, m.now + 2000 * MS);
		set_all(&m, false);
		sim_run(&m, m.now + 10000 * MS);
		set_all(&m, true);
		sim_run(&m, m.now + 2000 * MS);
		ck_assert_int_eq(m.drains, 1);
		m.drained_at[1] = 0;	/* returned to service */
		m.drains = 0;
		one_dies(&m, 3, quanta[k]);
		ck_assert_int_eq(m.drains, 1);
		mm_silence_free(&m.s);
	}
}
END_TEST

/* The controller's link flaps: silent, heard for a moment, silent again,
 * over and over; nobody is drained. */
START_TEST(flapping_link_drains_none)
{
	sim_t m;

	sim_init(&m, 4, 20 * MS, 5);
	sim_run(&m, m.now + 2000 * MS);
	for (int k = 0; k < 10; k++) {
		set_all(&m, false);
		sim_run(&m, m.now + 3000 * MS);
		set_all(&m, true);
		sim_run(&m, m.now + BEAT + TICK);
	}
	sim_run(&m, m.now + 3000 * MS);
	ck_assert_int_eq(m.drains, 0);
	mm_silence_free(&m.s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mm_fault_rules");
	TCase *rules = tcase_create("rules");
	TCase *both = tcase_create("listener and MM thread");

	tcase_add_test(rules, misses_count_when_another_answered);
	tcase_add_test(rules, lone_node_misses_count);
	tcase_add_test(rules, controller_side_and_its_grace);
	tcase_add_test(rules, start_grace_and_drained);
	tcase_add_test(rules, silent_over_suspect_time);
	tcase_add_test(rules, probe_timing);
	tcase_add_test(rules, probe_fits_failsafe);
	tcase_add_test(both, whole_silence_drains_none);
	tcase_add_test(both, staggered_return);
	tcase_add_test(both, dead_during_whole_silence);
	tcase_add_test(both, single_dead_node_before_and_after);
	tcase_add_test(both, flapping_link_drains_none);
	suite_add_tcase(s, rules);
	suite_add_tcase(s, both);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

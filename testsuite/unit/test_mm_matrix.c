/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mm_matrix.c - the Machine Manager's slot matrix (mm_matrix.c):
 * where a job is placed, that it keeps its slot, the cap on slots,
 * compaction, the Ousterhout fill, the slot rotation and the job table.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "src/plugins/sched/storm/mm_matrix.h"

#include "check_run.h"

#define NNODES 8

static mm_matrix_t m;

static void setup(void)
{
	memset(&m, 0, sizeof(m));
}

static void teardown(void)
{
	mm_matrix_free(&m);
}

/* A running gang job on the nodes listed (ranks, ended by -1). */
static mm_job_t *add_job(uint32_t id, storm_policy_t pol, ...)
{
	uint64_t words[1] = { 0 };
	bool announce;
	mm_job_t *j = mm_matrix_add(&m, id, 1000);
	va_list ap;
	int k;

	ck_assert_ptr_nonnull(j);
	va_start(ap, pol);
	while ((k = va_arg(ap, int)) >= 0)
		words[0] |= 1ULL << k;
	va_end(ap);
	ck_assert_int_eq(mm_job_set_nodes(j, words, NNODES), 1);
	ck_assert(mm_job_apply_policy(j, pol, &announce));
	ck_assert(!announce);
	return j;
}

static int slot_of(uint32_t id)
{
	mm_job_t *j = mm_matrix_find(&m, id);

	ck_assert_ptr_nonnull(j);
	return j->slot;
}

static uint32_t mask_of(uint32_t id)
{
	mm_job_t *j = mm_matrix_find(&m, id);

	ck_assert_ptr_nonnull(j);
	return j->mask;
}

static void drop(uint32_t id)
{
	for (int i = 0; i < m.njobs; i++)
		if (m.jobs[i].job_id == id) {
			mm_matrix_drop(&m, i);
			return;
		}
	ck_abort_msg("no job %u", id);
}

static int placed, unplaced;

static void count_placement(void *arg, const mm_job_t *j)
{
	(void) arg;
	if (j->slot >= 0)
		placed++;
	else
		unplaced++;
}

START_TEST(new_job_takes_lowest_free_slot)
{
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 1, 2, -1);
	add_job(3, STORM_POLICY_GANG, 2, 3, -1);
	add_job(4, STORM_POLICY_GANG, 4, 5, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(2), 1);	/* node 1 taken in slot 0 */
	ck_assert_int_eq(slot_of(3), 0);	/* shares nothing with job 1 */
	ck_assert_int_eq(slot_of(4), 0);
	ck_assert_int_eq(m.nslots, 2);
}
END_TEST

START_TEST(placement_callback_per_new_job)
{
	add_job(1, STORM_POLICY_GANG, 0, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	placed = unplaced = 0;
	mm_matrix_update(&m, count_placement, NULL);
	ck_assert_int_eq(placed, 2);
	add_job(3, STORM_POLICY_GANG, 0, -1);
	placed = 0;
	mm_matrix_update(&m, count_placement, NULL);
	ck_assert_int_eq(placed, 1);		/* only the new one */
	ck_assert_int_eq(unplaced, 0);
}
END_TEST

START_TEST(jobs_keep_their_slot)
{
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 0, 1, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(2), 1);
	/* a job added later that fits in slot 0 does not move job 2 */
	add_job(3, STORM_POLICY_GANG, 2, 3, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(2), 1);
	ck_assert_int_eq(slot_of(3), 0);
}
END_TEST

START_TEST(slot_cap_runs_job_unswitched)
{
	for (uint32_t id = 1; id <= MM_MAX_SLOTS; id++)
		add_job(id, STORM_POLICY_GANG, 0, -1);
	add_job(100, STORM_POLICY_GANG, 0, 1, -1);
	placed = unplaced = 0;
	mm_matrix_update(&m, count_placement, NULL);
	ck_assert_int_eq(placed, MM_MAX_SLOTS);
	ck_assert_int_eq(unplaced, 1);
	ck_assert_int_eq(m.nslots, MM_MAX_SLOTS);
	for (uint32_t id = 1; id <= MM_MAX_SLOTS; id++)
		ck_assert_int_eq(slot_of(id), (int) id - 1);
	/* the 33rd job on node 0: no slot, not switched, runs always */
	ck_assert_int_eq(slot_of(100), -1);
	ck_assert(!mm_matrix_find(&m, 100)->gang);
	ck_assert_uint_eq(mask_of(100), STORM_GANG_ALL_SLOTS);
	/* with 32 slots each job's own bit is its slot */
	ck_assert_uint_eq(mask_of(32), 1u << 31);
}
END_TEST

START_TEST(compaction_closes_empty_slots)
{
	add_job(1, STORM_POLICY_GANG, 0, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	add_job(3, STORM_POLICY_GANG, 0, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 3);
	drop(2);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 2);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(3), 1);	/* slot 2 became 1 */
	drop(1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 1);
	ck_assert_int_eq(slot_of(3), 0);
	drop(3);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 0);
}
END_TEST

START_TEST(freed_slot_is_reused_lowest_first)
{
	add_job(1, STORM_POLICY_GANG, 0, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	add_job(3, STORM_POLICY_GANG, 0, -1);
	mm_matrix_update(&m, NULL, NULL);
	drop(1);
	add_job(4, STORM_POLICY_GANG, 0, -1);
	/* placement runs before compaction: job 4 takes the hole at 0 */
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(4), 0);
	ck_assert_int_eq(slot_of(2), 1);
	ck_assert_int_eq(slot_of(3), 2);
}
END_TEST

START_TEST(ousterhout_fill)
{
	/* slot 0: job 1 on 0-1; slot 1: job 2 on 0 and job 3 on 1-2 */
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	add_job(3, STORM_POLICY_GANG, 1, 2, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(2), 1);
	ck_assert_int_eq(slot_of(3), 1);
	ck_assert_int_eq(m.nslots, 2);
	/* nodes 0 and 1 busy in both slots: no fill for anyone */
	ck_assert_uint_eq(mask_of(1), 0x1);
	ck_assert_uint_eq(mask_of(2), 0x2);
	ck_assert_uint_eq(mask_of(3), 0x2);
}
END_TEST

START_TEST(fill_blocked_by_any_shared_node)
{
	/* a chain 0-1, 1-2, 2-3: each job shares a node with a job of the
	 * other slot, so nobody fills */
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 1, 2, -1);
	add_job(3, STORM_POLICY_GANG, 2, 3, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), 0);
	ck_assert_int_eq(slot_of(2), 1);
	ck_assert_int_eq(slot_of(3), 0);
	/* job 2 shares node 1 with job 1 and node 2 with job 3 */
	ck_assert_uint_eq(mask_of(2), 0x2);
	/* job 3 shares node 2 with job 2 (slot 1): slot 0 only */
	ck_assert_uint_eq(mask_of(3), 0x1);
	/* job 1 shares node 1 with job 2 */
	ck_assert_uint_eq(mask_of(1), 0x1);
}
END_TEST

START_TEST(fill_needs_every_node_free)
{
	add_job(1, STORM_POLICY_GANG, 0, -1);		/* slot 0 */
	add_job(2, STORM_POLICY_GANG, 0, 1, -1);	/* slot 1 */
	add_job(3, STORM_POLICY_GANG, 2, 3, -1);	/* slot 0 */
	add_job(4, STORM_POLICY_GANG, 3, 4, -1);	/* slot 1: 3 clashes */
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(3), 0);
	ck_assert_int_eq(slot_of(4), 1);
	/* node 2 of job 3 is free in slot 1, node 3 is not (job 4) */
	ck_assert_uint_eq(mask_of(3), 0x1);
	ck_assert_uint_eq(mask_of(4), 0x2);
	/* job 2 in slot 0 would clash with job 1 on node 0 */
	ck_assert_uint_eq(mask_of(2), 0x2);
	ck_assert_uint_eq(mask_of(1), 0x1);
}
END_TEST

START_TEST(fill_hole_goes_to_first_job)
{
	/* slots 0, 1, 2 each hold one job on node 0; jobs 4 and 5 share
	 * node 2, so only one of them can fill slot 2: the earlier one in
	 * the table */
	add_job(1, STORM_POLICY_GANG, 0, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	add_job(3, STORM_POLICY_GANG, 0, -1);
	add_job(4, STORM_POLICY_GANG, 1, 2, -1);
	add_job(5, STORM_POLICY_GANG, 2, 3, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 3);
	ck_assert_int_eq(slot_of(4), 0);
	ck_assert_int_eq(slot_of(5), 1);
	ck_assert_uint_eq(mask_of(4), 0x1 | 0x4);
	ck_assert_uint_eq(mask_of(5), 0x2);
	ck_assert_uint_eq(mask_of(1), 0x1);
	ck_assert_uint_eq(mask_of(2), 0x2);
	ck_assert_uint_eq(mask_of(3), 0x4);
}
END_TEST

START_TEST(lone_job_runs_in_every_slot)
{
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 0, 1, -1);
	add_job(3, STORM_POLICY_GANG, 6, 7, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(3), 0);
	ck_assert_uint_eq(mask_of(3), STORM_GANG_ALL_SLOTS);
	ck_assert_uint_eq(mask_of(1), 0x1);
	ck_assert_uint_eq(mask_of(2), 0x2);
}
END_TEST

START_TEST(mpl_one_freezes_nothing)
{
	add_job(1, STORM_POLICY_GANG, 0, 1, -1);
	add_job(2, STORM_POLICY_GANG, 2, 3, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 1);
	ck_assert_uint_eq(mask_of(1), STORM_GANG_ALL_SLOTS);
	ck_assert_uint_eq(mask_of(2), STORM_GANG_ALL_SLOTS);
}
END_TEST

START_TEST(local_and_held_jobs_take_no_slot)
{
	mm_job_t *h;

	add_job(1, STORM_POLICY_LOCAL, 0, -1);
	add_job(2, STORM_POLICY_GANG, 0, -1);
	h = add_job(3, STORM_POLICY_FLEXIBLE, 0, -1);
	h->held = true;
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(slot_of(1), -1);
	ck_assert_int_eq(slot_of(3), -1);
	ck_assert_int_eq(slot_of(2), 0);
	ck_assert_int_eq(m.nslots, 1);
	ck_assert_uint_eq(mask_of(1), STORM_GANG_ALL_SLOTS);
	ck_assert_uint_eq(mask_of(2), STORM_GANG_ALL_SLOTS);
	ck_assert_str_eq(mm_job_policy_str(mm_matrix_find(&m, 1)), "local");
	ck_assert_str_eq(mm_job_policy_str(mm_matrix_find(&m, 2)), "gang");
	ck_assert_str_eq(mm_job_policy_str(h), "held");
	h->held = false;
	ck_assert_str_eq(mm_job_policy_str(h), "flexible");
}
END_TEST

START_TEST(policy_change_keeps_or_drops_slot)
{
	mm_job_t *j;
	bool announce;

	add_job(1, STORM_POLICY_GANG, 0, -1);
	j = add_job(2, STORM_POLICY_GANG, 0, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(j->slot, 1);
	/* gang to flexible: switched either way, the slot stays */
	ck_assert(mm_job_apply_policy(j, STORM_POLICY_FLEXIBLE, &announce));
	ck_assert(announce);
	ck_assert_int_eq(j->slot, 1);
	ck_assert_uint_eq(j->how, STORM_GANG_SWITCH_IDLE);
	/* the same again: no change, nothing to announce */
	ck_assert(!mm_job_apply_policy(j, STORM_POLICY_FLEXIBLE, &announce));
	ck_assert(!announce);
	/* to local: no longer switched, the slot goes */
	ck_assert(mm_job_apply_policy(j, STORM_POLICY_LOCAL, &announce));
	ck_assert_int_eq(j->slot, -1);
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(m.nslots, 1);
}
END_TEST

START_TEST(rotation_visits_slots_in_order)
{
	int cur = 0;

	/* one strobe per quantum: 0, 1, 2, 0, ... */
	for (int i = 1; i <= 6; i++) {
		cur = mm_matrix_next_slot(cur, 1, 3);
		ck_assert_int_eq(cur, i % 3);
	}
	/* a strobe spanning two quanta (StrobeInterval) steps over them */
	ck_assert_int_eq(mm_matrix_next_slot(0, 2, 3), 2);
	ck_assert_int_eq(mm_matrix_next_slot(2, 2, 3), 1);
	/* one slot or none: always slot 0 */
	ck_assert_int_eq(mm_matrix_next_slot(0, 1, 1), 0);
	ck_assert_int_eq(mm_matrix_next_slot(5, 1, 0), 0);
}
END_TEST

START_TEST(node_sets)
{
	uint64_t w[2] = { 0, 1ULL << 3 };	/* node 67 */
	mm_job_t *a = mm_matrix_add(&m, 1, 0), *b = mm_matrix_add(&m, 2, 0);

	ck_assert_int_eq(mm_job_set_nodes(a, w, 100), 1);
	ck_assert_int_eq(mm_job_set_nodes(a, w, 100), 0);	/* same */
	ck_assert(mm_job_has_node(a, 67));
	ck_assert(!mm_job_has_node(a, 3));
	ck_assert(!mm_job_has_node(a, 100));
	ck_assert_int_eq(mm_job_set_nodes(b, w, 100), 1);
	ck_assert(mm_job_overlap(a, b));
	w[1] = 1;
	ck_assert_int_eq(mm_job_set_nodes(b, w, 100), 1);	/* moved */
	ck_assert(!mm_job_overlap(a, b));
}
END_TEST

START_TEST(table_generations)
{
	mm_table_t tab = { 0 };
	mm_job_t *h;

	add_job(1, STORM_POLICY_GANG, 0, -1);
	add_job(2, STORM_POLICY_FLEXIBLE, 0, -1);
	h = add_job(3, STORM_POLICY_GANG, 1, -1);
	h->held = true;
	mm_matrix_update(&m, NULL, NULL);
	ck_assert_int_eq(mm_table_build(&tab, &m), 1);
	ck_assert(tab.dirty);
	ck_assert_uint_eq(tab.gen, 1);
	ck_assert_uint_eq(tab.t->gen, 1);
	ck_assert_uint_eq(tab.t->magic, STORM_GANG_MAGIC);
	ck_assert_uint_eq(tab.t->njobs, 3);
	ck_assert_uint_eq(tab.t->nslots, 2);
	ck_assert_uint_eq(tab.len, sizeof(*tab.t) + 3 * sizeof(tab.t->jobs[0]));
	ck_assert_uint_eq(tab.t->jobs[0].slot_mask, 0x1);
	ck_assert_uint_eq(tab.t->jobs[0].how, STORM_GANG_SWITCH_FREEZE);
	ck_assert_uint_eq(tab.t->jobs[1].slot_mask, 0x2);
	ck_assert_uint_eq(tab.t->jobs[1].how, STORM_GANG_SWITCH_IDLE);
	ck_assert_uint_eq(tab.t->jobs[1].nslots, 2);
	ck_assert_uint_eq(tab.t->jobs[1].uid, 1000);
	/* held: no slots, and the node managers leave it to Slurm */
	ck_assert_uint_eq(tab.t->jobs[2].slot_mask, 0);
	ck_assert_uint_eq(tab.t->jobs[2].how, STORM_GANG_SWITCH_HOLD);
	/* the same matrix: no new generation */
	tab.dirty = false;
	ck_assert_int_eq(mm_table_build(&tab, &m), 0);
	ck_assert(!tab.dirty);
	ck_assert_uint_eq(tab.gen, 1);
	/* every job released (the MM stopping): a new one */
	mm_matrix_release_all(&m);
	ck_assert_int_eq(mm_table_build(&tab, &m), 1);
	ck_assert_uint_eq(tab.gen, 2);
	ck_assert_uint_eq(tab.t->jobs[0].slot_mask, STORM_GANG_ALL_SLOTS);
	mm_table_free(&tab);
	ck_assert_ptr_null(tab.t);
	ck_assert_uint_eq(tab.gen, 2);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mm_matrix");
	TCase *tc = tcase_create("matrix");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, new_job_takes_lowest_free_slot);
	tcase_add_test(tc, placement_callback_per_new_job);
	tcase_add_test(tc, jobs_keep_their_slot);
	tcase_add_test(tc, slot_cap_runs_job_unswitched);
	tcase_add_test(tc, compaction_closes_empty_slots);
	tcase_add_test(tc, freed_slot_is_reused_lowest_first);
	tcase_add_test(tc, ousterhout_fill);
	tcase_add_test(tc, fill_blocked_by_any_shared_node);
	tcase_add_test(tc, fill_needs_every_node_free);
	tcase_add_test(tc, fill_hole_goes_to_first_job);
	tcase_add_test(tc, lone_job_runs_in_every_slot);
	tcase_add_test(tc, mpl_one_freezes_nothing);
	tcase_add_test(tc, local_and_held_jobs_take_no_slot);
	tcase_add_test(tc, policy_change_keeps_or_drops_slot);
	tcase_add_test(tc, rotation_visits_slots_in_order);
	tcase_add_test(tc, node_sets);
	tcase_add_test(tc, table_generations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node sets and tree topology: pure functions, no fabric */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sm_internal.h"

START_TEST(set_parse_format)
{
	storm_set_t s;
	char buf[128];

	ck_assert_int_eq(storm_set_parse(&s, "0-3,7,9-12"), 0);
	ck_assert_int_eq(storm_set_count(&s), 9);
	ck_assert(storm_set_has(&s, 0) && storm_set_has(&s, 3));
	ck_assert(!storm_set_has(&s, 4) && storm_set_has(&s, 7));
	ck_assert(!storm_set_has(&s, 8) && storm_set_has(&s, 12));
	storm_set_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0-3,7,9-12");
	ck_assert_int_eq(storm_set_parse(&s, ""), 0);
	ck_assert_int_eq(storm_set_count(&s), 0);
	ck_assert_int_eq(storm_set_parse(&s, "1023"), 0);
	ck_assert(storm_set_has(&s, 1023));
	/* errors leave the set alone */
	ck_assert_int_eq(storm_set_parse(&s, "1024"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(&s, "3-1"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(&s, "1,,2"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(&s, "a"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(&s, "-1"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(&s, "5-"), -EINVAL);
	ck_assert_int_eq(storm_set_parse(NULL, "1"), -EINVAL);
	ck_assert(storm_set_has(&s, 1023) && storm_set_count(&s) == 1);
	/* truncated format reports needed length */
	storm_set_parse(&s, "0-3,7,9-12");
	ck_assert_int_eq(storm_set_format(&s, buf, 4), 10);
	ck_assert_int_eq((int)strlen(buf), 3);
}
END_TEST

START_TEST(set_ops_iterate)
{
	storm_set_t s;
	storm_set_clear(&s);
	ck_assert_int_eq(storm_set_add(&s, -1), -EINVAL);
	ck_assert_int_eq(storm_set_add(&s, STORM_MAX_RANKS), -EINVAL);
	ck_assert_int_eq(storm_set_add(&s, 63), 0);
	ck_assert_int_eq(storm_set_add(&s, 64), 0);
	ck_assert_int_eq(storm_set_add(&s, 700), 0);
	int want[] = { 63, 64, 700 }, i = 0;
	for (int r = storm_set_next(&s, 0); r >= 0; r = storm_set_next(&s, r + 1))
		ck_assert_int_eq(r, want[i++]);
	ck_assert_int_eq(i, 3);
	storm_set_remove(&s, 64);
	ck_assert_int_eq(storm_set_count(&s), 2);
	ck_assert_int_eq(storm_set_next(&s, 64), 700);
	ck_assert_int_eq(storm_set_next(&s, 701), -1);
	ck_assert(!storm_set_has(&s, -5));
}
END_TEST

/* every member reached exactly once, parent/child relations consistent */
static void check_tree(const char *spec, int root, int k)
{
	storm_set_t s, seen;
	struct sm_tree t, tc;
	int n = 0;

	ck_assert_int_eq(storm_set_parse(&s, spec), 0);
	storm_set_clear(&seen);
	int nodes = storm_set_count(&s) + (storm_set_has(&s, root) ? 0 : 1);
	for (int pos = 0; pos < nodes; pos++) {
		int r = sm_tree_rank_at(&s, root, pos);
		ck_assert_int_ge(r, 0);
		ck_assert_int_eq(sm_tree_build(&s, root, k, r, &t), 0);
		ck_assert_int_eq(t.pos, pos);
		ck_assert_int_eq(t.n, nodes);
		ck_assert(!storm_set_has(&seen, r));
		storm_set_add(&seen, r);
		n++;
		ck_assert_int_le(t.nchild, k);
		for (int c = 0; c < t.nchild; c++) {
			ck_assert_int_eq(sm_tree_build(&s, root, k, t.child[c],
						       &tc), 0);
			ck_assert_int_eq(tc.parent, r);
			ck_assert_int_eq(tc.depth, t.depth + 1);
		}
		if (pos == 0)
			ck_assert_int_eq(t.parent, -1);
		ck_assert_int_le(t.depth, t.height);
	}
	ck_assert_int_eq(n, nodes);
	/* subtree of the root is everything */
	storm_set_t sub;
	storm_set_clear(&sub);
	sm_tree_subtree(&s, root, k, root, &sub);
	ck_assert_int_eq(storm_set_count(&sub), nodes);
	/* a non-member is not in the tree */
	int out = 1023;
	ck_assert_int_eq(sm_tree_build(&s, root, k, out, &t), -ENOENT);
}

START_TEST(tree_shapes)
{
	check_tree("0-15", 16, 4);       /* root outside */
	check_tree("0-15", 0, 4);        /* root inside, lowest */
	check_tree("0-15", 9, 2);        /* root inside, middle */
	check_tree("3,5,70-80,500", 2, 3);
	check_tree("1", 0, 4);
	check_tree("", 7, 4);
	check_tree("0-1000", 1001, 8);
	check_tree("0-31", 40, 1);       /* a chain */
}
END_TEST

START_TEST(tree_subtree_exact)
{
	storm_set_t s, sub;
	storm_set_parse(&s, "0-7");
	/* root 8 outside: positions 0=8, 1..8 = ranks 0..7; k=2:
	 * pos1 (rank0) -> pos3,4 (ranks 2,3) -> pos7,8 (ranks 6,7) under pos3 */
	storm_set_clear(&sub);
	sm_tree_subtree(&s, 8, 2, 0, &sub);
	char buf[64];
	storm_set_format(&sub, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0,2-3,6-7");
	struct sm_tree t;
	sm_tree_build(&s, 8, 2, 2, &t);
	ck_assert_int_eq(t.parent, 0);
	ck_assert_int_eq(t.nchild, 2);
	ck_assert_int_eq(t.child[0], 6);
	ck_assert_int_eq(t.height, 3);
	ck_assert_int_eq(t.depth, 2);
}
END_TEST

static void check_lost(const char *set, int root, int k, const int *cut,
		       int ncut, const char *want)
{
	storm_set_t s, failed, lost;
	char buf[256];

	storm_set_parse(&s, set);
	storm_set_clear(&failed);
	for (int i = 0; i < ncut; i++)
		sm_tree_subtree(&s, root, k, cut[i], &failed);
	sm_tree_lost(&s, root, k, &failed, &lost);
	storm_set_format(&lost, buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
}

/* The roots of the failed subtrees, and nothing below them */
START_TEST(tree_lost_names_the_cut)
{
	check_lost("0-31", 40, 1, (int[]){ 5 }, 1, "5");	/* a chain */
	check_lost("0-31", 40, 1, (int[]){ 9, 5 }, 2, "5");
	check_lost("0-7", 8, 2, (int[]){ 2, 0 }, 2, "0");	/* 2 under 0 */
	check_lost("0-7", 8, 2, (int[]){ 0, 1 }, 2, "0-1");
	check_lost("0-7", 8, 2, (int[]){ 7 }, 1, "7");		/* a leaf */
	check_lost("0-15", 0, 4, (int[]){ 1, 12 }, 2, "1,12");	/* root inside */
	check_lost("0-7", 8, 2, NULL, 0, "");

	/* a rank outside the set is no cut; the root inside the set,
	 * failed, is (a COMPARE-AND-WRITE's serializer) */
	storm_set_t s, failed, lost;

	storm_set_parse(&s, "0-7");
	storm_set_parse(&failed, "20");
	sm_tree_lost(&s, 8, 2, &failed, &lost);
	ck_assert_int_eq(storm_set_count(&lost), 0);
	storm_set_parse(&failed, "0");
	sm_tree_lost(&s, 0, 2, &failed, &lost);
	ck_assert_int_eq(storm_set_count(&lost), 1);
	ck_assert(storm_set_has(&lost, 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stormmech-set-tree");
	TCase *tc = tcase_create("set");
	tcase_add_test(tc, set_parse_format);
	tcase_add_test(tc, set_ops_iterate);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree");
	tcase_add_test(tc, tree_shapes);
	tcase_add_test(tc, tree_subtree_exact);
	tcase_add_test(tc, tree_lost_names_the_cut);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_tree.c - k-ary tree over (root, members of set).
 *
 * Position 0 is the root; positions 1.. are the members in ascending rank
 * order without the root.  Every node derives the same tree from the
 * header alone, so a root outside the set (srun, the MM) needs no setup.
 */
#include <errno.h>
#include <string.h>

#include "sm_internal.h"

#define NW (STORM_MAX_RANKS / 64)

/* number of members below rank r, root excluded */
static int rank_pos(const storm_set_t *set, int root, int r)
{
	int n = 0;
	int w = r / 64;

	if (r == root)
		return 0;
	if (!storm_set_has(set, r))
		return -1;
	for (int i = 0; i < w; i++)
		n += __builtin_popcountll(set->bits[i]);
	if (r % 64)
		n += __builtin_popcountll(set->bits[w] & ((1ull << (r % 64)) - 1));
	if (root < r && storm_set_has(set, root))
		n--;
	return n + 1;
}

int sm_tree_rank_at(const storm_set_t *set, int root, int pos)
{
	if (pos == 0)
		return root;
	int want = pos - 1;   /* index among members without root */
	for (int w = 0; w < NW; w++) {
		uint64_t m = set->bits[w];
		if (root / 64 == w)
			m &= ~(1ull << (root % 64));
		int c = __builtin_popcountll(m);
		if (want >= c) {
			want -= c;
			continue;
		}
		while (want--)
			m &= m - 1;
		return w * 64 + __builtin_ctzll(m);
	}
	return -1;
}

static int depth_of(int pos, int k)
{
	int d = 0;
	while (pos > 0) {
		pos = (pos - 1) / k;
		d++;
	}
	return d;
}

int sm_tree_build(const storm_set_t *set, int root, int arity, int me,
		  struct sm_tree *t)
{
	if (arity < 1 || arity > SM_MAX_ARITY || root < 0 ||
	    root >= STORM_MAX_RANKS)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->n = storm_set_count(set) + (storm_set_has(set, root) ? 0 : 1);
	t->pos = rank_pos(set, root, me);
	t->parent = -1;
	t->height = depth_of(t->n - 1, arity);
	if (t->pos < 0)
		return -ENOENT;
	t->depth = depth_of(t->pos, arity);
	if (t->pos > 0)
		t->parent = sm_tree_rank_at(set, root, (t->pos - 1) / arity);
	for (int i = 0; i < arity; i++) {
		int c = t->pos * arity + 1 + i;
		if (c >= t->n)
			break;
		t->child[t->nchild++] = sm_tree_rank_at(set, root, c);
	}
	return 0;
}

void sm_tree_subtree(const storm_set_t *set, int root, int arity, int rank,
		     storm_set_t *out)
{
	int n = storm_set_count(set) + (storm_set_has(set, root) ? 0 : 1);
	int p = rank_pos(set, root, rank);
	if (p < 0)
		return;
	/* breadth-first by position ranges: level l spans [lo, hi] */
	long lo = p, hi = p;
	while (lo < n) {
		for (long q = lo; q <= hi && q < n; q++)
			storm_set_add(out, sm_tree_rank_at(set, root, (int)q));
		lo = lo * arity + 1;
		hi = hi * arity + arity;
	}
}

void sm_tree_lost(const storm_set_t *set, int root, int arity,
		  const storm_set_t *failed, storm_set_t *lost)
{
	storm_set_clear(lost);
	for (int r = storm_set_next(failed, 0); r >= 0;
	     r = storm_set_next(failed, r + 1)) {
		int p = rank_pos(set, root, r);
		int parent;

		if (p < 0)
			continue;	/* not a member */
		if (p == 0) {		/* the root: nobody above to blame */
			storm_set_add(lost, r);
			continue;
		}
		parent = sm_tree_rank_at(set, root, (p - 1) / arity);
		if (!storm_set_has(failed, parent))
			storm_set_add(lost, r);
	}
}

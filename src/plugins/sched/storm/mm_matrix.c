/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_matrix.c - the Machine Manager's Ousterhout matrix (mm_matrix.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mm_matrix.h"

#define WORDS(nbits) (((nbits) + 63) / 64)

extern bool mm_job_switched(const mm_job_t *j)
{
	return j->gang && !j->held;
}

extern bool mm_job_has_node(const mm_job_t *j, int k)
{
	return k >= 0 && k < j->nbits &&
	       (j->nodes[k / 64] >> (k % 64)) & 1;
}

extern bool mm_job_overlap(const mm_job_t *a, const mm_job_t *b)
{
	int n = WORDS(a->nbits < b->nbits ? a->nbits : b->nbits);

	for (int w = 0; w < n; w++)
		if (a->nodes[w] & b->nodes[w])
			return true;
	return false;
}

extern int mm_job_set_nodes(mm_job_t *j, const uint64_t *words, int nbits)
{
	size_t len = (size_t) WORDS(nbits) * sizeof(uint64_t);
	uint64_t *copy;

	if (j->nodes && j->nbits == nbits && !memcmp(j->nodes, words, len))
		return 0;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, words, len);
	free(j->nodes);
	j->nodes = copy;
	j->nbits = nbits;
	return 1;
}

/*
 * Policy=local jobs are never switched (they take no slot: the node's own
 * scheduler time-shares them); gang and flexible jobs take a slot and
 * differ only in what a node does outside it, so a switch between those
 * two keeps the slot, and either way it applies at the next strobe.
 */
extern bool mm_job_apply_policy(mm_job_t *j, storm_policy_t pol,
				bool *announce)
{
	bool gang = pol != STORM_POLICY_LOCAL;
	uint32_t how = pol == STORM_POLICY_FLEXIBLE ? STORM_GANG_SWITCH_IDLE :
						     STORM_GANG_SWITCH_FREEZE;
	bool changed = j->gang != gang || j->how != how || !j->seen_policy;

	if (j->gang != gang)
		j->slot = -1;
	*announce = changed && j->seen_policy;
	j->gang = gang;
	j->how = how;
	j->seen_policy = true;
	return changed;
}

extern const char *mm_job_policy_str(const mm_job_t *j)
{
	if (j->held)
		return "held";
	if (!j->gang)
		return "local";
	return j->how == STORM_GANG_SWITCH_IDLE ? "flexible" : "gang";
}

extern mm_job_t *mm_matrix_find(mm_matrix_t *m, uint32_t job_id)
{
	for (int i = 0; i < m->njobs; i++)
		if (m->jobs[i].job_id == job_id)
			return &m->jobs[i];
	return NULL;
}

extern mm_job_t *mm_matrix_add(mm_matrix_t *m, uint32_t job_id, uint32_t uid)
{
	mm_job_t *j;

	if (m->njobs == m->capjobs) {
		int cap = m->capjobs ? m->capjobs * 2 : 64;
		mm_job_t *p = realloc(m->jobs, (size_t) cap * sizeof(*p));

		if (!p)
			return NULL;
		m->jobs = p;
		m->capjobs = cap;
	}
	j = &m->jobs[m->njobs++];
	memset(j, 0, sizeof(*j));
	j->job_id = job_id;
	j->uid = uid;
	j->slot = -1;
	return j;
}

extern void mm_matrix_drop(mm_matrix_t *m, int i)
{
	free(m->jobs[i].nodes);
	m->jobs[i] = m->jobs[--m->njobs];
}

extern void mm_matrix_free(mm_matrix_t *m)
{
	while (m->njobs)
		mm_matrix_drop(m, m->njobs - 1);
	free(m->jobs);
	memset(m, 0, sizeof(*m));
}

/* Does another switched job of slot hold one of j's nodes? */
static bool slot_conflict(const mm_matrix_t *m, const mm_job_t *j, int slot)
{
	for (int k = 0; k < m->njobs; k++) {
		const mm_job_t *o = &m->jobs[k];

		if (o != j && mm_job_switched(o) && o->slot == slot &&
		    mm_job_overlap(o, j))
			return true;
	}
	return false;
}

extern void mm_matrix_place(mm_matrix_t *m, mm_matrix_place_f cb, void *arg)
{
	for (int i = 0; i < m->njobs; i++) {
		mm_job_t *j = &m->jobs[i];

		if (!mm_job_switched(j)) {
			j->slot = -1;
			continue;
		}
		if (j->slot >= 0)
			continue;
		for (int s = 0; s < MM_MAX_SLOTS; s++) {
			if (!slot_conflict(m, j, s)) {
				j->slot = s;
				break;
			}
		}
		if (j->slot < 0)
			j->gang = false;
		if (cb)
			cb(arg, j);
	}
}

extern void mm_matrix_compact(mm_matrix_t *m)
{
	int used[MM_MAX_SLOTS] = { 0 }, remap[MM_MAX_SLOTS];

	for (int i = 0; i < m->njobs; i++)
		if (mm_job_switched(&m->jobs[i]))
			used[m->jobs[i].slot] = 1;
	m->nslots = 0;
	for (int s = 0; s < MM_MAX_SLOTS; s++)
		remap[s] = used[s] ? m->nslots++ : -1;
	for (int i = 0; i < m->njobs; i++)
		if (mm_job_switched(&m->jobs[i]))
			m->jobs[i].slot = remap[m->jobs[i].slot];
}

/* Can job i also run in slot t, given the masks filled so far? */
static bool fits_in_slot(const mm_matrix_t *m, int i, int t)
{
	for (int k = 0; k < m->njobs; k++) {
		const mm_job_t *o = &m->jobs[k];

		if (k == i || !mm_job_switched(o) || !(o->mask & (1u << t)))
			continue;
		if (mm_job_overlap(o, &m->jobs[i]))
			return false;
	}
	return true;
}

extern void mm_matrix_fill(mm_matrix_t *m)
{
	uint32_t all = m->nslots >= 32 ? STORM_GANG_ALL_SLOTS :
					 (1u << m->nslots) - 1;

	for (int i = 0; i < m->njobs; i++)
		m->jobs[i].mask = mm_job_switched(&m->jobs[i]) ?
				  1u << m->jobs[i].slot : STORM_GANG_ALL_SLOTS;
	/* slot by slot, job by job: earlier jobs fill a hole first */
	for (int t = 0; t < m->nslots; t++) {
		for (int i = 0; i < m->njobs; i++) {
			mm_job_t *j = &m->jobs[i];

			if (mm_job_switched(j) && j->slot != t &&
			    fits_in_slot(m, i, t))
				j->mask |= 1u << t;
		}
	}
	/* A job running in every slot is never frozen: say so exactly. */
	for (int i = 0; i < m->njobs; i++)
		if (mm_job_switched(&m->jobs[i]) &&
		    (m->jobs[i].mask & all) == all)
			m->jobs[i].mask = STORM_GANG_ALL_SLOTS;
}

extern void mm_matrix_update(mm_matrix_t *m, mm_matrix_place_f cb, void *arg)
{
	mm_matrix_place(m, cb, arg);
	mm_matrix_compact(m);
	mm_matrix_fill(m);
}

extern void mm_matrix_release_all(mm_matrix_t *m)
{
	for (int i = 0; i < m->njobs; i++)
		m->jobs[i].mask = STORM_GANG_ALL_SLOTS;
}

extern int mm_matrix_next_slot(int cur, uint32_t span, int nslots)
{
	return nslots > 1 ? (int) ((cur + span) % (uint32_t) nslots) : 0;
}

extern int mm_table_build(mm_table_t *tab, const mm_matrix_t *m)
{
	int n = m->njobs < STORM_GANG_MAX_JOBS ? m->njobs : STORM_GANG_MAX_JOBS;
	size_t need = sizeof(*tab->t) + n * sizeof(tab->t->jobs[0]);
	storm_gang_table_t *t = calloc(1, need);

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		const mm_job_t *j = &m->jobs[i];

		t->jobs[i].job_id = j->job_id;
		t->jobs[i].uid = j->uid;
		t->jobs[i].slot_mask = j->held ? 0 : j->mask;
		t->jobs[i].nslots = m->nslots;
		t->jobs[i].how = j->held ? STORM_GANG_SWITCH_HOLD : j->how;
	}
	t->magic = STORM_GANG_MAGIC;
	t->njobs = n;
	t->nslots = m->nslots;
	if (tab->t && tab->len == need && tab->t->nslots == t->nslots &&
	    !memcmp(tab->t->jobs, t->jobs, n * sizeof(t->jobs[0]))) {
		free(t);
		return 0;
	}
	t->gen = ++tab->gen;
	free(tab->t);
	tab->t = t;
	tab->len = need;
	tab->dirty = true;
	return 1;
}

extern void mm_table_free(mm_table_t *tab)
{
	free(tab->t);
	tab->t = NULL;
	tab->len = 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_silence.c - node managers' silence and its verdicts (mm_silence.h).
 */
#include <stdlib.h>

#include "mm_silence.h"

#define MM_SILENCE_STALL_FLOOR_NS 20000000ULL

extern uint64_t mm_silence_stall_ns(uint64_t suspect_ns, uint64_t tick_ns)
{
	uint64_t floor_ns = suspect_ns / 4 < MM_SILENCE_STALL_FLOOR_NS ?
			    suspect_ns / 4 : MM_SILENCE_STALL_FLOOR_NS;

	return 3 * tick_ns > floor_ns ? 3 * tick_ns : floor_ns;
}

extern int mm_silence_init(mm_silence_t *s, int nnodes, uint64_t suspect_ns,
			   uint64_t tick_ns)
{
	*s = (mm_silence_t) {
		.suspect_ns = suspect_ns,
		.stall_limit_ns = mm_silence_stall_ns(suspect_ns, tick_ns),
		.nnodes = nnodes,
	};
	if (nnodes <= 0)
		return 0;
	s->nodes = calloc((size_t) nnodes, sizeof(*s->nodes));
	if (!s->nodes) {
		s->nnodes = 0;
		return -1;
	}
	return 0;
}

extern void mm_silence_free(mm_silence_t *s)
{
	free(s->nodes);
	s->nodes = NULL;
	s->nnodes = 0;
}

extern void mm_silence_heard(mm_silence_t *s, int i, uint64_t t)
{
	mm_silence_node_t *n;

	if (i < 0 || i >= s->nnodes || !t)
		return;
	n = &s->nodes[i];
	if (n->heard_ns && t <= n->heard_ns)
		return;
	if (!n->heard_ns)
		s->heard_nodes++;
	n->heard_ns = t;
	if (t > s->newest_ns)
		s->newest_ns = t;
}

/*
 * The time between two passes was not observed: what arrived in it was
 * taken in only now, with the stamp of now, while a node whose beat is
 * still on its way (its sender held up by the same stall, or the beat
 * queued behind the others) would otherwise be charged the whole stall.
 * So every silence restarts here; a node really dead is due SuspectTime
 * later.
 */
static void restart(mm_silence_t *s, uint64_t now)
{
	s->watch_from_ns = now;
	for (int i = 0; i < s->nnodes; i++) {
		s->nodes[i].silent_ns = 0;
		s->nodes[i].quiet = false;
	}
}

/*
 * No node heard (of two or more ever heard) within the last half of
 * SuspectTime, when a live one beats every quarter: the likelier fault is
 * on the controller's side (its host or link), and draining the whole
 * machine would turn it into an outage of every job.  Half, not all of
 * SuspectTime: nodes fall silent at different points of their beat, and
 * the first must not be drained before the last is found silent too.
 *
 * The episode lasts until a node is heard after it began, whatever else
 * happens meanwhile (a stall restarts every silence, which must not end
 * it: nobody was heard), and however long it lasts.  When somebody is
 * heard, every silence restarts, since the others' heartbeats may be a
 * moment behind the first one's, or their node managers a while behind
 * it: each of them is due SuspectTime from then at the earliest.
 */
static unsigned nobody_heard(mm_silence_t *s, uint64_t now)
{
	int recent = 0;

	if (s->all_silent) {
		if (s->newest_ns <= s->all_silent_ns)
			return 0;
		s->all_silent = false;
		s->heard_again_ns = now;
		restart(s, now);
		return MM_SILENCE_FORGIVEN;
	}
	for (int i = 0; i < s->nnodes; i++)
		recent += s->nodes[i].heard_ns &&
			  s->nodes[i].silent_ns <= s->suspect_ns / 2;
	if (s->heard_nodes < 2 || recent)
		return 0;
	s->all_silent = true;
	s->all_silent_ns = now;
	return MM_SILENCE_NOBODY;
}

extern unsigned mm_silence_tick(mm_silence_t *s, uint64_t now)
{
	unsigned what = 0;

	if (!s->last_tick_ns) {
		s->watch_from_ns = now;
	} else if (now > s->last_tick_ns + s->stall_limit_ns) {
		s->stall_ns = now - s->last_tick_ns;
		what |= MM_SILENCE_STALL;
		restart(s, now);
	}
	if (now > s->last_tick_ns)
		s->last_tick_ns = now;
	for (int i = 0; i < s->nnodes; i++) {
		mm_silence_node_t *n = &s->nodes[i];
		uint64_t from = n->heard_ns > s->watch_from_ns ?
				n->heard_ns : s->watch_from_ns;

		if (!n->heard_ns)
			continue;
		n->silent_ns = s->last_tick_ns > from ?
			       s->last_tick_ns - from : 0;
		n->quiet = n->silent_ns > s->suspect_ns / 2;
	}
	return what | nobody_heard(s, s->last_tick_ns);
}

/*
 * Relative to the newest beat of any node: a node is due only when
 * another was heard SuspectTime after it, so that a delay every node
 * shares (the controller's receiving side) drains nobody.  With one node
 * ever heard there is no one to compare with.
 */
extern bool mm_silence_due(const mm_silence_t *s, int i)
{
	const mm_silence_node_t *n;

	if (i < 0 || i >= s->nnodes || s->all_silent)
		return false;
	n = &s->nodes[i];
	if (!n->heard_ns || n->silent_ns <= s->suspect_ns)
		return false;
	return s->heard_nodes < 2 || s->newest_ns > n->heard_ns + s->suspect_ns;
}

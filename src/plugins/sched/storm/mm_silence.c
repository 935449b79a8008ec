/*
 * mm_silence.c - node managers' silence and its verdicts (mm_silence.h).
 */
#include <stdlib.h>

#include "mm_silence.h"

extern int mm_silence_init(mm_silence_t *s, int nnodes, uint64_t suspect_ns)
{
	*s = (mm_silence_t) { .suspect_ns = suspect_ns, .nnodes = nnodes };
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
	n->heard_ns = t;
	n->heard_new = true;
}

/*
 * A host or VM that stalled stopped the node managers' heartbeats too: a
 * node must not be drained for a silence that was the whole machine's.
 */
extern void mm_silence_slept(mm_silence_t *s, uint64_t due, uint64_t woke)
{
	if (woke > due + MM_SILENCE_STALL_NS)
		s->stalled_ns += woke - due;
}

/*
 * No node heard (of two or more ever heard) within the last half of
 * SuspectTime, when a live one beats every quarter: the likelier fault is
 * on the controller's side (its host or link), and draining the whole
 * machine would turn it into an outage of every job.  Half, not all of
 * SuspectTime: nodes fall silent at different points of their beat, and
 * the first must not be drained before the last is found silent too.
 * When somebody is heard again, every silence is forgiven, since the
 * others' heartbeats may be a moment behind the first one's (a node
 * really dead is drained SuspectTime later).
 */
static unsigned nobody_heard(mm_silence_t *s)
{
	uint64_t half = s->suspect_ns / 2;
	int heard = 0, recent = 0;

	for (int i = 0; i < s->nnodes; i++) {
		if (!s->nodes[i].heard_ns)
			continue;
		heard++;
		recent += s->nodes[i].silent_ns <= half;
	}
	if (heard >= 2 && !recent) {
		bool was = s->all_silent;

		s->all_silent = true;
		return was ? 0 : MM_SILENCE_NOBODY;
	}
	if (!s->all_silent)
		return 0;
	s->all_silent = false;
	for (int i = 0; i < s->nnodes; i++) {
		s->nodes[i].silent_ns = 0;
		s->nodes[i].quiet = false;
	}
	return MM_SILENCE_FORGIVEN;
}

/*
 * Silence is counted tick by tick, less the time the caller overslept.
 * A node heard since the last tick is silent since it was heard.
 */
extern unsigned mm_silence_tick(mm_silence_t *s, uint64_t now)
{
	uint64_t dt = s->last_tick_ns && now > s->last_tick_ns ?
		      now - s->last_tick_ns : 0;

	dt -= s->stalled_ns < dt ? s->stalled_ns : dt;
	s->stalled_ns = 0;
	s->last_tick_ns = now;
	for (int i = 0; i < s->nnodes; i++) {
		mm_silence_node_t *n = &s->nodes[i];

		if (!n->heard_ns)
			continue;
		if (n->heard_new) {
			n->heard_new = false;
			n->silent_ns = now > n->heard_ns ? now - n->heard_ns : 0;
		} else {
			n->silent_ns += dt;
		}
		n->quiet = n->silent_ns > s->suspect_ns / 2;
	}
	return nobody_heard(s);
}

extern bool mm_silence_due(const mm_silence_t *s, int i)
{
	return i >= 0 && i < s->nnodes && !s->all_silent &&
	       s->nodes[i].heard_ns &&
	       s->nodes[i].silent_ns > s->suspect_ns;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_fault_rules.c - the Machine Manager's suspect and drain rules
 * (mm_fault_rules.h).
 */
#include "mm_fault_rules.h"

extern void mm_rules_answered(mm_rules_tally_t *t, bool first)
{
	t->acks++;
	if (first)
		t->answering++;
}

extern void mm_rules_missed(const mm_rules_tally_t *t, uint32_t *misses,
			    uint64_t *miss_quanta)
{
	if (!*misses)
		*miss_quanta = t->quanta;
	if (*misses < UINT32_MAX)
		(*misses)++;
}

extern void mm_rules_quantum_end(mm_rules_tally_t *t)
{
	if (t->acks != t->acks_tallied)
		t->quanta++;
	t->acks_tallied = t->acks;
}

extern uint32_t mm_rules_misses(const mm_rules_node_t *n,
				const mm_rules_cluster_t *c)
{
	uint64_t answered = c->tally->quanta - n->miss_quanta;

	if (c->tally->answering < 2 || answered >= n->misses)
		return n->misses;
	return (uint32_t) answered;
}

/*
 * The listener hears nobody: a silence every node shares is the
 * controller's (its host, its link).  Heard again: the first node back is
 * not the last, and one still coming back must not be drained for the
 * quanta it missed with everybody else, so the grace is SuspectTime, the
 * same the listener gives a silence from then (mm_silence.h).
 */
extern bool mm_rules_controller_side(const mm_rules_conf_t *conf,
				     const mm_rules_cluster_t *c,
				     uint64_t now)
{
	if (c->nobody_heard)
		return true;
	/* a clock read before the listener's is within the grace too */
	return c->heard_again_ns &&
	       (now < c->heard_again_ns ||
		now - c->heard_again_ns < conf->suspect_ns);
}

extern bool mm_rules_silent(const mm_rules_conf_t *conf,
			    const mm_rules_node_t *n)
{
	return n->heard_ns && n->silent_ns > conf->suspect_ns;
}

extern bool mm_rules_suspect(const mm_rules_conf_t *conf,
			     const mm_rules_node_t *n,
			     const mm_rules_cluster_t *c, uint64_t now)
{
	if (n->drained || mm_rules_misses(n, c) < conf->suspect_quanta)
		return false;
	if (!n->acked_once && c->since_start_ns < MM_START_GRACE_NS)
		return false;
	return !mm_rules_controller_side(conf, c, now);
}

extern uint64_t mm_rules_probe_backoff_ns(uint32_t failed)
{
	uint64_t ns = MM_PROBE_FIRST_NS;

	while (failed-- > 1 && ns < MM_PROBE_DEAD_NS)
		ns *= 2;
	return ns < MM_PROBE_DEAD_NS ? ns : MM_PROBE_DEAD_NS;
}

extern bool mm_rules_probe_now(bool quiet, bool heard, uint64_t next_probe_ns,
			       bool periodic, uint64_t now)
{
	if (quiet)
		return false;
	return periodic || (heard && now >= next_probe_ns);
}

extern bool mm_rules_probe_fits(uint64_t now, uint64_t reached_ns,
				uint64_t failsafe_ns, uint64_t q_ns,
				uint64_t probe_ns)
{
	return !reached_ns || now + probe_ns + q_ns <= reached_ns + failsafe_ns;
}

/*
 * Dead for MM_PROBE_FORGET probes (some seconds): a node manager restarted
 * on that node is reached afresh.  Not sooner: re-adding a peer drops a
 * connection still being set up, and a busy node may just be slow to
 * connect.
 */
extern bool mm_rules_forget_peer(uint32_t failed_probes)
{
	return failed_probes && failed_probes % MM_PROBE_FORGET == 0;
}

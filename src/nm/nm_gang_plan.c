/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_gang_plan.c - the node manager's switching decisions
 * (nm_gang_plan.h).
 */
#include "src/common/storm_clock.h"
#include "nm_gang_plan.h"

extern uint32_t nm_gang_plan_mode(const storm_gang_strobe_t *s,
				  bool offset_known, uint64_t uncert_ns)
{
	if (!s->at_ns)
		return STORM_GANG_AT_ARRIVAL;
	if (!offset_known ||
	    !storm_clock_usable(uncert_ns, s->quantum_us * 1000ULL))
		return STORM_GANG_AT_FALLBACK;
	return STORM_GANG_AT_ANNOUNCED;
}

/* n switches to time, the first to slot (switch q of s) at due. */
static void arm(nm_gang_subs_t *subs, const storm_gang_strobe_t *s,
		uint32_t slot, uint32_t q, uint32_t n, uint64_t due)
{
	subs->left = n;
	subs->slot = slot % (s->nslots ? s->nslots : 1);
	subs->q = q;
	subs->due_ns = due;
	subs->q_ns = s->quantum_us * 1000ULL;
	subs->gap_ns = s->next_in_us * 1000ULL;
}

extern nm_gang_take_t nm_gang_plan_strobe(const storm_gang_strobe_t *s,
					  uint32_t mode, int64_t off_ns,
					  uint64_t recv_ns, uint64_t recv_mono,
					  nm_gang_subs_t *subs)
{
	uint32_t nsub = s->nquanta > 1 && s->nslots > 1 && s->quantum_us ?
			s->nquanta - 1 : 0;
	uint64_t next_in_ns = s->next_in_us * 1000ULL, at, past;

	if (mode != STORM_GANG_AT_ANNOUNCED || s->nslots <= 1) {
		arm(subs, s, s->slot + 1, 1, nsub, recv_mono + next_in_ns);
		return NM_GANG_TAKE_NOW;
	}
	at = storm_clock_to_node(s->at_ns, off_ns);
	if (at > recv_ns) {
		arm(subs, s, s->slot, 0, nsub + 1,
		    recv_mono + (at - recv_ns));
		return NM_GANG_TAKE_AT;
	}
	/* the instant passed: the next switches keep its rhythm, anchored
	 * where the instant was on the monotonic clock */
	past = recv_ns - at < recv_mono ? recv_ns - at : 0;
	arm(subs, s, s->slot + 1, 1, nsub, recv_mono - past + next_in_ns);
	return NM_GANG_TAKE_LATE;
}

extern bool nm_gang_plan_next_switch(nm_gang_subs_t *subs, uint32_t nslots,
				     uint64_t now, uint32_t *slot,
				     uint32_t *q)
{
	uint32_t k = 0;

	if (!nslots)
		nslots = 1;
	if (!subs->left || now < subs->due_ns)
		return false;
	if (subs->q == 0) {
		subs->due_ns += subs->gap_ns;
	} else {
		if (subs->q_ns)
			k = (uint32_t) ((now - subs->due_ns) / subs->q_ns);
		if (k >= subs->left)
			k = subs->left - 1;
		subs->due_ns += (uint64_t) (k + 1) * subs->q_ns;
	}
	*slot = (subs->slot + k) % nslots;
	*q = subs->q + k;
	subs->left -= k + 1;
	subs->slot = (*slot + 1) % nslots;
	subs->q = *q + 1;
	return true;
}

extern uint64_t nm_gang_plan_deadline(uint64_t now, uint64_t failsafe_due,
				      uint64_t max_ms,
				      const nm_gang_subs_t *subs)
{
	uint64_t due = failsafe_due;

	if (due > now + max_ms * 1000000ULL)
		due = now + max_ms * 1000000ULL;
	else if (due < now + NM_GANG_WAIT_MIN_MS * 1000000ULL)
		due = now + NM_GANG_WAIT_MIN_MS * 1000000ULL;
	if (subs->left && subs->due_ns < due)
		due = subs->due_ns;
	return due;
}

extern uint64_t nm_gang_plan_long_ns(const storm_gang_strobe_t *s)
{
	return s->nslots > 1 ?
	       2ULL * (s->nslots - 1) * s->quantum_us * 1000ULL : 0;
}

extern uint64_t nm_gang_plan_failsafe_ns(const storm_gang_strobe_t *s,
					 uint64_t failsafe_ns)
{
	uint64_t span_ns;

	if (s->nquanta <= 1 || s->nslots <= 1)
		return failsafe_ns;
	span_ns = (uint64_t) s->nquanta * s->quantum_us * 1000ULL;
	return span_ns > failsafe_ns / 2 ? failsafe_ns + span_ns : failsafe_ns;
}

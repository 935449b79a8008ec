/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_clock.c - announced switch instants and the clock-offset filter
 * (storm_clock.h).
 */
#include <string.h>

#include "storm_clock.h"

extern int storm_clock_sample(uint64_t t1, uint64_t t2, uint64_t t3,
			      uint64_t t4, storm_clock_sample_t *out)
{
	uint64_t round, hold;

	if (t4 < t1 || t3 < t2)
		return -1;
	round = t4 - t1;
	hold = t3 - t2;
	if (hold > round)
		return -1;
	/* halves first: the sum of two realtime differences may overflow */
	out->offset_ns = ((int64_t) (t2 - t1)) / 2 + ((int64_t) (t3 - t4)) / 2;
	out->delay_ns = round - hold;
	return 0;
}

extern void storm_clock_filter_init(storm_clock_filter_t *f)
{
	memset(f, 0, sizeof(*f));
}

extern void storm_clock_filter_add(storm_clock_filter_t *f,
				   const storm_clock_sample_t *s)
{
	f->win[f->next] = *s;
	f->next = (f->next + 1) % STORM_CLOCK_WINDOW;
	if (f->n < STORM_CLOCK_WINDOW)
		f->n++;
}

extern bool storm_clock_filter_best(const storm_clock_filter_t *f,
				    int64_t *offset_ns, uint64_t *uncert_ns)
{
	const storm_clock_sample_t *best = NULL;

	for (unsigned i = 0; i < f->n; i++)
		if (!best || f->win[i].delay_ns < best->delay_ns)
			best = &f->win[i];
	if (!best)
		return false;
	*offset_ns = best->offset_ns;
	*uncert_ns = (best->delay_ns + 1) / 2;
	return true;
}

extern bool storm_clock_usable(uint64_t uncert_ns, uint64_t quantum_ns)
{
	return quantum_ns && uncert_ns * STORM_CLOCK_FRACTION <= quantum_ns;
}

extern uint64_t storm_clock_to_node(uint64_t mm_ns, int64_t offset_ns)
{
	if (offset_ns < 0 && (uint64_t) -offset_ns > mm_ns)
		return 0;
	return offset_ns < 0 ? mm_ns - (uint64_t) -offset_ns :
			       mm_ns + (uint64_t) offset_ns;
}

extern uint64_t storm_clock_switch_at(uint64_t at_ns, uint64_t next_in_ns,
				      uint64_t quantum_ns, uint32_t k)
{
	if (!k)
		return at_ns;
	return at_ns + next_in_ns + (uint64_t) (k - 1) * quantum_ns;
}

extern uint64_t storm_clock_lead(uint64_t delivery_ns, uint64_t quantum_ns)
{
	uint64_t lead = 2 * delivery_ns + 200000ULL;
	uint64_t max = quantum_ns / 4 * 3;

	if (lead < STORM_CLOCK_LEAD_MIN_NS)
		lead = STORM_CLOCK_LEAD_MIN_NS;
	if (lead > max)
		lead = max;
	return lead;
}

extern uint64_t storm_clock_delivery_track(uint64_t tracked_ns,
					   uint64_t sample_ns)
{
	uint64_t decayed = tracked_ns - tracked_ns / 32;

	return sample_ns > decayed ? sample_ns : decayed;
}

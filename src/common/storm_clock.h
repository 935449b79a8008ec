/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_clock.h - announced switch instants: the arithmetic both ends of
 * gang scheduling share.  No Slurm headers, no clocks read here: every
 * function takes the times it needs, so the unit tests drive it.
 *
 * The Machine Manager announces each switch as an absolute instant of its
 * own CLOCK_REALTIME, a lead ahead of sending the strobe; each node
 * manager converts it to its own clock with its estimated offset and arms
 * a real-time timer for it.  Delivery then only has to be early, not
 * simultaneous.
 *
 * The offset comes from NTP's four timestamps of one exchange:
 *   t1 the MM sends a clock request        (MM clock)
 *   t2 the node receives it                 (node clock)
 *   t3 the node sends its reply             (node clock)
 *   t4 the MM receives the reply            (MM clock)
 * offset = node - MM = ((t2 - t1) + (t3 - t4)) / 2, delay = (t4 - t1) -
 * (t3 - t2).  The true offset lies within delay / 2 of the estimate
 * whatever the two legs' asymmetry, so a sample's uncertainty is delay / 2.
 * The filter keeps the last STORM_CLOCK_WINDOW samples and trusts the one
 * of least delay (NTP's clock filter): a sample delayed by a busy host
 * carries the delay's asymmetry, the quickest carries least.
 */
#ifndef STORM_CLOCK_H
#define STORM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define STORM_CLOCK_WINDOW 8
/* Announced instants need uncertainty <= quantum / STORM_CLOCK_FRACTION;
 * above it a node switches on the strobe's arrival instead. */
#define STORM_CLOCK_FRACTION 4
/* The lead's bounds: at least this; at most 3/4 of a quantum, so a
 * strobe's last switch is due before the next strobe is sent. */
#define STORM_CLOCK_LEAD_MIN_NS 300000ULL

typedef struct storm_clock_sample {
	int64_t offset_ns;		/* node clock - MM clock */
	uint64_t delay_ns;		/* round trip, the node's hold excluded */
} storm_clock_sample_t;

typedef struct storm_clock_filter {
	storm_clock_sample_t win[STORM_CLOCK_WINDOW];
	unsigned n;			/* samples held, at most the window */
	unsigned next;			/* where the next one goes */
} storm_clock_filter_t;

/* One exchange's sample; -1 when the timestamps cannot be one exchange
 * (the reply before the request, the node's hold longer than the round
 * trip). */
extern int storm_clock_sample(uint64_t t1, uint64_t t2, uint64_t t3,
			      uint64_t t4, storm_clock_sample_t *out);

extern void storm_clock_filter_init(storm_clock_filter_t *f);
extern void storm_clock_filter_add(storm_clock_filter_t *f,
				   const storm_clock_sample_t *s);
/* The estimate: the least-delay sample's offset, and half its delay as
 * the uncertainty; false while the filter is empty. */
extern bool storm_clock_filter_best(const storm_clock_filter_t *f,
				    int64_t *offset_ns, uint64_t *uncert_ns);

/* May a node with this uncertainty switch at announced instants of this
 * quantum? */
extern bool storm_clock_usable(uint64_t uncert_ns, uint64_t quantum_ns);

/* An instant of the MM's clock on a node's clock (offset: node - MM). */
extern uint64_t storm_clock_to_node(uint64_t mm_ns, int64_t offset_ns);

/*
 * The instant of switch k of a strobe: k = 0 its own, at at_ns; k >= 1 the
 * ones the node times, the first next_in_ns after it and then one a
 * quantum.
 */
extern uint64_t storm_clock_switch_at(uint64_t at_ns, uint64_t next_in_ns,
				      uint64_t quantum_ns, uint32_t k);

/* The lead to announce from the measured delivery time (the strobe's
 * round trip to its slowest node): twice it plus 200 us, bounded.  Why so
 * generous: a lead costs nothing but the delay of a new job table by
 * less than a quantum, while a strobe later than its instant is a switch
 * out of step. */
extern uint64_t storm_clock_lead(uint64_t delivery_ns, uint64_t quantum_ns);

/* A delivery time that follows rises at once and decays by 1/32 a
 * strobe: a slow strobe raises the lead for the next ones. */
extern uint64_t storm_clock_delivery_track(uint64_t tracked_ns,
					   uint64_t sample_ns);

#endif /* STORM_CLOCK_H */

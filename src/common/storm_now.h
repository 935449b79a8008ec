/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_now.h - which slot runs now: the Machine Manager's last strobe,
 * published in a small mapped file beside the status file.
 *
 * Why not the status file: the MM rewrites that once a second (a file of
 * every node and job, written outside its real-time priority), so a view
 * that showed the running slot from it would move once a second at any
 * quantum.  The slot the nodes run at an instant is fixed by the last
 * strobe: its slot runs from its switch instant, and with StrobeInterval
 * the nodes step through the next slots themselves, one a quantum
 * (storm_gang.h, storm_clock.h).  So the MM copies each strobe it sent
 * into a shared mapping (a seqlock: two counter stores and 100 bytes, no
 * system call, in its real-time thread), and a reader computes the slot
 * at its own instant with the nodes' own arithmetic.  Sampled five times
 * a second, the view then shows where the schedule really is at a
 * millisecond quantum.
 *
 * The file: StateSaveLocation/storm-mm.now, one page, written only by the
 * MM; created as .tmp and renamed, so a reader opens either the old
 * instance's or the new one's, never half of one.  Slurm-free.
 */
#ifndef STORM_NOW_H
#define STORM_NOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "storm_gang.h"

#define STORM_NOW_FILE "storm-mm.now"
/* A strobe older than its span by this much: the MM is not strobing. */
#define STORM_NOW_STALE_NS 1000000000ULL

/* What the MM publishes: the strobe as it sent it and its quantum count. */
typedef struct storm_now {
	storm_gang_strobe_t strobe;
	uint64_t quanta;	/* quanta before the strobe's first */
	uint64_t seq;		/* publications so far */
} storm_now_t;

/* Where the schedule is at an instant, from a storm_now_t. */
typedef struct storm_now_pos {
	uint32_t slot;		/* running on the nodes */
	uint32_t nslots;
	uint32_t k;		/* switches of the strobe so far, from 0 */
	uint64_t quantum;	/* quanta + k */
	int64_t since_ns;	/* from the strobe's send (negative: clock skew) */
	bool stale;		/* the span ended STORM_NOW_STALE_NS ago */
} storm_now_pos_t;

typedef struct storm_now_writer {
	int fd;			/* -1: not open */
	void *page;
} storm_now_writer_t;

#define STORM_NOW_WRITER_INIT { .fd = -1, .page = NULL }

/* Writer: create PATH (mode 0644) and map it.  0 or -errno; *w unchanged
 * on failure.  Publishing on a writer that is not open does nothing. */
extern int storm_now_open(storm_now_writer_t *w, const char *path);
extern void storm_now_publish(storm_now_writer_t *w,
			      const storm_gang_strobe_t *s, uint64_t quanta);
/* Unmaps and closes; the file stays, its strobe growing stale. */
extern void storm_now_close(storm_now_writer_t *w);

/* Reader: the latest publication.  0; -EINVAL not a STORM now file (or
 * of another layout); -EAGAIN nothing published yet, or the writer kept
 * writing through every try; -errno when it cannot be opened. */
extern int storm_now_read(const char *path, storm_now_t *out);

/* The position at t_ns (CLOCK_REALTIME, the MM's clock as far as the
 * reader's agrees with it), as the nodes switch: switch k of the strobe
 * at storm_clock_switch_at(); before its own switch, its slot already
 * (at most the announced lead early). */
extern void storm_now_at(const storm_now_t *n, uint64_t t_ns,
			 storm_now_pos_t *pos);

/* One line of JSON: {"slot", "nslots", "quantum", "k", "span", "epoch",
 * "mm_id", "quantum_us", "since_us", "stale", "seq", "table_gen"}. */
extern int storm_now_fprint_json(FILE *fp, const storm_now_t *n,
				 const storm_now_pos_t *pos);

#endif /* STORM_NOW_H */

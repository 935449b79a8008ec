/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_signals.h - slurmctld's signal handlers back from the library that
 * took them when this plugin brought libfabric in (stormmech.h:
 * storm_signals_reclaim()).  Without this a SIGTERM or SIGINT to a Slurm
 * 24.11 slurmctld calls exit(1) in whichever thread it hits: no state
 * saved, the Machine Manager's threads running on while exit handlers
 * free what they use.
 */
#ifndef STORM_MM_SIGNALS_H
#define STORM_MM_SIGNALS_H

/* Called from the plugin's init(), before any thread of ours runs. */
extern void mm_signals_reclaim(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_gang.h - the Machine Manager's gang scheduler (mm_gang.c), run by
 * sched/storm inside slurmctld.
 */
#ifndef STORM_MM_GANG_H
#define STORM_MM_GANG_H

#include "src/common/storm_conf.h"

/* Start the MM thread with a configuration (copied). */
extern void mm_gang_start(const storm_conf_t *conf);
/* A new good configuration (scontrol reconfigure); applied by the thread
 * at the next quantum, reopening the fabric endpoint if its address or
 * provider changed. */
extern void mm_gang_reconfig(const storm_conf_t *conf);
/* Stop the thread; the NMs are told to run every job (thaw) first. */
extern void mm_gang_stop(void);

#endif /* STORM_MM_GANG_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mm_status.h - the Machine Manager writes the status file `stormctl show`
 * reads (its format: src/common/storm_status.h), and the mapped file of its
 * last strobe (src/common/storm_now.h).
 */
#ifndef STORM_MM_STATUS_H
#define STORM_MM_STATUS_H

#include "mm_state.h"

/* Render the status and have StateSaveLocation/storm-mm.status rewritten
 * from it by the writer thread (at once, without one); failures are
 * logged at debug level (the next second tries again). */
extern void mm_status_write(const mm_t *mm);

/* The writer thread: started with the Machine Manager's thread, stopped
 * after it (writing the last status). */
extern void mm_status_writer_start(void);
extern void mm_status_writer_stop(void);

/* StateSaveLocation/storm-mm.now (src/common/storm_now.h): created when
 * the thread starts, each strobe published into it by mm_strobe.c; a
 * failure is logged once and the view falls back to the status' slot. */
extern void mm_status_now_open(mm_t *mm);
extern void mm_status_now_close(mm_t *mm);

#endif /* STORM_MM_STATUS_H */

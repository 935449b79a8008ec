/*
 * mm_status.h - the Machine Manager writes the status file `stormctl show`
 * reads (its format: src/common/storm_status.h).
 */
#ifndef STORM_MM_STATUS_H
#define STORM_MM_STATUS_H

#include "mm_state.h"

/* Rewrite StateSaveLocation/storm-mm.status; failures are logged at
 * debug level (the next second tries again). */
extern void mm_status_write(const mm_t *mm);

#endif /* STORM_MM_STATUS_H */

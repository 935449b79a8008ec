/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_fabric.h - this node's fabric endpoint (nm_fabric.c).
 */
#ifndef STORM_NM_FABRIC_H
#define STORM_NM_FABRIC_H

#include "nm.h"

extern int nm_fabric_open(nm_t *nm);
extern void nm_fabric_close(nm_t *nm);

#endif /* STORM_NM_FABRIC_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_modules.h - the node manager's modules (nm_modules.c): each function of the node
 * manager lives in a file of its own and plugs in here.
 */
#ifndef STORM_NM_MODULES_H
#define STORM_NM_MODULES_H

#include "nm.h"

typedef struct nm_module {
	const char *name;
	int (*init)(nm_t *nm);	/* after the fabric is up; <0 aborts start */
	void (*fini)(nm_t *nm);	/* in reverse order at exit */
} nm_module_t;
/* Every module, in start order (nm_modules.c). */
extern const nm_module_t *const nm_modules[];

#endif /* STORM_NM_MODULES_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_modules.c - the node manager's functions, started in this order
 * after the fabric is up and stopped in reverse order.
 */
#include <stddef.h>

#include "nm.h"
#include "nm_gang.h"
#include "nm_heartbeat.h"
#include "nm_usage.h"

extern const nm_module_t nm_bcast_module;	/* nm_bcast.c */
extern const nm_module_t nm_relay_module;	/* nm_relay.c: after bcast,
						 * so it stops first */

const nm_module_t *const nm_modules[] = {
	&nm_bcast_module,
	&nm_relay_module,
	&nm_gang_module,
	&nm_usage_module,	/* asks the gang module for its jobs */
	&nm_heartbeat_module,	/* alive once every function is up */
	NULL
};

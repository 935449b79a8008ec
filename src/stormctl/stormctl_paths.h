/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_paths.h - where stormctl finds the Machine Manager's files:
 * slurm.conf's StateSaveLocation ($SLURM_CONF or /etc/slurm/slurm.conf).
 */
#ifndef STORMCTL_PATHS_H
#define STORMCTL_PATHS_H

#include <stddef.h>

/* StateSaveLocation/NAME into path; 0, or -1 after an error on stderr. */
extern int stormctl_state_path(const char *name, char *path, size_t len);

/* NAME beside FILE (in FILE's directory) into path; 0 or -1 as above. */
extern int stormctl_beside(const char *file, const char *name, char *path,
			   size_t len);

#endif /* STORMCTL_PATHS_H */

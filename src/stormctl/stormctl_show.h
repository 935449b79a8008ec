/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_show.h - `stormctl show`: the gang scheduler's status, read
 * through src/common/storm_status.h.
 */
#ifndef STORMCTL_SHOW_H
#define STORMCTL_SHOW_H

/* `stormctl show [--json] [--status FILE]` with argv after "show": the
 * exit status, or -1 on unknown arguments (the caller prints the usage). */
extern int show_main(int argc, char **argv);

#endif /* STORMCTL_SHOW_H */

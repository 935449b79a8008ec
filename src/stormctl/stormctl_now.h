/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_now.h - `stormctl now`: the slot the nodes run at this instant,
 * from the Machine Manager's last strobe (src/common/storm_now.h).
 */
#ifndef STORMCTL_NOW_H
#define STORMCTL_NOW_H

/* `stormctl now [--json] [--follow MS] [--now FILE | --status FILE]` with
 * argv after "now": the exit status, or -1 on unknown arguments (the
 * caller prints the usage). */
extern int now_main(int argc, char **argv);

#endif /* STORMCTL_NOW_H */

# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness finds a node's processes by its mount namespaces, and the
kernel gives a dead namespace's inode number to the next namespace created
on the host.  A cluster that recorded a bare number for a node namespace
that died (a slurmd restarted mid-test) would, when stopped, SIGKILL the
processes of whichever node got that number next: another cluster's, or
the other Slurm version's suite running side by side.  The harness holds
each recorded namespace open (storm_cluster._pin_ns) so its number stays
its own until the cluster stops.  (Unpinned, the next `unshare -m` on a
quiet host gets the dead namespace's number at once; that is not asserted
here, since a namespace any other process creates meanwhile takes it
first.)"""
import os
import signal
import subprocess

import storm_cluster as sc
from storm_wait import wait_for


def _unshared_sleep():
    p = subprocess.Popen(["unshare", "-m", "sleep", "60"])
    own = sc._ns_id(os.stat("/proc/self/ns/mnt"))
    wait_for(lambda: sc._ns_id(os.stat("/proc/%d/ns/mnt" % p.pid)) != own, 10,
             "unshare to enter its namespace")
    return p


def _gone(p):
    p.send_signal(signal.SIGKILL)
    p.wait()


def test_a_dead_namespace_number_goes_to_the_next_one_unless_pinned():
    a = _unshared_sleep()
    a_id = sc._ns_id(os.stat("/proc/%d/ns/mnt" % a.pid))
    fd = sc._pin_ns(a.pid)
    assert fd is not None
    others = []
    try:
        _gone(a)
        # held open, the dead namespace keeps its number: no new one gets it
        for _ in range(3):
            b = _unshared_sleep()
            others.append(b)
            assert sc._ns_id(os.stat("/proc/%d/ns/mnt" % b.pid)) != a_id
    finally:
        os.close(fd)
        for b in others:
            _gone(b)


def test_pin_of_a_process_in_our_own_namespace_is_none():
    assert sc._pin_ns(os.getpid()) is None

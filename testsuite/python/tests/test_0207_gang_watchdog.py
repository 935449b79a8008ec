# SPDX-License-Identifier: GPL-2.0-or-later
"""Fail open without the node manager: each node manager forks a watchdog
that outlives it and releases the jobs it had switched out once no strobe
has been handled for FailSafe, so a job is not left frozen when storm-nm
is killed while slurmd (which would restart it) is stopped too, nor while
storm-nm is stopped (alive but silent)."""
import os
import re
import signal
import time

import pytest

import storm_gang as g
from test_0203_gang_faults import (NODES, _drained_by_storm, _pair, _taking_turns,
                                   resumed_on_exit)

Q_MS = 30
FAILSAFE_MS = 500
# far beyond FailSafe, far below the slurmd restart this must not wait for
THAW_BOUND_S = 5.0


@pytest.fixture(scope="module")
def gangwd(make_gang_cluster):
    return make_gang_cluster("gangwd", 3,
                             "Timeslice=%dms\nFailSafe=%dms\nSuspectQuanta=5\n" % (
                                 Q_MS, FAILSAFE_MS))



def _log(c, node):
    return open(c.path("log", "storm-nm-%s.log" % node)).read()


def _watchdog_pid(c, node):
    """The pid of the running node manager's watchdog, from its log line."""
    pids = re.findall(r"watchdog: pid (\d+)", _log(c, node))
    assert pids, "no watchdog started on %s" % node
    return int(pids[-1])


def _frozen_somewhere(c, a, b, node):
    return any(g.job_freezer_state(c, j, node) == "FROZEN" for j in (a, b))


def _thawed(c, a, b, node):
    return all(g.job_freezer_state(c, j, node) == "THAWED" for j in (a, b))


def _restarted(c, node, old_pid):
    try:
        return g.nm_pid(c, node) != old_pid
    except Exception:
        return False


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_killed_node_manager_with_slurmd_stopped_releases_its_jobs(gangwd):
    c = gangwd
    victim = "node2"
    with _pair(c) as (a, b, pa, pb), resumed_on_exit(c, victim):
        _taking_turns(c, a, b, pa, pb, [victim])
        nm_pid, wd_pid = g.nm_pid(c, victim), _watchdog_pid(c, victim)
        assert _alive(wd_pid)
        # kill it while one of the pair is frozen there
        g.wait_for(lambda: _frozen_somewhere(c, a, b, victim), 30, "a frozen job")
        slurmd = c.procs["slurmd-%s" % victim]
        slurmd.send_signal(signal.SIGSTOP)
        try:
            os.kill(nm_pid, signal.SIGKILL)
            killed = time.monotonic()
            g.wait_for(lambda: _thawed(c, a, b, victim), 30,
                       "both jobs thawed on %s with no node manager" % victim)
            took = time.monotonic() - killed
            # nothing restarted the node manager meanwhile
            assert "slurmd-%s" % victim in c.procs and slurmd.poll() is None
            g.wait_for(lambda: not _alive(wd_pid), 30, "the watchdog gone after its work")
            # drained for its silence while no node manager runs there
            g.wait_for(lambda: _drained_by_storm(c, victim), 30, "%s drained" % victim)
        finally:
            slurmd.send_signal(signal.SIGCONT)
        assert took < THAW_BOUND_S, took
        assert "the node manager is gone" in _log(c, victim)
        # slurmd brings a node manager back, and once it has answered for
        # ReturnAfter the machine manager returns the node to service
        g.wait_for(lambda: _restarted(c, victim, nm_pid), 30,
                   "a new node manager on %s" % victim)
        g.wait_for(lambda: not _drained_by_storm(c, victim), 60,
                   "%s returned to service" % victim)
        print("released %.2f s after the node manager was killed" % took)


def test_stopped_node_manager_releases_then_switches_again(gangwd):
    c = gangwd
    victim = "node3"
    c.wait_idle(timeout=120)
    with _pair(c) as (a, b, pa, pb), resumed_on_exit(c, victim):
        _taking_turns(c, a, b, pa, pb, [victim])
        nm_pid = g.nm_pid(c, victim)
        g.wait_for(lambda: _frozen_somewhere(c, a, b, victim), 30, "a frozen job")
        os.kill(nm_pid, signal.SIGSTOP)
        try:
            g.wait_for(lambda: _thawed(c, a, b, victim), 30,
                       "both jobs thawed on %s while its node manager is stopped" % victim)
            assert "alive but silent" in _log(c, victim)
        finally:
            os.kill(nm_pid, signal.SIGCONT)
        # the node manager takes over again: strobes handled, no restart
        seen = int(g.nm_gang(c, victim)["strobes"])
        g.wait_for(lambda: int(g.nm_gang(c, victim)["strobes"]) > seen, 30,
                   "strobes to %s again" % victim)
        assert g.nm_pid(c, victim) == nm_pid
        # a drain for the missed strobes, if any, is undone on exit
        time.sleep(1)
        for n in NODES:
            assert _alive(_watchdog_pid(c, n))

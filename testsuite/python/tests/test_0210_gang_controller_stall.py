# SPDX-License-Identifier: GPL-2.0-or-later
"""A stalled controller is nobody's silence.  slurmctld (and with it the
Machine Manager, its gang thread and its heartbeat listener) stopped with
SIGSTOP in the middle of 2 ms gang scheduling on 8 nodes, for 0.7 s and
for 2 s, drains no node: the listener counts a node's silence only over
time in which it was listening.  Afterwards the strobes come back and both
jobs run and switch again on every node."""
import os
import signal
import time

import pytest

import storm_gang as g
from test_0203_gang_faults import _drained_by_storm

NODES = ["node%d" % i for i in range(1, 9)]
SUSPECT_MS = 250
CONF = "Timeslice=2ms\nSuspectTime=%dms\n" % SUSPECT_MS


@pytest.fixture(scope="module")
def gang8(make_gang_cluster):
    return make_gang_cluster("gangstall", 8, CONF)


def _answering(c):
    _, nodes, _ = g.mm_status(c)
    return all(nodes.get(n, {}).get("state") == "live" and
               0 <= int(nodes[n].get("silent_ms", "-1")) < SUSPECT_MS
               for n in NODES)


def _log_since(path, start):
    with open(path) as f:
        f.seek(start)
        return f.read()


def _wait_switching_everywhere(c, pa, pb, what):
    """Wait until strobes are applied on every node (no fail-safe), its
    freezes count up, and both jobs' tasks get CPU time there."""
    before = {n: int(g.nm_gang(c, n)["freezes"]) for n in NODES}
    cpu = {(n, k): g.cpu_ns(p[n]) for n in NODES for k, p in (("a", pa), ("b", pb))}

    def switching():
        for n in NODES:
            st = g.nm_gang(c, n)
            if st["failsafe"] != "no" or int(st["freezes"]) <= before[n]:
                return False
        return all(g.cpu_ns(p[n]) > cpu[(n, k)]
                   for n in NODES for k, p in (("a", pa), ("b", pb)))
    g.wait_for(switching, 60, what, period=0.2)


@pytest.mark.parametrize("stop_s", [0.7, 2.0])
def test_stopped_controller_drains_none(gang8, stop_s):
    c = gang8
    log = c.path("log", "slurmctld.log")
    with g.running_pair(c, NODES, ("ka", "kb"), timeout=90,
                        idle_timeout=120) as (a, b, pa, pb):
        g.wait_for(lambda: _answering(c), 30, "every node heard")
        _wait_switching_everywhere(c, pa, pb, "both jobs switching on every node")
        drains = int(g.mm_status(c)[0]["drains"])
        start = os.path.getsize(log)
        ctld = c.procs["slurmctld"]
        ctld.send_signal(signal.SIGSTOP)
        try:
            time.sleep(stop_s)
        finally:
            ctld.send_signal(signal.SIGCONT)
        # the listener saw that it had not been listening
        c.wait_log("heartbeat listener did not observe", start=start, timeout=60)
        # SuspectTime many times over, and past ReturnAfter: a false drain
        # would show in the drain count and the log even if already undone
        time.sleep(3.0)
        g.wait_for(lambda: _answering(c), 30, "every node heard after the stop")
        text = _log_since(log, start)
        assert " drained node" not in text, text[-3000:]
        assert int(g.mm_status(c)[0]["drains"]) == drains
        for n in NODES:
            assert not _drained_by_storm(c, n), n
        _wait_switching_everywhere(c, pa, pb,
                                   "both jobs switching on every node after the stop")
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"

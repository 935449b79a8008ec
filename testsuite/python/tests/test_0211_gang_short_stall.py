# SPDX-License-Identifier: GPL-2.0-or-later
"""A node manager held up for a moment is back in the strobes once it is
heard again.  Stopped for a second, past the Machine Manager's
acknowledgement timeouts, it misses a strobe and leaves the strobe set; but
it stays well under SuspectTime and FailSafe, so it must be neither drained
nor left without strobes until its fail-safe opens.  (The Machine Manager
probes a node that left the strobe set as soon as its heartbeat is heard
again, rather than at its once-a-second probe of dead nodes.)"""
import os
import signal
import time

import pytest

import storm_gang as g
from test_0203_gang_faults import _drained_by_storm

NODES = ["node1", "node2", "node3"]
# the lowest rank: the strobe's tree starts there, so its failure is its own
# (a stalled leaf fails its parent's part of the strobe, and the parent
# answers its probe)
VICTIM = "node1"
STALL_S = 1.0
STALLS = 5
# A strobe every 20 ms.  Stopped for STALL_S, the victim first holds up a
# confirmation (200 ms), then fails a strobe (100 ms) and its probe
# (100 ms): it is out of the strobe set from about 0.4 s, heard again at
# 1 s.  SuspectTime and FailSafe are many stalls long, so no drain is
# due and the fail-safe must not open even when a loaded host is slow to
# take the node back, or stalls the machine manager itself for seconds.
CONF = ("Timeslice=2ms\nStrobeInterval=20ms\nFailSafe=30s\n"
        "SuspectTime=20s\nReturnAfter=0\n")


@pytest.fixture(scope="module")
def stall3(make_gang_cluster):
    return make_gang_cluster("gangstall3", 3, CONF)




def test_short_stall_is_taken_back_before_its_fail_safe(stall3):
    c = stall3
    log = c.path("log", "slurmctld.log")
    with g.running_pair(c, NODES, ("sa", "sb"), timeout=90,
                        idle_timeout=120) as (a, b, pa, pb):
        g.wait_for(lambda: all(g.mm_node_live(c, n) for n in NODES), 30, "every node live")
        pid = g.nm_pid(c, VICTIM)
        events0 = int(g.nm_gang(c, VICTIM)["failsafe_events"])
        drains0 = int(g.mm_status(c)[0]["drains"])
        start = os.path.getsize(log)
        for _ in range(STALLS):
            seen = int(g.nm_gang(c, VICTIM)["strobes"])
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(STALL_S)
            finally:
                os.kill(pid, signal.SIGCONT)
            g.wait_for(lambda: int(g.nm_gang(c, VICTIM)["strobes"]) > seen, 30,
                       "strobes to %s again" % VICTIM)
            g.wait_for(lambda: g.mm_node_live(c, VICTIM), 30, "%s live again" % VICTIM)
        with open(log) as f:
            f.seek(start)
            text = f.read()
        # the stalls did take it out of the strobe set
        assert "%s (rank 0) is a suspect" % VICTIM in text, text[-3000:]
        st = g.nm_gang(c, VICTIM)
        assert int(st["failsafe_events"]) == events0, st
        assert st["failsafe"] == "no", st
        assert int(g.mm_status(c)[0]["drains"]) == drains0
        assert not _drained_by_storm(c, VICTIM)
        assert g.nm_pid(c, VICTIM) == pid
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"

# SPDX-License-Identifier: GPL-2.0-or-later
"""A stalled leaf is taken out of the strobe set and taken back like any
other node.  node3 of 3, with TreeArity=2, hangs below node1 in both of
the Machine Manager's trees: the strobe's (the MM, then node1 and node2,
then node3 below node1) and the confirmation's (a COMPARE-AND-WRITE
serialized at node1, the lowest rank).  Stopped for half a second, again
and again, it must be named a suspect, left out of the strobes and taken
back once heard, without a fail-safe on the other nodes, without a drain:
its parent answers for itself and names the child that did not."""
import os
import signal
import time

import pytest

import storm_gang as g
from test_0203_gang_faults import _drained_by_storm

NODES = ["node1", "node2", "node3"]
VICTIM = "node3"
STALL_S = 0.5
STALLS = 10
# As test_0211: a strobe every 20 ms, SuspectTime above the stall (no
# drain is due), FailSafe twice the stall.
CONF = ("TreeArity=2\nTimeslice=2ms\nStrobeInterval=20ms\nFailSafe=1s\n"
        "SuspectTime=800ms\nReturnAfter=0\n")


@pytest.fixture(scope="module")
def leaf3(make_gang_cluster):
    return make_gang_cluster("gangleaf3", 3, CONF)



def _epoch(c, node):
    return int(g.nm_gang(c, node)["epoch"])



def test_stalled_leaf_leaves_the_strobes_and_comes_back(leaf3):
    c = leaf3
    log = c.path("log", "slurmctld.log")
    with g.running_pair(c, NODES, ("la", "lb"), timeout=90,
                        idle_timeout=120) as (a, b, pa, pb):
        g.wait_for(lambda: all(g.mm_node_live(c, n) for n in NODES), 30, "every node live")
        pid = g.nm_pid(c, VICTIM)
        events0 = {n: int(g.nm_gang(c, n)["failsafe_events"]) for n in NODES}
        drains0 = int(g.mm_status(c)[0]["drains"])
        start = os.path.getsize(log)
        for _ in range(STALLS):
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(STALL_S)
            finally:
                os.kill(pid, signal.SIGCONT)
            # back in the strobes: it applies a strobe newer than what a
            # live node had applied when it was continued (the strobes
            # queued for it during the stall are older)
            now = _epoch(c, "node2")
            g.wait_for(lambda: _epoch(c, VICTIM) > now, 30,
                       "new strobes applied on %s" % VICTIM)
            g.wait_for(lambda: g.mm_node_live(c, VICTIM), 30, "%s live again" % VICTIM)
        with open(log) as f:
            f.seek(start)
            text = f.read()
        # the leaf itself was named and left out, not its parent: the
        # confirmation serialized at node1 names it, and so does the
        # strobe's acknowledgement through node1
        assert "%s (rank 2) is a suspect: missed a confirmation" % VICTIM \
            in text, text[-3000:]
        # node1 is never blamed for the leaf's silence; a stall of the
        # whole host may still name it for a strobe, like any node
        assert "node1 (rank 0) is a suspect: missed a confirmation" not in text, \
            text[-3000:]
        assert "no answer from ranks 0)" not in text, text[-3000:]
        # the strobes never stopped for the others; the victim's own
        # fail-safe, if a stall and its return outlasted it, is closed
        for n in NODES:
            st = g.nm_gang(c, n)
            if n != VICTIM:
                assert int(st["failsafe_events"]) == events0[n], (n, st)
            assert st["failsafe"] == "no", (n, st)
        assert int(g.mm_status(c)[0]["drains"]) == drains0
        assert not _drained_by_storm(c, VICTIM)
        assert g.nm_pid(c, VICTIM) == pid
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"

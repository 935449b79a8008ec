# SPDX-License-Identifier: GPL-2.0-or-later
"""A silent node manager is drained after SuspectTime whatever the quantum
and however rare the strobes: each node manager sends the Machine Manager a
heartbeat four times per SuspectTime from a real-time thread of its own,
and the Machine Manager listens for them between strobes too.  When every
node manager falls silent at once, the fault is more likely the
controller's, and none is drained, however long that lasts: when they come
back, switching resumes and no fail-safe stays open."""
import contextlib
import os
import signal
import time

import pytest

import storm_gang as g
from test_0203_gang_faults import _drained_by_storm, resumed_on_exit

NODES = ["node1", "node2", "node3"]
# Well above what a live node manager on a loaded host is ever silent for
# (its heartbeats are four per SuspectTime): only a stopped one is drained.
SUSPECT_MS = 1000

# Strobes far apart: every 5 s (long quanta), or one per 400 ms covering
# 200 quanta of 2 ms (StrobeInterval).  Neither could drain a node in
# SuspectTime by counting missed strobes.
CONFS = {
    "long": "Timeslice=5s\nFailSafe=12s\nSuspectQuanta=50\nSuspectTime=%dms\n" % SUSPECT_MS,
    "interval": ("Timeslice=2ms\nStrobeInterval=400ms\nFailSafe=1s\n"
                 "SuspectQuanta=50\nSuspectTime=%dms\n" % SUSPECT_MS),
}


@pytest.fixture(scope="module", params=sorted(CONFS))
def silent3(request, make_gang_cluster):
    return make_gang_cluster("gangsilent-" + request.param, 3, CONFS[request.param])



@contextlib.contextmanager
def _stopped(*pids):
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        yield
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)


def _answering(c, node):
    """In the strobe set and heard within the cluster's SuspectTime."""
    hdr, nodes, _ = g.mm_status(c)
    n = nodes.get(node, {})
    return n.get("state") == "live" and int(n.get("silent_ms", "-1")) >= 0 \
        and int(n["silent_ms"]) < int(hdr["suspect_time_us"]) // 1000


def test_heartbeats_heard_between_strobes(silent3):
    c = silent3
    c.wait_idle(timeout=120)
    g.wait_for(lambda: all(_answering(c, n) for n in NODES), 30,
               "every node heard within SuspectTime")
    hdr, _, _ = g.mm_status(c)
    assert hdr["suspect_time_us"] == str(SUSPECT_MS * 1000)
    for n in NODES:
        log = open(c.path("log", "storm-nm-%s.log" % n)).read()
        assert "heartbeat: to the machine manager every %d us" % (
            SUSPECT_MS * 1000 // 4) in log


def test_stopped_node_manager_drained_for_its_silence(silent3):
    c = silent3
    victim = "node2"
    c.wait_idle(timeout=120)
    with g.running_pair(c, NODES, ("sa", "sb"), timeout=90, idle_timeout=120), \
            resumed_on_exit(c, victim):
        drains = int(g.mm_status(c)[0]["drains"])
        with _stopped(g.nm_pid(c, victim)):
            stopped = time.monotonic()
            info = g.wait_for(lambda: _drained_by_storm(c, victim), 30,
                              "%s drained" % victim)
            print("stopped NM drained after %.2f s (scontrol's view)"
                  % (time.monotonic() - stopped))
            # counted while it cannot come back: once awake, it may be
            # returned before this test looks again
            returns = int(g.mm_status(c)[0]["returns"])
        # the reason is the silence, not missed strobes
        assert "silent for" in info and "SuspectTime=%dus" % (SUSPECT_MS * 1000) in info, info
        g.wait_for(lambda: int(g.mm_status(c)[0]["drains"]) == drains + 1, 30,
                   "the MM's drain count")
        # others were not drained
        for n in NODES:
            if n != victim:
                assert not _drained_by_storm(c, n), n
        # awake again: heard, back in the strobe set, and after
        # ReturnAfter (2 s by default) returned to service by the machine
        # manager itself, with nobody resuming it
        g.wait_for(lambda: _answering(c, victim), 30, "%s heard again" % victim)
        g.wait_for(lambda: not _drained_by_storm(c, victim), 30,
                   "%s returned to service" % victim)
        assert "returned %s to service" % victim in open(
            c.path("log", "slurmctld.log")).read()
        g.wait_for(lambda: int(g.mm_status(c)[0]["returns"]) >= returns + 1, 30,
                   "the MM's return count")


def test_administrators_drain_is_left_alone(silent3):
    """A node STORM drained whose reason an administrator then replaced
    (a drain of their own) stays drained when its node manager answers
    again: the machine manager lifts only its own drains."""
    c = silent3
    victim = "node3"
    c.wait_idle(timeout=120)
    g.wait_for(lambda: all(_answering(c, n) for n in NODES), 30,
               "every node heard")
    with resumed_on_exit(c, victim):
        with _stopped(g.nm_pid(c, victim)):
            g.wait_for(lambda: _drained_by_storm(c, victim), 30,
                       "%s drained" % victim)
            c.run(["scontrol", "update", "nodename=" + victim, "state=drain",
                   "reason=disk replacement"])
        start = c.log_size()
        g.wait_for(lambda: _answering(c, victim), 30, "%s heard again" % victim)
        # after ReturnAfter the machine manager looks at it, and leaves it
        c.wait_log(r"%s answers again; it is no longer drained by STORM" % victim,
                   start=start, timeout=60)
        info = c.run(["scontrol", "-o", "show", "node", victim]).stdout
        assert "DRAIN" in info and "Reason=disk replacement" in info, info


def test_every_node_silent_drains_none(silent3):
    c = silent3
    c.wait_idle(timeout=120)
    g.wait_for(lambda: all(_answering(c, n) for n in NODES), 30,
               "every node heard")
    log = c.path("log", "slurmctld.log")
    start = os.path.getsize(log)
    with _stopped(*[g.nm_pid(c, n) for n in NODES]):
        # silent for SuspectTime and more, as the machine manager sees it
        c.wait_log(r"no node manager heard for over half of SuspectTime=%dus; draining none"
                   % (SUSPECT_MS * 1000), start=start, timeout=60)
        time.sleep(SUSPECT_MS * 5 / 1000.0)
    g.wait_for(lambda: all(_answering(c, n) for n in NODES), 30,
               "every node heard again")
    with open(log) as f:
        f.seek(start)
        text = f.read()
    assert "draining none" in text, text[-2000:]
    for n in NODES:
        assert not _drained_by_storm(c, n), n


# A strobe every 20 ms quantum, SuspectQuanta and SuspectTime by default:
# a 10 s silence is hundreds of missed quanta and ten SuspectTimes.
WHOLE_CONF = "Timeslice=20ms\n"
WHOLE_S = 10


@pytest.fixture(scope="module")
def whole3(make_gang_cluster):
    return make_gang_cluster("gangwhole", 3, WHOLE_CONF)


def _epochs(c):
    return {n: int(g.nm_gang(c, n)["epoch"]) for n in NODES}


def test_whole_cluster_silent_10s_drains_none(whole3):
    """Every node manager stopped for 10 s while two jobs time-share (what
    a switch reboot or the controller's link cut looks like to the machine
    manager): no node is drained, and once they run again the strobes come
    back to every node, every fail-safe closes and both jobs still run."""
    c = whole3
    log = c.path("log", "slurmctld.log")
    with g.running_pair(c, NODES, ("wa", "wb"), timeout=90,
                        idle_timeout=120) as (a, b, pa, pb):
        g.wait_for(lambda: all(_answering(c, n) for n in NODES), 30,
                   "every node heard")
        pids = {n: g.nm_pid(c, n) for n in NODES}
        drains = int(g.mm_status(c)[0]["drains"])
        before = _epochs(c)
        start = os.path.getsize(log)
        with _stopped(*pids.values()):
            time.sleep(WHOLE_S)
        g.wait_for(lambda: all(_answering(c, n) for n in NODES), 60,
                   "every node heard again")
        # switching resumes: strobes newer than the stop on every node,
        # and newer ones again after those
        g.wait_for(lambda: all(e > before[n] for n, e in _epochs(c).items()),
                   60, "strobes on every node again")
        after = _epochs(c)
        g.wait_for(lambda: all(e > after[n] for n, e in _epochs(c).items()),
                   60, "strobes going on")
        g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "no"
                               for n in NODES), 60, "every fail-safe closed")
        with open(log) as f:
            f.seek(start)
            text = f.read()
        assert "draining none" in text, text[-3000:]
        assert " drained node" not in text, text[-3000:]
        assert int(g.mm_status(c)[0]["drains"]) == drains
        for n in NODES:
            assert not _drained_by_storm(c, n), n
        assert {n: g.nm_pid(c, n) for n in NODES} == pids
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"

# SPDX-License-Identifier: GPL-2.0-or-later
"""Gang scheduling under faults: slurmctld (and with it the Machine
Manager) killed and restarted mid-run, and one node manager killed."""
import contextlib
import os
import signal
import time

import pytest

import storm_gang as g
from storm_cluster import SLURMCTLD_RESTART_S
from tolerances import FAILSAFE_EARLIEST

Q_MS = 30
FAILSAFE_MS = 500
NODES = ["node1", "node2", "node3"]


@pytest.fixture(scope="module")
def gang3(make_gang_cluster):
    return make_gang_cluster("gangfault", 3,
                             "Timeslice=%dms\nFailSafe=%dms\nSuspectQuanta=5\n" % (
                                 Q_MS, FAILSAFE_MS))


def _pair(c):
    """The pair on NODES; cancelled on exit, and every node idle again."""
    return g.running_pair(c, NODES, ("fa", "fb"), timeout=90, idle_timeout=120)


def _taking_turns(c, a, b, pa, pb, nodes):
    """Wait until the pair takes turns on nodes (storm_gang)."""
    return g.wait_taking_turns(c, a, b, pa, pb, nodes, Q_MS / 1000.0, max_both=0.15)


def _both_thawed_and_running(c, a, b, pa, pb, nodes):
    for n in nodes:
        for j in (a, b):
            if g.job_freezer_state(c, j, n) != "THAWED":
                return False
    s = g.sample({(n, k): p[n] for n in nodes for k, p in (("a", pa), ("b", pb))},
                 duration=0.3)
    return all(s[-1][1][k] > s[0][1][k] for k in s[0][1])


def _drained_by_storm(c, node):
    """scontrol's line for node if STORM drained it, else False."""
    info = c.run(["scontrol", "-o", "show", "node", node]).stdout
    return "DRAIN" in info and "STORM" in info and info


@contextlib.contextmanager
def resumed_on_exit(c, *nodes):
    """scontrol resume the nodes on exit (a test that drained them)."""
    try:
        yield
    finally:
        for n in nodes:
            c.run(["scontrol", "update", "nodename=%s" % n, "state=resume"],
                  check=False)


def test_controller_killed_jobs_thaw_then_switching_resumes(gang3):
    c = gang3
    with _pair(c) as (a, b, pa, pb):
        _taking_turns(c, a, b, pa, pb, ["node1"])
        # both jobs are RUNNING in the state slurmctld will recover from
        c.save_job_state(b)
        # kill slurmctld outright: no goodbye from the MM
        p = c.procs["slurmctld"]
        p.kill()
        p.wait()
        killed = time.monotonic()
        g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "open" for n in NODES),
                   30, "fail-safe on every node")
        opened = time.monotonic() - killed
        assert opened >= FAILSAFE_MS / 1000.0 * FAILSAFE_EARLIEST, opened
        # fail open: every job runs, on every node
        g.wait_for(lambda: _both_thawed_and_running(c, a, b, pa, pb, NODES), 60,
                   "both jobs thawed and running everywhere")

        c.restart_ctld()
        # the new MM rebuilds the matrix from Slurm's job state
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2" and
                   set(g.mm_status(c)[2]) >= {a, b}, SLURMCTLD_RESTART_S, "matrix rebuilt")
        g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "no" for n in NODES),
                   SLURMCTLD_RESTART_S, "strobes back on every node")
        _taking_turns(c, a, b, pa, pb, NODES)
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"


def _caught(pid):
    """The signals a process catches, from /proc (SigCgt)."""
    with open("/proc/%d/status" % pid) as f:
        mask = int(next(l for l in f if l.startswith("SigCgt:")).split()[1], 16)
    return {s for s in signal.Signals if mask & (1 << (s - 1))}


def _sigterm_ctld(c):
    """SIGTERM to slurmctld, which must exit 0 having saved its state and
    stopped its machine manager: returns what it logged meanwhile."""
    p = c.procs["slurmctld"]
    faults = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL}
    assert not (_caught(p.pid) & faults), _caught(p.pid)
    start = c.log_size()
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
    with open(c.log(), errors="replace") as f:
        f.seek(start)
        log = f.read()
    assert rc == 0, (rc, log[-2000:])
    for line in ("Saving all slurm state", "machine manager thread stopped"):
        assert line in log, (line, log[-2000:])
    return log


def test_sigterm_is_slurmctlds_own_shutdown(gang3):
    """Loading sched/storm brings libfabric in, and with it libinfinipath,
    whose handlers exit(1) on SIGTERM, SIGINT and the faults: a SIGTERM
    ended a Slurm 24.11 slurmctld without saving its state, its exit
    handlers freeing what the Machine Manager's threads still used.  A
    SIGTERM must be slurmctld's shutdown, the MM's goodbye included; a
    fault must be the kernel's (a core), not a handler's exit.  The goodbye
    hands the nodes HandoverTime (10 s) of quanta: they go on switching
    without a machine manager, then fail open."""
    c = gang3
    with _pair(c) as (a, b, pa, pb):
        since = {n: int(g.nm_gang(c, n)["epoch"]) for n in NODES}
        log = _sigterm_ctld(c)
        assert "handed the node managers 333 quanta" in log, log[-2000:]
        # no machine manager back: the fail-safe opens after the quanta
        g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "open" for n in NODES),
                   120, "fail-safe open on every node after the handover")
        g.wait_for(lambda: _both_thawed_and_running(c, a, b, pa, pb, NODES), 60,
                   "both jobs thawed and running everywhere")
        # meanwhile each node timed the handover strobe's switches itself
        for n in NODES:
            trace = g.nm_traces(c, [n], since[n], 1 << 62)[n]
            last = max(e for e, _ in trace)
            timed = [q for e, q in trace if e == last and q > 0]
            assert len(timed) >= 20, (n, last, sorted(timed)[-5:])
        c.restart_ctld()
        g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "no" for n in NODES),
                   SLURMCTLD_RESTART_S, "strobes back on every node")
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"


def test_handover_time_0_thaws_every_job_at_once(gang3):
    """HandoverTime=0: the stopping machine manager's goodbye runs every
    job at once, on every node."""
    c = gang3
    path = c.path("etc", "storm.conf")
    good = open(path).read()
    try:
        c.write_storm_conf(good + "HandoverTime=0\n")
        c.reconfigure()
        with _pair(c) as (a, b, pa, pb):
            _taking_turns(c, a, b, pa, pb, NODES)
            log = _sigterm_ctld(c)
            assert "told the node managers to run every job" in log, log[-2000:]
            g.wait_for(lambda: _both_thawed_and_running(c, a, b, pa, pb, NODES), 60,
                       "both jobs thawed and running everywhere")
            c.write_storm_conf(good)
            c.restart_ctld()
            g.wait_for(lambda: all(g.nm_gang(c, n)["failsafe"] == "no" for n in NODES),
                       SLURMCTLD_RESTART_S, "strobes back on every node")
    finally:
        c.write_storm_conf(good)
        if c.procs.get("slurmctld") and c.procs["slurmctld"].poll() is None:
            c.reconfigure(check=False)
        else:
            c.restart_ctld()


def test_node_manager_leaves_faults_to_the_kernel(gang3):
    """storm-nm catches SIGTERM and SIGINT itself; a fault or an abort must
    leave a core, not run libinfinipath's exit(1) under live threads."""
    c = gang3
    for n in NODES:
        pid = g.nm_pid(c, n)
        caught = _caught(pid)
        assert {signal.SIGTERM, signal.SIGINT} <= caught, (n, caught)
        assert not (caught & {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL,
                              signal.SIGABRT}), (n, caught)


def test_dead_node_manager_thawed_drained_others_switch(gang3):
    c = gang3
    victim = "node2"
    with _pair(c) as (a, b, pa, pb), resumed_on_exit(c, victim):
        nm_pid = g.nm_pid(c, victim)
        before = {n: int(g.nm_gang(c, n)["freezes"]) for n in NODES}
        # slurmd's watchdog restarts a dead NM within a second, often before
        # SuspectQuanta quanta have passed: hold slurmd until the drain, so
        # the NM stays dead for the test (a node that is really down)
        slurmd = c.procs["slurmd-%s" % victim]
        slurmd.send_signal(signal.SIGSTOP)
        try:
            os.kill(nm_pid, signal.SIGKILL)
            killed = time.monotonic()

            info = g.wait_for(lambda: _drained_by_storm(c, victim), 30,
                              "%s drained" % victim)
            detect = time.monotonic() - killed
        finally:
            slurmd.send_signal(signal.SIGCONT)
        assert "missed" in info and "strobe" in info, info
        # its jobs were thawed (slurmd restarts the NM, which thaws what its
        # predecessor left frozen) and run
        g.wait_for(lambda: all(g.job_freezer_state(c, j, victim) == "THAWED"
                               for j in (a, b)), 30, "jobs on %s thawed" % victim)
        # the other nodes kept switching all along
        for n in ("node1", "node3"):
            assert int(g.nm_gang(c, n)["freezes"]) > before[n]
        _taking_turns(c, a, b, pa, pb, ["node1", "node3"])
        print("dead NM drained after %.2f s" % detect)


def test_hung_node_manager_drained_by_heartbeat_alone(gang3):
    """Nothing time-shares, so the strobe is only the heartbeat (no
    COMPARE-AND-WRITE confirmation after it): a node manager that hangs
    (stopped, its connections open, so nothing is refused) must still be
    found by the unanswered strobes and drained; once it answers for
    ReturnAfter the machine manager returns the node to service by itself,
    and a second hang drains it again."""
    c = gang3
    c.wait_idle(timeout=120)
    victim = "node3"

    def heartbeat_only():
        hdr, _, jobs = g.mm_status(c)     # rewritten once a second
        return not jobs and int(hdr.get("nslots", "0")) <= 1
    g.wait_for(heartbeat_only, 10, "no job in the machine manager's matrix")
    nm_pid = g.nm_pid(c, victim)

    def node_info():
        return c.run(["scontrol", "-o", "show", "node", victim]).stdout

    def answers_since(t):
        """The status, written after t, shows the node answering."""
        hdr, nodes, _ = g.mm_status(c)
        n = nodes.get(victim, {})
        return (int(hdr.get("written", "0")) > t and n.get("state") == "live"
                and n.get("misses") == "0")

    for outage in (1, 2):
        os.kill(nm_pid, signal.SIGSTOP)
        try:
            info = g.wait_for(lambda: _drained_by_storm(c, victim), 60,
                              "%s drained (outage %d)" % (victim, outage))
            assert "missed" in info and "strobe" in info, info
            # the other nodes still get heartbeats
            before = {n: int(g.nm_gang(c, n)["strobes"]) for n in ("node1", "node2")}
            g.wait_for(lambda: all(int(g.nm_gang(c, n)["strobes"]) > before[n]
                                   for n in before), 30, "heartbeats to node1, node2")
        finally:
            os.kill(nm_pid, signal.SIGCONT)
        woken = time.time()          # wall clock, as the status file's "written"
        g.wait_for(lambda: answers_since(woken + 1), 30,
                   "%s answering the machine manager again (outage %d)" % (victim, outage))
        # and it is strobed again
        seen = int(g.nm_gang(c, victim)["strobes"])
        g.wait_for(lambda: int(g.nm_gang(c, victim)["strobes"]) > seen, 30,
                   "heartbeats to %s again" % victim)
        g.wait_for(lambda: "DRAIN" not in node_info(), 30,
                   "%s returned to service (outage %d)" % (victim, outage))
        assert "returned %s to service" % victim in open(
            c.path("log", "slurmctld.log")).read()

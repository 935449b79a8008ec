# SPDX-License-Identifier: GPL-2.0-or-later
"""Policies beyond strict gang: flexible and local co-scheduling, memory-aware
admission, and switching the policy of a live partition.

One 2-node cluster, Timeslice 50 ms, MaxMPL 3.  Each test rewrites
storm.conf's Policy= and reconfigures; the Machine Manager's status file
and the node managers' `gang` replies show what every job runs under, and
task CPU time comes from /proc/<pid>/schedstat.
"""
import contextlib
import os
import time

import pytest

import storm_gang as g
from storm_cluster import SLURMCTLD_RESTART_S
from storm_jobs import cancel_jobs, jobs_cancelled
from storm_wait import poll

NODES = ["node1", "node2"]
BASE = "Timeslice=50ms\nMaxMPL=3\nFailSafe=1s\nSuspectQuanta=40\n"
# Mostly asleep: a job whose processes block (as on communication or I/O).
SLEEPER = "while :; do sleep 0.2; done"


@pytest.fixture(scope="module")
def pol(make_gang_cluster):
    return make_gang_cluster("policies", 2, BASE + "Policy=gang\n",
                             "OverSubscribe=FORCE:3")


def set_policy(c, policy, extra=""):
    c.write_storm_conf(c.base_storm_conf() + BASE + extra +
                       "Policy=%s\n" % policy)
    c.reconfigure()


def mm_policies(c, jobs):
    st = g.mm_status(c)[2]
    return {j: st.get(j, {}).get("policy") for j in jobs}


def wait_policy(c, jobs, policy, timeout=SLURMCTLD_RESTART_S):
    g.wait_for(lambda: set(mm_policies(c, jobs).values()) == {policy},
               timeout, "jobs %s under Policy=%s in the MM's matrix" % (jobs, policy))


def nm_jobs(c, node):
    """{jobid: state} as the node's manager sees them."""
    st = g.nm_gang(c, node)
    return {int(k[3:]): v for k, v in st.items() if k.startswith("job") and k[3:].isdigit()}


def states_seen(c, jobs, node, seconds=1.0):
    """Every state each job took on node over a few quanta."""
    seen = {j: set() for j in jobs}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st = nm_jobs(c, node)
        for j in jobs:
            if j in st:
                seen[j].add(st[j].split("(")[0])
        time.sleep(0.01)
    return seen


@contextlib.contextmanager
def policy_jobs(c, policy, extra=""):
    """Policy=policy (and the extra storm.conf lines) for the block, jobs
    cancelled and Policy=gang again on exit: yields the list the block
    appends its job ids to."""
    set_policy(c, policy, extra)
    try:
        with jobs_cancelled(c, idle_timeout=None) as jobs:
            yield jobs
    finally:
        set_policy(c, "gang")


def _busy_beside_sleepy(c):
    """A busy job beside a sleeping one, under flexible, then gang: the
    busy job is idle-class outside its slot under flexible, frozen under
    gang (what that gains in CPU is a figure of run-policies-bench)."""
    with policy_jobs(c, "flexible") as jobs:
        a = c.sbatch("-N", "2", "-w", ",".join(NODES), "--ntasks-per-node=1",
                     "-c", str(c.cpus), "-J", "sleepy", "-o", "/dev/null",
                     "--wrap", "srun sh -c '%s'" % SLEEPER)
        jobs.append(a)
        b = g.submit_spinner(c, NODES, name="busy")
        jobs.append(b)
        g.spinner_pids(c, b, NODES)  # its tasks are running
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2" and
                   set(g.mm_status(c)[2]) >= {a, b}, 30,
                   "both jobs in two slots")
        wait_policy(c, [a, b], "flexible")
        # outside its slot the busy job is idle-class, not frozen (once the
        # node managers have the new table)
        last = {}

        def idle_seen():
            last["states"] = states_seen(c, [b], "node1", 0.5)[b]
            return "idle" in last["states"]

        if not poll(idle_seen, 60):
            # what the node manager and the MM had, for the log
            pytest.fail("busy job %d never idle-class outside its slot on node1 "
                        "in 60 s: states %r; node1 %r; MM %r"
                        % (b, last, g.nm_gang(c, "node1"), g.mm_status(c)))
        # idle-class seen above; and never frozen, then or now
        seen = states_seen(c, [a, b], "node1")
        assert "frozen" not in seen[b] | last["states"], (seen, last)

        # the same pair under gang: the busy job only runs in its own slot
        set_policy(c, "gang")
        wait_policy(c, [a, b], "gang")
        g.wait_for(lambda: "frozen" in states_seen(c, [b], "node1", 0.5)[b],
                   60, "busy job frozen outside its slot")


def test_flexible_makes_a_busy_slot_idle_class_not_frozen(pol):
    _busy_beside_sleepy(pol)


COUNT = "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done; echo result=$i"


@pytest.mark.parametrize("policy", ["gang", "flexible", "local"])
def test_policy_runs_coallocated_jobs_to_completion(pol, policy):
    c = pol
    outs = []
    # The jobs count only once all three hold the nodes together: a job
    # that started first could otherwise finish before the last one starts.
    go = c.path("log", "count-%s.go" % policy)
    with policy_jobs(c, policy) as jobs:
        if os.path.exists(go):
            os.unlink(go)
        for k in range(3):
            out = c.path("log", "count-%s-%d.out" % (policy, k))
            outs.append(out)
            jobs.append(c.sbatch("-N", "2", "-w", ",".join(NODES),
                                 "--ntasks-per-node=1", "-c", str(c.cpus),
                                 "-J", "count", "-o", out, "--wrap",
                                 "while [ ! -e %s ]; do sleep 0.1; done; "
                                 "srun sh -c '%s'" % (go, COUNT)))
        g.wait_for(lambda: set(g.mm_status(c)[2]) >= set(jobs), 60,
                   "all three jobs co-allocated")
        wait_policy(c, jobs, policy)
        open(go, "w").close()
        hdr = g.mm_status(c)[0]
        # gang and flexible jobs hold slots; local ones are never switched
        assert hdr["nslots"] == ("3" if policy != "local" else "0"), hdr
        if policy == "local":
            # never frozen or idle-class ("absent": its cgroup not there yet)
            seen = states_seen(c, jobs, "node2", 0.5)
            assert all(s <= {"running", "absent"} for s in seen.values()), seen
        for j in jobs:
            c.wait_job(j, timeout=240)
        for out in outs:
            lines = open(out).read().split()
            assert lines.count("result=2000000") == 2, (out, lines)


def test_memory_admission_waits_for_memory_with_a_reason(pol):
    c = pol
    # node RealMemory 1000 MB; 300 kept free: two 400 MB jobs do not fit
    with policy_jobs(c, "gang", "MemReserve=300\n") as jobs:
        a = g.submit_spinner(c, ["node1"], name="memA", cpus=1,
                             extra=("--mem=400",))
        jobs.append(a)
        g.spinner_pids(c, a, ["node1"])
        b = g.submit_spinner(c, ["node1"], name="memB", cpus=1,
                             extra=("--mem=400",))
        jobs.append(b)

        def reason():
            out = c.storm_pend_reason(b)
            return out if out and "STORM_memory_full" in out else None
        r = g.wait_for(reason, 30, "job B pending for memory")
        assert "node1" in r and "MemReserve=300MB" in r, r
        # cons_tres alone would have started it (800 <= 1000 MB): the
        # reserve is ours; when A ends, B starts
        jobs.remove(a)
        cancel_jobs(c, [a])
        g.wait_for(lambda: c.job_info(b).get("JobState") == "RUNNING", 60,
                   "job B running once A's memory is free")


def test_policy_switch_on_a_live_partition_kills_nothing(pol):
    c = pol
    with policy_jobs(c, "gang") as jobs:
        a, b, pa, pb = g.submit_pair(c, NODES, ("liveA", "liveB"), jobs)
        wait_policy(c, [a, b], "gang")
        g.wait_for(lambda: "frozen" in set().union(*states_seen(c, [a, b], "node1", 0.5).values()),
                   20, "one of the pair frozen under gang")
        for policy, forbidden in (("flexible", "frozen"), ("local", None)):
            set_policy(c, policy)
            wait_policy(c, [a, b], policy)
            allowed = {"running", "idle"} if policy == "flexible" else {"running"}
            if policy == "flexible":
                g.wait_for(lambda: "idle" in set().union(*states_seen(c, [a, b], "node1", 0.5).values()),
                           20, "one of the pair idle-class under flexible")
            # the MM's matrix changes at once, a node at its next strobe
            g.wait_for(lambda: all(s <= allowed for s in
                                   states_seen(c, [a, b], "node1", 0.2).values()),
                       20, "node1 switching the pair under Policy=%s" % policy)
            seen = states_seen(c, [a, b], "node1", 1.0)
            assert all(s <= allowed for s in seen.values()), (policy, seen)
            # the same processes, still running
            for n in NODES:
                assert g.cpu_ns(pa[n]) is not None and g.cpu_ns(pb[n]) is not None
            for j in (a, b):
                assert c.job_info(j).get("JobState") == "RUNNING"
        # both progress under local: the node's own scheduler shares them
        # (a deadline, not a rate: a loaded host can starve both for a while)
        procs = dict(list(pa.items()) + [("b" + n, p) for n, p in pb.items()])
        r0 = {k: g.cpu_ns(p) for k, p in procs.items()}
        g.wait_for(lambda: all(g.cpu_ns(p) - r0[k] > 50e6 for k, p in procs.items()),
                   20, "every task of the pair 50 ms further under Policy=local")

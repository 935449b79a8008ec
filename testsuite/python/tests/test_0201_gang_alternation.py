# SPDX-License-Identifier: GPL-2.0-or-later
"""Gang scheduling: two CPU-bound jobs on the same 4 nodes alternate.

Every node runs one spinning task per job (a 2-core host cannot show
quantum behaviour with more), the MM strobes every 40 ms.  The jobs take
turns on every node (their freezer cgroups show it; storm_gang's
wait_taking_turns), both progress, they rarely get CPU time in the same
~2 ms sample of /proc/<pid>/schedstat, and Slurm sees both RUNNING the
whole time.  How fairly they share the CPU is a figure of
testsuite/bench/gang/run-gang-bench, not an assertion here.
"""
import contextlib
import subprocess

import pytest

import storm_gang as g
from storm_cluster import SLURMCTLD_RESTART_S
from storm_jobs import jobs_cancelled

Q_MS = 40
NODES = ["node1", "node2", "node3", "node4"]


@pytest.fixture(scope="module")
def gang4(make_gang_cluster):
    return make_gang_cluster("gang4", 4,
                             "Timeslice=%dms\nMaxMPL=3\nFailSafe=500ms\n"
                             "SuspectQuanta=10\n" % Q_MS,
                             "OverSubscribe=FORCE:3")


def _pair(cluster):
    return g.running_pair(cluster, NODES, ("gangA", "gangB"))


def test_two_jobs_alternate(gang4):
    c = gang4
    with _pair(c) as (a, b, pa, pb):
        hdr, nodes, jobs = g.mm_status(c)
        assert jobs[a]["slot"] != jobs[b]["slot"]
        assert jobs[a]["slot"] in ("0", "1") and jobs[b]["slot"] in ("0", "1")
        r = g.wait_taking_turns(c, a, b, pa, pb, NODES, Q_MS / 1000.0, max_both=0.15)
        print("gang alternation: per-node overlap %s"
              % ["%.3f" % r[n]["both_frac"] for n in NODES])

        # Slurm still sees two RUNNING jobs: no job_suspend was involved
        for j in (a, b):
            assert c.job_info(j)["JobState"] == "RUNNING"
        # the NMs switch through the freezer and ack every strobe
        g.wait_for(lambda: all(int(g.nm_gang(c, n)["freezes"]) > 50 for n in NODES),
                   120, "50 freezes on every node")
        for n in NODES:
            assert g.nm_gang(c, n)["failsafe"] == "no"
        hdr, nodes, _ = g.mm_status(c)
        assert all(v["state"] == "live" and v["misses"] == "0"
                   for v in nodes.values()), nodes
        assert int(hdr["nslots"]) == 2


STROBE_Q_MS, STROBE_PER = 25, 8


@contextlib.contextmanager
def _one_strobe_per_quanta(c):
    """A pair taking turns with StrobeInterval: the MM strobes once per
    STROBE_PER quanta of STROBE_Q_MS.  Yields the NMs' gang replies before
    and after the pair was seen taking turns and then 20 more strobes went
    by.  On exit the pair is cancelled and the module's storm.conf back in
    force."""
    path = c.path("etc", "storm.conf")
    good = open(path).read()
    q_ms, per = STROBE_Q_MS, STROBE_PER
    c.write_storm_conf(good.replace("Timeslice=%dms" % Q_MS, "Timeslice=%dms" % q_ms)
                       .replace("FailSafe=500ms", "FailSafe=1s") +
                       "StrobeInterval=%dms\n" % (q_ms * per))
    c.reconfigure()
    try:
        g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") == str(q_ms * 1000),
                   SLURMCTLD_RESTART_S, "MM at %d ms" % q_ms)
        with _pair(c) as (a, b, pa, pb):
            g.wait_for(lambda: g.mm_status(c)[0].get("quanta_per_strobe") == str(per),
                       30, "%d quanta a strobe" % per)
            before = {n: g.nm_gang(c, n) for n in NODES}
            g.wait_taking_turns(c, a, b, pa, pb, NODES, q_ms / 1000.0)
            g.wait_for(lambda: all(int(g.nm_gang(c, n)["strobes"]) >=
                                   int(before[n]["strobes"]) + 20 for n in NODES),
                       120, "20 more strobes on every node")
            after = {n: g.nm_gang(c, n) for n in NODES}
            yield before, after
    finally:
        c.write_storm_conf(good)
        c.reconfigure(check=False)
        g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") == str(Q_MS * 1000),
                   SLURMCTLD_RESTART_S, "MM back at %d ms" % Q_MS)
        c.wait_idle()


def test_one_strobe_for_several_quanta(gang4):
    """StrobeInterval: the MM strobes once per 8 quanta and each NM times
    the 7 switches between strobes itself; the jobs still take turns every
    quantum, in step on all nodes."""
    c = gang4
    per = STROBE_PER
    with _one_strobe_per_quanta(c) as (before, after):
        for n in NODES:
            d = {k: int(after[n][k]) - int(before[n][k])
                 for k in ("strobes", "timed_switches")}
            assert d["timed_switches"] >= 5 * d["strobes"], (n, d)
            assert after[n]["failsafe"] == "no", after[n]
        # the switches each node timed are in its trace, and for each one
        # (strobe epoch, quantum q after it) every node chose the same slot
        traces = {n: {(e, q): slot for e, q, slot, *_ in
                      g.nm_trace(c, n, (int(before[n]["epoch"]), 0))}
                  for n in NODES}
        common = set.intersection(*(set(t) for t in traces.values()))
        timed = [k for k in common if k[1] > 0]
        assert len(timed) >= 5 * len([k for k in common if k[1] == 0]) > 0, \
            {n: len(t) for n, t in traces.items()}
        assert max(k[1] for k in timed) == per - 1, sorted(timed)[-per:]
        for k in common:
            assert len({traces[n][k] for n in NODES}) == 1, \
                (k, {n: traces[n][k] for n in NODES})
        hdr, nodes, _ = g.mm_status(c)
        assert all(v["state"] == "live" and v["misses"] == "0"
                   for v in nodes.values()), nodes


def test_slurm_suspend_works_on_top(gang4):
    """scontrol suspend stops a gang-scheduled job on every node: the node
    managers leave it to Slurm's own freeze of its steps ("held"), the
    other job then runs alone, never frozen; scontrol resume brings the
    pair back to taking turns."""
    c = gang4
    with _pair(c) as (a, b, pa, pb), _resumed_on_exit(c, a):
        c.run(["scontrol", "suspend", str(a)])
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % a) == "held"
                               for n in NODES), 30, "job A held on every node")
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % b) == "running(alone)"
                               for n in NODES), 30, "job B alone")
        g.wait_for(lambda: all(g.job_freezer_state(c, a, n) == "FROZEN"
                               for n in NODES), 30, "job A's steps frozen")
        assert c.job_info(a)["JobState"] == "SUSPENDED"
        freezes = {n: g.nm_gang(c, n)["freezes"] for n in NODES}
        cpu_a = {n: g.cpu_ns(pa[n]) for n in NODES}
        cpu_b = {n: g.cpu_ns(pb[n]) for n in NODES}
        epoch = {n: int(g.nm_gang(c, n)["epoch"]) for n in NODES}
        # B runs (however little: another suite may have the cores) over
        # 25 strobes at least, and is never frozen meanwhile; A gets none
        g.wait_for(lambda: all(g.cpu_ns(pb[n]) > cpu_b[n] and
                               int(g.nm_gang(c, n)["epoch"]) >= epoch[n] + 25
                               for n in NODES), 120,
                   "job B progressing alone over 25 strobes on every node")
        for n in NODES:
            assert g.cpu_ns(pa[n]) == cpu_a[n], n
            assert g.nm_gang(c, n)["freezes"] == freezes[n], n
            assert g.job_freezer_state(c, a, n) == "FROZEN", n
            assert g.job_freezer_state(c, b, n) == "THAWED", n

        c.run(["scontrol", "resume", str(a)])
        g.wait_for(lambda: c.job_info(a)["JobState"] == "RUNNING", 30, "A resumed")
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2", 30, "two slots again")
        r = g.wait_taking_turns(c, a, b, pa, pb, NODES, Q_MS / 1000.0, max_both=0.1)
        print("after resume: per-node overlap %s"
              % ["%.3f" % r[n]["both_frac"] for n in NODES])


@contextlib.contextmanager
def _resumed_on_exit(c, jobid):
    try:
        yield
    finally:
        c.run(["scontrol", "resume", str(jobid)], check=False)


def test_stormctl_show_prints_the_matrix(gang4):
    c = gang4
    with _pair(c) as (a, b, _, _):
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2", 10,
                   "two slots in the status file")
        r = subprocess.run([c.stormctl, "show"], env=c.env, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert "quantum %.3f ms" % Q_MS in out
        rows = [l.split() for l in out.splitlines()
                if l[:1] in ("*", " ") and l[1:2].isdigit()]
        assert len(rows) == 2, out
        assert sorted(r[1:] for r in rows) == sorted(
            [[str(a)] * 4, [str(b)] * 4]), out
        assert sum(1 for r in rows if r[0].startswith("*")) == 1, out
        for n in NODES:
            assert any(l.split()[:2] == [n, "live"] for l in out.splitlines()), out


def test_job_alone_is_never_frozen(gang4):
    c = gang4
    with jobs_cancelled(c) as jobs:
        a = g.submit_spinner(c, NODES[:2], name="alone")
        jobs.append(a)
        b = g.submit_spinner(c, NODES[2:], name="other")
        jobs.append(b)
        g.spinner_pids(c, a, NODES[:2])
        g.spinner_pids(c, b, NODES[2:])
        g.wait_for(lambda: set(g.mm_status(c)[2]) >= {a, b}, 30, "jobs in matrix")

        def job_on(n):
            return a if n in NODES[:2] else b
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % job_on(n)) == "running(alone)"
                               for n in NODES), 60, "each job running alone")
        before = {n: g.nm_gang(c, n) for n in NODES}
        # over 20 strobes (the strobe doubles as the heartbeat: it goes on
        # when nothing time-shares), nothing switched
        g.wait_for(lambda: all(int(g.nm_gang(c, n)["epoch"]) >=
                               int(before[n]["epoch"]) + 20 for n in NODES),
                   120, "20 more strobes on every node")
        for n in NODES:
            st = g.nm_gang(c, n)
            assert st["freezes"] == before[n]["freezes"], st      # nothing switched
            assert st["job%d" % job_on(n)] == "running(alone)", st

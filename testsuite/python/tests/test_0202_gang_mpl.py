# SPDX-License-Identifier: GPL-2.0-or-later
"""Gang scheduling: three jobs in three slots (MPL 3), and a job that ends
mid-quantum frees its slot for the others."""
import contextlib

import pytest

import storm_gang as g
from storm_cluster import SLURMCTLD_RESTART_S
from storm_jobs import jobs_cancelled

Q_MS = 30
NODES = ["node1", "node2"]


@pytest.fixture(scope="module")
def gang2(make_gang_cluster):
    return make_gang_cluster("gangmpl", 2,
                             "Timeslice=%dms\nMaxMPL=3\nFailSafe=500ms\n" % Q_MS,
                             "OverSubscribe=FORCE:3")


@contextlib.contextmanager
def _three_jobs_sampled(c):
    """Three spinners on NODES in three slots, their CPU time sampled over
    90 quanta: yields (the job ids, the MM's jobs, the samples); the list
    of job ids takes more, and every job in it is cancelled on exit."""
    with jobs_cancelled(c) as jobs:
        for i in range(3):
            jobs.append(g.submit_spinner(c, NODES, name="mpl%d" % i))
        pids = {j: g.spinner_pids(c, j, NODES) for j in jobs}
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "3", 30, "3 slots")
        _, _, mj = g.mm_status(c)
        keyed = {(n, j): pids[j][n] for j in jobs for n in NODES}
        samples = g.sample(keyed, duration=90 * Q_MS / 1000.0)
        yield jobs, mj, samples


def test_mpl3_three_slots_take_turns(gang2):
    c = gang2
    with _three_jobs_sampled(c) as (jobs, mj, samples):
        assert sorted(mj[j]["slot"] for j in jobs) == ["0", "1", "2"]
        for n in NODES:
            for x in range(3):
                for y in range(x + 1, 3):
                    sub = [(t, {"a": v[(n, jobs[x])], "b": v[(n, jobs[y])]})
                           for t, v in samples]
                    r = g.analyse_pair(sub, "a", "b")
                    assert r["both_frac"] < 0.15, (n, jobs[x], jobs[y], r)
        # a fourth job exceeds MaxMPL=3 / FORCE:3: it pends, the rest go on
        d = g.submit_spinner(c, NODES, name="mpl4")
        jobs.append(d)

        def considered():
            # once the scheduler has tried it, it has a reason to pend
            i = c.job_info(d)
            return (i["JobState"] != "PENDING" or i.get("Reason", "None") != "None") and i
        info = g.wait_for(considered, 60, "job %d considered by the scheduler" % d)
        assert info["JobState"] == "PENDING", info


def test_job_ending_frees_its_slot(gang2):
    c = gang2
    with jobs_cancelled(c) as jobs:
        a = g.submit_spinner(c, NODES, name="stays")
        jobs.append(a)
        # ends by itself after ~1.5 s of wall time, in the middle of a quantum
        b = c.sbatch("-N2", "-w", ",".join(NODES), "--ntasks-per-node=1",
                     "-c", str(c.cpus), "-o", "/dev/null", "--wrap",
                     "srun timeout 1.517 sh -c '%s'; exit 0" % g.SPIN)
        jobs.append(b)
        pa = g.spinner_pids(c, a, NODES)
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2", 30, "2 slots")
        c.wait_job(b, timeout=60)
        # the slot goes away and the remaining job runs all the time
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "1", 30, "1 slot")
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % a) == "running(alone)"
                               for n in NODES), 30, "job unfrozen everywhere")
        before = {n: g.nm_gang(c, n) for n in NODES}
        cpu0 = {n: g.cpu_ns(pa[n]) for n in NODES}
        # over 30 strobes its job cgroup stays thawed, and it runs
        states = set()

        def watched():
            for n in NODES:
                states.add(g.job_freezer_state(c, a, n))
            return all(int(g.nm_gang(c, n)["epoch"]) >= int(before[n]["epoch"]) + 30 and
                       g.cpu_ns(pa[n]) > cpu0[n] for n in NODES)
        g.wait_for(watched, 120, "30 strobes, and job %d progressing on every node" % a,
                   period=0.005)
        assert states == {"THAWED"}, states
        for n in NODES:
            assert g.nm_gang(c, n)["freezes"] == before[n]["freezes"]
        assert c.job_info(a)["JobState"] == "RUNNING"


@contextlib.contextmanager
def _storm_conf_restored(c):
    """Yields the storm.conf text; writes it back and waits for the MM to
    run at the module's quantum again on exit."""
    good = open(c.path("etc", "storm.conf")).read()
    try:
        yield good
    finally:
        c.write_storm_conf(good)
        c.reconfigure(check=False)
        g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") ==
                   str(Q_MS * 1000), SLURMCTLD_RESTART_S, "MM back at %d ms" % Q_MS)


def test_job_ending_thaws_its_partner_within_a_long_quantum(gang2):
    """With a quantum far longer than the test, the end of the running job
    thaws the frozen one within a second or two, not at the next boundary
    (the MM looks at Slurm's jobs every 100 ms between boundaries)."""
    c = gang2
    with jobs_cancelled(c) as jobs, _storm_conf_restored(c) as good:
        a = g.submit_spinner(c, NODES, name="first")
        jobs.append(a)
        b = g.submit_spinner(c, NODES, name="second")
        jobs.append(b)
        g.spinner_pids(c, a, NODES)
        g.spinner_pids(c, b, NODES)
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2", 30, "2 slots")
        # every node switches both (their cgroups found), before quanta
        # become too long for a node to look again
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % j) in
                               ("running", "frozen")
                               for n in NODES for j in (a, b)),
                   30, "both jobs switched on every node")
        c.write_storm_conf(good.replace("Timeslice=%dms" % Q_MS, "Timeslice=120s")
                           .replace("FailSafe=500ms", "FailSafe=300s"))
        c.reconfigure()
        g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") == "120000000",
                   SLURMCTLD_RESTART_S, "MM at 120 s")

        def frozen_one():
            st = [g.nm_gang(c, n) for n in NODES]
            for j in (a, b):
                if all(s.get("job%d" % j) == "frozen" and
                       s.get("quantum_us") == "120000000" for s in st):
                    return j
            return None
        # the first strobe at the new quantum freezes one of them for 120 s
        try:
            g.wait_for(frozen_one, 60, "one job frozen on every node at 120 s")
        except AssertionError as e:
            raise AssertionError("%s; node managers: %r; MM: %r" % (
                e, [g.nm_gang(c, n) for n in NODES], g.mm_status(c))) from None
        stopped = frozen_one()
        running = b if stopped == a else a
        c.run(["scancel", str(running)])
        c.wait_job(running, timeout=60)
        g.wait_for(lambda: all(g.nm_gang(c, n).get("job%d" % stopped) ==
                               "running(alone)" for n in NODES),
                   60, "the remaining job thawed everywhere")
        for n in NODES:
            assert g.job_freezer_state(c, stopped, n) == "THAWED", n

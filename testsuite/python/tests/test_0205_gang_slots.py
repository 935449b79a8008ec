# SPDX-License-Identifier: GPL-2.0-or-later
"""Slot-aware placement by select/cons_tres_storm: MaxMPL caps the time
slots per node below the partition's OverSubscribe=FORCE:4 (the job that
finds no slot pends with a reason squeue shows), and multi-node jobs land
in aligned (buddy) node blocks."""
import pytest

import storm_gang as g
from storm_jobs import jobs_cancelled


@pytest.fixture(scope="module")
def slots(make_gang_cluster):
    return make_gang_cluster("gangslots", 4,
                             "Timeslice=50ms\nMaxMPL=2\nFailSafe=1s\n",
                             "OverSubscribe=FORCE:4")


def _spin(c, n, w=None, name="s"):
    args = ["-N", str(n), "--ntasks-per-node=1", "-c", str(c.cpus), "-J", name,
            "-o", "/dev/null"]
    if w:
        args += ["-w", w]
    return c.sbatch(*(args + ["--wrap", "srun sh -c '%s'" % g.SPIN]))


def _running(c, j):
    return c.job_info(j).get("JobState") == "RUNNING"


def test_aligned_blocks_and_maxmpl_reason(slots):
    c = slots
    with jobs_cancelled(c) as jobs:
        a = _spin(c, 1, "node2", "a")
        jobs.append(a)
        g.wait_for(lambda: _running(c, a), 60, "a running")
        b = _spin(c, 2, None, "b")
        jobs.append(b)
        g.wait_for(lambda: _running(c, b), 60, "b running")
        # a 2-node job goes to an aligned pair, never node[2-3]
        assert c.job_info(b)["NodeList"] in ("node[1-2]", "node[3-4]"), c.job_info(b)

        # fill node2's two slots, then ask for node2 once more
        if c.job_info(b)["NodeList"] != "node[1-2]":
            x = _spin(c, 1, "node2", "x")
            jobs.append(x)
            g.wait_for(lambda: _running(c, x), 60, "x running")
        d = _spin(c, 1, "node2", "d")
        jobs.append(d)

        def pending_with_reason():
            r = c.storm_pend_reason(d)
            return r and "STORM_time_slots_full" in r and r
        r = g.wait_for(pending_with_reason, 30, "job pending with the STORM reason")
        assert "MaxMPL=2" in r and "node2" in r, r
        # FORCE:4 alone would have let it run: it is our cap that holds it
        assert not _running(c, d)

        # a slot frees: the pending job starts
        c.run(["scancel", str(a)])
        g.wait_for(lambda: _running(c, d), 60, "d runs once a slot is free")

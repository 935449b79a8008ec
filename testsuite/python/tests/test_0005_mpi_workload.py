# SPDX-License-Identifier: GPL-2.0-or-later
"""An Open MPI program launched with srun --mpi=pmix through the STORM
plugins runs and communicates across nodes (the workload tool of
contribs/workload, which doubles as the RMS micro-benchmark)."""
import json
import os
import subprocess

import pytest

from storm_mpi import open_mpi_env


def workload(cluster):
    path = os.path.join(cluster.builddir, "contribs", "workload", "storm-workload")
    if not os.access(path, os.X_OK):
        pytest.fail("storm-workload was not built (is mpicc installed?): %s" % path)
    return path


def test_alltoall_across_four_nodes(cluster):
    r = cluster.run(["srun", "--mpi=pmix", "-N", "4", "--ntasks-per-node=1",
                     workload(cluster), "--array-mb", "4", "--iters", "20000",
                     "--exchange-every", "500", "--label", "t5"],
                    env=dict(cluster.env, **open_mpi_env("lo")))
    rec = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][0])
    assert rec["label"] == "t5"
    assert rec["ranks"] == 4
    assert rec["seconds"] > 0


def test_slowdown_driver_runs_jobs_through_sbatch(cluster, tmp_path):
    out = tmp_path / "slowdown.json"
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                          "contribs", "workload", "storm-slowdown")
    r = subprocess.run([driver, "--jobs", "1,2", "--nodes", "2", "--workload", "alltoall",
                        "--repeats", "2",
                        "--workload-bin", workload(cluster), "--one-host",
                        "--json", str(out), "--timeout", "300"],
                       env=cluster.env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert sorted(res["rounds"]) == ["1", "2"]
    assert len(res["rounds"]["2"]) == 2
    assert res["slowdown"]["1"] == pytest.approx(1.0)
    # --repeats: two rounds per j, the median makespan counts
    assert [len(res["samples"][j]) for j in ("1", "2")] == [2, 2]
    # run in sweeps (1, 2, 1, 2), not j after j (1, 1, 2, 2)
    order = sorted((min(x["jobids"]), j) for j in ("1", "2") for x in res["samples"][j])
    assert [j for _, j in order] == ["1", "2", "1", "2"], order
    spans = sorted(x["makespan"] for x in res["samples"]["2"])
    assert res["makespan"]["2"] == pytest.approx(sum(spans) / 2)
    cluster.wait_idle()


def test_memory_pressure_case_records_oom_killed_jobs(make_cluster, tmp_path):
    """storm-slowdown --footprint-mb: jobs whose footprints together exceed
    a node's memory (a 400 MB memory cgroup stands in for each node's RAM;
    CR_Core and no gang, so Slurm co-allocates them) are OOM-killed, and the
    driver records that instead of stopping; one job alone fits."""
    c = make_cluster("mem2", nodes=2, storm=False, node_mem_mb=400,
                     select_params="CR_Core", partition_opts="OverSubscribe=FORCE:2")
    out = tmp_path / "mem.json"
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                          "contribs", "workload", "storm-slowdown")
    r = subprocess.run([driver, "--jobs", "1,2", "--nodes", "2", "--workload", "cpu",
                        "--workload-args", "--compute 50 --iters 30000000 --exchange-every 0",
                        "--footprint-mb", "250", "--keep-failures",
                        "--workload-bin", workload(c), "--one-host",
                        "--json", str(out), "--timeout", "300"],
                       env=c.env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["jobs"]["1"]["failed"] == [0]
    assert res["jobs"]["2"]["failed"][0] >= 1, res["jobs"]["2"]
    assert "FAILED" in r.stdout, r.stdout
    assert sum(c.oom_kills(n) for n in c.node_names()) >= 1
    assert "--array-mb" in res["workload_args"] and "250" in res["workload_args"]

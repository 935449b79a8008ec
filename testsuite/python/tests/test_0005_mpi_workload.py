"""An Open MPI program launched with srun --mpi=pmix through the STORM
plugins runs and communicates across nodes (the workload tool of
contribs/workload, which doubles as the RMS micro-benchmark)."""
import json
import os
import subprocess

import pytest

OMPI_ONE_HOST = {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
                 "OMPI_MCA_mpi_yield_when_idle": "1"}


def workload(cluster):
    path = os.path.join(cluster.builddir, "contribs", "workload", "storm-workload")
    if not os.access(path, os.X_OK):
        pytest.fail("storm-workload was not built (is mpicc installed?): %s" % path)
    return path


def test_alltoall_across_four_nodes(cluster):
    r = cluster.run(["srun", "--mpi=pmix", "-N", "4", "--ntasks-per-node=1",
                     workload(cluster), "--array-mb", "4", "--iters", "20000",
                     "--exchange-every", "500", "--label", "t5"],
                    env=dict(cluster.env, **OMPI_ONE_HOST))
    rec = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][0])
    assert rec["label"] == "t5"
    assert rec["ranks"] == 4
    assert rec["seconds"] > 0


def test_slowdown_driver_runs_jobs_through_sbatch(cluster, tmp_path):
    out = tmp_path / "slowdown.json"
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                          "contribs", "workload", "storm-slowdown")
    r = subprocess.run([driver, "--jobs", "1,2", "--nodes", "2", "--workload", "alltoall",
                        "--workload-bin", workload(cluster), "--one-host",
                        "--json", str(out), "--timeout", "300"],
                       env=cluster.env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert sorted(res["rounds"]) == ["1", "2"]
    assert len(res["rounds"]["2"]) == 2
    assert res["slowdown"]["1"] == pytest.approx(1.0)
    cluster.wait_idle()

# SPDX-License-Identifier: GPL-2.0-or-later
"""srun and sbatch run multi-node work on the 8-node STORM cluster."""
import os


def test_srun_8_nodes_hostname(cluster):
    r = cluster.run(["srun", "-N", "8", "hostname"])
    lines = r.stdout.split()
    assert len(lines) == 8
    assert set(lines) == {cluster.hostname}


def test_srun_tasks_run_on_each_node(cluster):
    r = cluster.run(["srun", "-N", "8", "--ntasks-per-node=1", "sh", "-c",
                     "echo $SLURMD_NODENAME"])
    assert sorted(r.stdout.split()) == sorted(cluster.node_names())


def test_node_local_directory_is_private(cluster):
    # Each node writes its name into <dir>/local; each must see only its own.
    local = cluster.path("local", "whoami")
    cluster.run(["srun", "-N", "8", "sh", "-c", "echo $SLURMD_NODENAME > %s" % local])
    r = cluster.run(["srun", "-N", "8", "-l", "sh", "-c",
                     "echo $SLURMD_NODENAME $(cat %s)" % local])
    for line in r.stdout.splitlines():
        _, node, seen = line.split()
        assert node == seen
    for node in cluster.node_names():
        with open(os.path.join(cluster.node_local(node), "whoami")) as f:
            assert f.read().strip() == node
        os.unlink(os.path.join(cluster.node_local(node), "whoami"))


def test_sbatch_multi_node_step(cluster, tmp_path):
    out = tmp_path / "job.out"
    jobid = cluster.sbatch("-N", "8", "--ntasks-per-node=2", "-o", str(out), "--wrap",
                           "srun -N 8 --ntasks-per-node=2 sh -c 'echo task $SLURM_PROCID on $SLURMD_NODENAME'")
    info = cluster.wait_job(jobid)
    assert info["JobState"] == "COMPLETED", info
    assert info["ExitCode"] == "0:0"
    tasks = [l for l in out.read_text().splitlines() if l.startswith("task ")]
    assert sorted(int(l.split()[1]) for l in tasks) == list(range(16))
    assert {l.split()[3] for l in tasks} == set(cluster.node_names())
    cluster.wait_idle()

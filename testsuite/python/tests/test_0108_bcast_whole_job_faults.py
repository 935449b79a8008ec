# SPDX-License-Identifier: GPL-2.0-or-later
"""A whole job's files under faults, as the executable alone is in
test_0101: a node manager stopped while the bundle of named files is on
its way fails the step naming that node, no task runs anywhere, and no
node keeps a tree or a temporary once the node is back; the next launch
works.  Another user can neither read a job's tree on a node nor list the
directory that holds it."""
import os
import subprocess

import pytest

import storm_bcast_site
from storm_jobs import jobs_cancelled
from storm_wait import poll
from test_0101_bcast_launch import ensure_user, nm_pid, revive_node, wait_no_files

NODES = 4


@pytest.fixture(scope="module")
def site_conf(cluster):
    """storm.conf for srun with BcastExecutable=yes and BcastLibraries=yes."""
    return storm_bcast_site.site_conf(cluster, "storm-faults.conf",
                                      "BcastExecutable=yes\nBcastLibraries=yes\n")


@pytest.fixture(scope="module")
def share(cluster):
    d = cluster.path("share", "wholejob-faults")
    os.makedirs(d, exist_ok=True)
    os.chmod(cluster.path("share"), 0o1777)
    os.chmod(d, 0o1777)
    return d


def leftovers(cluster, node):
    return storm_bcast_site.kept(cluster, node,
                                 lambda f: "tree" in f or f.startswith(".storm-"))


def test_node_stopped_mid_bundle_runs_nothing_keeps_nothing(cluster, site_conf, share):
    """node4's node manager is stopped once it is receiving the bundle of
    a 64 MiB named directory, then killed: srun names node4, no task
    runs, and once node4 has a new node manager no node keeps a tree or a
    temporary file; then the same launch runs everywhere."""
    data = os.path.join(share, "data")
    os.makedirs(data, exist_ok=True)
    for i in range(4):
        with open(os.path.join(data, "part%d" % i), "wb") as f:
            f.write(os.urandom(16 * 1024 * 1024))
    marker = os.path.join(share, "ran")
    victim = "node4"
    pid = nm_pid(cluster, victim)
    e = dict(cluster.env, STORM_CONF=site_conf, SLURM_STORM_FILES=data)
    e.pop("SLURM_STORM_BCAST", None)
    rc, out, err = storm_bcast_site.stop_nm_once_logged(
        cluster, victim, pid,
        ["srun", "-N%d" % NODES, "--ntasks-per-node=1",
         "-w", ",".join(cluster.node_names()[:NODES]),
         "sh", "-c", "touch %s.$SLURMD_NODENAME" % marker],
        e, "_tree (", 180)
    print("srun, node4 stopped mid-bundle:", err)
    assert rc != 0, out + err
    assert "Failed to broadcast the libraries and named files of" in err, err
    assert victim in err, err
    ran = [f for f in os.listdir(share) if f.startswith("ran.")]
    assert not ran, ran
    cluster.restart_slurmd(victim, wait=False)
    revive_node(cluster, victim, pid)
    wait_no_files(cluster)
    for n in cluster.node_names():
        assert not leftovers(cluster, n), "%s keeps %s" % (n, leftovers(cluster, n))
    r = cluster.run(["srun", "-N%d" % NODES, "--ntasks-per-node=1",
                     "-w", ",".join(cluster.node_names()[:NODES]),
                     "sh", "-c", "ls %s | wc -l" % data], env=e, timeout=180)
    assert r.stdout.split() == ["4"] * NODES, r.stdout + r.stderr


def test_other_user_cannot_read_a_jobs_tree(cluster, site_conf, share):
    uid = ensure_user("stormtest")
    named = os.path.join(share, "private-input.txt")
    with open(named, "w") as f:
        f.write("stormtest's input\n")
    os.chmod(named, 0o644)
    out = os.path.join(share, "tree-owner.out")
    batch = os.path.join(share, "tree-owner.sbatch")
    with open(batch, "w") as f:
        f.write("#!/bin/sh\nexport STORM_CONF=%s SLURM_STORM_FILES=%s\n"
                "unset SLURM_STORM_BCAST\nsrun -N2 cat %s\nsleep 60\n" % (site_conf, named, named))
    r = cluster.run(["runuser", "-u", "stormtest", "--", "sbatch", "--parsable", "-N2",
                     "-o", out, batch])
    jobid = int(r.stdout.strip().split(";")[0])
    with jobs_cancelled(cluster, jobid, timeout=120, idle_timeout=None):
        trees = []

        def both_trees():
            trees[:] = [os.path.join(cluster.node_local(n), "storm", t)
                        for n in cluster.node_names()
                        for t in storm_bcast_site.kept(cluster, n, lambda f: f.endswith("_tree"))
                        if t.startswith("job_%d/" % jobid)]
            return len(trees) >= 2

        poll(both_trees, 90, 0.5)
        for t in trees:
            jd = os.path.dirname(t)
            st = os.stat(jd)
            assert st.st_uid == uid and (st.st_mode & 0o777) == 0o700, (jd, oct(st.st_mode))
            copy = t + named
            assert os.stat(copy).st_uid == uid
            r = subprocess.run(["runuser", "-u", "nobody", "--", "cat", copy],
                               capture_output=True, text=True)
            assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
            r = subprocess.run(["runuser", "-u", "nobody", "--", "ls", jd],
                               capture_output=True, text=True)
            assert r.returncode != 0, r.stdout
        poll(lambda: open(out).read().count("stormtest's input") >= 2, 60, 0.5)
    wait_no_files(cluster)

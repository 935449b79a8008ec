# SPDX-License-Identifier: GPL-2.0-or-later
"""The cluster network: every node in a network namespace of its own, with
its own address and a shaped link into one switch, the same ports on every
node, slurmctld and the user's commands on a head address of their own.
What a real cluster needs works across those addresses: a broadcast launch,
a gang-scheduled pair, stormctl show, an sbatch multi-node step, Open MPI
over pmix.  Teardown leaves nothing of the network behind."""
import os
import subprocess

import pytest

import storm_gang as g
from storm_cluster import Cluster
from storm_mpi import open_mpi_env
from test_0101_bcast_launch import (MPI_SRC, checksum_script, run_bcast,
                                    share_dir, wait_no_files)
NODES = 8
Q_MS = 40
LINK_MBIT = 400


@pytest.fixture(scope="module")
def net8(make_gang_cluster):
    return make_gang_cluster("net8", NODES,
                             "Timeslice=%dms\nFailSafe=500ms\nSuspectQuanta=10\n" % Q_MS,
                             network="netns", link_mbit=LINK_MBIT)


def test_every_node_has_its_own_address_and_the_same_ports(net8):
    c = net8
    r = c.run(["srun", "-N%d" % NODES, "--ntasks-per-node=1", "sh", "-c",
               'echo $SLURMD_NODENAME $(hostname -I)'])
    seen = dict(l.split()[:2] for l in r.stdout.splitlines() if l.strip())
    assert seen == {n: c.addr(n) for n in c.node_names()}, r.stdout
    assert len(set(seen.values())) == NODES
    assert c.addr("head") not in seen.values()
    conf = open(c.conf).read()
    assert "SlurmctldHost=%s(%s)" % (c.hostname, c.addr("head")) in conf
    ports = {w for w in conf.split() if w.startswith("Port=")}
    assert ports == {"Port=%d" % Cluster.NETNS_PORTS["slurmd"]}, ports
    # every node manager joined the fabric at its node's address, same port
    for n in c.node_names():
        log = open(c.path("log", "storm-nm-%s.log" % n)).read()
        assert "at %s:%d" % (c.addr(n), Cluster.NETNS_PORTS["nm"]) in log, n


def test_broadcast_launch_on_8_nodes_checksums(net8):
    c = net8
    script = os.path.join(share_dir(c), "netsum.sh")
    digest = checksum_script(script, 6 * 1024 * 1024 + 4321)
    rows = run_bcast(c, NODES, script, digest, SLURM_STORM_BCAST_TIMING="1")
    assert len(rows) == NODES
    wait_no_files(c)


def test_gang_pair_alternates_across_addresses(net8):
    c = net8
    nodes = c.node_names()[:4]
    with g.running_pair(c, nodes, ("netA", "netB"), timeout=90,
                        idle_timeout=120) as (a, b, pa, pb):
        g.wait_taking_turns(c, a, b, pa, pb, nodes, Q_MS / 1000.0)
        hdr, st, jobs = g.mm_status(c)
        assert jobs[a]["slot"] != jobs[b]["slot"]
        assert all(st[n]["state"] == "live" for n in nodes), st
        g.wait_for(lambda: all(int(g.nm_gang(c, n)["freezes"]) > 5 for n in nodes),
                   60, "freezes counted on every node")
        for n in nodes:
            assert g.nm_gang(c, n)["failsafe"] == "no"
        # stormctl, from the head, shows the matrix and every node live
        r = c.run([c.stormctl, "show"])
        assert "job" in r.stdout and str(a) in r.stdout and str(b) in r.stdout, r.stdout
        rows = [l.split() for l in r.stdout.splitlines() if l.startswith("node")]
        live = {x[0] for x in rows if len(x) > 1 and x[1] == "live"}
        assert set(nodes) <= live, r.stdout


def test_sbatch_multi_node_step(net8):
    c = net8
    out = os.path.join(share_dir(c), "net-sbatch.out")
    jobid = c.sbatch("-N4", "--ntasks-per-node=1", "-o", out, "--wrap",
                     "srun sh -c 'echo $SLURMD_NODENAME $(hostname -I)'")
    info = c.wait_job(jobid, timeout=120)
    assert info["JobState"] == "COMPLETED", (info, open(out).read())
    seen = dict(l.split()[:2] for l in open(out) if l.strip())
    assert len(seen) == 4 and all(seen[n] == c.addr(n) for n in seen), seen


def test_open_mpi_over_pmix_across_node_addresses(net8):
    c = net8
    d = share_dir(c)
    src, exe = os.path.join(d, "net_allreduce.c"), os.path.join(d, "net_allreduce")
    with open(src, "w") as f:
        f.write(MPI_SRC)
    subprocess.run(["mpicc", "-O1", "-o", exe, src], check=True)
    # each node's own link is eth0 inside its namespace
    e = dict(c.env, **open_mpi_env("eth0"), SLURM_STORM_BCAST="yes")
    r = c.run(["srun", "--mpi=pmix", "-N4", "--ntasks-per-node=1",
               "--kill-on-bad-exit=1", exe], env=e, timeout=240, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if l.startswith("rank ")]
    assert len(rows) == 4 and {x[7] for x in rows} == {"6"}, r.stdout + r.stderr
    assert len({x[5] for x in rows}) == 4


def test_second_cluster_own_subnet_teardown_removes_only_its_network(net8, tmp_path):
    """A second cluster beside the first gets its own subnet; stopping it
    removes every namespace, veth and bridge it made, and nothing else."""
    c = Cluster(str(tmp_path / "net2"), nodes=2, network="netns", link_mbit=100)
    first = set(net8.net.created())
    try:
        c.start()
        assert c.net.subnet != net8.net.subnet
        c.run(["srun", "-N2", "true"])
        made = set(c.net.created())
    finally:
        c.stop()
    assert c.net.created() == []
    assert len(made) == 3 + 3 + 1, made        # 3 namespaces, 3 veths, a bridge
    assert set(net8.net.created()) == first
    net8.run(["srun", "-N2", "true"])          # the first still works

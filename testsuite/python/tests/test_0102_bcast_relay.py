# SPDX-License-Identifier: GPL-2.0-or-later
"""The node managers' broadcast door (storm.conf BcastPort): srun hands the
file to the step's first node, which relays it over the fabric.  What
reaches that port from anyone else gets a clear error and costs nothing:
garbage, a forged credential, a credential for someone else's job, a node
list that reaches outside the user's allocation.  The node manager keeps
running and the next broadcast through it works."""
import os
import pwd
import random
import re
import socket
import struct
import subprocess
import tempfile

import xxhash

from storm_jobs import jobs_cancelled
from storm_wait import wait_for
from test_0101_bcast_launch import (checksum_script, ensure_user, nm_pid, revive_node,
                                    run_bcast, share_dir, wait_no_files)

REQ_MAGIC = 0x53524C32
REP_MAGIC = 0x53524C52


def bcast_hash(data):
    """storm_bcast_hash() of src/common/storm_bcast.h: XXH3, 64 bits."""
    return xxhash.xxh3_64_intdigest(data)


def bcast_port(cluster, node):
    conf = open(cluster.path("etc", "storm.conf")).read()
    lo = int(re.search(r"^BcastPort=(\d+)", conf, re.M).group(1))
    return lo + cluster.node_names().index(node)


def ask(cluster, node, payload):
    """Send raw bytes to node's BcastPort; (status, message) of the answer,
    or None if the node manager closed without one."""
    with socket.create_connection(("127.0.0.1", bcast_port(cluster, node)), timeout=30) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            buf += b
    if len(buf) < 16:
        return None
    magic, status, n, _ = struct.unpack("!IIII", buf[:16])
    assert magic == REP_MAGIC
    return status, buf[16:16 + n].decode()


def credential(user, payload):
    """A munge credential of `user` whose payload is the text plus its NUL,
    as srun makes it."""
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(payload.encode() + b"\0")
    os.chmod(f.name, 0o644)
    try:
        return subprocess.run(["runuser", "-u", user, "--", "munge", "-i", f.name],
                              capture_output=True, text=True, check=True).stdout.strip()
    finally:
        os.unlink(f.name)


def request(cluster, user, job, nodes, data, name="relay_test", tree=False):
    """A relay request for `data` as srun makes it; tree: a bundle, which
    each node extracts into a directory `name`."""
    pw = pwd.getpwnam(user)
    key = random.getrandbits(47) | 1
    cred = credential(user, "storm-bcast-1 job=%d step=0 uid=%d gid=%d key=%x size=%d "
                            "mode=%s hash=%x dir=- name=%s%s" % (
                                job, pw.pw_uid, pw.pw_gid, key, len(data),
                                "700" if tree else "755", bcast_hash(data), name,
                                " kind=tree" if tree else "")).encode()
    return struct.pack("!IIIIQQ", REQ_MAGIC, len(cred), len(nodes), 0, key,
                       len(data)) + cred + nodes.encode() + data


def alloc(cluster, user, nodes):
    r = cluster.run(["runuser", "-u", user, "--", "salloc", "--no-shell", "-N",
                     str(len(nodes.split(","))), "-w", nodes])
    return int(re.search(r"Granted job allocation (\d+)", r.stderr).group(1))


def test_garbage_and_forgeries_get_an_error_and_cost_nothing(cluster):
    node = "node1"
    pid = nm_pid(cluster, node)
    # garbage
    ans = ask(cluster, node, os.urandom(5000))
    assert ans and ans[0] == 1 and "malformed request" in ans[1], ans
    # a truncated header, then a header with absurd sizes
    assert ask(cluster, node, struct.pack("!II", REQ_MAGIC, 10))[0] == 1
    ans = ask(cluster, node, struct.pack("!IIIIQQ", REQ_MAGIC, 1 << 30, 1, 0, 7, 0))
    assert ans[0] == 1 and "malformed" in ans[1], ans
    # a well-formed request whose credential munge did not make
    cred = b"MUNGE:AwQDAACforged:"
    ans = ask(cluster, node, struct.pack("!IIIIQQ", REQ_MAGIC, len(cred), 5, 0, 7, 0)
              + cred + b"node1")
    assert ans[0] == 1 and "not authorized" in ans[1], ans
    log = open(cluster.path("log", "storm-nm-%s.log" % node)).read()
    assert "bad credential" in log
    assert nm_pid(cluster, node) == pid and os.path.exists("/proc/%d" % pid)
    # the next broadcast relayed by the same node manager works (pinned
    # there: an earlier test may still hold other nodes)
    script = os.path.join(share_dir(cluster), "after_garbage.sh")
    cluster.wait_idle(nodes=["node1", "node2"])
    run_bcast(cluster, 2, script, checksum_script(script, 70000), extra=["-w", "node[1-2]"])
    wait_no_files(cluster)


def test_user_cannot_reach_other_jobs_or_nodes(cluster):
    """A real credential of user stormtest: for root's job, refused by the
    relay itself; for stormtest's own job on node1-node2 but naming node5
    too, refused by node5, and the relay keeps no copy."""
    ensure_user("stormtest")
    data = b"#!/bin/sh\necho should never run\n" + bytes(200000)
    with jobs_cancelled(cluster, timeout=120, idle_timeout=None) as jobs:
        root_job = alloc(cluster, "root", "node1,node2")
        jobs.append(root_job)
        own_job = alloc(cluster, "stormtest", "node1,node2")
        jobs.append(own_job)
        ans = ask(cluster, "node1", request(cluster, "stormtest", root_job, "node1,node2", data))
        assert ans[0] == 1 and "node1" in ans[1] and "not authorized" in ans[1], ans
        ans = ask(cluster, "node1", request(cluster, "stormtest", own_job, "node[1-2],node5",
                                            data))
        assert ans[0] == 1 and "node node5" in ans[1] and "not authorized" in ans[1], ans
        assert "node1:" not in ans[1] and "node node2" not in ans[1], ans
        # no file in place anywhere (node2 may hold its hidden temporary
        # until its sweep or the job's end)
        for n in ("node1", "node2", "node5"):
            d = os.path.join(cluster.node_local(n), "storm", "job_%d" % own_job)
            left = os.listdir(d) if os.path.isdir(d) else []
            assert not [x for x in left if not x.startswith(".storm-")], (n, left)
        assert not os.path.isdir(os.path.join(cluster.node_local("node5"), "storm",
                                              "job_%d" % own_job))
        # the same request without node5 is fine: the door works for its owner
        ans = ask(cluster, "node1", request(cluster, "stormtest", own_job, "node[1-2]", data))
        assert ans[0] == 0 and "relay=node1" in ans[1], ans
        for n in ("node1", "node2"):
            f = os.path.join(cluster.node_local(n), "storm", "job_%d" % own_job, "relay_test")
            with open(f, "rb") as fh:
                assert fh.read() == data
            assert os.stat(f).st_uid == pwd.getpwnam("stormtest").pw_uid
    wait_no_files(cluster)


def test_bundle_no_node_can_extract_is_refused_with_the_reason(cluster):
    """A bundle whose checksum matches but whose contents are malformed:
    every node refuses it with that reason (the relay names node2's
    refusal, rather than waiting for node2 until the timeout), and no
    node keeps a tree or a temporary."""
    ensure_user("stormtest")
    # one empty file whose name climbs out of the tree
    bad = (b"STORMBD1" + struct.pack("<Q", 1) + b"f\0\0\0" +
           struct.pack("<IIIQ", 0o644, 4, 0, 0) + b"../x")
    with jobs_cancelled(cluster, timeout=120, idle_timeout=None) as jobs:
        job = alloc(cluster, "stormtest", "node1,node2")
        jobs.append(job)
        ans = ask(cluster, "node1", request(cluster, "stormtest", job, "node[1-2]", bad,
                                            name="s0_tree", tree=True))
        assert ans[0] == 1, ans
        assert "node node2: the files cannot be laid out" in ans[1], ans
        for n in ("node1", "node2"):
            d = os.path.join(cluster.node_local(n), "storm", "job_%d" % job)
            left = os.listdir(d) if os.path.isdir(d) else []
            assert not [x for x in left if "tree" in x or x.startswith(".storm-d")], (n, left)
    wait_no_files(cluster)


def _dead(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_relay_node_manager_dead_names_it(cluster):
    """The step's first node has no node manager listening: srun fails
    before any task runs and names that node.  The nodes are allocated
    first: a node whose node manager is dead is drained within SuspectTime,
    and a new job would wait for it instead of trying it."""
    victim = "node7"
    pid = nm_pid(cluster, victim)
    script = os.path.join(share_dir(cluster), "relay_dead.sh")
    checksum_script(script, 50000)
    job = alloc(cluster, "root", "node7,node8")
    slurmd = cluster.procs["slurmd-" + victim].pid
    os.kill(slurmd, 19)             # its slurmd must not restart the NM yet
    try:
        os.kill(pid, 9)
        # dead, its ports closed (a zombie until its reaper gets to it)
        wait_for(lambda: _dead(pid), 30, "node manager %d dead" % pid)
        r = cluster.run(["srun", "--jobid=%d" % job, "-N2", "-w", "node[7-8]", script],
                        check=False, env=dict(cluster.env, SLURM_STORM_BCAST="yes"),
                        timeout=120)
    finally:
        os.kill(slurmd, 18)
        cluster.run(["scancel", str(job)], check=False)
    assert r.returncode != 0
    assert "Failed to broadcast" in r.stderr and victim in r.stderr, r.stderr
    assert "Step launch aborted" in r.stderr
    assert r.stdout.strip() == "", r.stdout      # no task ran
    revive_node(cluster, victim, pid)
    wait_no_files(cluster)

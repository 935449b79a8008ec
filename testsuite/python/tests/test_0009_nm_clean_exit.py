# SPDX-License-Identifier: GPL-2.0-or-later
"""A node manager that ran broadcasts and gang switches exits cleanly on
SIGTERM, freeing what it holds: the harness stops every cluster's node
managers that way, so that under scripts/run-sanitized LeakSanitizer
checks each of them at its exit (a SIGKILL would skip the check), and a
leak in storm-nm fails the run.  The second test shows that it does: a
node manager told to leak (STORM_NM_TEST_LEAK, storm-nm(8)) gets a
LeakSanitizer report."""
import glob
import hashlib
import os
import subprocess

import pytest

import storm_gang as g
from storm_jobs import jobs_cancelled
from storm_wait import wait_for

NODES = ["node1", "node2", "node3"]


def _payload(c, kb=600):
    """An executable that prints the sha256 of its own copy (two chunks)."""
    path = c.path("share", "clean-exit.sh")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = b'#!/bin/sh\nsha256sum "$0" | cut -d" " -f1\nexit 0\n'
    body = head + (b"#" * 1023 + b"\n") * kb
    with open(path, "wb") as f:
        f.write(body)
    os.chmod(path, 0o755)
    return path, hashlib.sha256(body).hexdigest()


def _nm_log(c, node):
    with open(c.path("log", "storm-nm-%s.log" % node)) as f:
        return f.read()


def _sanitized(nm):
    """Whether the node manager binary carries AddressSanitizer."""
    try:
        out = subprocess.run(["ldd", nm], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "libasan" in out


def test_node_managers_exit_cleanly_after_broadcasts_and_switches(make_gang_cluster):
    c = make_gang_cluster("cleanexit", len(NODES), "Timeslice=5ms\nMaxMPL=2\n")
    path, digest = _payload(c)
    for _ in range(3):
        r = c.run(["srun", "-N%d" % len(NODES), "--ntasks-per-node=1", "-c1",
                   "--bcast", path], check=False, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [digest] * len(NODES), r.stdout
    with jobs_cancelled(c) as jobs:
        g.submit_pair(c, NODES, ("exitA", "exitB"), jobs)
        start = {n: int(g.nm_gang(c, n)["strobes"]) for n in NODES}
        wait_for(lambda: all(int(g.nm_gang(c, n)["strobes"]) >= start[n] + 20
                             for n in NODES), 60, "20 more strobes on every node")
    pids = c.node_manager_pids()
    assert sorted(pids.values()) == NODES
    for n in NODES:
        c.stop_slurmd(n)
    left = c.stop_node_managers(timeout=60)
    assert not left, "node managers still running after SIGTERM: %s" % left
    for n in NODES:
        assert "exit cleanly" in _nm_log(c, n), n


@pytest.mark.skipif(not _sanitized(os.environ.get("STORM_TEST_NODE_MANAGER", "")),
                    reason="needs the sanitized storm-nm (scripts/run-sanitized)")
def test_a_leak_in_the_node_manager_is_reported(make_cluster, tmp_path):
    prefix = str(tmp_path / "canary")
    env = {"STORM_NM_TEST_LEAK": "1",
           "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:log_path=" + prefix}
    c = make_cluster("leakcanary", nodes=1, node_env={"node1": env})
    assert "leaked on purpose" in _nm_log(c, "node1")
    c.stop_slurmd("node1")
    assert not c.stop_node_managers(timeout=60)
    reports = glob.glob(prefix + ".*")
    assert reports, "no LeakSanitizer report under %s" % prefix
    text = "".join(open(r).read() for r in reports)
    assert "detected memory leaks" in text and "leak_if_asked" in text, text[-2000:]

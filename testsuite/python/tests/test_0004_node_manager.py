# SPDX-License-Identifier: GPL-2.0-or-later
"""The node manager: one per node, started from slurmd, survives slurmd
restarts, refuses to run twice for a node (even while storm.conf is
rewritten in place), answers on its control socket."""
import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time

import storm_gang as g
from storm_wait import poll
from test_0101_bcast_launch import revive_node


def nm_socket(cluster, node):
    return os.path.join(cluster.node_local(node), "storm", ".nm-%s.sock" % node)


def nm_request(cluster, node, req, timeout=5):
    return cluster.nm_request(node, req, timeout=timeout)


def nm_ping(cluster, node, timeout=30):
    """Wait until the node's NM answers; returns its ping reply fields."""
    last = [None]

    def fields():
        try:
            reply = nm_request(cluster, node, "ping")
        except OSError as e:
            last[0] = e
            return None
        if reply.startswith("ok "):
            return dict(w.split("=", 1) for w in reply[3:].split())
        last[0] = reply
        return None

    info = poll(fields, timeout, 0.2)
    if not info:
        raise AssertionError("NM of %s does not answer: %s" % (node, last[0]))
    return info


def test_every_node_has_its_manager(cluster):
    ranks = set()
    for i, node in enumerate(cluster.node_names()):
        info = nm_ping(cluster, node)
        assert info["node"] == node
        assert int(info["rank"]) == i          # slurm.conf order
        assert int(info["nnodes"]) == cluster.nodes
        ranks.add(info["rank"])
        log = open(cluster.path("log", "storm-nm-%s.log" % node)).read()
        assert re.search(r"joined the fabric as rank %d of %d" % (i, cluster.nodes), log)
    assert len(ranks) == cluster.nodes


def test_manager_says_what_backs_bcastdir(cluster):
    """Each NM logs, at start-up, whether its BcastDir (the node's RAM disk
    here) has huge pages: what the harness mounted, as the NM sees it
    through the node's own mount namespace."""
    for node in cluster.node_names():
        nm_ping(cluster, node)
        log = open(cluster.path("log", "storm-nm-%s.log" % node)).read()
        m = re.search(r"bcast: BcastDir \S+ is a tmpfs with (huge|small) pages", log)
        assert m, "no BcastDir line in %s's log" % node
        huge = "huge=within_size" in cluster.local_opts[node]
        assert m.group(1) == ("huge" if huge else "small"), (node, cluster.local_opts[node])


def test_unknown_control_command(cluster):
    nm_ping(cluster, "node1")
    assert nm_request(cluster, "node1", "frobnicate now").startswith(
        "error unknown command 'frobnicate'")


def test_bcast_wait_answers_unknown_and_malformed(cluster):
    # What a task of an overlapped launch asks before exec: a transfer that
    # never comes is answered when the wait runs out, never left hanging;
    # a malformed request gets the usage.
    t = time.monotonic()
    reply = nm_request(cluster, "node1", "bcast_wait 5eed1e55 300", timeout=10)
    waited = time.monotonic() - t
    assert reply == "error the broadcast did not complete on every node within the wait", reply
    assert waited >= 0.3, waited
    # a pending wait does not hold up the node manager's other requests
    w = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    w.settimeout(10)
    try:
        w.connect(nm_socket(cluster, "node1"))
        w.send(b"bcast_wait 5eed1e56 2000")
        assert nm_request(cluster, "node1", "ping").startswith("ok ")
        assert w.recv(4096).decode() == "error the broadcast did not complete on every node within the wait"
    finally:
        w.close()
    for bad in ("bcast_wait", "bcast_wait 0 100", "bcast_wait xyz 100",
                "bcast_wait 12 100 extra"):
        assert nm_request(cluster, "node1", bad).startswith("error usage:"), bad
    assert nm_ping(cluster, "node1")


def test_second_manager_for_a_node_refuses(cluster):
    node = "node2"
    pid = int(nm_ping(cluster, node)["pid"])
    nm = os.path.join(cluster.plugindir, "storm-nm")
    r = subprocess.run(["nsenter", "-t", str(cluster.pid("slurmd-" + node)), "-m",
                        nm, "--node", node, "--slurm-conf", cluster.conf,
                        "--storm-conf", cluster.path("etc", "storm.conf")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr
    assert "a node manager already runs for node %s (pid %d)" % (node, pid) in r.stderr
    assert int(nm_ping(cluster, node)["pid"]) == pid


def test_manager_survives_slurmd_restart(cluster):
    node = "node3"
    pid = int(nm_ping(cluster, node)["pid"])
    start = cluster.log_size(node)
    cluster.restart_slurmd(node)
    assert int(nm_ping(cluster, node)["pid"]) == pid
    cluster.wait_log(r"spank/storm: node manager for node %s already running" % node,
                     node=node, start=start)
    assert cluster.run(["srun", "-N1", "-w", node, "true"]).returncode == 0


def test_dead_manager_is_restarted_by_slurmd(cluster):
    node = "node4"
    pid = int(nm_ping(cluster, node)["pid"])
    os.kill(pid, signal.SIGTERM)

    def gone():
        try:
            with open("/proc/%d/status" % pid) as f:
                return "zombie" in f.read()
        except OSError:
            return True

    poll(gone, 15)
    log = open(cluster.path("log", "storm-nm-%s.log" % node)).read()
    assert "exit cleanly" in log
    cluster.restart_slurmd(node)
    new = int(nm_ping(cluster, node)["pid"])
    assert new != pid


def _socket_inodes(pid):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        with contextlib.suppress(OSError):
            m = re.match(r"socket:\[(\d+)\]$", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            if m:
                out.add(m.group(1))
    return out


def _listening_inodes():
    out = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(path) as f:
            next(f)
            for line in f:
                w = line.split()
                if w[3] == "0A":        # TCP_LISTEN
                    out.add(w[9])
    return out


def test_manager_started_after_reconfigure_holds_no_slurmd_socket(cluster):
    """After `scontrol reconfigure` (24.11 re-executes slurmd, keeping its
    listening socket open across the exec), a node manager slurmd starts
    holds none of slurmd's sockets: one that kept the listening socket
    would keep the next slurmd from binding its port."""
    node = "node5"
    start = cluster.log_size(node)
    cluster.reconfigure()
    cluster.wait_log(r"slurmd started on |got reconfigure request", node=node,
                     start=start)
    cluster.wait_idle()
    old = int(nm_ping(cluster, node)["pid"])
    os.kill(old, signal.SIGKILL)        # slurmd's watchdog starts a new one

    def new_pid():
        # (nm_ping raises AssertionError while nothing answers)
        with contextlib.suppress(OSError, ValueError, AssertionError):
            pid = int(nm_ping(cluster, node, timeout=1)["pid"])
            return pid if pid != old else None
        return None

    new = poll(new_pid, 30, 0.2)
    assert new, "no new node manager on %s" % node
    slurmd = cluster.pid("slurmd-" + node)
    listening = _socket_inodes(slurmd) & _listening_inodes()
    assert listening, "slurmd of %s listens on nothing this test sees" % node
    assert not _socket_inodes(new) & listening, (new, listening)
    cluster.restart_slurmd(node)
    revive_node(cluster, node, old)


def _managers(c, node):
    """PIDs of the storm-nm processes running for node of cluster c (by
    their command line: --node and this cluster's slurm.conf; watchdogs,
    named storm-nm-watch, are not counted)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != "storm-nm":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
            if c.conf in args and "--node" in args and \
                    args[args.index("--node") + 1:][:1] == [node]:
                out.append(int(d))
    return sorted(out)


def test_one_manager_while_storm_conf_is_rewritten_in_place(make_gang_cluster):
    """storm.conf rewritten in place (truncated, then written: what a
    daemon reads in between is an empty file, all defaults, another
    BcastDir) again and again while slurmd restarts: every node manager
    slurmd starts meanwhile finds the node's own lock, keyed by node and
    slurm.conf, taken and exits; exactly one runs, the first, and gang
    jobs still take turns."""
    c = make_gang_cluster("nmonce", 2, "Timeslice=40ms\nFailSafe=500ms\n")
    node, nodes = "node2", ["node1", "node2"]
    path = c.path("etc", "storm.conf")
    good = open(path).read()
    first = int(nm_ping(c, node)["pid"])
    assert _managers(c, node) == [first]
    stop = threading.Event()

    def rewrite():
        n = 0
        while not stop.is_set():
            n += 1
            with open(path, "w") as f:      # in place: truncated first
                f.flush()
                time.sleep(0.002)
                # the same keys, a harmless comment changing each time
                f.write(good + "# rewritten %d\n" % n)
            time.sleep(0.002)
    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    try:
        for _ in range(5):
            # started, slurmd has had its node manager's verdict
            c.restart_slurmd(node)
    finally:
        stop.set()
        writer.join()
        c.write_storm_conf(good)
    # one started meanwhile has exited by now, or runs for good
    poll(lambda: _managers(c, node) == [first], 60)
    assert _managers(c, node) == [first], (first, _managers(c, node))
    c.restart_slurmd(node)
    assert _managers(c, node) == [first]
    assert int(nm_ping(c, node)["pid"]) == first
    with g.running_pair(c, nodes, ("onceA", "onceB")) as (a, b, pa, pb):
        g.wait_taking_turns(c, a, b, pa, pb, nodes, 0.04)
    assert _managers(c, node) == [first]

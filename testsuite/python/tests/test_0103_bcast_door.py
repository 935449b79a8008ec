# SPDX-License-Identifier: GPL-2.0-or-later
"""The relay's door on BcastPort under hostile connections: a connection
holds nothing until its request is complete and its credential verified,
and limits are per user.  Idle and dripping connections from an
unprivileged user do not keep an authenticated user's launch out; one user
with many broadcasts in flight through a node does not keep another's out."""
import os
import pwd
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

from test_0101_bcast_launch import (checksum_script, ensure_user, nm_pid,
                                    run_bcast, share_dir, wait_no_files)
from test_0102_bcast_relay import alloc, ask, bcast_port, request

# Opens n idle and n dripping connections to host:port and keeps them open
# (reconnecting whatever the node manager closes) until killed.
ATTACKER = r"""
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def conn():
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, port))
    return s
idle = [conn() for _ in range(n)]
drip = [conn() for _ in range(n)]
print("open", flush=True)
while True:
    time.sleep(0.25)
    for group, payload in ((idle, None), (drip, b"S")):
        for i, s in enumerate(group):
            try:
                if s.recv(4096, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    raise OSError("closed")
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                group[i] = s = conn()
            if payload:
                try:
                    s.send(payload)
                except OSError:
                    pass
"""


def nm_log(cluster, node):
    return open(cluster.path("log", "storm-nm-%s.log" % node)).read()


def test_idle_and_dripping_connections_hold_nothing(cluster):
    """64 idle and 64 dripping connections from `nobody` to the relay
    node's BcastPort while root's broadcast launch on 8 nodes goes through
    that node, checksums matching; the node manager counts and summarizes
    them instead of logging each."""
    node = "node1"
    pid = nm_pid(cluster, node)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(ATTACKER)
    os.chmod(f.name, 0o644)
    attacker = subprocess.Popen(
        ["runuser", "-u", "nobody", "--", "python3", f.name, "127.0.0.1",
         str(bcast_port(cluster, node)), "64"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert attacker.stdout.readline().strip() == "open"
        script = os.path.join(share_dir(cluster), "door_under_attack.sh")
        cluster.wait_idle()
        digest = checksum_script(script, 3 << 20)
        # past BcastRequestTimeout: the first connections were closed and
        # replaced, the launch still finds the door open
        time.sleep(3)
        for _ in range(2):
            run_bcast(cluster, 8, script, digest, extra=["-w", "node[1-8]"])
        assert attacker.poll() is None, "the attacker's connections should stay up"
    finally:
        # runuser stays the parent of the attacker: end its whole group
        os.killpg(attacker.pid, signal.SIGKILL)
        attacker.wait()
        os.unlink(f.name)
    assert nm_pid(cluster, node) == pid
    deadline = time.monotonic() + 30
    while "not complete within BcastRequestTimeout" not in nm_log(cluster, node):
        assert time.monotonic() < deadline, "no summary of refused connections"
        time.sleep(1)
    # a summary per interval, not a line per connection
    counts = [int(n) for n in re.findall(r"relay: refused (\d+) connection",
                                         nm_log(cluster, node))]
    assert counts and sum(counts) > 2 * len(counts), counts
    wait_no_files(cluster)


def _stall(cluster, user, job, data):
    """A verified request whose file never comes (a byte now and then keeps
    it alive): it holds one of the user's broadcast slots."""
    s = socket.create_connection(("127.0.0.1", bcast_port(cluster, "node1")), timeout=30)
    req = request(cluster, user, job, "node[1-2]", data)
    s.sendall(req[:len(req) - len(data)] + data[:1])
    return s


def test_one_users_broadcasts_do_not_take_anothers(cluster):
    """stormtest holds 8 broadcasts through node1 (its limit): a ninth of
    its own is refused naming the limit, root's launch through node1 works,
    and once stormtest's connections close its slots come back."""
    ensure_user("stormtest")
    data = b"#!/bin/sh\necho held\n" + bytes(1 << 20)
    job = alloc(cluster, "stormtest", "node1,node2")
    held = []
    stop = threading.Event()
    try:
        held = [_stall(cluster, "stormtest", job, data) for _ in range(8)]

        def drip():
            while not stop.wait(0.5):
                for s in held:
                    try:
                        s.send(b"\0")
                    except OSError:
                        pass
        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        deadline = time.monotonic() + 60
        while True:
            ans = ask(cluster, "node1", request(cluster, "stormtest", job,
                                                "node[1-2]", data))
            if "broadcasts through this node at once" in ans[1]:
                break
            # the stalled ones may not all have been verified yet
            assert time.monotonic() < deadline, ans
            time.sleep(0.2)
        uid = pwd.getpwnam("stormtest").pw_uid
        assert ans[0] == 1 and "user %d has 8" % uid in ans[1], ans
        script = os.path.join(share_dir(cluster), "door_other_user.sh")
        run_bcast(cluster, 8, script, checksum_script(script, 1 << 20),
                  extra=["-w", "node[1-8]"])
        stop.set()
        dripper.join()
        for s in held:
            s.close()
        held = []
        deadline = time.monotonic() + 60
        while True:
            ans = ask(cluster, "node1", request(cluster, "stormtest", job,
                                                "node[1-2]", data))
            if ans[0] == 0:
                break
            assert "at once" in ans[1] and time.monotonic() < deadline, ans
            time.sleep(0.5)
    finally:
        stop.set()
        for s in held:
            s.close()
        cluster.run(["scancel", str(job)], check=False)
    cluster.wait_job(job)
    wait_no_files(cluster)


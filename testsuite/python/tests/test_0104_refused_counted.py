# SPDX-License-Identifier: GPL-2.0-or-later
"""Refused messages are counted by kind, not logged one line each: a node
manager counts what it refuses on its control socket, its BcastPort and
the fabric, reports the counts to the Machine Manager, and `stormctl show`
prints them per node; its log gets a summary per interval.  Connections
that libfabric's handshake refuses before any message are counted as
fabric refusals too."""
import os
import random
import re
import socket
import subprocess
import time

import storm_gang as g
from test_0102_bcast_relay import ask


def _rejected(c, node):
    return g.mm_status(c)[1].get(node, {}).get("rejected", {})


def test_refusals_counted_reported_and_summarized(cluster):
    c = cluster
    node = "node2"
    before = _rejected(c, node) or {"ctl": 0, "bcast": 0, "fabric": 0}
    for _ in range(3):
        assert c.nm_request(node, "no-such-command").startswith("error")
    for _ in range(5):
        assert ask(c, node, os.urandom(300))[0] == 1
    g.wait_for(lambda: _rejected(c, node).get("ctl", 0) >= before["ctl"] + 3 and
               _rejected(c, node).get("bcast", 0) >= before["bcast"] + 5, 30,
               "the refusals in the machine manager's status")
    r = subprocess.run([c.stormctl, "show"],
                       env=c.env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    row = [l.split() for l in r.stdout.splitlines() if l.split()[:1] == [node]]
    # node, state, ack_us, misses, silent_ms, then refused on ctl, bcast,
    # fabric (the clock's columns follow)
    assert row and int(row[0][5]) >= before["ctl"] + 3, r.stdout
    assert int(row[0][6]) >= before["bcast"] + 5, r.stdout
    assert "machine manager:" in r.stdout
    log = c.path("log", "storm-nm-%s.log" % node)
    g.wait_for(lambda: re.search(r"refused in the last \d+ s: control socket [1-9]",
                                 open(log).read()), 30, "a summary line")
    assert "unknown command" not in open(log).read()


# ------------------------------------------ connections below STORM's parser

def _port(c, key, node=None):
    """A port of the cluster's storm.conf: `key`'s (first) value, plus the
    node's index for the per-node ranges."""
    conf = open(c.path("etc", "storm.conf")).read()
    lo = int(re.search(r"^%s=(\d+)" % key, conf, re.M).group(1))
    return lo + (c.node_names().index(node) if node else 0)


def _junk(port, n):
    """n connections that are not libfabric peers, in three kinds: random
    bytes, a truncated connection header, and a slow one that says nothing
    for a while and then closes."""
    slow = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if i % 3 == 0:
            s.sendall(os.urandom(random.randint(1, 600)))
        elif i % 3 == 1:
            s.sendall(os.urandom(3))
        else:
            slow.append(s)
            continue
        s.close()
    time.sleep(0.5)
    for s in slow:
        s.close()


def _mm_refused(c):
    r = subprocess.run([c.stormctl, "show"], env=c.env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    m = re.search(r"machine manager: (\d+) fabric message\(s\) refused", r.stdout)
    assert m, r.stdout
    return int(m.group(1))


def test_junk_connections_to_fabric_ports_are_counted(cluster):
    """Connections refused in libfabric's own handshake never reach STORM's
    checks; they are counted all the same, for a node manager's fabric port
    (its `fabric` column) and the Machine Manager's ControllerPort."""
    c = cluster
    node = "node3"
    n = 30
    before = _rejected(c, node).get("fabric", 0)
    mm_before = _mm_refused(c)
    _junk(_port(c, "Port", node), n)
    _junk(_port(c, "ControllerPort"), n)
    g.wait_for(lambda: _rejected(c, node).get("fabric", 0) >= before + n, 30,
               "%d more fabric refusals of %s in the machine manager's status" % (n, node))
    g.wait_for(lambda: _mm_refused(c) >= mm_before + n, 30,
               "%d more refusals by the machine manager" % n)
    # both still serve: the node answers, the machine manager hears it
    assert c.nm_request(node, "ping").startswith("ok")
    log = c.path("log", "storm-nm-%s.log" % node)
    g.wait_for(lambda: re.search(r"refused in the last \d+ s: .*fabric [1-9]",
                                 open(log).read()), 30, "a summary line with the fabric count")

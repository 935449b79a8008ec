# SPDX-License-Identifier: GPL-2.0-or-later
"""Refused messages are counted by kind, not logged one line each: a node
manager counts what it refuses on its control socket, its BcastPort and
the fabric, reports the counts to the Machine Manager, and `stormctl show`
prints them per node; its log gets a summary per interval."""
import os
import re
import subprocess

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

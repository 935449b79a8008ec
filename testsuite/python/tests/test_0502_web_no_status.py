# SPDX-License-Identifier: GPL-2.0-or-later
"""storm-web without a Machine Manager: no status file, a stale one, a bad
configuration.  It serves the page and says what is wrong (503 with the
reason, storm_web_status_up 0, nodes "unknown" on a stale status); a bad
configuration stops it with a message naming the file and line.  What it
sends the page: a status once per change (ETag and 304 for a GET, the
page's stream of status, ticks and the event log); no running slot
without the MM's strobe file.  No cluster: stormctl
from the build reads files the test writes."""
import http.client
import json
import os
import re
import subprocess
import time

import pytest

from storm_wait import wait_for

pytest.importorskip("aiohttp")
prom_parser = pytest.importorskip("prometheus_client.parser")

BUILD = os.path.abspath(os.environ.get("STORM_BUILDDIR", os.path.join(
    os.path.dirname(__file__), "..", "..", "..")))
WEB = os.path.join(BUILD, "src", "web", "storm-web")
STORMCTL = os.path.join(BUILD, "src", "stormctl", "stormctl")

STALE = """version=1
written=%d
mm_id=1
epoch=5
slot=0
nslots=1
quantum_us=20000
nnodes=1
suspect_time_us=250000
node 0 node1 state=live ack_us=300 misses=0 rejected=0,0,0 silent_ms=20 failsafe_events=0 failsafe_open=0 switch_lag_us=-
job 7 slot=0 mask=0x1 nodes=0 policy=gang user=alice name=a%%20b
"""


class Web:
    def __init__(self, status, conf="/dev/null"):
        self.p = subprocess.Popen([WEB, "--conf", conf, "--listen", "127.0.0.1:0",
                                   "--status", status, "--stormctl", STORMCTL],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        m = re.search(r":(\d+)/", line)
        assert m, (line, self.p.stderr.read())
        self.port = int(m.group(1))

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def request(self, path, headers=None):
        """(status, headers, body)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def stream(self, n):
        """The open connection of /api/v1/stream and its first n events
        as (name, data parsed)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/api/v1/stream")
        r = c.getresponse()
        assert r.status == 200, r.read()
        assert r.getheader("Content-Type").startswith("text/event-stream")
        out, name = [], None
        while len(out) < n:
            line = r.readline().decode()
            assert line, "the stream ended after %r" % out
            if line.startswith("event: "):
                name = line[7:].strip()
            elif line.startswith("data: "):
                out.append((name, json.loads(line[6:])))
        return c, out

    def stop(self):
        self.p.terminate()
        assert self.p.wait(10) == 0


def _up(body):
    for fam in prom_parser.text_string_to_metric_families(body.decode()):
        if fam.name == "storm_web_status_up":
            return fam.samples[0].value
    return None


def test_no_status_file_is_a_503_with_the_reason(tmp_path):
    w = Web(str(tmp_path / "storm-mm.status"))
    try:
        st, body = w.get("/api/v1/status")
        assert st == 503 and b"storm-mm.status" in body, body
        st, body = w.get("/metrics")
        assert st == 200 and _up(body) == 0
        assert w.get("/")[0] == 200
    finally:
        w.stop()


def test_stale_status_shows_unknown_nodes_then_a_fresh_one_live(tmp_path):
    path = tmp_path / "storm-mm.status"
    path.write_text(STALE % (time.time() - 60))
    w = Web(str(path))
    try:
        st, body = w.get("/api/v1/nodes")
        assert st == 200 and b'"view": "unknown"' in body, body
        assert _up(w.get("/metrics")[1]) == 0
        def fresh():
            # the writer's rename: a new file, rewritten as the machine
            # manager does, so that it is still fresh (under STALE_S)
            # however long the host takes to serve it
            tmp = tmp_path / "storm-mm.status.tmp"
            tmp.write_text(STALE % time.time())
            os.rename(tmp, path)
            return True
        wait_for(lambda: fresh() and b'"view": "live"' in w.get("/api/v1/nodes")[1], 30,
                 "the fresh status served", period=1)
        wait_for(lambda: fresh() and _up(w.get("/metrics")[1]) == 1, 30,
                 "the fresh status up in /metrics", period=1)
        # the %XX-encoded name decoded through stormctl
        assert b'"name": "a b"' in w.get("/api/v1/jobs")[1]
    finally:
        w.stop()


def test_status_is_sent_once_per_change_by_etag_and_by_stream(tmp_path):
    path = tmp_path / "storm-mm.status"
    path.write_text(STALE % time.time())
    w = Web(str(path))
    try:
        st, hdrs, body = w.request("/api/v1/status")
        assert st == 200 and json.loads(body)["jobs"][0]["name"] == "a b"
        # the same ETag back: a 304 without a body while the status (and
        # its age in seconds) did not change; a second passing changes it
        def not_modified():
            st, h, _ = w.request("/api/v1/status")
            st2, h2, body2 = w.request("/api/v1/status", {"If-None-Match": h["ETag"]})
            return st2 == 304 and body2 == b"" and h2["ETag"] == h["ETag"]
        wait_for(not_modified, 30, "a 304 for the status' own ETag")
        assert w.request("/api/v1/status", {"If-None-Match": '"other"'})[0] == 200
        # the page's stream: the status first (what /api/v1/status says),
        # the event log, then ticks with the status' age until it changes
        c, evs = w.stream(4)
        try:
            names = [e[0] for e in evs]
            assert names[0] == "status" and evs[0][1]["jobs"][0]["name"] == "a b", evs
            assert "events" in names and "tick" in names, names
            ages = [d["age"] for n, d in evs if n == "tick"] + [evs[0][1]["age"]]
            assert all(0 <= a < 60 for a in ages), evs
            # storm-web stops with a page still on the stream (stop()
            # asserts it exits 0 within 10 s)
            w.stop()
        finally:
            c.close()
    finally:
        if w.p.poll() is None:
            w.stop()


def test_stream_without_a_status_says_why(tmp_path):
    w = Web(str(tmp_path / "storm-mm.status"))
    try:
        c, evs = w.stream(1)
        c.close()
        assert evs[0][0] == "unavailable" and "storm-mm.status" in evs[0][1]["error"], evs
    finally:
        w.stop()


def test_no_running_slot_without_the_mms_strobes(tmp_path):
    """/api/v1/now: the running slot from storm-mm.now (the MM's last
    strobe, beside the status); without one, or with one that is not, a
    503 with the reason, and the page's ticks carry no running slot (the
    page shows the status' slot)."""
    path = tmp_path / "storm-mm.status"
    path.write_text(STALE % time.time())
    w = Web(str(path))
    try:
        def reason():
            st, body = w.get("/api/v1/now")
            assert st == 503, body
            return json.loads(body)["error"]
        wait_for(lambda: "storm-mm.now" in reason() and "No such file" in reason(), 30,
                 "the missing file named")
        (tmp_path / "storm-mm.now").write_bytes(b"\0" * 128)
        wait_for(lambda: "not a STORM now file" in reason(), 30, "the bad file named")
        c, evs = w.stream(6)
        c.close()
        ticks = [d for n, d in evs if n == "tick"]
        assert ticks and not [d for d in ticks if "now" in d], evs
    finally:
        w.stop()


@pytest.mark.parametrize("text,want", [
    ("Listen=127.0.0.1:0\nBogus=1\n", b":2: expected one of Listen=, Status=, Stormctl="),
    ("Listen=nowhere\n", b"Listen=nowhere: expected HOST:PORT"),
])
def test_bad_configuration_stops_with_a_message(tmp_path, text, want):
    conf = tmp_path / "storm-web.conf"
    conf.write_text(text)
    r = subprocess.run([WEB, "--conf", str(conf), "--status", str(tmp_path / "x")],
                       capture_output=True, timeout=30)
    assert r.returncode != 0 and want in r.stderr, r.stderr

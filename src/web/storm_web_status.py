# SPDX-License-Identifier: GPL-2.0-or-later
"""storm_web_status.py - the Machine Manager's status for storm-web.

The status is read only through its one definition, src/common/storm_status.h,
by running `stormctl show --json` (storm_status_fprint_json): storm-web has no
parser of its own that could drift from the C table.  stormctl runs only when
the file changed (the MM rewrites it about once a second), so a page updated
five times a second costs one stat per update, not a process.

Besides the status itself this keeps what only a watcher over time can see:
an event log of what changed between two statuses (node states, fail-safe
thaws, refused messages, jobs arriving and leaving).
"""
import asyncio
import collections
import json
import os
import time

EVENTS_KEPT = 200
STALE_S = 5  # STORM_STATUS_STALE_S


def node_view(n, stale, quiet_ms=None):
    """The state a person reads on a node tile: live, suspect (missed
    quanta, out of the strobe set and probed, or silent longer than
    quiet_ms: the MM leaves such a node out of strobes), drained,
    fail-safe (its jobs thawed for lack of strobes), or unknown while the
    status is stale."""
    if stale:
        return "unknown"
    if n["state"] == "drained":
        return "drained"
    if n.get("failsafe_open"):
        return "fail-safe"
    if n["state"] != "live" or n["misses"] > 0:
        return "suspect"
    if quiet_ms is not None and n.get("silent_ms", -1) > quiet_ms:
        return "suspect"
    return "live"


def _events(old, new, now):
    """What changed from status old to status new, as (time, kind, text)."""
    out = []
    if old is None:
        return out
    onodes = {n["name"]: n for n in old["nodes"]}
    for n in new["nodes"]:
        o = onodes.get(n["name"])
        if not o:
            continue
        if o["view"] != n["view"]:
            out.append((now, "node", "%s: %s -> %s" % (n["name"], o["view"], n["view"])))
        d = n.get("failsafe_events", 0) - o.get("failsafe_events", 0)
        if d > 0:
            out.append((now, "fail-safe", "%s: fail-safe thawed its jobs (%d)" % (n["name"], d)))
        for kind in ("ctl", "bcast", "fabric"):
            d = n.get("rejected", {}).get(kind, 0) - o.get("rejected", {}).get(kind, 0)
            if d > 0:
                out.append((now, "rejected", "%s: %d message(s) refused on %s" % (n["name"], d, kind)))
    ojobs = {j["job_id"]: j for j in old["jobs"]}
    njobs = {j["job_id"]: j for j in new["jobs"]}
    for jid, j in njobs.items():
        if jid not in ojobs:
            out.append((now, "job", "job %d (%s) entered slot %d" % (jid, j.get("name", ""), j["slot"])))
        elif ojobs[jid]["slot"] != j["slot"]:
            out.append((now, "job", "job %d moved to slot %d" % (jid, j["slot"])))
    for jid in ojobs:
        if jid not in njobs:
            out.append((now, "job", "job %d left the matrix" % jid))
    obc = {b["relay"]: b for b in old.get("bcasts", [])}
    for b in new.get("bcasts", []):
        o = obc.get(b["relay"])
        what = "broadcast of job %d from %s (%d bytes to %d nodes)" % (
            b["job_id"], b["name"], b["size"], b["nnodes"])
        if o is None or o["key"] != b["key"] or o["count"] != b["count"]:
            if b["in_flight"]:
                out.append((now, "broadcast", what + ": started"))
            else:
                out.append((now, "broadcast", what + ": %s in %.1f ms" % (
                    b["phase"], b["elapsed_us"] / 1000.0)))
        elif o["in_flight"] and not b["in_flight"]:
            out.append((now, "broadcast", what + ": %s in %.1f ms" % (
                b["phase"], b["elapsed_us"] / 1000.0)))
    d = new["header"].get("rejected_mm", 0) - old["header"].get("rejected_mm", 0)
    if d > 0:
        out.append((now, "rejected", "machine manager: %d fabric message(s) refused" % d))
    return out


class StatusSource:
    """The latest status, read with `stormctl show --json [--status FILE]`."""

    def __init__(self, stormctl="stormctl", status_file=None, min_interval=0.1):
        self.stormctl = stormctl
        self.status_file = status_file
        # without a file to stat, every check is a stormctl run
        self.min_interval = min_interval if status_file else max(min_interval, 0.5)
        self.status = None       # the last good status, with derived fields
        self.error = "no status read yet"
        self.events = collections.deque(maxlen=EVENTS_KEPT)
        self.reads = 0
        self.nevents = 0         # events logged so far (the log keeps the last EVENTS_KEPT)
        self._checked = 0.0
        self._mtime = None
        self._lock = asyncio.Lock()

    def age(self):
        """Seconds since the status last read was written, or None: from
        the header's `written` (whole seconds), refined by the file's mtime
        when the two agree (a file copied or touched later does not)."""
        if self.status is None:
            return None
        now, written = time.time(), self.status["header"].get("written", 0)
        if self.status_file and self._mtime and isinstance(self._mtime[0], int):
            mtime = self._mtime[0] / 1e9
            if 0 <= mtime - written < 1:
                return max(0.0, now - mtime)
        return max(0.0, now - written)

    def _stat(self):
        if not self.status_file:
            return None  # stormctl finds it; cannot stat: read each time
        try:
            st = os.stat(self.status_file)
            return (st.st_mtime_ns, st.st_ino, st.st_size)
        except OSError as e:
            return ("missing", str(e))

    async def _run(self):
        args = [self.stormctl, "show", "--json"]
        if self.status_file:
            args += ["--status", self.status_file]
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        if proc.returncode:
            raise RuntimeError((err.decode(errors="replace").strip() or
                                "stormctl exited %d" % proc.returncode))
        return json.loads(out.decode(errors="replace"))

    def _derive(self, d, now):
        hdr = d["header"]
        age = max(0, int(now) - int(hdr.get("written", 0)))
        stale = age > STALE_S
        d["age_s"] = age
        d["stale"] = stale
        # half of SuspectTime: the MM's "quiet" (mm_heartbeat.c)
        quiet_ms = hdr["suspect_time_us"] / 2000 if hdr.get("suspect_time_us") else None
        for n in d["nodes"]:
            n["view"] = node_view(n, stale, quiet_ms)
        # the switch skew: the spread of the live nodes' switch lags
        lags = [n["switch_lag_us"] for n in d["nodes"]
                if n.get("switch_lag_us") is not None and n["view"] in ("live", "suspect")]
        d["switch_skew_us"] = max(lags) - min(lags) if len(lags) > 1 else None
        for b in d.setdefault("bcasts", []):
            b["in_flight"] = b["phase"] not in ("done", "failed")
        return d

    async def get(self):
        """The latest status (None if none could be read) and the error of
        the last read ("" when it worked)."""
        now = time.monotonic()
        if now - self._checked < self.min_interval and self.status is not None:
            return self.status, self.error
        async with self._lock:
            now = time.monotonic()
            if now - self._checked < self.min_interval and self.status is not None:
                return self.status, self.error
            self._checked = now
            key = self._stat()
            if key is not None and key == self._mtime and self.status is not None:
                # unchanged file, but its age grows: re-derive staleness
                self._derive(self.status, time.time())
                return self.status, self.error
            try:
                d = self._derive(await self._run(), time.time())
            except (OSError, RuntimeError, ValueError, KeyError) as e:
                self.error = str(e)
                if self.status is not None:
                    self._derive(self.status, time.time())
                return self.status, self.error
            self.reads += 1
            self._mtime = key
            new = _events(self.status, d, time.time())
            self.events.extend(new)
            self.nevents += len(new)
            self.status = d
            self.error = ""
            return self.status, self.error

# SPDX-License-Identifier: GPL-2.0-or-later
"""storm_web_now.py - the running slot, sampled five times a second.

The status file says which slot ran when the Machine Manager wrote it, once
a second; at a 2 ms quantum that is one sample in 500 switches.  The MM
also publishes each strobe it sends (src/common/storm_now.h), from which
`stormctl now` computes the slot the nodes run at its own instant, as the
nodes do.  storm-web keeps one `stormctl now --json --follow MS` running
(one process for the service's life, not one per sample) and hands its
latest line to the page and to /api/v1/now.

The follower is started again a second after it exits; a line that says
{"error": ...} (no MM yet, an older MM without the file) leaves the view on
the status' slot.
"""
import asyncio
import json
import logging
import time

INTERVAL_MS = 200       # the page's tick (storm_web_live.TICK_S)
RESTART_S = 1.0         # after the follower exits
LOG = logging.getLogger("storm-web")


class NowSource:
    def __init__(self, stormctl="stormctl", status_file=None, interval_ms=INTERVAL_MS):
        self.args = [stormctl, "now", "--json", "--follow", str(interval_ms)]
        if status_file:
            # storm-mm.now lives beside the status file
            self.args += ["--status", status_file]
        self.max_age_s = 3 * interval_ms / 1000.0
        self.latest = None      # the last good sample
        self.at = 0.0           # time.monotonic() it came
        self.error = "not read yet"
        self._task = None
        self._proc = None

    def get(self):
        """The latest sample while it is fresh and not stale, else None."""
        if self.latest is None or time.monotonic() - self.at > self.max_age_s:
            return None
        return None if self.latest.get("stale") else self.latest

    def start(self):
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self):
        try:
            while True:
                await self._follow()
                await asyncio.sleep(RESTART_S)
        finally:
            if self._proc is not None and self._proc.returncode is None:
                self._proc.kill()
                await self._proc.wait()

    async def _follow(self):
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.args, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
        except OSError as e:
            self.error = "cannot run %s: %s" % (self.args[0], e.strerror)
            return
        while True:
            line = await self._proc.stdout.readline()
            if not line:
                break
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "error" in d:
                self.error, self.latest = d["error"], None
            else:
                self.error, self.latest, self.at = "", d, time.monotonic()
        err = (await self._proc.stderr.read()).decode(errors="replace").strip()
        rc = await self._proc.wait()
        self.error = err or "stormctl now exited %s" % rc
        self.latest = None
        LOG.warning("%s; starting it again", self.error)

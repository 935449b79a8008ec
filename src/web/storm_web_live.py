# SPDX-License-Identifier: GPL-2.0-or-later
"""storm_web_live.py - the status and event log as the page gets them.

The Machine Manager rewrites its status about once a second while the page
shows it live five times a second.  So each answer is serialized once per
change, not once per request, and served two ways:

- /api/v1/status and /api/v1/events: one GET each, with an ETag; a client
  that sends If-None-Match with the current one gets a 304 and no body.
- /api/v1/stream (text/event-stream, what the page uses): one connection
  that stays open; every TICK_S it carries the new status when it changed
  (event "status", the same bytes as /api/v1/status), the event log
  (event "events") when it grew, a status that cannot be read (event
  "unavailable") when that changes, and always a few bytes with the
  status' age and the running slot sampled at that instant (event "tick",
  storm_web_now.py).  A tick on an open stream costs the browser far less
  than a request: no new request to route, no headers to parse.
"""
import asyncio
import json
import time
import zlib

from aiohttp import web

TICK_S = 0.2          # five updates a second
MAX_STREAMS = 64      # open pages at once; more get a 503
RETRY_MS = 1000       # how soon a page reconnects after losing the stream
WRITE_TIMEOUT_S = 10  # a page that reads nothing for this long loses its stream


class Cached:
    """One JSON answer, built again only when its key changes; its ETag
    names the key and this process (a restarted storm-web counts its reads
    from zero again)."""

    def __init__(self, boot):
        self.boot, self.key, self.body, self.etag = boot, None, None, None

    def get(self, key, build):
        if key != self.key or self.body is None:
            self.body = json.dumps(build(), sort_keys=True).encode()
            self.etag = '"%s-%08x"' % (self.boot, zlib.crc32(repr(key).encode()))
            self.key = key
        return self.body

    def answer(self, request, key, build):
        body = self.get(key, build)
        headers = {"ETag": self.etag}
        if self.etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = "application/json; charset=utf-8"
        return web.Response(body=body, headers=headers)


def _event(name, data):
    # data is one line of JSON: json.dumps escapes every newline in a string
    return b"event: " + name + b"\ndata: " + data + b"\n\n"


class Live:
    """The cached answers of SOURCE (storm_web_status.StatusSource) and the
    page's stream."""

    def __init__(self, source, security_headers, now=None):
        self.source = source
        self.now = now
        self.security_headers = security_headers
        boot = "%x" % time.time_ns()
        self.status_cache, self.events_cache = Cached(boot), Cached(boot)
        self.streams = 0
        self.closing = asyncio.Event()

    def _status_key(self, st, err):
        return (self.source.reads, st["age_s"], st["stale"], err)

    def _status(self, st, err):
        # seq: which read this is; served: when this answer was built (the
        # same bytes are served until the status, its age or the error moves)
        return dict(st, error=err, served=time.time(), seq=self.source.reads,
                    age=self.source.age())

    def _events(self):
        return {"events": [{"time": t, "kind": k, "text": x} for t, k, x in self.source.events]}

    async def status(self, request, unavailable):
        st, err = await self.source.get()
        if st is None:
            return unavailable(err)
        return self.status_cache.answer(request, self._status_key(st, err),
                                        lambda: self._status(st, err))

    async def events(self, request):
        await self.source.get()
        return self.events_cache.answer(request, self.source.nevents, self._events)

    async def stream(self, request):
        if self.streams >= MAX_STREAMS:
            raise web.HTTPServiceUnavailable(reason="too many open pages (%d)" % MAX_STREAMS)
        resp = web.StreamResponse(headers=dict(self.security_headers, **{
            "Content-Type": "text/event-stream; charset=utf-8",
            # a proxy (nginx) would hold the updates back to fill its buffer
            "X-Accel-Buffering": "no"}))
        self.streams += 1
        try:
            await resp.prepare(request)
            await self._write(resp, b"retry: %d\n\n" % RETRY_MS)
            await self._feed(resp)
        except (ConnectionError, asyncio.TimeoutError):
            pass  # the page went away, or stopped reading: its slot is free again
        finally:
            self.streams -= 1
        return resp

    @staticmethod
    async def _write(resp, data):
        # a dead page whose connection stays open would otherwise hold its
        # stream (and its slot) forever once the socket's buffer is full
        await asyncio.wait_for(resp.write(data), WRITE_TIMEOUT_S)

    async def _feed(self, resp):
        sent_status = sent_events = sent_error = None
        loop = asyncio.get_running_loop()
        next_t = loop.time()
        while not self.closing.is_set():
            st, err = await self.source.get()
            out = []
            if st is None:
                if err != sent_error:
                    out.append(_event(b"unavailable", json.dumps(
                        {"error": "no status from the Machine Manager: %s" % err}).encode()))
                    sent_error, sent_status = err, None
            else:
                key = self._status_key(st, err)
                if key != sent_status:
                    out.append(_event(b"status", self.status_cache.get(
                        key, lambda: self._status(st, err))))
                    sent_status, sent_error = key, None
            if self.source.nevents != sent_events:
                sent_events = self.source.nevents
                out.append(_event(b"events", self.events_cache.get(sent_events, self._events)))
            # every update: how old the status is, from its file, and the
            # running slot at this instant (one event: each one the page
            # handles costs it a task)
            age = self.source.age()
            tick = {"age": None if age is None else round(age, 1)}
            running = self.now.get() if self.now is not None else None
            if running is not None:
                tick["now"] = {k: running[k] for k in ("slot", "nslots", "quantum", "quantum_us")}
            out.append(_event(b"tick", json.dumps(tick).encode()))
            await self._write(resp, b"".join(out))
            next_t += TICK_S
            now = loop.time()
            if next_t < now:
                next_t = now
            try:
                await asyncio.wait_for(self.closing.wait(), next_t - now)
            except asyncio.TimeoutError:
                pass

    async def close(self, app):
        """on_shutdown: end the streams, or the server would wait for them."""
        self.closing.set()


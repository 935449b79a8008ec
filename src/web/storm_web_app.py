# SPDX-License-Identifier: GPL-2.0-or-later
"""storm_web_app.py - storm-web's HTTP side: the page, /metrics, /api/v1.

Read-only: GET and HEAD only.  Every answer carries a Content-Security-Policy
that allows nothing but this server, so a string that escaped its escaping
still could not run a script; the page builds its DOM with textContent, never
with markup from data.  A status the service cannot read is a 503 with the
reason, never a crash.

The page's data comes from storm_web_live (serialized once per change;
ETags; the page's stream).
"""
import json
import os

from aiohttp import web

import storm_web_live
import storm_web_metrics

API = "/api/v1"
HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@web.middleware
async def _guard(request, handler):
    if request.method not in ("GET", "HEAD"):
        resp = web.json_response({"error": "read-only: GET and HEAD only"}, status=405,
                                 headers={"Allow": "GET, HEAD"})
    else:
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            resp = web.json_response({"error": e.reason}, status=e.status)
    if not resp.prepared:  # a stream sent its own before its first byte
        resp.headers.update(SECURITY_HEADERS)
    return resp


def _json(d, status=200):
    return web.json_response(d, status=status, dumps=lambda o: json.dumps(o, sort_keys=True))


def _unavailable(err):
    return _json({"error": "no status from the Machine Manager: %s" % err}, status=503)


def make_app(source, now=None, static_dir=HERE):
    """The aiohttp application serving SOURCE (storm_web_status.StatusSource)
    and NOW (storm_web_now.NowSource: the running slot, sampled; None:
    the status' slot only)."""
    files = {}
    for path, (name, ctype) in STATIC.items():
        with open(os.path.join(static_dir, name), "rb") as f:
            files[path] = (f.read(), ctype)

    async def static(request):
        body, ctype = files[request.path]
        return web.Response(body=body, headers={"Content-Type": ctype})

    live = storm_web_live.Live(source, SECURITY_HEADERS, now)

    async def status(request):
        return await live.status(request, _unavailable)

    async def part(request):
        st, err = await source.get()
        if st is None:
            return _unavailable(err)
        return _json({request.match_info["part"]: st[request.match_info["part"]],
                      "error": err})

    async def events(request):
        return await live.events(request)

    async def metrics(request):
        st, err = await source.get()
        body, ctype = storm_web_metrics.render(st, err, source.reads,
                                               request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def index(request):
        return _json({"version": 1, "paths": [API + "/status", API + "/header", API + "/nodes",
                                              API + "/jobs", API + "/events", API + "/now",
                                              API + "/stream"]})

    async def running(request):
        d = now.get() if now is not None else None
        if d is None:
            err = now.error if now is not None else "not enabled"
            return _json({"error": "no running slot from the Machine Manager: %s" %
                          (err or "its last strobe is stale")}, status=503)
        return _json(d)

    async def no_icon(request):
        return web.Response(status=204)

    app = web.Application(middlewares=[_guard], client_max_size=1024)
    app.router.add_get("/favicon.ico", no_icon)
    for path in files:
        app.router.add_get(path, static)
    app.router.add_get("/metrics", metrics)
    app.router.add_get(API, index)
    app.router.add_get(API + "/status", status)
    app.router.add_get(API + "/events", events)
    app.router.add_get(API + "/now", running)
    app.router.add_get(API + "/stream", live.stream)
    app.on_shutdown.append(live.close)
    if now is not None:
        async def start_now(app):
            now.start()

        async def stop_now(app):
            await now.stop()
        app.on_startup.append(start_now)
        app.on_cleanup.append(stop_now)
    app.router.add_get(API + "/{part:header|nodes|jobs}", part)
    return app

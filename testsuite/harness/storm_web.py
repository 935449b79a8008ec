# SPDX-License-Identifier: GPL-2.0-or-later
"""storm-web for the tests, the benchmark and the demo: start it on a
cluster's status file, talk HTTP to it (http.client: no proxy from the
environment), and drive Debian's headless Chromium at its page."""
import contextlib
import http.client
import os
import re
import shutil
import subprocess
import tempfile

from storm_wait import wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class StormWeb:
    """A running storm-web for `cluster`; its output goes to log/storm-web.log."""

    def __init__(self, cluster, listen="127.0.0.1:0"):
        self.cluster = cluster
        self.log_path = cluster.path("log", "storm-web.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [os.path.join(cluster.builddir, "src", "web", "storm-web"),
             "--conf", "/dev/null", "--listen", listen,
             "--status", cluster.path("state", "storm-mm.status"),
             "--stormctl", os.path.join(cluster.builddir, "src", "stormctl", "stormctl")],
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode(errors="replace")
        m = re.search(r"http://([^/]+):(\d+)/", line)
        if not m:
            self.stop()
            raise AssertionError("storm-web did not start: %r (see %s)" % (line, self.log_path))
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = "http://%s:%d/" % (self.host, self.port)

    def request(self, path, method="GET", headers=None, timeout=10):
        """(status, headers dict, body bytes)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


@contextlib.contextmanager
def storm_web(cluster, **kw):
    w = StormWeb(cluster, **kw)
    try:
        yield w
    finally:
        w.stop()


@contextlib.contextmanager
def chromium(width=1400, height=1100):
    """A headless Chromium under chromedriver (python3-selenium), quit on
    exit.  Its temporary files go to a directory of its own, removed after
    it: Chromium leaves its singleton directory in TMPDIR when chromedriver
    ends it, one more in /tmp for every run of the tests."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-proxy-server", "--window-size=%d,%d" % (width, height)):
        opts.add_argument(a)
    tmp = tempfile.mkdtemp(prefix="storm-chromium-")
    try:
        drv = webdriver.Chrome(service=Service(CHROMEDRIVER, env=dict(os.environ, TMPDIR=tmp)),
                               options=opts)
        try:
            yield drv
        finally:
            drv.quit()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def browser(url, **kw):
    with chromium(**kw) as drv:
        drv.get(url)
        yield drv


def page_updates(drv):
    """How many updates the page has had from storm-web (it counts them;
    the page before the stream counted its polls, which the benchmark
    compares against)."""
    return int(drv.execute_script(
        "return document.body.dataset.updates || document.body.dataset.polls || 0"))


def wait_page_updating(drv, timeout=30):
    wait_for(lambda: page_updates(drv) > 2, timeout, "the page's updates from storm-web")

"""pytest fixtures: a live STORM Slurm cluster for the system tests.

One 8-node cluster serves the whole session (tests must leave it idle and
with the default storm.conf); tests that need another shape start their own
with `make_cluster`.  Logs stay under $STORM_TEST_LOGDIR (default
<builddir>/testsuite/python/logs); a failing test's report names them.
"""
import os
import signal
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

from storm_cluster import Cluster  # noqa: E402

LOGROOT = os.environ.get("STORM_TEST_LOGDIR", os.path.join(HERE, "logs"))
_clusters = []


def _interrupt(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def pytest_configure(config):
    """SIGTERM and SIGHUP end the run the way ^C does, through pytest's
    teardown: every cluster stops and its network namespaces go (by
    default they killed pytest outright and left whole clusters running).
    Cluster.stop() blocks them while it runs."""
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _interrupt)


def pytest_report_header(config):
    return "STORM cluster logs: %s" % LOGROOT


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        dirs = ", ".join(c.path("log") for c in _clusters) or LOGROOT
        rep.sections.append(("STORM cluster logs", dirs))
        # CI keeps only its console: carry the logs' latest errors there.
        for c in _clusters:
            rep.sections.append(("STORM errors in %s" % c.path("log"),
                                 c.recent_errors()))


@pytest.fixture(scope="session")
def cluster():
    c = Cluster(os.path.join(LOGROOT, "main8"), nodes=8)
    _clusters.append(c)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        _clusters.remove(c)


@pytest.fixture
def make_cluster(request):
    """Start extra clusters: make_cluster("name", nodes=4, ...)."""
    made = []

    def make(name, **kw):
        c = Cluster(os.path.join(LOGROOT, name), **kw)
        made.append(c)
        _clusters.append(c)
        c.start()
        return c

    yield make
    for c in made:
        c.stop()
        _clusters.remove(c)

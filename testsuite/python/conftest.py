# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest fixtures: a live STORM Slurm cluster for the system tests.

One 8-node cluster serves the whole session (tests must leave it idle and
with the default storm.conf); tests that need another shape start their own
with `make_cluster`, and gang-scheduling modules theirs with
`make_gang_cluster`.  Logs stay under $STORM_TEST_LOGDIR (default
<builddir>/testsuite/python/logs); a failing test's report names the logs
of every cluster then running and carries their latest errors.

The harness directory is put on sys.path here, once: tests import
storm_cluster, storm_gang, storm_jobs and storm_wait directly.

Tests assert behaviour and wait for it with generous deadlines; how fast
or how fairly is for the benchmarks (testsuite/bench).
"""
import contextlib
import os
import signal
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

from storm_cluster import Cluster  # noqa: E402
from storm_gang import new_gang_cluster, start_gang  # noqa: E402

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
    # fixtures see the outcome (storm-web's keeps a screenshot of a failure)
    setattr(item, "rep_" + rep.when, rep)
    if rep.failed:
        dirs = ", ".join(c.path("log") for c in _clusters) or LOGROOT
        rep.sections.append(("STORM cluster logs", dirs))
        # CI keeps only its console: carry the logs' latest errors there.
        for c in _clusters:
            rep.sections.append(("STORM errors in %s" % c.path("log"),
                                 c.recent_errors()))


@contextlib.contextmanager
def _tracked(c):
    """c known to the failure hook from before its start until it stopped."""
    _clusters.append(c)
    try:
        yield c
    finally:
        c.stop()
        _clusters.remove(c)


@pytest.fixture(scope="session")
def cluster():
    with _tracked(Cluster(os.path.join(LOGROOT, "main8"), nodes=8)) as c:
        c.start()
        yield c


@pytest.fixture
def make_cluster():
    """Start extra clusters for one test: make_cluster("name", nodes=4, ...)
    (storm_cluster.Cluster's options); stopped after the test."""
    with contextlib.ExitStack() as stack:
        def make(name, **kw):
            c = stack.enter_context(_tracked(Cluster(os.path.join(LOGROOT, name), **kw)))
            return c.start()

        yield make


@pytest.fixture(scope="module")
def make_gang_cluster():
    """Start gang-scheduling clusters for one test module:
    make_gang_cluster("name", nodes, storm_conf, partition_opts, **kw)
    (storm_gang.new_gang_cluster's arguments); each is returned once its
    node managers get strobes, and stopped after the module."""
    with contextlib.ExitStack() as stack:
        def make(name, nodes, storm_conf, *args, **kw):
            c = stack.enter_context(_tracked(new_gang_cluster(
                os.path.join(LOGROOT, name), nodes, storm_conf, *args, **kw)))
            return start_gang(c)

        yield make

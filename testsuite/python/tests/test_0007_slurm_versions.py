# SPDX-License-Identifier: GPL-2.0-or-later
"""One tree, two Slurm versions: the plugins built for one are refused by
the other's daemons with Slurm's own message, and the daemon exits
cleanly instead of crashing; stormctl check-config works in either build.
Runs in both suites (STORM_SLURM=22.05 and 24.11) when both builds exist."""
import os
import re
import signal
import subprocess

import pytest

from conftest import LOGROOT
from storm_cluster import SLURM_VERSION, TOP_SRCDIR, Cluster, ClusterError

BUILDS = {"22.05": (TOP_SRCDIR, "scripts/bootstrap.sh"),
          "24.11": (os.path.join(TOP_SRCDIR, "build-24.11"),
                    "scripts/bootstrap.sh --slurm=24.11")}
OTHER = "24.11" if SLURM_VERSION == "22.05" else "22.05"


def _build(version):
    d, how = BUILDS[version]
    if not os.path.exists(os.path.join(d, "plugins", "select_cons_tres_storm.so")):
        pytest.skip("no Slurm %s build in %s (run %s)" % (version, d, how))
    return d


def test_the_other_versions_plugins_are_refused():
    other = _build(OTHER)
    c = Cluster(os.path.join(LOGROOT, "mismatch"), nodes=1, builddir=other)
    try:
        with pytest.raises(ClusterError):
            c.start(timeout=30)
        rc = c.procs["slurmctld"].wait(timeout=30)
    finally:
        c.stop()
    with open(c.log()) as f:
        log = f.read()
    # plugin.c's own words, naming our plugin and the version it was built for
    assert re.search(r"Incompatible Slurm plugin %s/(select_cons_tres_storm|sched_storm)\.so "
                     r"version \(%s\.\d+\)" % (re.escape(c.plugindir), re.escape(OTHER)),
                     log), log[-3000:]
    # an orderly exit (fatal()), not a crash: no signal, no core
    assert rc is not None and rc > 0, rc
    assert rc not in (128 + signal.SIGSEGV, 128 + signal.SIGABRT), rc


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_stormctl_check_config_in_either_build(cluster, version):
    d = _build(version)
    conf = cluster.path("etc", "storm.conf")
    r = subprocess.run([os.path.join(d, "src", "stormctl", "stormctl"), "check-config", conf],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert conf in r.stdout + r.stderr

# SPDX-License-Identifier: GPL-2.0-or-later
"""The cluster runs the STORM files it was pointed at, and only those: a
build tree's (the default) or an installed package's (STORM_PLUGINDIR,
STORM_BINDIR, STORM_PLUGSTACK; scripts/run-package-test)."""
import os
import re

from storm_wait import poll


def _storm_maps(pid):
    """Paths of the STORM plugins a process has mapped."""
    with open("/proc/%d/maps" % pid) as f:
        return {line.split()[-1] for line in f
                if re.search(r"/(\w*storm\w*|launch_slurm)\.so$", line)}


def _expected_nm(cluster):
    """The node manager the SPANK plugin picks (storm.conf(5) NodeManager):
    storm-nm beside the plugins (a build tree's PluginDir), else the
    installed one."""
    if os.environ.get("STORM_TEST_NODE_MANAGER"):
        return os.environ["STORM_TEST_NODE_MANAGER"]
    beside = os.path.join(cluster.plugindir, "storm-nm")
    return beside if os.access(beside, os.X_OK) else "/usr/sbin/storm-nm"


def test_daemons_map_storm_plugins_from_the_plugindir_only(cluster):
    pids = [cluster.pid("slurmctld")] + [cluster.pid("slurmd-" + n)
                                         for n in cluster.node_names()]
    for pid in pids:
        maps = _storm_maps(pid)
        assert maps, pid
        for path in maps:
            assert os.path.dirname(path) == cluster.plugindir, (pid, path)


def _nm_exes(cluster, node):
    exes = []
    for pid in cluster.ns_pids(node):
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "storm-nm":
                    exes.append(os.readlink("/proc/%d/exe" % pid))
        except OSError:
            pass
    return exes


def test_node_managers_run_the_expected_binary(cluster):
    """One node manager a node, the expected binary.  Polled: for an
    instant there can be two (the watchdog child before it renames
    itself, or a newcomer about to find the node lock held and leave)."""
    want = os.path.realpath(_expected_nm(cluster))
    for node in cluster.node_names():
        poll(lambda: _nm_exes(cluster, node) == [want], 10)
        exes = _nm_exes(cluster, node)
        assert exes == [want], (node, exes)


def test_plugstack_is_the_configured_one(cluster):
    out = cluster.run(["scontrol", "show", "config"]).stdout
    assert re.search(r"^PlugStackConfig\s+= %s$" % re.escape(cluster.plugstack),
                     out, re.M), out


def test_stormctl_is_the_configured_one(cluster):
    r = cluster.run([cluster.stormctl, "check-config"])
    assert r.returncode == 0

# SPDX-License-Identifier: GPL-2.0-or-later
"""Each STORM plugin is loaded by the daemons that should load it."""
import re

import pytest

from storm_cluster import HAS_LAUNCH_PLUGINS, SLURM_PLUGINDIR


def _maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return f.read()


def _log(cluster, node=None):
    with open(cluster.log(node)) as f:
        return f.read()


def test_slurmctld_loads_select_and_sched(cluster):
    log = _log(cluster)
    assert re.search(r"select/cons_tres_storm: init: wrapping \S+/select_cons_tres\.so", log)
    assert re.search(r"sched/storm: init: wrapping \S+/sched_backfill\.so", log)
    assert "sched/storm: machine manager thread started" in log
    maps = _maps(cluster.pid("slurmctld"))
    assert cluster.plugindir + "/select_cons_tres_storm.so" in maps
    assert cluster.plugindir + "/sched_storm.so" in maps


def test_scontrol_show_config_names_storm(cluster):
    out = cluster.run(["scontrol", "show", "config"]).stdout
    assert re.search(r"^SelectType\s+= select/cons_tres_storm$", out, re.M)
    assert re.search(r"^SchedulerType\s+= sched/storm$", out, re.M)
    assert re.search(r"^PluginDir\s+= %s:" % re.escape(cluster.plugindir), out, re.M)


def test_every_slurmd_loads_select_and_spank(cluster):
    for node in cluster.node_names():
        maps = _maps(cluster.pid("slurmd-" + node))
        assert cluster.plugindir + "/select_cons_tres_storm.so" in maps, node
        assert cluster.plugindir + "/spank_storm.so" in maps, node
        assert "spank/storm: init in slurmd" in _log(cluster, node), node


@pytest.mark.skipif(not HAS_LAUNCH_PLUGINS, reason="no launch plugins from Slurm 23.02 on")
def test_srun_loads_launch_and_spank(cluster):
    # srun loads its plugins before -v takes effect, so the loader says it.
    r = cluster.run(["srun", "-v", "-N", "1", "true"],
                    env=dict(cluster.env, LD_DEBUG="files"))
    ours = cluster.plugindir + "/launch_slurm.so"
    assert re.search(r"calling init: %s$" % re.escape(ours), r.stderr, re.M)
    assert re.search(r"file=%s/launch_slurm\.so .*dynamically loaded by %s"
                     % (re.escape(SLURM_PLUGINDIR), re.escape(ours)), r.stderr)
    assert re.search(r"calling init: %s/spank_storm\.so$" % re.escape(cluster.plugindir),
                     r.stderr, re.M)
    assert re.search(r"launch/storm: launching StepId=\d+\.0 through launch/slurm", r.stderr)
    assert re.search(r"spank/storm: srun step \d+\.0 ready to launch", r.stderr)


@pytest.mark.skipif(HAS_LAUNCH_PLUGINS, reason="22.05 hands over in launch/storm")
def test_srun_hands_over_in_spank(cluster):
    """23.02 on: srun loads the SPANK plugin alone, which takes the
    executable over (BcastExecutable or SLURM_STORM_BCAST=yes)."""
    r = cluster.run(["srun", "-v", "-N", "1", "true"],
                    env=dict(cluster.env, LD_DEBUG="files", SLURM_STORM_BCAST="yes"))
    assert re.search(r"calling init: %s/spank_storm\.so$" % re.escape(cluster.plugindir),
                     r.stderr, re.M)
    assert "launch_slurm.so" not in r.stderr
    assert re.search(r"spank/storm: srun step \d+\.0 ready to launch", r.stderr)
    assert re.search(r"spank/storm: StepId=\d+\.0: broadcast /\S+/true to node\d+ as /\S+/s0_true",
                     r.stderr), r.stderr


def test_slurmstepd_runs_spank(cluster):
    cluster.run(["srun", "-N", "2", "-w", "node3,node4", "true"])
    jobid = None
    for node in ("node3", "node4"):
        steps = re.findall(r"\[(\d+)\.0\] spank/storm: init in slurmstepd for \1\.0",
                           _log(cluster, node))
        assert steps, node
        jobid = jobid or steps[-1]
    assert jobid

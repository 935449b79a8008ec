# SPDX-License-Identifier: GPL-2.0-or-later
"""A broken storm.conf is reported with file, line and key; no daemon dies."""
import re
import subprocess

import pytest

from storm_wait import wait_for

BAD = [
    # (storm.conf text, line, what the message must name)
    ("MaxMPL=2\nTimeslise=2ms\n", 2, "unknown key 'Timeslise'"),
    ("Timeslice=2ms\nMaxMPL=zero\n", 2, "bad value 'zero' for key 'MaxMPL'"),
    ("Timeslice=10us\n", 1, "Timeslice=10us is out of range"),
]


def _stormctl(cluster, *args):
    return subprocess.run([cluster.stormctl] + list(args),
                          capture_output=True, text=True, env=cluster.env)


def _wait_log(path, pattern, timeout=20, start=0):
    def found():
        with open(path) as f:
            return re.search(pattern, f.read()[start:])
    return wait_for(found, timeout, "%r in %s" % (pattern, path), 0.2)


def _log_size(path):
    with open(path) as f:
        return len(f.read())


@pytest.mark.parametrize("text,line,what", BAD)
def test_stormctl_check_config(cluster, tmp_path, text, line, what):
    f = tmp_path / "storm.conf"
    f.write_text(text)
    r = _stormctl(cluster, "check-config", str(f))
    assert r.returncode == 1
    assert "%s:%d: " % (f, line) in r.stderr
    assert what in r.stderr
    good = _stormctl(cluster, "check-config")
    assert good.returncode == 0, good.stderr
    assert "Timeslice=" in good.stdout


@pytest.mark.parametrize("text,line,what", BAD)
def test_slurmctld_keeps_last_good_config_on_reconfigure(cluster, text, line, what):
    conf = cluster.path("etc", "storm.conf")
    with open(conf) as f:
        good = f.read()
    start = _log_size(cluster.log())
    try:
        cluster.write_storm_conf(text)
        cluster.reconfigure()
        m = _wait_log(cluster.log(), r"sched/storm: reconfigure: (\S+):(\d+): (.*); keeping the previous configuration",
                      start=start)
        assert m.group(1) == conf and int(m.group(2)) == line
        assert what in m.group(3)
        assert "UP" in cluster.run(["scontrol", "ping"]).stdout
        assert cluster.run(["srun", "-N", "8", "true"]).returncode == 0
        # Let the job end on every node before the next reconfigure: this
        # test is about storm.conf, not about a reconfigure racing a job's
        # end (a node can stay "completing" for over a minute after one: a
        # lost TERMINATE_JOB is re-sent only after KillWait + 2 *
        # MessageTimeout, on Slurm's 60 s purge cycle: so wait past it).
        cluster.wait_idle(timeout=150)
    finally:
        cluster.write_storm_conf(good)
        cluster.reconfigure()
    _wait_log(cluster.log(), r"sched/storm: reconfigure: loaded ", start=start)
    cluster.wait_idle(timeout=150)


def test_slurmd_with_bad_config_reports_and_keeps_running(cluster):
    conf = cluster.path("etc", "storm.conf")
    with open(conf) as f:
        good = f.read()
    node = "node8"
    start = _log_size(cluster.log(node))
    try:
        cluster.write_storm_conf(good + "Color=blue\n")
        cluster.restart_slurmd(node)
        m = _wait_log(cluster.log(node), r"spank/storm: slurmd: (\S+):(\d+): unknown key 'Color'",
                      start=start)
        assert m.group(1) == conf
        assert int(m.group(2)) == good.count("\n") + 1
        r = cluster.run(["srun", "-N", "1", "-w", node, "sh", "-c", "echo $SLURMD_NODENAME"])
        assert r.stdout.strip() == node
    finally:
        cluster.write_storm_conf(good)
        cluster.restart_slurmd(node)


def test_slurmctld_starts_with_bad_config(make_cluster):
    c = make_cluster("badconf", nodes=2, storm_conf="Policy=roundrobin\n",
                     expect_nm=False)
    line = c.base_storm_conf().count("\n") + 1
    log = open(c.log()).read()
    assert re.search(r"sched/storm: init: \S+/storm\.conf:%d: bad value 'roundrobin' for key 'Policy'.*"
                     r"STORM scheduling stays off" % line, log)
    assert c.run(["srun", "-N", "2", "true"]).returncode == 0

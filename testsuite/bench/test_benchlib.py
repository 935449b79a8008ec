# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of benchlib's and the harness's pure parts (no cluster): the
result file names per Slurm version, the slurm.conf lines a cluster's
extra_conf replaces, the interval of a mean, a cell's median, srun's STORM
timing lines and the netns network's extra hosts.  python3 -m pytest testsuite/bench/test_benchlib.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import benchlib as bl  # noqa: E402

bl.use_harness()
import storm_cluster  # noqa: E402


def test_default_version_keeps_the_name(monkeypatch):
    monkeypatch.setattr(storm_cluster, "SLURM_VERSION", "22.05")
    assert bl.versioned("gang.json") == "gang.json"
    assert bl.versioned("launch-netns.json") == "launch-netns.json"


def test_other_version_is_added_before_the_extension(monkeypatch):
    monkeypatch.setattr(storm_cluster, "SLURM_VERSION", "24.11")
    assert bl.versioned("gang.json") == "gang-24.11.json"
    assert bl.versioned("launch-versions.json") == "launch-versions-24.11.json"
    assert bl.png_beside(bl.versioned("gang.json")) == "gang-24.11.png"


def test_builddir_follows_the_slurm_version(monkeypatch):
    monkeypatch.delenv("STORM_BUILDDIR", raising=False)
    monkeypatch.setattr(storm_cluster, "DEFAULT_BUILDDIR", "/x/build-24.11")
    assert bl.builddir() == "/x/build-24.11"
    monkeypatch.setenv("STORM_BUILDDIR", "/y")
    assert bl.builddir() == "/y"


def test_extra_conf_replaces_a_base_key_once():
    base = ["PreemptMode=OFF", "PreemptType=preempt/none", "MinJobAge=60"]
    got = storm_cluster.Cluster._without_keys_of(
        base, "PreemptMode=GANG\nSchedulerTimeSlice=5")
    assert got == ["PreemptType=preempt/none", "MinJobAge=60"]


def test_extra_conf_without_base_keys_removes_nothing():
    base = ["PreemptMode=OFF", "MinJobAge=60"]
    assert storm_cluster.Cluster._without_keys_of(base, "") == base
    # a node or partition line's words are not keys of the base lines
    assert storm_cluster.Cluster._without_keys_of(
        base, "NodeName=n9 MinJobAge=1 CPUs=2") == base


CONFIG = ("Configuration data as of 2026-11-26T09:00:00\n"
          "SLURM_CONF              = /tmp/c/etc/slurm.conf\n"
          "SLURM_VERSION           = %s\n"
          "SrunEpilog              = (null)\n")
NODES = ("NodeName=node1 Arch=x86_64 CoresPerSocket=1 Version=%s OS=Linux\n"
         "NodeName=node2 Arch=x86_64 CoresPerSocket=1 Version=%s OS=Linux\n")


def test_versions_of_debians_2205_and_of_2411():
    # what the two versions' scontrol print (Debian names its package)
    for out, v in (("slurm-wlm 22.05.8\n", "22.05.8"), ("slurm 24.11.5\n", "24.11.5")):
        got = bl.parse_slurm_versions(out, CONFIG % v, NODES % (v, v))
        assert got == {"scontrol": v, "slurmctld": v, "slurmd": [v]}


def test_versions_keep_a_mismatch_and_what_is_missing():
    got = bl.parse_slurm_versions("slurm 24.11.5\n", CONFIG % "24.11.5",
                                  NODES % ("24.11.5", "22.05.8"))
    assert got["slurmd"] == ["22.05.8", "24.11.5"]
    assert bl.parse_slurm_versions("", "", "") == {"scontrol": None, "slurmctld": None,
                                                   "slurmd": []}


def test_mean_interval_holds_the_mean_and_narrows_with_more_pairs():
    few = [3.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1.0, -3.0]
    mean, se, (lo, hi), upper = bl.mean_interval(few)
    assert mean == 0.0
    assert se > 0
    assert lo < mean < upper < hi
    many = few * 16
    m2, se2, (lo2, hi2), _ = bl.mean_interval(many)
    assert m2 == 0.0 and se2 < se / 3
    assert lo < lo2 < 0 < hi2 < hi


def test_mean_interval_is_the_same_from_the_same_values():
    v = [1.5, -0.2, 0.3, 4.0, -2.5, 0.0]
    assert bl.mean_interval(v) == bl.mean_interval(list(v))


def test_mean_interval_of_constant_values_is_a_point():
    assert bl.mean_interval([0.25] * 10) == (0.25, 0.0, (0.25, 0.25), 0.25)


def test_mean_interval_of_one_value_has_no_interval():
    assert bl.mean_interval([2.0]) == (2.0, None, (None, None), None)


def test_median_stat_leaves_out_none():
    assert bl.median_stat([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "n": 3}
    assert bl.median_stat([None]) is None


def test_slope_of_a_line_and_of_noise_around_a_flat_level():
    assert bl.slope([(0, 5), (1, 7), (2, 9)]) == 2
    assert abs(bl.slope([(t, 100 + (1 if t % 2 else -1)) for t in range(100)])) < 0.001


def test_slope_needs_two_distinct_points():
    assert bl.slope([(1, 5)]) is None
    assert bl.slope([(1, 5), (1, 6)]) is None


def test_storm_timing_reads_every_line():
    err = ("srun: job 3 queued\n"
           "storm-bcast: file=/usr/bin/ch-run bytes=52176 nodes=4 relay=node1 "
           "check_ms=3.8 transfer_ms=8.780\n"
           "storm-bcast: file=/proc/self/fd/7 bytes=269484199 nodes=4 transfer_ms=24469.967\n")
    lines = bl.storm_timing(err)
    assert [p["file"] for p in lines] == ["/usr/bin/ch-run", "/proc/self/fd/7"]
    assert lines[0]["relay"] == "node1" and lines[0]["check_ms"] == 3.8
    assert lines[1]["bytes"] == 269484199.0
    assert bl.storm_timing("nothing") == []


def test_netns_extra_host_has_its_own_link():
    import storm_netns
    net = storm_netns.Network("/x/cluster", ["node1", "node2"], 100, {"fs": 400})
    assert net.hosts() == ["head", "node1", "node2", "fs"]
    assert net.rate("fs") == 400 and net.rate("node2") == 100
    names = {net._host_veth(h) for h in net.hosts()}
    assert len(names) == 4 and all(len(n) <= 15 for n in names)

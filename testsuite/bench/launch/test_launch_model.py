# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of launch_model (no cluster): the fits recover known
parameters from synthetic points.  python3 -m pytest testsuite/bench/launch"""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import launch_model as lm  # noqa: E402

MIB = 1 << 20
GRID = [(s, n, r) for s in (4 * MIB, 12 * MIB) for n in (1, 2, 4, 8, 16, 32)
        for r in (200, 400)] + [(64 * MIB, 32, r) for r in (200, 400)]


def points(predict, noise=0.0, seed=1):
    rnd = random.Random(seed)
    return [{"bytes": s, "nodes": n, "mbit": r,
             "ms": predict(s, n, r) * (1 + rnd.uniform(-noise, noise))}
            for s, n, r in GRID]


def test_link_ms():
    assert lm.link_ms(12 * MIB, 200) == pytest.approx(503.316, abs=1e-3)


def test_storm_fit_recovers_parameters():
    truth = {"a_ms": 35.0, "b": 1.7, "chunk_bytes": 512 * 1024}
    fit = lm.fit_storm(points(lambda s, n, r: lm.storm_predict(truth, s, n, r)),
                       512 * 1024)
    assert fit["a_ms"] == pytest.approx(35.0, rel=1e-6)
    assert fit["b"] == pytest.approx(1.7, rel=1e-6)
    assert fit["rel_err_max"] < 1e-6
    assert len(fit["points"]) == len(GRID)


def test_storm_fit_free_wire_recovers_c():
    truth = {"a_ms": 20.0, "b": 0.4, "c": 2.0, "chunk_bytes": 256 * 1024}
    fit = lm.fit_storm(points(lambda s, n, r: lm.storm_predict(truth, s, n, r)),
                       256 * 1024, free_wire=True)
    assert fit["c"] == pytest.approx(2.0, rel=1e-6)
    assert fit["a_ms"] == pytest.approx(20.0, rel=1e-5)
    assert fit["b"] == pytest.approx(0.4, rel=1e-5)


def test_storm_fit_with_burst_credit():
    truth = {"a_ms": 8.0, "b": 1.2, "chunk_bytes": 512 * 1024}
    pts = points(lambda s, n, r: lm.storm_predict(truth, s, n, r, burst=MIB))
    fit = lm.fit_storm(pts, 512 * 1024, burst=MIB)
    assert fit["a_ms"] == pytest.approx(8.0, rel=1e-6)
    assert fit["b"] == pytest.approx(1.2, rel=1e-6)
    assert fit["burst_bytes"] == MIB
    # fitted as if there were no credit, the fixed cost would come out
    # negative: it is held at 0 instead, and the fit is worse
    naive = lm.fit_storm(pts, 512 * 1024)
    assert naive["a_ms"] == 0.0
    assert naive["rel_err_max"] > fit["rel_err_max"]
    # the extrapolation has no credit: S/R in full
    r = lm.extrapolate(fit, None, nodes=(1,), gbits=(10,))[0]
    assert r["storm_ms"] == pytest.approx(8.0 + lm.link_ms(12 * MIB, 10000), abs=0.01)


def test_sbcast_fit_never_negative_fixed_cost():
    """Points that a straight line through them would meet below zero at
    S = 0 give c = 0, not a negative cost."""
    pts = points(lambda s, n, r: max(1.0, 1.3 * lm.link_ms(s, r) *
                                     lm.fanout_path(n) - 40.0))
    fit = lm.fit_sbcast(pts)
    assert fit["c_ms"] == 0.0 and fit["d"] > 0


def test_storm_fit_with_noise_is_close():
    truth = {"a_ms": 35.0, "b": 1.7, "chunk_bytes": 512 * 1024}
    fit = lm.fit_storm(points(lambda s, n, r: lm.storm_predict(truth, s, n, r),
                              noise=0.02), 512 * 1024)
    assert fit["b"] == pytest.approx(1.7, rel=0.1)
    assert 0 < fit["rel_err_max"] <= 0.05


def test_storm_fit_underdetermined():
    # one node count: the pipeline term is the same for every point
    pts = [{"bytes": 4 * MIB, "nodes": 2, "mbit": 200, "ms": 200.0},
           {"bytes": 4 * MIB, "nodes": 2, "mbit": 200, "ms": 210.0}]
    assert lm.fit_storm(pts, 512 * 1024) is None
    # one size and one rate: a and c cannot be told apart
    pts = [{"bytes": 4 * MIB, "nodes": n, "mbit": 200, "ms": 200.0 + n}
           for n in (1, 2, 4)]
    assert lm.fit_storm(pts, 512 * 1024, free_wire=True) is None
    # exactly determined: no error left to report
    pts = [{"bytes": 4 * MIB, "nodes": n, "mbit": 200, "ms": 200.0 + n} for n in (1, 2)]
    assert lm.fit_storm(pts, 512 * 1024) is None
    assert lm.fit_sbcast(pts) is None


def test_fanout_path():
    assert [lm.fanout_path(n) for n in (0, 1, 2, 8, 9, 16, 32)] == [0, 1, 2, 8, 9, 9, 11]
    assert lm.fanout_path(1024) == 8 + 8 + 8 + 1
    assert lm.fanout_path(4, width=2) == 2 + 1


def test_sbcast_fit_recovers_parameters():
    truth = {"c_ms": 120.0, "d": 1.3, "width": 8}
    fit = lm.fit_sbcast(points(lambda s, n, r: lm.sbcast_predict(truth, s, n, r)))
    assert fit["c_ms"] == pytest.approx(120.0, rel=1e-5)
    assert fit["d"] == pytest.approx(1.3, rel=1e-5)
    assert fit["rel_err_max"] < 1e-5


def test_conf_parsing():
    conf = "Port=7000\nBcastDir=/x # ChunkSize=1M\nWindow=4 chunksize=256K\n"
    assert lm.conf_value(conf, "ChunkSize") == "256K"
    assert lm.chunk_bytes(conf) == 256 * 1024
    assert lm.parse_size("1MiB") == MIB
    assert lm.parse_size("65536") == 65536
    assert lm.parse_size("1.5k") == 1536
    assert lm.parse_size("x") is None
    src = "\tconf->window = 4;\n\tconf->chunk_bytes = 512 * 1024;\n"
    assert lm.chunk_bytes("Port=7000\n", src) == 512 * 1024
    assert lm.chunk_bytes("", "", fallback=4096) == 4096


def test_extrapolate_and_table():
    storm = {"a_ms": 30.0, "b": 1.0, "chunk_bytes": 512 * 1024}
    sb = {"c_ms": 100.0, "d": 1.0, "width": 8}
    rows = lm.extrapolate(storm, sb)
    assert len(rows) == 6
    r = [x for x in rows if x["nodes"] == 1024 and x["gbit"] == 10][0]
    wire = lm.link_ms(12 * MIB, 10000)
    assert r["storm_ms"] == pytest.approx(30 + wire + 1023 * lm.link_ms(512 * 1024, 10000),
                                          abs=0.01)
    assert r["sbcast_ms"] == pytest.approx(100 + wire * 25, abs=0.01)
    table = lm.markdown_table(rows)
    assert "(model)" in table and table.count("\n") == 7

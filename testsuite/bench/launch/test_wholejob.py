# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of wholejob (no cluster): a cell's figures from its launch
records, the file server's floor and the summary's keys, named by the
largest node count.  python3 -m pytest testsuite/bench/launch"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wholejob as wj  # noqa: E402

MIB = 1 << 20


def rec(ms, served=0, nodes_rx=0, transfer_ms=None, sent_bytes=None, sbcast_ms=None):
    r = {"ms": ms, "served": served, "nodes_rx": nodes_rx, "fs_tx": served, "head_tx": 0}
    if transfer_ms is not None:
        r.update(transfer_ms=transfer_ms, sent_bytes=sent_bytes)
    if sbcast_ms is not None:
        r["sbcast_ms"] = sbcast_ms
    return r


def launches(workload, nodes, fs_ms, storm_ms, read=10 * MIB, sent=100 * MIB,
             relaunch_rx=None):
    """Two runs of every method: storm's relaunch receives relaunch_rx
    bytes (all of them again by default, as without a cache)."""
    out = {}
    for m in wj.METHODS[workload]:
        first, again = [], []
        for i in range(2):
            if m == "local":
                first.append(rec(100 + i))
                again.append(rec(100 + i))
            elif m == "fileserver":
                first.append(rec(fs_ms + i, served=read * nodes, nodes_rx=read * nodes))
                again.append(rec(fs_ms + i, served=read * nodes, nodes_rx=read * nodes))
            elif m == "storm":
                rx = sent * nodes
                first.append(rec(storm_ms + i, nodes_rx=rx, transfer_ms=storm_ms - 50 + i,
                                 sent_bytes=sent))
                again.append(rec(storm_ms + 30 + i,
                                 nodes_rx=rx if relaunch_rx is None else relaunch_rx,
                                 transfer_ms=storm_ms - 50, sent_bytes=sent))
            else:               # stock, sbcast
                first.append(rec(8 * storm_ms, nodes_rx=sent * nodes, sbcast_ms=7 * storm_ms
                                 if m == "sbcast" else None))
                again.append(rec(8 * storm_ms, nodes_rx=sent * nodes, sbcast_ms=7 * storm_ms
                                 if m == "sbcast" else None))
        out[m] = {"first": first, "relaunch": again}
    return out


def test_fileserver_floor():
    # one node: its own link; 8 nodes on a 4x server: twice that
    one = wj.fileserver_floor_ms(12 * MIB, 1, 100, 4)
    assert one == pytest.approx(1006.63, abs=0.01)
    assert wj.fileserver_floor_ms(12 * MIB, 4, 100, 4) == pytest.approx(one)
    assert wj.fileserver_floor_ms(12 * MIB, 32, 100, 4) == pytest.approx(8 * one)


def test_timing_totals_add_every_broadcast():
    lines = [{"file": "/usr/bin/ch-run", "bytes": 1000.0, "transfer_ms": 5.0},
             {"file": "/proc/self/fd/7", "bytes": 2000.0, "transfer_ms": 70.0}]
    assert wj.timing_totals(lines) == (75.0, 3000)
    assert wj.timing_totals([]) == (None, None)


def test_cell_figures():
    cell = wj.cell_figures(launches("mpi", 8, 4000, 1000), 8, 100, 4)
    assert cell["fileserver"]["first"] == {"median": 4000.5, "min": 4000, "n": 2}
    assert cell["read_bytes_per_node"] == 10 * MIB
    assert cell["fileserver_floor_ms"] == pytest.approx(2 * 838.86, abs=0.01)
    assert cell["storm"]["first_transfer"]["median"] == 950.5
    assert cell["storm_sent_bytes"] == 100 * MIB
    assert cell["storm_wire_ms"] == pytest.approx(8388.61, abs=0.01)
    assert "first_transfer" not in cell["local"]


def cells(top, relaunch_rx=None):
    out = {}
    for w in wj.WORKLOADS:
        for k in (1, top):
            out.setdefault(w, {})[str(k)] = wj.cell_figures(
                launches(w, k, 6000, 1000, relaunch_rx=relaunch_rx), k, 100, 4)
    return out


def test_summary_keys_named_by_the_largest_count():
    s = wj.summarize(cells(32), 32)
    for key in ("libs_fileserver_over_storm_32n", "python_fileserver_over_storm_32n",
                "image_fileserver_over_storm_32n", "image_sbcast_over_storm_32n",
                "image_transfer_over_wire_32n", "relaunch_bytes_sent_fraction",
                "relaunch_minus_plain_ms"):
        assert s[key] is not None, key
    s4 = wj.summarize(cells(4), 4)
    assert "libs_fileserver_over_storm_4n" in s4 and "libs_fileserver_over_storm_32n" not in s4


def test_summary_figures():
    s = wj.summarize(cells(32), 32)
    assert s["libs_fileserver_over_storm_32n"] == pytest.approx(6000.5 / 1000.5, abs=1e-3)
    # sbcast's transfer over STORM's transfer, not the launches
    assert s["image_sbcast_over_storm_32n"] == pytest.approx(7000 / 950.5, abs=1e-3)
    assert s["image_sbcast_launch_over_storm_32n"] == pytest.approx(8000 / 1000.5, abs=1e-3)
    assert s["image_transfer_over_wire_32n"] == pytest.approx(950.5 / 8388.61, abs=1e-3)
    # no cache: a relaunch receives what the first launch did
    assert s["relaunch_bytes_sent_fraction"] == 1.0
    # STORM's relaunch (1030.5) minus the local launch (100.5)
    assert s["relaunch_minus_plain_ms"] == 930.0
    assert s["goals"]["libs_fileserver_over_storm_ge_6"] is False
    assert s["goals"]["relaunch_bytes_le_1pct"] is False


def test_relaunch_fraction_is_the_worst_workload():
    c = cells(32, relaunch_rx=MIB)
    c["python"]["32"] = wj.cell_figures(launches("python", 32, 6000, 1000), 32, 100, 4)
    s = wj.summarize(c, 32)
    assert s["relaunch_bytes_sent_fraction_by_workload"]["mpi"] == pytest.approx(
        1 / 3200, abs=1e-4)
    assert s["relaunch_bytes_sent_fraction"] == 1.0


def test_missing_workload_gives_none():
    c = cells(32)
    del c["image"]
    s = wj.summarize(c, 32)
    assert s["image_fileserver_over_storm_32n"] is None
    assert s["goals"]["image_sbcast_over_storm_ge_10"] is None
    assert s["libs_fileserver_over_storm_32n"] is not None

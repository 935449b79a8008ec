# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole-job benchmark's arithmetic (run-wholejob-bench), apart from any
cluster so that it is unit-tested (test_wholejob.py): a cell's figures from
its launches, the floors and the run's summary.

A launch record (one srun, or sbcast and srun) is a dict:
  ms           wall time of the launch
  served       bytes the file server's sftp-servers read (file contents)
  nodes_rx     bytes the step's nodes received over their links
  fs_tx        bytes the file server sent over its link
  head_tx      bytes the head (srun, sbcast) sent over its link
  transfer_ms  STORM: the sum of transfer_ms of srun's timing lines
  sent_bytes   STORM: the sum of their bytes (what every node received)
  sbcast_ms    sbcast: the sbcast command alone
"""
import os
import sys

import launch_model as lm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import median_stat as stat  # noqa: E402

WORKLOADS = ("mpi", "python", "image")
# Methods per workload, in the order each run launches them.  local: the
# files already on every node (a plain srun of what needs no transfer);
# fileserver: read by every node from the file server; stock: srun --bcast
# --send-libs; sbcast: sbcast of the image, then srun of the copy; storm:
# the STORM broadcast.
METHODS = {"mpi": ("local", "fileserver", "stock", "storm"),
           "python": ("local", "fileserver", "storm"),
           "image": ("local", "fileserver", "sbcast", "storm")}
# the summary's name of a workload
KEY = {"mpi": "libs", "python": "python", "image": "image"}
LAUNCHES = ("first", "relaunch")
GOALS = {"fileserver_over_storm_min": 6.0, "image_transfer_over_wire_max": 1.3,
         "image_sbcast_over_storm_min": 10.0, "relaunch_bytes_sent_fraction_max": 0.01,
         "relaunch_minus_plain_ms_max": 100.0}


def timing_totals(lines):
    """(transfer_ms, bytes) of srun's STORM timing lines (benchlib's
    storm_timing): every broadcast of the step in turn, so their sum."""
    if not lines:
        return None, None
    ms = sum(p.get("transfer_ms", 0.0) for p in lines)
    nbytes = sum(p.get("bytes", 0.0) for p in lines)
    return ms, int(nbytes)


def fileserver_floor_ms(read_bytes, nodes, mbit, k):
    """The least time every node can take to read read_bytes from the file
    server: each node's own link carries its read_bytes, the server's link
    (k times a node's) all nodes' at once."""
    return lm.link_ms(read_bytes, mbit) * max(1.0, nodes / float(k))


def cell_figures(launches, nodes, mbit, k):
    """A cell's figures from its launch records:
    launches[method][first|relaunch] = [record, ...] (one per run)."""
    cell = {}
    for m, by in launches.items():
        c = {}
        for which in LAUNCHES:
            recs = by.get(which, [])
            c[which] = stat([r["ms"] for r in recs])
            c[which + "_bytes"] = {key: stat([r.get(key) for r in recs], 0)
                                   for key in ("served", "nodes_rx", "fs_tx", "head_tx")}
            if any(r.get("transfer_ms") is not None for r in recs):
                c[which + "_transfer"] = stat([r.get("transfer_ms") for r in recs])
                c[which + "_sent_bytes"] = stat([r.get("sent_bytes") for r in recs], 0)
            if any(r.get("sbcast_ms") is not None for r in recs):
                c[which + "_transfer"] = stat([r.get("sbcast_ms") for r in recs])
        cell[m] = c
    fs = cell.get("fileserver", {}).get("first_bytes", {}).get("served")
    if fs:
        per_node = fs["median"] / nodes
        cell["read_bytes_per_node"] = int(per_node)
        cell["read_wire_ms"] = round(lm.link_ms(per_node, mbit), 2)
        cell["fileserver_floor_ms"] = round(fileserver_floor_ms(per_node, nodes, mbit, k), 2)
    sent = cell.get("storm", {}).get("first_sent_bytes")
    if sent:
        cell["storm_sent_bytes"] = int(sent["median"])
        cell["storm_wire_ms"] = round(lm.link_ms(sent["median"], mbit), 2)
    return cell


def _get(cell, *keys):
    for key in keys:
        cell = cell.get(key) if isinstance(cell, dict) else None
    return cell


def ratio(a, b, nd=3):
    return round(a / b, nd) if a is not None and b else None


def summarize(cells, top):
    """The summary at `top` nodes (the largest count run), its keys named
    by it: cells[workload][str(nodes)] = cell_figures(...)."""
    n = "%dn" % top
    s = {"nodes": top}
    at = {w: cells.get(w, {}).get(str(top), {}) for w in WORKLOADS}
    for w in WORKLOADS:
        s["%s_fileserver_over_storm_%s" % (KEY[w], n)] = ratio(
            _get(at[w], "fileserver", "first", "median"), _get(at[w], "storm", "first", "median"))
    img = at["image"]
    s["image_sbcast_over_storm_" + n] = ratio(_get(img, "sbcast", "first_transfer", "median"),
                                              _get(img, "storm", "first_transfer", "median"))
    s["image_sbcast_launch_over_storm_" + n] = ratio(_get(img, "sbcast", "first", "median"),
                                                     _get(img, "storm", "first", "median"))
    s["image_transfer_over_wire_" + n] = ratio(_get(img, "storm", "first_transfer", "median"),
                                               img.get("storm_wire_ms"))
    fractions, extra = {}, {}
    for w in WORKLOADS:
        first = _get(at[w], "storm", "first_bytes", "nodes_rx", "median")
        again = _get(at[w], "storm", "relaunch_bytes", "nodes_rx", "median")
        fractions[w] = ratio(again, first, 4)
        relaunch = _get(at[w], "storm", "relaunch", "median")
        plain = _get(at[w], "local", "first", "median")
        extra[w] = round(relaunch - plain, 2) if None not in (relaunch, plain) else None
    s["relaunch_bytes_sent_fraction"] = _worst(fractions.values(), max)
    s["relaunch_minus_plain_ms"] = _worst(extra.values(), max)
    s["relaunch_bytes_sent_fraction_by_workload"] = fractions
    s["relaunch_minus_plain_ms_by_workload"] = extra
    s["read_bytes_per_node"] = {w: at[w].get("read_bytes_per_node") for w in WORKLOADS}
    s["storm_sent_bytes"] = {w: at[w].get("storm_sent_bytes") for w in WORKLOADS}
    s["fileserver_over_floor_" + n] = {w: ratio(_get(at[w], "fileserver", "first", "median"),
                                                at[w].get("fileserver_floor_ms"))
                                       for w in WORKLOADS}
    s["goals"] = goals(s, n)
    return s


def _worst(values, pick):
    vs = [v for v in values if v is not None]
    return pick(vs) if vs else None


def goals(s, n):
    def goal(v, ok):
        return None if v is None else bool(ok(v))

    g = {}
    for w in WORKLOADS:
        g["%s_fileserver_over_storm_ge_6" % KEY[w]] = goal(
            s["%s_fileserver_over_storm_%s" % (KEY[w], n)],
            lambda v: v >= GOALS["fileserver_over_storm_min"])
    g["image_transfer_within_1.3x_wire"] = goal(
        s["image_transfer_over_wire_" + n], lambda v: v <= GOALS["image_transfer_over_wire_max"])
    g["image_sbcast_over_storm_ge_10"] = goal(
        s["image_sbcast_over_storm_" + n], lambda v: v >= GOALS["image_sbcast_over_storm_min"])
    g["relaunch_bytes_le_1pct"] = goal(
        s["relaunch_bytes_sent_fraction"],
        lambda v: v <= GOALS["relaunch_bytes_sent_fraction_max"])
    g["relaunch_minus_plain_le_100ms"] = goal(
        s["relaunch_minus_plain_ms"], lambda v: v <= GOALS["relaunch_minus_plain_ms_max"])
    return g

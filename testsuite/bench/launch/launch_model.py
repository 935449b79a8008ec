# SPDX-License-Identifier: GPL-2.0-or-later
"""Models of a broadcast's transfer time on a network of per-node links
("Past one host" in run-launch-bench): fitted to the netns measurements,
then extrapolated to sizes and rates this host cannot reach.  Pure
functions, no cluster and no numpy (the pyenv python has none): the
least squares are solved here, for two or three parameters.

Units: sizes in bytes, rates in Mbit/s, times in ms.

STORM (pipelined tree multicast in chunks):

    t = a + S/R + (N-1) * b * chunk/R

  a: a fixed cost per broadcast (connection, credential checks, the
  manifest, the confirmation), independent of size, rate and node count;
  S/R: the wire time, the least any broadcast of S bytes can take on links
  of rate R; (N-1) * b * chunk/R: what the pipeline adds per extra node, a
  multiple b of the time one chunk takes on one link (b = 1: each node
  holds each chunk one chunk-time before passing it on, a chain).  The
  variant with the wire term's coefficient free,
  t = a + c*S/R + (N-1)*b*chunk/R, says how far the design is from
  streaming at the link rate (c = 1) or storing and forwarding the whole
  file once (c = 2) or sending it several times on one link (c = arity).

  The shaped links of the measurements (tc tbf, harness/storm_netns.py)
  let a full bucket (`burst`, 1 MiB) through at once: a transfer there
  can beat S/R by up to burst/R.  The fit therefore uses
  (S - burst)/R for the wire term of a measured point, so that `a` is the
  fixed cost and not the fixed cost less a rate-dependent credit (which
  can be negative and makes the extrapolation to fast links meaningless); the
  extrapolation uses S/R (burst 0).

sbcast (Slurm 22.05, src/common/file_bcast.c): the file goes in blocks
(8 MiB), each sent with slurm_send_recv_msgs down Slurm's message
forwarding tree of width 8 (MAX_THREADS), and sbcast waits for every
node's answer before the next block (stop and wait).  A forwarding node
receives a whole block before it passes it on (a Slurm message is
forwarded whole), and a node sending to k children sends k copies over
its one link.  So each block costs, on the critical path, the sum over
the tree's levels of that level's fan-out times block/R, and the blocks
add up to

    t = c + d * (S/R) * fanout_path(N)

  fanout_path(N) = min(N, w) + fanout_path(ceil(N/w) - 1), 0 for N = 0:
  the sender's w copies, then one first-level node's copies to its share
  of the rest, and so on (Slurm splits the node list into w contiguous
  spans; the first node of each forwards to the rest of its span the same
  way).  c: fixed cost (the credential lookup at slurmctld, connections,
  each block's round trip); d: the efficiency (1: every copy at the link
  rate, with no gap between blocks).

Both fits minimise the *relative* squared error (rows weighted by 1/t):
the points span 50 ms to seconds, and an absolute fit would be the
64 MiB points' alone.
"""

import math
import re
import statistics

MIB = 1 << 20


# ------------------------------------------------------------ units
def link_ms(nbytes, mbit):
    """Time nbytes take on one link of `mbit` Mbit/s (S/R), in ms."""
    return nbytes * 8.0 / (mbit * 1e6) * 1e3


# -------------------------------------------------------- storm.conf
_SIZE_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
               "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(s):
    """A storm.conf size ("512K", "1MiB", "65536") in bytes, as
    storm_parse_size reads it; None if it is not one."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", s or "")
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        return None
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()] + 0.5)


def conf_value(text, key):
    """The value of `key` in a storm.conf text (keys are case-insensitive,
    several key=value words may share a line, '#' starts a comment); the
    last one wins here (storm.conf itself refuses a key given twice)."""
    val = None
    for line in text.splitlines():
        for word in line.split("#", 1)[0].split():
            k, eq, v = word.partition("=")
            if eq and k.lower() == key.lower():
                val = v
    return val


def default_from_source(c_text, field, fallback):
    """A default from storm_conf.c's storm_conf_defaults, such as
    `conf->chunk_bytes = 512 * 1024;` (a product of integers)."""
    m = re.search(r"conf->%s\s*=\s*([0-9\s*ULul]+);" % re.escape(field), c_text or "")
    if not m:
        return fallback
    try:
        return math.prod(int(x.strip().rstrip("ULul")) for x in m.group(1).split("*"))
    except ValueError:
        return fallback


def chunk_bytes(conf_text, c_text=None, fallback=512 * 1024):
    """The STORM chunk size a cluster used: its storm.conf's ChunkSize,
    else the default in storm_conf.c (c_text), else `fallback`."""
    v = parse_size(conf_value(conf_text or "", "ChunkSize") or "")
    return v if v else default_from_source(c_text, "chunk_bytes", fallback)


# ------------------------------------------------------ least squares
def lstsq(rows, y, weights=None):
    """Weighted linear least squares: x minimising
    sum(w_i^2 (rows_i . x - y_i)^2), by the normal equations on unit-scaled
    columns with partial pivoting.  None if the columns are (nearly)
    dependent: the points do not determine every parameter."""
    n, k = len(rows), len(rows[0]) if rows else 0
    if n < k or k == 0:
        return None
    w = weights or [1.0] * n
    A = [[r[j] * w[i] for j in range(k)] for i, r in enumerate(rows)]
    b = [y[i] * w[i] for i in range(n)]
    scale = [math.sqrt(sum(A[i][j] ** 2 for i in range(n))) or 1.0 for j in range(k)]
    A = [[A[i][j] / scale[j] for j in range(k)] for i in range(n)]
    M = [[sum(A[i][p] * A[i][q] for i in range(n)) for q in range(k)] +
         [sum(A[i][p] * b[i] for i in range(n))] for p in range(k)]
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(M[r][col]))
        if abs(M[piv][col]) < 1e-9:
            return None
        M[col], M[piv] = M[piv], M[col]
        for r in range(k):
            if r != col:
                f = M[r][col] / M[col][col]
                M[r] = [M[r][j] - f * M[col][j] for j in range(k + 1)]
    return [M[j][k] / M[j][j] / scale[j] for j in range(k)]


def _errors(points, predict):
    """Per point: measured, model, relative error; and their max/median."""
    out = []
    for p in points:
        m = predict(p["bytes"], p["nodes"], p["mbit"])
        out.append(dict(p, model_ms=round(m, 2),
                        rel_err=round((m - p["ms"]) / p["ms"], 4)))
    errs = [abs(q["rel_err"]) for q in out]
    return out, (round(max(errs), 4) if errs else None), \
        (round(statistics.median(errs), 4) if errs else None)


# --------------------------------------------------------------- STORM
def storm_predict(params, nbytes, nodes, mbit, burst=0):
    """t = a + c*(S - burst)/R + (N-1)*b*chunk/R (c = 1 unless fitted)."""
    return (params["a_ms"] + params.get("c", 1.0) * link_ms(max(nbytes - burst, 0), mbit) +
            (nodes - 1) * params["b"] * link_ms(params["chunk_bytes"], mbit))


def fit_storm(points, chunk, free_wire=False, burst=0):
    """Fit the STORM model to points [{bytes, nodes, mbit, ms}, ...].

    free_wire=False: t - (S-burst)/R = a + b * (N-1)*chunk/R (two
    parameters); True: also the wire term's coefficient c.  burst: bytes
    the measured links let through at once (0: none).  Returns the
    parameters, the per-point errors and their max/median, or None when
    the points do not determine the parameters (one node count only, say)
    or only just (no point left over to measure the error by)."""
    if len(points) <= (3 if free_wire else 2):
        return None
    rows, y = [], []
    for p in points:
        wire = link_ms(max(p["bytes"] - burst, 0), p["mbit"])
        hop = (p["nodes"] - 1) * link_ms(chunk, p["mbit"])
        if free_wire:
            rows.append([1.0, wire, hop])
            y.append(p["ms"])
        else:
            rows.append([1.0, hop])
            y.append(p["ms"] - wire)
    x = lstsq(rows, y, [1.0 / p["ms"] for p in points])
    if x is None:
        return None
    if x[0] < 0:
        # held at 0, as in fit_sbcast: no negative fixed cost
        x = lstsq([r[1:] for r in rows], y, [1.0 / p["ms"] for p in points])
        if x is None:
            return None
        x = [0.0] + x
    params = {"a_ms": x[0], "b": x[-1], "chunk_bytes": chunk}
    if free_wire:
        params["c"] = x[1]
    pts, emax, emed = _errors(points,
                              lambda s, n, r: storm_predict(params, s, n, r, burst))
    res = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in params.items()}
    res.update(formula=("t = a + c*S/R + (N-1)*b*chunk/R" if free_wire
                        else "t = a + S/R + (N-1)*b*chunk/R"),
               fit_wire_term="(S - burst)/R" if burst else "S/R", burst_bytes=burst,
               rel_err_max=emax, rel_err_median=emed, n_points=len(points),
               points=pts)
    return res


# -------------------------------------------------------------- sbcast
def fanout_path(nodes, width=8):
    """Copies on the critical path of Slurm's forwarding tree of `width`
    to `nodes` nodes: the sender's min(N, w), then one first-level node's
    to the rest of its span (about N/w - 1 nodes), and so on."""
    total, n = 0, nodes
    while n > 0:
        total += min(n, width)
        n = math.ceil(n / width) - 1
    return total


def sbcast_predict(params, nbytes, nodes, mbit):
    """t = c + d * (S/R) * fanout_path(N)."""
    return params["c_ms"] + params["d"] * link_ms(nbytes, mbit) * \
        fanout_path(nodes, params.get("width", 8))


def fit_sbcast(points, width=8, block=8 * MIB):
    """Fit the sbcast model to points [{bytes, nodes, mbit, ms}, ...];
    None when they do not determine c and d with a point to spare."""
    if len(points) <= 2:
        return None
    rows = [[1.0, link_ms(p["bytes"], p["mbit"]) * fanout_path(p["nodes"], width)]
            for p in points]
    x = lstsq(rows, [p["ms"] for p in points], [1.0 / p["ms"] for p in points])
    if x is None:
        return None
    if x[0] < 0:
        # a negative fixed cost is no cost at all: it only bends the line
        # toward the points, and extrapolated to fast links it gives
        # negative times.  Hold c at 0 and fit d alone.
        d = lstsq([r[1:] for r in rows], [p["ms"] for p in points],
                  [1.0 / p["ms"] for p in points])
        if d is None:
            return None
        x = [0.0, d[0]]
    params = {"c_ms": x[0], "d": x[1], "width": width}
    pts, emax, emed = _errors(points, lambda s, n, r: sbcast_predict(params, s, n, r))
    return {"c_ms": round(x[0], 3), "d": round(x[1], 4), "width": width,
            "block_bytes": block,
            "formula": "t = c + d*(S/R)*fanout_path(N), fanout_path(N) = "
                       "min(N,w) + fanout_path(ceil(N/w)-1), w = %d" % width,
            "rel_err_max": emax, "rel_err_median": emed, "n_points": len(points),
            "points": pts}


# --------------------------------------------------------- extrapolate
def extrapolate(storm, sbcast, nbytes=12 * MIB, nodes=(1024, 4096, 16384),
                gbits=(10, 100), storm_free=None):
    """Both fitted models at node counts and link rates past this host.
    The fixed costs (a, c) are carried over as measured here: on a real
    cluster they are other numbers, but not ones that grow with N."""
    rows = []
    for g in gbits:
        mbit = g * 1000.0
        for n in nodes:
            r = {"nodes": n, "gbit": g, "mib": nbytes / MIB,
                 "wire_ms": round(link_ms(nbytes, mbit), 3)}
            if storm:
                r["storm_ms"] = round(storm_predict(storm, nbytes, n, mbit), 2)
            if storm_free:
                r["storm_free_ms"] = round(storm_predict(storm_free, nbytes, n, mbit), 2)
            if sbcast:
                r["sbcast_ms"] = round(sbcast_predict(sbcast, nbytes, n, mbit), 2)
            if storm and sbcast:
                r["sbcast_over_storm"] = round(r["sbcast_ms"] / r["storm_ms"], 2)
            rows.append(r)
    return rows


def markdown_table(rows):
    """The extrapolation as a Markdown table, marked as a model."""
    free = any("storm_free_ms" in r for r in rows)
    head = ["nodes", "link", "S/R ms", "STORM ms (model)"]
    if free:
        head.append("STORM, free c (model)")
    head += ["sbcast ms (model)", "sbcast/STORM (model)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r["nodes"]), "%g Gb/s" % r["gbit"], "%.2f" % r["wire_ms"],
                 _fmt(r.get("storm_ms"))]
        if free:
            cells.append(_fmt(r.get("storm_free_ms")))
        cells += [_fmt(r.get("sbcast_ms")), _fmt(r.get("sbcast_over_storm"))]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _fmt(v):
    return "-" if v is None else "%.2f" % v

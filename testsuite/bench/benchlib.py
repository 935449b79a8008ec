# SPDX-License-Identifier: GPL-2.0-or-later
"""What every benchmark under testsuite/bench shares: output, run metadata
(the Slurm version the clusters ran), JSON files, the matplotlib skeleton,
CPU sampling, the interval of a mean and a cell's median, srun's STORM
timing lines, the built benchmark programs and the stopping of clusters on
a signal.

A script in a subdirectory imports it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import benchlib as bl
"""
import datetime
import json
import os
import random
import re
import shlex
import socket
import statistics
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(BENCH, "..", ".."))
HARNESS = os.path.join(TOP, "testsuite", "harness")
DOC_BENCH = os.path.join(TOP, "doc", "bench")


# ---------------------------------------------------------------- output

def say(*a):
    """A progress line, stamped with the wall-clock time."""
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def show(text):
    """Text as it is (tables, Markdown): no stamp, flushed at once."""
    print(text, flush=True)


# ---------------------------------------------------------- run metadata

def host():
    return socket.gethostname()


def utc_date():
    """Now, UTC, to the second: 2026-11-24T15:23:56Z."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def command_line():
    """The command that ran, its script relative to the source tree."""
    return " ".join(shlex.quote(a) for a in
                    [os.path.relpath(os.path.abspath(sys.argv[0]), TOP)] + sys.argv[1:])


def use_harness():
    """Make testsuite/harness importable (storm_cluster, storm_gang, ...)."""
    if HARNESS not in sys.path:
        sys.path.insert(0, HARNESS)


def builddir():
    """Where `make` built the tree for the Slurm the harness runs
    (STORM_SLURM): STORM_BUILDDIR, else the harness's default (the source
    tree for 22.05, build-24.11 for 24.11), so that a benchmark never
    loads plugins built for another Slurm."""
    use_harness()
    import storm_cluster
    return os.path.abspath(os.environ.get("STORM_BUILDDIR", storm_cluster.DEFAULT_BUILDDIR))


# --------------------------------------------------------- Slurm version

DEFAULT_SLURM = "22.05"
_SLURM_SEEN = {}


def slurm_series():
    """The Slurm the harness runs ("22.05" or "24.11", from STORM_SLURM)."""
    use_harness()
    import storm_cluster
    return storm_cluster.SLURM_VERSION


def versioned(name):
    """A result file's name for this Slurm: as given for the default
    (22.05), with "-24.11" before the extension otherwise, so that a run
    on one version never overwrites another's (gang.json ->
    gang-24.11.json)."""
    series = slurm_series()
    if series == DEFAULT_SLURM:
        return name
    stem, ext = os.path.splitext(name)
    return "%s-%s%s" % (stem, series, ext)


def cluster_slurm_version(c):
    """The versions cluster c really runs, read from its commands and
    daemons, not from STORM_SLURM: {"scontrol": `scontrol --version`,
    "slurmctld": the controller's SLURM_VERSION (scontrol show config),
    "slurmd": the nodes' registered versions}.  A cluster whose parts
    disagree, or that is not the series the harness was asked for, is a
    setup error: SystemExit, so no figure is filed under the wrong
    version."""
    def out(argv):
        return c.run(argv).stdout

    got = parse_slurm_versions(out(["scontrol", "--version"]),
                               out(["scontrol", "show", "config"]),
                               out(["scontrol", "-o", "show", "node"]))
    cmd, ctld, nodes = got["scontrol"], got["slurmctld"], got["slurmd"]
    every = {cmd, ctld} | set(nodes)
    if None in every or not nodes or len(every) != 1:
        raise SystemExit("%s: the cluster's Slurm versions disagree or are unreadable: %s"
                         % (os.path.basename(sys.argv[0]), json.dumps(got)))
    series = slurm_series()
    if not cmd.startswith(series + "."):
        raise SystemExit("%s: STORM_SLURM=%s but the cluster runs Slurm %s"
                         % (os.path.basename(sys.argv[0]), series, cmd))
    return got


def parse_slurm_versions(version_out, config_out, nodes_out):
    """{"scontrol", "slurmctld", "slurmd"} from the output of `scontrol
    --version` ("slurm 24.11.5"; Debian's packages print "slurm-wlm
    22.05.8"), `scontrol show config` and `scontrol -o show node`; None
    (or []) for what the output does not hold."""
    m = re.search(r"^slurm\S* (\d\S*)", version_out, re.M)
    cmd = m.group(1) if m else None
    m = re.search(r"^SLURM_VERSION\s*=\s*(\S+)", config_out, re.M)
    ctld = m.group(1) if m else None
    nodes = sorted(set(re.findall(r"\bVersion=(\S+)", nodes_out)))
    return {"scontrol": cmd, "slurmctld": ctld, "slurmd": nodes}


def note_slurm_version(c):
    """Read cluster c's versions (cluster_slurm_version) and remember
    them for slurm_version_seen(); every cluster of a run must agree."""
    got = cluster_slurm_version(c)
    if _SLURM_SEEN and _SLURM_SEEN != got:
        raise SystemExit("%s: clusters of one run disagree on Slurm's version: %s, %s"
                         % (os.path.basename(sys.argv[0]), json.dumps(_SLURM_SEEN),
                            json.dumps(got)))
    _SLURM_SEEN.update(got)
    return got["scontrol"]


def slurm_version_seen():
    """(version, {part: version}) of the clusters this run started and
    noted, or (None, {}) before any."""
    return _SLURM_SEEN.get("scontrol"), dict(_SLURM_SEEN)


# ------------------------------------------------------------ JSON files

def load_json(path):
    with open(path) as f:
        return json.load(f)


def save_json(path, data, indent=1):
    """Write through a temporary file, so that an interrupted write never
    leaves a truncated JSON in place of the last good one."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=indent)
    os.replace(tmp, path)


def png_beside(js):
    """The plot's file for a JSON file: gang.json -> gang.png."""
    return (js[:-len(".json")] if js.endswith(".json") else js) + ".png"


# -------------------------------------------------------------- plotting

def pyplot():
    """matplotlib.pyplot on the Agg backend (no display), or None when
    this python has no matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def figure(nrows, ncols, size, **kw):
    """A figure and its axes; ImportError without matplotlib."""
    plt = pyplot()
    if plt is None:
        raise ImportError("matplotlib")
    return plt.subplots(nrows, ncols, figsize=size, **kw)


def save_figure(fig, png, title=None, fontsize=None):
    """Lay out, title, write (dpi 110) and free the figure."""
    if title:
        fig.suptitle(title, **({"fontsize": fontsize} if fontsize else {}))
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    pyplot().close(fig)


def plot_or_say(plot, *args):
    """Draw with plot(*args); True if it drew.  Without matplotlib the run
    still has its JSON: say so and go on."""
    try:
        plot(*args)
        return True
    except ImportError:
        say("matplotlib missing (apt-get install python3-matplotlib): no plot")
        return False


# ------------------------------------------------------------------ CPU

def cpu_ns(pid):
    """CPU time (ns) a task has run, from /proc/PID/schedstat; None when
    the task is gone or the file unreadable (a caller that sums treats
    None as 0)."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_times():
    """(total, idle) jiffies of the whole host from /proc/stat (not
    namespaced); idle includes iowait, guest time is inside user."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v), v[3] + v[4]


def cpu_busy(before, after):
    """The share of the host's CPUs busy between two cpu_times()."""
    total, idle = after[0] - before[0], after[1] - before[1]
    return 1.0 - idle / total if total > 0 else None


class CpuSampler:
    """/proc/stat every `period` s in a thread while a command runs, so
    that the host's CPU share can be taken over any part of the run
    afterwards (a context manager)."""

    def __init__(self, period=0.005):
        self.period, self.samples = period, []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            self.samples.append((time.monotonic(),) + cpu_times())
            self.stop.wait(self.period)
        self.samples.append((time.monotonic(),) + cpu_times())

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()

    def busy(self, t0, t1):
        """Share of the host's CPUs busy between the samples nearest to t0
        and t1, or None when the window holds fewer than two."""
        inside = [x for x in self.samples if t0 - self.period <= x[0] <= t1 + self.period]
        if len(inside) < 2:
            return None
        return cpu_busy(inside[0][1:], inside[-1][1:])


# ----------------------------------------------------------- statistics

def mean_interval(values, conf=0.95, resamples=20000, seed=1):
    """The mean of VALUES with its standard error and a bootstrap
    percentile interval: (mean, se, (lo, hi), upper), where [lo, hi] holds
    the mean with probability CONF two-sided and `upper` bounds it from
    above one-sided.  The bootstrap assumes no distribution: the on/off
    pairs of a noisy host have long tails.  SEED makes a summary
    reproducible from its JSON."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return mean, None, (None, None), None
    se = statistics.stdev(values) / n ** 0.5
    rnd = random.Random(seed)
    means = sorted(statistics.fmean(rnd.choices(values, k=n)) for _ in range(resamples))

    def q(p):
        return means[min(resamples - 1, max(0, int(p * resamples)))]
    tail = (1 - conf) / 2
    return mean, se, (q(tail), q(1 - tail)), q(conf)


def slope(points):
    """Least-squares slope of [(x, y)], or None for fewer than two points
    or a single x."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if not sxx:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


def median_stat(xs, nd=2):
    """{"median", "min", "n"} of a cell's values, those that are None left
    out (None for none)."""
    xs = [x for x in xs if x is not None]
    return {"median": round(statistics.median(xs), nd), "min": round(min(xs), nd),
            "n": len(xs)} if xs else None


# ------------------------------------------------- STORM's timing lines

def storm_timing(stderr):
    """Every `storm-bcast: ... transfer_ms=...` line srun printed
    (SLURM_STORM_BCAST_TIMING=1; one per broadcast of the step, the
    executable's and its libraries' and named files' bundle), each as
    {key: value}, numbers as floats, in order."""
    out = []
    for line in re.findall(r"^storm-bcast: (.*transfer_ms=.*)$", stderr, re.M):
        parts = {}
        for k, v in re.findall(r"(\w+)=(\S+)", line):
            try:
                parts[k] = float(v)
            except ValueError:
                parts[k] = v
        out.append(parts)
    return out


# ------------------------------------------------- built bench programs

def program(name):
    """The benchmark program `name` built by `make` (testsuite/bench/
    Makefile.am) in builddir(); exits with a clear message if absent."""
    exe = os.path.join(builddir(), "testsuite", "bench", name)
    if not os.access(exe, os.X_OK):
        raise SystemExit("%s: no %s: run make first (./configure && make, or "
                         "scripts/bootstrap.sh; STORM_BUILDDIR for a build elsewhere)"
                         % (os.path.basename(sys.argv[0]), exe))
    return exe


# ------------------------------------------------ stopping on a signal

def stop_on_signals():
    """SIGTERM, SIGHUP and SIGINT raise SystemExit(128 + signal) in the
    main thread, once, and are ignored after it, so that `finally` blocks
    stop the clusters and processes the run started and their teardown is
    not cut short (the harness's storm_cluster.stop_clusters_on_signals;
    a run ended by `timeout`, a closed terminal or a pipe reader that quit
    would otherwise leave whole clusters running)."""
    use_harness()
    import storm_cluster
    storm_cluster.stop_clusters_on_signals()


def interrupted(e):
    """Whether exception e is the end of the run by a signal or Ctrl-C."""
    return isinstance(e, (KeyboardInterrupt, SystemExit))


def stop_cluster(c):
    """Stop cluster c (its own stop blocks the teardown signals); a
    failure to stop is said, not raised, so that the run keeps its data."""
    try:
        c.stop()
    except Exception as e:  # noqa: BLE001
        say("stop:", e)

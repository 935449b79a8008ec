#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The STORM for Slurm demo: one 8-node cluster on this host, driven through
srun and sbatch, printing what each step did, then a table of what it
measured, STORM beside stock Slurm."""
import argparse
import os
import statistics
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "testsuite", "harness"))

from storm_cluster import Cluster, stop_clusters_on_signals  # noqa: E402


def say(msg=""):
    print(msg, flush=True)


def timed(cluster, argv, runs=5):
    times = []
    for _ in range(runs):
        cluster.wait_idle()
        t = time.monotonic()
        cluster.run(argv)
        times.append((time.monotonic() - t) * 1000)
    return min(times), statistics.median(times)


def section_plugins(c):
    say("== Plugins")
    out = c.run(["scontrol", "show", "config"]).stdout
    for key in ("SelectType ", "SchedulerType ", "LaunchType ", "PluginDir ",
                "PlugStackConfig "):
        say("  " + next(l for l in out.splitlines() if l.startswith(key)).strip())


def section_srun(c):
    say("== srun -N %d hostname" % c.nodes)
    r = c.run(["srun", "-N", str(c.nodes), "-l", "sh", "-c", "echo $SLURMD_NODENAME"])
    say("  " + " ".join(sorted(l.split(": ")[1] for l in r.stdout.splitlines())))
    lo, med = timed(c, ["srun", "-N", str(c.nodes), "true"])
    say("  srun -N %d true: min %.0f ms, median %.0f ms (5 runs)" % (c.nodes, lo, med))


def section_sbatch(c, tmp):
    say("== sbatch -N %d with a multi-node step" % c.nodes)
    out = os.path.join(tmp, "demo.out")
    jobid = c.sbatch("-N", str(c.nodes), "-o", out, "--wrap",
                     "srun -N %d sh -c 'echo $SLURMD_NODENAME'" % c.nodes)
    info = c.wait_job(jobid)
    with open(out) as f:
        nodes = sorted(f.read().split())
    say("  job %d %s, exit %s, step ran on: %s" % (
        jobid, info["JobState"], info["ExitCode"], " ".join(nodes)))
    if info["JobState"] != "COMPLETED":
        raise SystemExit("demo: the batch job did not complete; logs in %s" % c.path("log"))


LAUNCH_LINK_MBIT = 100      # as run-launch-bench's default rate


def section_launch(tmp, builddir=None, runs=3):
    """The 16-node, 12 MiB row of the launch benchmark on the cluster
    network (every node its own namespace, address and a link shaped to
    LAUNCH_LINK_MBIT), measured here: stock srun, stock srun --bcast, srun
    with the STORM broadcast (launch overlapped with the transfer, and the
    transfer first), and the transfers alone (sbcast in an allocation vs
    what STORM's sequential srun logs), beside the wire time S/R, the least
    any broadcast of the file can take on those links."""
    import re
    import subprocess
    say("== Launch: a 12 MiB static program on 16 nodes, each with its own "
        "%d Mbit/s link (%d runs each)" % (LAUNCH_LINK_MBIT, runs))
    src = os.path.join(tmp, "prog12M.c")
    exe = os.path.join(tmp, "prog12M")
    with open(src, "w") as f:
        f.write("volatile char pad[12 * 1024 * 1024 - 800 * 1024] = {1};\n"
                "int main(void) { return pad[0] - 1; }\n")
    subprocess.run(["gcc", "-O1", "-static", "-o", exe, src], check=True)
    c = Cluster(os.path.join(tmp, "launch16"), nodes=16, builddir=builddir,
                storm_conf="Timeslice=1s\nFailSafe=10s\n", network="netns",
                link_mbit=LAUNCH_LINK_MBIT)
    try:
        c.start(timeout=180)
        dest = c.path("local", "prog12M")
        envs = {"stock srun": dict(c.env, SLURM_STORM_BCAST="no"),
                "stock srun --bcast": dict(c.env, SLURM_STORM_BCAST="no"),
                "srun, STORM broadcast": dict(c.env, SLURM_STORM_BCAST="yes",
                                              SLURM_STORM_BCAST_OVERLAP="no",
                                              SLURM_STORM_BCAST_TIMING="1"),
                "  the same, overlapped": dict(c.env, SLURM_STORM_BCAST="yes",
                                               SLURM_STORM_BCAST_OVERLAP="yes")}
        res = {k: [] for k in envs}
        xfer = []
        for _ in range(runs):
            for name, e in envs.items():
                c.wait_idle()
                argv = ["srun", "-N16", "-n16"]
                if name == "stock srun --bcast":
                    argv.append("--bcast=" + dest)
                t = time.monotonic()
                r = c.run(argv + [exe], env=e)
                res[name].append((time.monotonic() - t) * 1000)
                m = re.search(r"transfer_ms=([\d.]+)", r.stderr)
                if m:
                    xfer.append(float(m.group(1)))
        c.wait_idle()
        r = c.run(["salloc", "--no-shell", "-N16"], env=envs["stock srun"])
        jobid = re.search(r"Granted job allocation (\d+)", r.stderr).group(1)
        sb = []
        for _ in range(runs):
            t = time.monotonic()
            c.run(["sbcast", "-j", jobid, "-f", exe, dest], env=envs["stock srun"])
            sb.append((time.monotonic() - t) * 1000)
        c.run(["scancel", jobid], check=False)
        for name, xs in res.items():
            say("  %-22s %6.0f ms (median)" % (name.strip(), statistics.median(xs)))
        wire = c.wire_ms(os.path.getsize(exe))
        say("  %-22s %6.0f ms (median)" % ("sbcast, file only", statistics.median(sb)))
        say("  %-22s %6.0f ms (median)" % ("STORM, file only", statistics.median(xfer)))
        return {"nodes": 16, "mbit": LAUNCH_LINK_MBIT, "wire_ms": wire,
                "storm_ms": statistics.median(res["srun, STORM broadcast"]),
                "stock_ms": statistics.median(res["stock srun --bcast"]),
                "plain_ms": statistics.median(res["stock srun"]),
                "storm_xfer_ms": statistics.median(xfer),
                "sbcast_ms": statistics.median(sb)}
    finally:
        c.stop()


def section_gang(tmp, builddir=None, window=6.0, view=None):
    """A gang-scheduled pair of CPU-bound jobs on 2 nodes at the smallest
    quantum the gang benchmark found within 2% slowdown, with the
    StrobeInterval it was measured with (20 ms, a strobe every quantum,
    without a benchmark): job A alone, then A and B together, each job's
    share of the CPU and the slowdown of the pair against A alone.  Stock
    gang needs minutes per point, so its figures come from
    doc/bench/gang.json (the benchmark measures it in the same run as
    STORM).  With view (listen address, seconds), storm-web serves the
    pair's cluster from its start and the pair keeps running that long
    after the figures."""
    import contextlib
    import json
    import storm_gang as g
    import storm_web
    js = os.path.join(TOP, "doc", "bench", "gang.json")
    sm = json.load(open(js)).get("summary", {}) if os.path.exists(js) else {}
    q_ms = sm.get("min_quantum_ms_2pct") or 20
    # the setting that quantum was measured with (StrobeInterval or not)
    si_us = 0
    if str(sm.get("min_quantum_2pct_with", "")).startswith("StrobeInterval"):
        si_us = sm.get("strobe_interval_us") or 0
    say("== Gang scheduling: two CPU-bound jobs on the same 2 nodes, Timeslice=%g ms%s"
        % (q_ms, ", StrobeInterval=%g ms" % (si_us / 1000.0) if si_us else ""))
    c = Cluster(os.path.join(tmp, "gang2"), nodes=2, builddir=builddir,
                partition_opts="OverSubscribe=FORCE:2",
                storm_conf="Timeslice=%dus\nMaxMPL=2\nFailSafe=1s\nStrobeInterval=%dus\n"
                % (int(q_ms * 1000), si_us))
    try:
        c.start()
        g.wait_gang_ready(c)
        web = None
        stack = contextlib.ExitStack()
        if view:
            web = stack.enter_context(storm_web.storm_web(c, listen=view[0]))
            say("  live view: %s  (storm-web; open it in a browser)" % web.url)
        nodes = c.node_names()
        a = g.submit_spinner(c, nodes, name="demoA")
        pa = g.spinner_pids(c, a, nodes)
        time.sleep(0.5)
        alone, _ = g.cpu_rate(pa, window)
        b = g.submit_spinner(c, nodes, name="demoB")
        pb = g.spinner_pids(c, b, nodes)
        g.wait_for(lambda: g.mm_status(c)[0].get("nslots") == "2", 30, "2 slots")
        time.sleep(0.5)
        keys = {(n, "a"): pa[n] for n in nodes}
        keys.update({(n, "b"): pb[n] for n in nodes})
        # twice the alone window, as the benchmark's two: one short window
        # on this shared host varied by a few percent
        got, wall = g.cpu_deltas(keys, 2 * window)
        got_a = sum(got[(n, "a")] for n in nodes)
        got_b = sum(got[(n, "b")] for n in nodes)
        hdr = g.mm_status(c)[0]
        fig = {"quantum_ms": q_ms, "interval_ms": si_us / 1000.0,
               "share_a": 100 * got_a / (got_a + got_b),
               "share_b": 100 * got_b / (got_a + got_b),
               "slowdown": alone * wall / (got_a + got_b),
               "period_ms": int(hdr["period_us"]) / 1000.0}
        say("  squeue: %s" % " ".join(c.run(["squeue", "-h", "-o", "%i:%T"]).stdout.split()))
        say("  job %d alone: %.2f CPU-seconds per second on its 2 nodes" % (a, alone))
        say("  jobs %d and %d together: %.1f%% / %.1f%% of the CPU, slowdown %.2fx"
            % (a, b, fig["share_a"], fig["share_b"], fig["slowdown"]))
        say("  quantum set %.1f ms, measured %.1f ms" % (q_ms, fig["period_ms"]))
        r = c.run([os.path.join(c.builddir, "src", "stormctl", "stormctl"), "show"], check=False)
        for line in r.stdout.splitlines()[5:9]:
            say("  | " + line)
        if web:
            say("  the pair keeps running for %d s: watch it at %s (Ctrl-C ends it)"
                % (view[1], web.url))
            time.sleep(view[1])
        c.run(["scancel", str(a), str(b)], check=False)
        stack.close()
    finally:
        c.stop()
    fig["bench"] = sm
    return fig


def ms_or_s(ms):
    return "%g s" % (ms / 1000.0) if ms >= 1000 else "%g ms" % ms


def summary(launch, gang):
    """What a person deciding about STORM wants: STORM beside stock Slurm,
    with units, one line each."""
    rows = []
    if launch:
        rows.append(("launch 12 MiB on %d nodes, %d Mbit/s links" % (launch["nodes"], launch["mbit"]),
                     "%.0f ms" % launch["storm_ms"],
                     "%.0f ms (srun --bcast)" % launch["stock_ms"]))
        rows.append(("the file alone (wire time %.0f ms)" % launch["wire_ms"],
                     "%.0f ms" % launch["storm_xfer_ms"],
                     "%.0f ms (sbcast)" % launch["sbcast_ms"]))
    if gang:
        sm = gang["bench"]
        setting = "%g ms" % gang["quantum_ms"]
        if gang["interval_ms"]:
            setting += ", a strobe per %g ms" % gang["interval_ms"]
        rows.append(("gang at %s: CPU of job A / job B" % setting,
                     "%.1f%% / %.1f%%" % (gang["share_a"], gang["share_b"]), "-"))
        rows.append(("slowdown of the pair against one job alone",
                     "%.2fx" % gang["slowdown"], "-"))
        stock_min = sm.get("stock_min_quantum_ms_accepted") or 5000
        rows.append(("smallest usable timeslice", "%g ms" % gang["quantum_ms"],
                     "%s (its minimum)" % ms_or_s(stock_min)))
        if sm.get("skew_p99_us_16n") and sm.get("stock_skew_p99_us_16n"):
            rows.append(("switch skew, 16 nodes, p99 (doc/bench/gang.json)",
                         "%.0f us" % sm["skew_p99_us_16n"],
                         ms_or_s(round(sm["stock_skew_p99_us_16n"] / 1000.0))))
    if not rows:
        return
    w = max(len(r[0]) for r in rows)
    v = max(len(r[1]) for r in rows + [("", "STORM")])
    say("== STORM beside stock Slurm")
    say("  %-*s  %-*s  %s" % (w, "", v, "STORM", "stock Slurm"))
    for r in rows:
        say("  %-*s  %-*s  %s" % (w, r[0], v, r[1], r[2]))


def main():
    stop_clusters_on_signals()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--no-gang", action="store_true",
                    help="skip the gang-scheduling section")
    ap.add_argument("--keep", action="store_true", help="keep the cluster directory")
    ap.add_argument("--no-launch", action="store_true",
                    help="skip the 16-node launch section")
    ap.add_argument("--view", nargs="?", type=int, const=120, metavar="SECONDS",
                    help="serve the gang pair's cluster with storm-web, print the page's "
                         "address and keep the pair running SECONDS (default 120) after "
                         "its figures")
    ap.add_argument("--view-listen", default="127.0.0.1:8480", metavar="HOST:PORT",
                    help="where storm-web listens with --view (default 127.0.0.1:8480)")
    args = ap.parse_args()
    if args.view is not None and args.no_gang:
        ap.error("--view shows the gang pair: it cannot go with --no-gang")
    tmp = tempfile.mkdtemp(prefix="storm-demo-")
    c = Cluster(os.path.join(tmp, "cluster"), nodes=args.nodes)
    say("Starting %d slurmd + slurmctld with the STORM plugins (logs: %s)" % (
        args.nodes, c.path("log")))
    t = time.monotonic()
    try:
        c.start()
        say("  all %d nodes idle after %.2f s" % (args.nodes, time.monotonic() - t))
        section_plugins(c)
        section_srun(c)
        section_sbatch(c, tmp)
    finally:
        c.stop()
        say("Cluster stopped.")
    launch = gang = None
    if not args.no_launch:
        launch = section_launch(tmp)
    if not args.no_gang:
        gang = section_gang(tmp, view=(args.view_listen, args.view) if args.view is not None else None)
    summary(launch, gang)
    if not args.keep:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

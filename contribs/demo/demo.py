#!/usr/bin/python3
"""The STORM for Slurm demo: one 8-node cluster on this host, driven through
srun and sbatch, printing what each step did and what it measured."""
import argparse
import os
import statistics
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "testsuite", "harness"))

from storm_cluster import Cluster  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--keep", action="store_true", help="keep the cluster directory")
    args = ap.parse_args()
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
    if not args.keep:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

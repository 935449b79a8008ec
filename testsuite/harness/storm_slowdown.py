# SPDX-License-Identifier: GPL-2.0-or-later
"""The command line of contribs/workload/storm-slowdown against a harness
cluster, shared by the policies and gang benchmarks."""
import os

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SLOWDOWN = os.path.join(TOP, "contribs", "workload", "storm-slowdown")


def slowdown_argv(c, workload, wlargs, jobs, json_out, workload_bin, timeout,
                  settle, repeats, quiet_cpu, quiet_wait, step_retry=True,
                  mem=("--mem", "100")):
    """storm-slowdown on cluster c's nodes (2 of them, one host): j jobs for
    each j of jobs, of workload with wlargs; its JSON to json_out.  With
    step_retry, a step that stock gang refuses (its job suspended) is asked
    for again every 0.1 s."""
    retry = ["--step-retry", "0.1"] if step_retry else []
    return [SLOWDOWN] + retry + list(mem) + [
        "--jobs", ",".join(map(str, jobs)), "--nodes", "2", "--repeats", str(repeats),
        "--nodelist", ",".join(c.node_names()), "--cpus-per-task", str(c.cpus),
        "--pin-cores", str(os.cpu_count() or 2), "--one-host",
        "--workload", workload, "--workload-args", wlargs,
        "--workload-bin", workload_bin, "--timeout", str(timeout),
        "--settle", str(settle), "--poll", "0.2", "--retries", "1",
        "--quiet-cpu", str(quiet_cpu), "--quiet-wait", str(quiet_wait),
        "--outdir", c.path("jobs"), "--json", json_out]

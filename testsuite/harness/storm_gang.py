# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for gang-scheduling tests, benchmarks and the demo.

Everything here observes a live storm_cluster.Cluster from the outside:
task CPU time from /proc/<pid>/schedstat (nanoseconds, not the 10 ms
ticks of /proc/<pid>/stat), node-manager state from its control socket,
the Machine Manager's status file, and job task pids from the job's
freezer cgroup (proctrack/cgroup puts every task there).
"""

import contextlib
import json
import os
import subprocess
import threading
import time

from storm_cluster import Cluster
from storm_jobs import jobs_cancelled
from storm_wait import Deadline, WaitTimeout, poll, wait_for

SPIN = "while :; do :; done"
GANG_PARTITION = "OverSubscribe=FORCE:2"


def nm_request(cluster, node, req, timeout=5):
    return cluster.nm_request(node, req, timeout=timeout)


def nm_pid(cluster, node):
    """The pid of node's node manager, by its own `ping` reply."""
    return int(dict(w.split("=", 1) for w in
                    nm_request(cluster, node, "ping")[3:].split())["pid"])


def mm_node_live(cluster, node):
    """Whether the machine manager's status file says node is live."""
    _, nodes, _ = mm_status(cluster)
    return nodes.get(node, {}).get("state") == "live"


def nm_gang(cluster, node):
    """The NM's `gang` reply as a dict (job<N>=state entries included)."""
    reply = nm_request(cluster, node, "gang")
    if not reply.startswith("ok "):
        raise RuntimeError("NM of %s: %s" % (node, reply))
    return dict(w.split("=", 1) for w in reply[3:].split())


def nm_trace(cluster, node, since=(0, 0)):
    """[(epoch, q, slot, sent_ns, recv_ns, done_ns)] of the switches after
    switch `since` = (epoch, q): q 0 is a strobe's own switch, q k the k-th
    one the node timed after it (StrobeInterval)."""
    reply = nm_request(cluster, node, "gang-trace %d %d" % since)
    if not reply.startswith("ok"):
        raise RuntimeError("NM of %s: %s" % (node, reply))
    out = []
    for w in reply[3:].split():
        e, s, a, b, c, q = w.split(":")
        out.append((int(e), int(q), int(s), int(a), int(b), int(c)))
    return out


def nm_traces(cluster, nodes, since, until):
    """Every node's switches after strobe epoch `since` and before `until`:
    {node: {(epoch, q): (slot, sent_ns, recv_ns, done_ns)}}, the times on
    the node's own clock.  Read once the jobs are gone: a node manager's
    control thread runs at ordinary priority, behind the jobs."""
    traces = {x: {} for x in nodes}
    for x in nodes:
        while True:     # a reply holds ~350 switches: drain the ring
            last = max(traces[x]) if traces[x] else (since, 0)
            got = nm_trace(cluster, x, last)
            for e, q, slot, sent, recv, done in got:
                traces[x][(e, q)] = (slot, sent, recv, done)
            if not got or got[-1][0] >= until:
                break
        traces[x] = {k: v for k, v in traces[x].items() if k[0] < until}
    return traces


def new_gang_cluster(workdir, nodes, storm_conf, partition_opts=GANG_PARTITION, **kw):
    """A cluster (not started yet) whose partition time-shares its nodes.
    kw: more storm_cluster.Cluster options (network, link_mbit)."""
    return Cluster(workdir, nodes=nodes, partition_opts=partition_opts,
                   storm_conf=storm_conf, **kw)


def start_gang(cluster):
    """Start a gang cluster and wait until its node managers get strobes."""
    cluster.start()
    wait_gang_ready(cluster)
    return cluster


@contextlib.contextmanager
def gang_cluster(workdir, nodes, storm_conf, partition_opts=GANG_PARTITION, **kw):
    """A started gang cluster, stopped on exit (for scripts; the system
    tests take theirs from conftest's make_gang_cluster)."""
    c = new_gang_cluster(workdir, nodes, storm_conf, partition_opts, **kw)
    try:
        yield start_gang(c)
    finally:
        c.stop()


def submit_pair(cluster, nodes, names=("A", "B"), jobs=None):
    """Two spinner jobs on exactly `nodes`, once the Machine Manager has them
    in two slots of its matrix: (a, b, pids of a, pids of b).  Each job id
    is appended to `jobs` (a list) as soon as it exists."""
    jobs = [] if jobs is None else jobs
    a = submit_spinner(cluster, nodes, name=names[0])
    jobs.append(a)
    b = submit_spinner(cluster, nodes, name=names[1])
    jobs.append(b)
    pa = spinner_pids(cluster, a, nodes)
    pb = spinner_pids(cluster, b, nodes)
    wait_for(lambda: set(mm_status(cluster)[2]) >= {a, b} and
             mm_status(cluster)[0].get("nslots") == "2", 30,
             "both jobs in two slots of the MM's matrix")
    return a, b, pa, pb


@contextlib.contextmanager
def running_pair(cluster, nodes, names=("A", "B"), **cleanup):
    """submit_pair() as a context: yields (a, b, pids of a, pids of b) and
    cancels both jobs on exit (storm_jobs.jobs_cancelled; cleanup: its
    timeout and idle_timeout)."""
    with jobs_cancelled(cluster, **cleanup) as jobs:
        yield submit_pair(cluster, nodes, names, jobs)


def wait_gang_ready(cluster, timeout=180):
    """Wait until every node manager answers and has applied strobes."""
    def ready():
        for n in cluster.node_names():
            try:
                if int(nm_gang(cluster, n)["strobes"]) < 1:
                    return False
            except (OSError, RuntimeError, KeyError, ValueError):
                return False
        return True
    wait_for(ready, timeout, "every node manager receiving strobes")


def mm_status(cluster):
    """The Machine Manager's status file, read through its one definition
    (src/common/storm_status.h) by `stormctl show --json`: (header dict,
    nodes by name, jobs by id), values as the file writes them; empty
    while there is no file."""
    r = subprocess.run([cluster.stormctl, "show", "--json", "--status",
                        cluster.path("state", "storm-mm.status")],
                       capture_output=True, text=True)
    if r.returncode:
        return {}, {}, {}
    d = json.loads(r.stdout)
    hdr = {k: str(v) for k, v in d["header"].items()}
    # node keys as strings, as the file has them; an unknown one (a
    # switch_lag_us not reported yet: JSON null) stays None
    nodes = {n["name"]: dict({k: None if v is None else str(v) for k, v in n.items()
                              if k not in ("name", "rank", "rejected")},
                             rejected=n.get("rejected", {})) for n in d["nodes"]}
    jobs = {j["job_id"]: dict({"slot": str(j["slot"]), "mask": "0x%x" % j["mask"],
                               "nodes": j["nodes"], "user": j.get("user", ""),
                               "name": j.get("name", "")},
                              **({"policy": j["policy"]} if j["policy"] else {}))
            for j in d["jobs"]}
    return hdr, nodes, jobs


def mm_now(cluster, follow_ms=None, seconds=None, until=None):
    """Where the schedule is now, from the MM's last strobe, read through its
    one definition (src/common/storm_now.h) by `stormctl now --json`: a
    dict, or None while there is none.  With follow_ms, every line `stormctl
    now --follow` printed in `seconds` (errors included, as dicts with
    "error"), or up to the line where until(the lines so far) came true."""
    args = [cluster.stormctl, "now", "--json", "--status",
            cluster.path("state", "storm-mm.status")]
    if follow_ms is None:
        r = subprocess.run(args, capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else None
    p = subprocess.Popen(args + ["--follow", str(follow_ms)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    lines = []
    # the reader is a thread: a line that never comes must not outlast
    # `seconds`
    done = threading.Event()

    def read():
        for x in p.stdout:
            if x.strip():
                lines.append(json.loads(x))
                if until and until(lines):
                    break
        done.set()
    t = threading.Thread(target=read, daemon=True)
    t.start()
    done.wait(seconds)
    p.kill()
    p.wait()
    t.join(timeout=10)
    return list(lines)


def submit_spinner(cluster, nodes, name="spin", cpus=None, extra=()):
    """A batch job with one CPU-bound task per node on exactly `nodes`."""
    cpus = cpus or cluster.cpus
    return cluster.sbatch("-N", str(len(nodes)), "-w", ",".join(nodes),
                          "--ntasks-per-node=1", "-c", str(cpus), "-J", name,
                          "-o", "/dev/null", *extra, "--wrap",
                          "srun sh -c '%s'" % SPIN)


def job_step_pids(cluster, jobid, node, step="0", uid=0):
    d = os.path.join(cluster.cgroup_root("freezer"), "slurm_%s" % node,
                     "uid_%d" % uid, "job_%d" % jobid, "step_%s" % step)
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def job_freezer_state(cluster, jobid, node, uid=0):
    """Where the node manager switches a job on a node (cgroup v1: its step
    cgroups but the batch step): "FROZEN" or "THAWED" when all of them
    are, "FREEZING" or "MIXED" in between, "THAWED" for a job with no step
    yet, None once the job's cgroup is gone."""
    job = os.path.join(cluster.cgroup_root("freezer"), "slurm_%s" % node,
                       "uid_%d" % uid, "job_%d" % jobid)
    states = set()
    try:
        for step in os.listdir(job):
            if not step.startswith("step_") or step == "step_batch":
                continue
            try:
                with open(os.path.join(job, step, "freezer.state")) as f:
                    states.add(f.read().strip())
            except OSError:
                pass        # the step ended
    except OSError:
        return None
    if not states:
        return "THAWED"
    if len(states) == 1:
        return states.pop()
    return "FREEZING" if "FREEZING" in states else "MIXED"


def spinner_pids(cluster, jobid, nodes, timeout=60):
    """{node: pid} of the spinning task of a job on each node."""
    def find():
        out = {}
        for n in nodes:
            pids = job_step_pids(cluster, jobid, n)
            # the task is the shell that spins (slurmstepd is not in step_0)
            for p in pids:
                try:
                    if open("/proc/%d/comm" % p).read().strip() == "sh":
                        out[n] = p
                except OSError:
                    pass
        return out if len(out) == len(nodes) else None
    return wait_for(find, timeout, "job %d's tasks on %s" % (jobid, nodes))


def cpu_ns(pid):
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def realtime(prio=20):
    """Run the caller SCHED_FIFO (below the NMs' threads), so that sampling
    is not starved by the busy tasks it watches; returns a restore func."""
    try:
        old = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    except (OSError, AttributeError):
        return lambda: None
    return lambda: os.sched_setscheduler(0, old[0], old[1])


def process_cpu_ns(pid):
    """CPU time of all threads of a process (ns), or 0 if it is gone."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for t in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def daemon_cpu_ns(cluster):
    """{"slurmctld": ns, "storm-nm": ns}: CPU used so far by the cluster's
    slurmctld (it hosts the machine manager) and by its node managers (all
    threads; the NMs found by their --slurm-conf in this cluster)."""
    out = {"slurmctld": process_cpu_ns(cluster.procs["slurmctld"].pid),
           "storm-nm": 0}
    conf = cluster.path("etc", "slurm.conf").encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != "storm-nm":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if conf not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        out["storm-nm"] += process_cpu_ns(int(d))
    return out


def cpu_deltas(pids, window):
    """CPU seconds each of pids ({key: pid}) got over window: ({key: s},
    wall seconds).  Only two reads of /proc, at the ends: a sampler
    running in between would take CPU from the jobs it measures."""
    restore = realtime()
    try:
        t0 = time.monotonic()
        v0 = {k: cpu_ns(p) or 0 for k, p in pids.items()}
        time.sleep(window)
        v1 = {k: cpu_ns(p) or 0 for k, p in pids.items()}
        wall = time.monotonic() - t0
    finally:
        restore()
    return {k: (v1[k] - v0[k]) / 1e9 for k in pids}, wall


def cpu_rate(pids, window):
    """CPU seconds per wall second of pids ({key: pid}) summed, over window.

    The gang benchmark's and the demo's measure of a CPU-bound job's
    progress; returns (rate, wall seconds)."""
    got, wall = cpu_deltas(pids, window)
    return sum(got.values()) / wall, wall


def sample(pids, duration, period=0.002):
    """Sample CPU time of pids = {key: pid} for `duration` seconds.

    Returns [(t, {key: cpu_ns})]; runs SCHED_FIFO while sampling."""
    restore = realtime()
    out = []
    try:
        end = time.monotonic() + duration
        while True:
            t = time.monotonic()
            out.append((t, {k: cpu_ns(p) for k, p in pids.items()}))
            if t >= end:
                break
            time.sleep(period)
    finally:
        restore()
    return out


def _turn(cluster, a, b, node):
    """Which of jobs a and b runs on node by its freezer: "a" when a's
    steps are thawed and b's frozen, "b" the other way round, else None
    (both thawed, a switch under way, a step starting or gone)."""
    sa = job_freezer_state(cluster, a, node)
    sb = job_freezer_state(cluster, b, node)
    if (sa, sb) == ("THAWED", "FROZEN"):
        return "a"
    if (sa, sb) == ("FROZEN", "THAWED"):
        return "b"
    return None


def wait_taking_turns(cluster, a, b, pa, pb, nodes, quantum_s, timeout=120,
                      turns=4, max_both=0.2, overlap_quanta=50):
    """Wait until jobs a and b take turns on every node of `nodes`, and
    return what their tasks' CPU time showed there ({node:
    analyse_pair()}).  pa and pb: {node: pid} of their tasks.

    Taking turns is asserted where it happens, not as a share of the CPU
    over a window, which a loaded host decides: each node's freezer shows
    a frozen while b is thawed and b frozen while a is thawed, `turns`
    changes between the two in all; each task there gets at least a
    quantum of CPU time, however late; and over `overlap_quanta` quanta
    sampled every ~2 ms the two tasks rarely get CPU time in the same
    sample (under max_both of the time: only where a sample straddles a
    switch) and never for three quanta running, in at least one window
    before the deadline."""
    deadline = Deadline(timeout)
    cpu0 = {(n, k): cpu_ns(p[n]) or 0 for n in nodes for k, p in (("a", pa), ("b", pb))}
    last = {n: None for n in nodes}
    changes = {n: 0 for n in nodes}

    def turned():
        for n in nodes:
            if changes[n] >= turns:
                continue
            t = _turn(cluster, a, b, n)
            if t is not None:
                if last[n] is not None and t != last[n]:
                    changes[n] += 1
                last[n] = t
        return all(changes[n] >= turns for n in nodes)
    # a poll every few ms catches each quantum's owner (the polls need no
    # precision: a missed quantum is caught at a later one)
    if not poll(turned, max(1.0, deadline.left()), period=min(0.005, quantum_s / 4)):
        raise WaitTimeout("timed out after %g s waiting for jobs %d and %d to take "
                          "turns on every node of %s: changes of turn seen %s (of %d), "
                          "last owners %s" % (timeout, a, b, nodes, changes, turns, last))

    def progressed():
        return all((cpu_ns(p[n]) or 0) - cpu0[(n, k)] >= quantum_s * 1e9
                   for n in nodes for k, p in (("a", pa), ("b", pb)))
    wait_for(progressed, max(1.0, deadline.left()),
             "each task of jobs %d and %d getting a quantum of CPU on %s"
             % (a, b, nodes), period=0.05)

    # A window in which the pair shares the CPU cleanly is waited for, not
    # demanded of the first one: on a loaded host a node manager's freeze
    # (or the sampler itself) can come late in one window, which says
    # nothing about the switching; a pair that never takes turns cleanly
    # shows no clean window before the deadline.
    pids = {(n, k): p[n] for n in nodes for k, p in (("a", pa), ("b", pb))}
    seen = []
    while True:
        samples = sample(pids, duration=overlap_quanta * quantum_s)
        out = {}
        for n in nodes:
            sub = [(t, {"a": v[(n, "a")], "b": v[(n, "b")]}) for t, v in samples]
            out[n] = analyse_pair(sub, "a", "b")
        if all(r["both_frac"] < max_both and r["longest_both_s"] < 3 * quantum_s
               for r in out.values()):
            return out
        seen.append(out)
        if deadline.passed() and len(seen) >= 3:
            raise WaitTimeout("timed out after %g s waiting for a window of %d quanta "
                              "in which jobs %d and %d rarely run at once (under %g of "
                              "the time, never for 3 quanta) on every node of %s: %d "
                              "windows, the last %s" % (timeout, overlap_quanta, a, b,
                                                        max_both, nodes, len(seen), out))


def analyse_pair(samples, a, b, busy_frac=0.05):
    """For two tasks on one node: how long both ran at once.

    An interval counts as "both" when each task got more than busy_frac of
    it.  Returns dict(total_s, both_s, both_frac, a_ns, b_ns,
    longest_both_s)."""
    total = both = longest = run = 0.0
    a_ns = b_ns = 0
    for (t0, v0), (t1, v1) in zip(samples, samples[1:]):
        if None in (v0[a], v0[b], v1[a], v1[b]):
            continue
        dt = t1 - t0
        da, db = v1[a] - v0[a], v1[b] - v0[b]
        a_ns += da
        b_ns += db
        total += dt
        if da > busy_frac * dt * 1e9 and db > busy_frac * dt * 1e9:
            both += dt
            run += dt
            longest = max(longest, run)
        else:
            run = 0.0
    return dict(total_s=total, both_s=both,
                both_frac=both / total if total else 0.0,
                a_ns=a_ns, b_ns=b_ns, longest_both_s=longest)

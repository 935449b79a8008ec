# SPDX-License-Identifier: GPL-2.0-or-later
"""watcher_cpu.py - where the CPU of watching goes, for run-web-bench.

A snapshot is the CPU seconds every part has used so far; the difference of
two snapshots over a window says which part used what in it.  The parts:
the watchers (storm-web itself, the stormctl runs it waited for,
chromedriver, each kind of Chromium process, the bench's /metrics scraper
thread) and the cluster's side of STORM (slurmctld, whose Machine Manager
writes the status; the node managers, which report to it), the latter to
show whether watching changes what the cluster does.

Read from /proc/PID/stat (utime, stime, and for storm-web the children it
waited for: cutime, cstime) in clock ticks; a process that exits inside a
window and was not waited for by a counted parent drops out (Chromium's
processes live as long as the browser).
"""
import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(path):
    """(ppid, comm, own CPU s, waited-for children's CPU s) or None."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    v = s[s.rindex(")") + 2:].split()
    return (int(v[1]), comm, (int(v[11]) + int(v[12])) / TICK,
            (int(v[13]) + int(v[14])) / TICK)


def _cmdline(pid):
    # Chromium rewrites its children's title: one string with spaces
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().decode(errors="replace").replace("\0", " ").split()
    except OSError:
        return []


def chromium_part(argv):
    """chromium-browser, -renderer, -gpu, -network, -storage, -zygote,
    -utility, -crashpad by the process' --type= (and utility sub-type)."""
    t = next((a[7:] for a in argv if a.startswith("--type=")), "")
    if not t:
        return "chromium-browser"
    if t == "utility":
        sub = next((a for a in argv if a.startswith("--utility-sub-type=")), "")
        if "network" in sub.lower():
            return "chromium-network"
        if "storage" in sub.lower():
            return "chromium-storage"
        return "chromium-utility"
    if t in ("renderer", "zygote", "crashpad-handler"):
        return "chromium-" + t.replace("-handler", "")
    if t.startswith("gpu"):
        return "chromium-gpu"
    return "chromium-" + t


def _thread_cpu(tid):
    st = _stat("/proc/self/task/%d/stat" % tid)
    return st[2] if st else 0.0


def snapshot(web_pid, driver_pid, scraper_tid, ctld_pid, nm_pids):
    """{part: CPU seconds so far}."""
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _stat("/proc/%s/stat" % d)
            if st:
                procs[int(d)] = st
    kids = {}
    for p, st in procs.items():
        kids.setdefault(st[0], []).append(p)

    def tree(root):
        out, todo = [], [root]
        while todo:
            p = todo.pop()
            if p in procs:
                out.append(p)
                todo += kids.get(p, [])
        return out

    parts = {}

    def add(part, x):
        parts[part] = parts.get(part, 0.0) + x

    for p in tree(web_pid):
        _, comm, own, reaped = procs[p]
        if p == web_pid:
            add("storm-web", own)
            add("stormctl", reaped)
        else:
            add("stormctl", own + reaped)
    for p in tree(driver_pid):
        _, comm, own, reaped = procs[p]
        part = "chromedriver" if comm == "chromedriver" else chromium_part(_cmdline(p))
        add(part, own + reaped)
    add("scraper", _thread_cpu(scraper_tid) if scraper_tid else 0.0)
    for p in tree(ctld_pid) if ctld_pid else []:
        if procs[p][1] == "slurmctld":
            add("slurmctld", procs[p][2])
    for p in nm_pids:
        if p in procs:
            add("storm-nm", procs[p][2])
    return parts


def nm_pids(cluster, nodes):
    """The node managers' PIDs (by the nodes' mount namespaces)."""
    out = []
    for n in nodes:
        for p in cluster.ns_pids(n):
            st = _stat("/proc/%d/stat" % p)
            if st and st[1] == "storm-nm":
                out.append(p)
    return out


WATCHERS = ("storm-web", "stormctl", "chromedriver", "scraper")


def is_watcher(part):
    return part in WATCHERS or part.startswith("chromium")


def delta(before, after):
    return {k: after.get(k, 0.0) - before.get(k, 0.0) for k in set(before) | set(after)}

# SPDX-License-Identifier: GPL-2.0-or-later
"""A real Slurm cluster on one host: munged, slurmctld and N `slurmd -N nodeK`.

Two networks: `loopback` (every daemon on 127.0.0.1, a port range per node)
and `netns` (storm_netns: every node and the head in a network namespace
of its own, with its own address and link into one bridge, the same ports
on every node, links optionally shaped to `link_mbit`).  In netns mode
slurmctld and every client command (`run`, `wrap`) live in the head's
namespace, and slurmd with everything it starts in its node's.

Used by the system tests, the benchmarks and the demo, so every one of them
runs the same daemons the same way.  Each slurmd runs in a private mount
namespace where a per-node directory is bind-mounted on one common path
(`<dir>/local`), so "node-local" files (TmpFS, the STORM RAM disk) really are
per node, and so that teardown can find every process a node started
(slurmstepd, job tasks) by its mount namespace.  Nothing is killed that this
object did not start.
"""

import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import storm_hostlock
from storm_netns import HEAD, Network
from storm_wait import Deadline, poll, wait_for

# From a slurmctld (re)start, which every `scontrol reconfigure` is from
# Slurm 23.11 on, to its Machine Manager's first strobe: slurmctld's own
# start-up, then libfabric's, which a loaded host stretches to tens of
# seconds.
SLURMCTLD_RESTART_S = 180

TOP_SRCDIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# The Slurm every cluster runs: STORM_SLURM=22.05 (default) is Debian 12's
# packages and the plugins built in the source tree; STORM_SLURM=24.11 is
# the prefix scripts/slurm-24.11.sh builds and the plugins built in
# build-24.11 (scripts/bootstrap.sh --slurm=24.11).
SLURM_VERSION = os.environ.get("STORM_SLURM", "22.05")
if SLURM_VERSION == "22.05":
    SLURM_PREFIX = "/usr"
    SLURM_PLUGINDIR = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
    DEFAULT_BUILDDIR = TOP_SRCDIR
elif SLURM_VERSION == "24.11":
    SLURM_PREFIX = os.environ.get("STORM_SLURM_PREFIX",
                                  "/var/cache/storm/slurm-24.11/prefix")
    SLURM_PLUGINDIR = os.path.join(SLURM_PREFIX, "lib", "slurm")
    DEFAULT_BUILDDIR = os.path.join(TOP_SRCDIR, "build-24.11")
else:
    raise RuntimeError("STORM_SLURM=%s: supported are 22.05 and 24.11" % SLURM_VERSION)
SLURM_BIN = os.path.join(SLURM_PREFIX, "bin")
SLURM_SBIN = os.path.join(SLURM_PREFIX, "sbin")
# 23.02 removed launch plugins: srun hands the executable over in SPANK.
HAS_LAUNCH_PLUGINS = SLURM_VERSION == "22.05"


def slurm_env(env=None):
    """env (default os.environ) with this Slurm's commands first in PATH."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = "%s:%s:%s" % (SLURM_BIN, SLURM_SBIN, env.get("PATH", ""))
    return env

# Installed STORM instead of a build tree (scripts/run-package-test runs
# the system tests against the Debian packages this way):
#   STORM_PLUGINDIR  the STORM plugins' directory (default <builddir>/plugins)
#   STORM_BINDIR     where stormctl is (default <builddir>/src/stormctl)
#   STORM_PLUGSTACK  a plugstack.conf to name in slurm.conf, such as Debian's
#                    /etc/slurm/plugstack.conf with the packaged drop-in
#                    enabled (default: one written per cluster, loading
#                    spank_storm.so from the PluginDir)
# The node managers are then the one the SPANK plugin finds (storm.conf(5)
# NodeManager).


# A node manager's clean exit (modules stopped, jobs thawed, fabric closed;
# under AddressSanitizer, the leak check) takes well under a second on an
# idle host: the deadline is for a loaded one.
NM_STOP_TIMEOUT_S = 20


def _alive(pid):
    """Whether pid runs (a zombie does not: its exit handlers are done)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class ClusterError(RuntimeError):
    pass


TEARDOWN_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def stop_clusters_on_signals():
    """SIGTERM, SIGHUP and SIGINT raise SystemExit in the main thread, once,
    so that the caller's `finally` and `with` blocks stop the clusters it
    started.  For the benchmarks and the demo: ended by `timeout`, a closed
    terminal or a pipe reader that quit, they would otherwise die at once
    and leave whole clusters running (SIGINT too: a background job of a
    non-interactive shell starts with SIGINT ignored).  Later signals are
    ignored, so that the teardown itself is not cut short."""
    def _exit(signum, frame):
        for s in TEARDOWN_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    for s in TEARDOWN_SIGNALS:
        signal.signal(s, _exit)


def _ns_id(st):
    """A namespace's identity from the stat of its /proc/PID/ns file."""
    return (st.st_dev, st.st_ino)


def _pin_ns(pid):
    """An open fd on pid's mount namespace, or None while it is still ours.

    A namespace's inode number is freed with its last reference and the
    kernel hands the lowest free number to the next namespace created on
    the host, of any cluster: a number recorded for a namespace that died
    (the one of a slurmd restarted mid-run) may name another cluster's node
    by the time stop() kills "the node's" processes.  The fd is such a
    reference: the number stays this namespace's until stop() closes it."""
    fd = os.open("/proc/%d/ns/mnt" % pid, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _ns_id(os.fstat(fd)) != _ns_id(os.stat("/proc/self/ns/mnt")):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def hold_port_base(base, span):
    """The fd of a host-wide lock on the range at `base` if it is free and
    nobody holds it, else None.  A range is free here long before its
    cluster binds it: the lock keeps a cluster of another process (a suite
    running side by side) from taking it meanwhile."""
    fd = storm_hostlock.try_hold("ports-%d" % base)
    if fd is not None and not all(_port_free(base + k) for k in range(span)):
        os.close(fd)
        fd = None
    return fd


def _ephemeral_low():
    """The lowest port the kernel hands out to connect() (32768 by default)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def pick_port_base(span, seed):
    """(base, lock fd): a base port with `span` free ports above it, held
    by the lock (hold_port_base) until the fd is closed; seeded so that
    clusters in different directories start at different places.  The
    range lies below the ephemeral ports: there any connection's local end
    (the fabric's, srun's) can take a port of a range picked while it was
    free, and a daemon started later fails to listen on it."""
    lo, top = 10000, _ephemeral_low() - span
    slots = (top - lo) // 100 + 1
    if slots < 1:
        raise ClusterError("no room for %d ports below the ephemeral range" % span)
    start = int(hashlib.sha1(seed.encode()).hexdigest(), 16) % slots
    for i in range(slots):
        base = lo + (start + i) % slots * 100
        fd = hold_port_base(base, span)
        if fd is not None:
            return base, fd
    raise ClusterError("no free range of %d ports on 127.0.0.1" % span)


def ensure_munge():
    """Start munged if none answers; create a key if the host has none."""
    with storm_hostlock.exclusive("munge"):
        return _ensure_munge()


def _ensure_munge():
    def works():
        try:
            enc = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
            if enc.returncode:
                return False
            dec = subprocess.run(["unmunge"], input=enc.stdout,
                                 capture_output=True, timeout=10)
            return dec.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if works():
        return None
    if not os.path.exists("/etc/munge/munge.key"):
        subprocess.run(["mungekey", "--create", "--keyfile=/etc/munge/munge.key"],
                       check=True)
        shutil.chown("/etc/munge/munge.key", "munge", "munge")
        os.chmod("/etc/munge/munge.key", 0o600)
    os.makedirs("/run/munge", exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    # munged daemonizes; it is shared by every cluster on this host and
    # outlives us on purpose (as the system service would).
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
    return wait_for(works, 30, "munge -n | unmunge to work once munged started",
                    error=ClusterError)


class Cluster:
    """One slurmctld and `nodes` slurmd daemons under `workdir`.

    storm: configure the STORM plugins (False gives stock Slurm, for
    baselines).  node_mem_mb: put each slurmd (and so everything it starts)
    in a v1 memory cgroup of that limit, standing in for the node's RAM (the
    memory-pressure benchmark; no swap here, so going over is an OOM kill).
    select_params: SelectTypeParameters (CR_Core leaves memory out of
    admission, as many gang-scheduled sites do).  storm_conf: lines added to the cluster's base storm.conf.  extra_conf: lines appended
    to slurm.conf.  partition_opts: extra words on the PartitionName line.
    local_mb: size of each node's RAM disk (its `<dir>/local`).
    local_huge: mount that RAM disk with huge=within_size (transparent huge
    pages for files as large as a huge page), as README's admin section
    recommends for BcastDir; falls back to small pages where the kernel
    refuses the option.  Stock srun --bcast and sbcast write there too.
    network: "loopback" or "netns" (module docstring); link_mbit: the netns
    links' rate in both directions (None: not shaped).
    node_env: {node name: {VAR: value}} added to that node's slurmd
    environment, which its node manager inherits (the test-only
    STORM_NM_TEST_CLOCK_OFFSET_US, storm-nm(8)).
    extra_hosts: netns only, {name: Mbit/s} hosts beside the nodes on the
    cluster network (a file server), each in a namespace of its own with a
    link of that rate (storm_netns.Network's extra); run things there with
    wrap(argv, host=name) or spawn().
    before_nodes: a callable(cluster) run once the controller answers and
    before any slurmd starts (to start a file server's daemon).
    node_setup: a callable(node) returning shell commands run in the node's
    own mount and network namespace before its slurmd starts (a network
    file system mounted there is seen by the node's jobs only); they must
    succeed or the slurmd does not start.
    """

    # netns mode: the same ports on every node, as on a real cluster
    NETNS_PORTS = {"ctld": 6817, "slurmd": 6818, "nm": 7000, "bcast": 7001,
                   "mm": 7100}

    def __init__(self, workdir, nodes=8, storm=True, builddir=None,
                 storm_conf="", extra_conf="", partition_opts="",
                 cpus=2, real_memory=1000, proctrack="cgroup", name=None,
                 expect_nm=True, node_mem_mb=None, select_params="CR_Core_Memory",
                 local_mb=1024, local_huge=True, network="loopback",
                 link_mbit=None, node_env=None, extra_hosts=None, before_nodes=None,
                 node_setup=None):
        if not 1 <= nodes <= 32:
            raise ValueError("nodes must be 1..32")
        if network not in ("loopback", "netns"):
            raise ValueError("network must be loopback or netns")
        if (link_mbit is not None or extra_hosts) and network != "netns":
            raise ValueError("link_mbit and extra_hosts need network='netns'")
        self.dir = os.path.abspath(workdir)
        self.nodes = nodes
        self.storm = storm
        self.builddir = os.path.abspath(builddir or os.environ.get(
            "STORM_BUILDDIR", DEFAULT_BUILDDIR))
        self.storm_conf_text = storm_conf
        self.extra_conf = extra_conf
        self.partition_opts = partition_opts
        self.cpus = cpus
        self.real_memory = real_memory
        self.proctrack = proctrack
        self.node_mem_mb = node_mem_mb
        self.local_mb = local_mb
        self.local_huge = local_huge
        self.local_opts = {}     # node -> the RAM disk's mount options
        self.select_params = select_params
        # start() waits for the node managers unless told none will run
        # (a deliberately broken storm.conf keeps them from starting).
        self.expect_nm = storm and expect_nm
        self.name = name or ("s" + hashlib.sha1(self.dir.encode()).hexdigest()[:8])
        self.hostname = socket.gethostname()
        self.procs = {}          # name -> Popen
        # node name -> open fds on its mount namespaces, oldest first: held
        # open, a namespace outlives its processes, so its inode number is
        # not given to a namespace of another cluster (or another suite run
        # side by side) that stop() would then SIGKILL (see _pin_ns)
        self.node_ns = {}
        self.port_base = None
        self.port_lock = None    # fd holding port_base's range (hold_port_base)
        self.env = None
        self.node_env = dict(node_env or {})
        self.before_nodes = before_nodes
        self.node_setup = node_setup
        self.net = (Network(self.dir, self.node_names(), link_mbit, extra_hosts)
                    if network == "netns" else None)

    # -- paths ---------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    @property
    def conf(self):
        return self.path("etc", "slurm.conf")

    @property
    def plugindir(self):
        return os.environ.get("STORM_PLUGINDIR") or os.path.join(self.builddir, "plugins")

    @property
    def stormctl(self):
        bindir = os.environ.get("STORM_BINDIR") or os.path.join(
            self.builddir, "src", "stormctl")
        return os.path.join(bindir, "stormctl")

    @property
    def plugstack(self):
        """The plugstack.conf slurm.conf names (STORM_PLUGSTACK: an
        installed one; the SPANK plugin then reads the storm.conf beside
        this cluster's slurm.conf)."""
        if self.storm and os.environ.get("STORM_PLUGSTACK"):
            return os.environ["STORM_PLUGSTACK"]
        return self.path("etc", "plugstack.conf")

    def node_names(self):
        return ["node%d" % i for i in range(1, self.nodes + 1)]

    def node_local(self, node):
        """Host-side view of a node's private directory (`<dir>/local` there)."""
        return self.path("nodefs", node)

    def _mount_local(self, node):
        """A node's local directory is a RAM disk of its own, as on a
        compute node: BcastDir, sbcast's destination and TmpFS live there
        (on the host's disk, writes would cost the file system's block
        allocation, not a node's)."""
        opts = "size=%dm,mode=0755" % self.local_mb
        tries = [opts + ",huge=within_size", opts] if self.local_huge else [opts]
        for i, o in enumerate(tries):
            # the last try raises; an earlier refusal falls back
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", o,
                                "storm-" + node, self.node_local(node)],
                               capture_output=i < len(tries) - 1,
                               check=i == len(tries) - 1)
            if r.returncode == 0:
                self.local_opts[node] = o
                return

    def resize_local(self, node, mb):
        """Change a node's RAM disk size (what the node managers see too:
        the node's bind mount shares it)."""
        subprocess.run(["mount", "-o", "remount,size=%dm" % mb, self.node_local(node)],
                       check=True)

    def _unmount_locals(self):
        """Unmount this directory's node RAM disks (also an earlier, killed
        run's); the nodes' own views go with their mount namespaces."""
        top = self.path("nodefs") + "/"
        for _ in range(4):              # stacked mounts, innermost last
            with open("/proc/self/mounts") as f:
                mnts = [ln.split()[1] for ln in f if ln.split()[1].startswith(top)]
            if not mnts:
                return
            for m in mnts:
                subprocess.run(["umount", "-l", m], check=False)

    def log(self, node=None):
        return self.path("log", "slurmd-%s.log" % node if node else "slurmctld.log")

    # -- configuration -------------------------------------------------
    def write_config(self):
        # A fresh cluster: no state, spool or node files from an earlier run.
        self._unmount_locals()
        for sub in ("state", "spool", "run", "nodefs", "log"):
            shutil.rmtree(self.path(sub), ignore_errors=True)
        for sub in ("etc", "state", "spool", "run", "log", "nodefs", "local"):
            os.makedirs(self.path(sub), exist_ok=True)
        for n in self.node_names():
            os.makedirs(self.node_local(n), exist_ok=True)
            self._mount_local(n)
            os.makedirs(self.path("spool", n), exist_ok=True)
        if self.net:
            ctld_port = self.NETNS_PORTS["ctld"]
            ctld_addr = self.net.addrs[HEAD]
        else:
            # base: slurmctld; +1..: slurmds; +33..: node managers (fabric);
            # +65: the machine manager; +66..: node managers (BcastPort)
            span = 66 + self.nodes
            if self.port_base is not None and self.port_lock is None:
                # a restart keeps its ports unless someone took them meanwhile
                self.port_lock = hold_port_base(self.port_base, span)
            if self.port_lock is None:
                self.port_base, self.port_lock = pick_port_base(span, self.dir)
            ctld_port, ctld_addr = self.port_base, "127.0.0.1"
            d_lo, d_hi = self.port_base + 1, self.port_base + self.nodes
            self.nm_port_lo = self.port_base + 33
        plugindir = SLURM_PLUGINDIR
        lines = [
            "ClusterName=%s" % self.name,
            "SlurmctldHost=%s(%s)" % (self.hostname, ctld_addr),
            "SlurmctldPort=%d" % ctld_port,
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            "StateSaveLocation=%s" % self.path("state"),
            "SlurmdSpoolDir=%s" % self.path("spool", "%n"),
            "SlurmctldPidFile=%s" % self.path("run", "slurmctld.pid"),
            "SlurmdPidFile=%s" % self.path("run", "slurmd-%n.pid"),
            "SlurmctldLogFile=%s" % self.log(),
            "SlurmdLogFile=%s" % self.path("log", "slurmd-%n.log"),
            "SlurmctldDebug=verbose", "SlurmdDebug=verbose",
            "TmpFS=%s" % self.path("local"),
            "ProctrackType=proctrack/%s" % self.proctrack,
            "TaskPlugin=task/none",
            "SelectTypeParameters=%s" % self.select_params,
            "DefMemPerCPU=100",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2", "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MailProg=/bin/true", "MinJobAge=60",
            "PreemptMode=OFF", "PreemptType=preempt/none",
        ]
        if self.storm:
            plugindir = self.plugindir + ":" + SLURM_PLUGINDIR
            lines += [
                "SelectType=select/cons_tres_storm",
                "SchedulerType=sched/storm",
            ]
            if HAS_LAUNCH_PLUGINS:
                lines.append("LaunchType=launch/slurm")
            lines += [
                "PlugStackConfig=%s" % self.plugstack,
            ]
        else:
            lines += ["SelectType=select/cons_tres", "SchedulerType=sched/backfill",
                      "PlugStackConfig=%s" % self.path("etc", "plugstack.conf")]
        lines.append("PluginDir=%s" % plugindir)
        lines = self._without_keys_of(lines, self.extra_conf)
        if self.net:
            lines += ["NodeName=%s NodeHostname=%s NodeAddr=%s Port=%d CPUs=%d "
                      "RealMemory=%d" % (n, self.hostname, self.net.addrs[n],
                                         self.NETNS_PORTS["slurmd"], self.cpus,
                                         self.real_memory)
                      for n in self.node_names()]
        else:
            lines.append("NodeName=node[1-%d] NodeHostname=%s NodeAddr=127.0.0.1 "
                         "Port=%d-%d CPUs=%d RealMemory=%d" % (
                             self.nodes, self.hostname, d_lo, d_hi, self.cpus,
                             self.real_memory))
        lines += [
            "PartitionName=debug Nodes=node[1-%d] Default=YES MaxTime=INFINITE "
            "State=UP %s" % (self.nodes, self.partition_opts),
        ]
        if self.extra_conf:
            lines.append(self.extra_conf)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(self.path("etc", "cgroup.conf"), "w") as f:
            # 24.11 refuses CgroupAutomount (defunct since 23.02)
            f.write("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n" +
                    ("CgroupAutomount=no\n" if SLURM_VERSION == "22.05" else ""))
        with open(self.path("etc", "plugstack.conf"), "w") as f:
            if self.storm and self.plugstack == self.path("etc", "plugstack.conf"):
                f.write("required %s conf=%s\n" % (
                    os.path.join(self.plugindir, "spank_storm.so"),
                    self.path("etc", "storm.conf")))
        self.write_storm_conf(self.base_storm_conf() + self.storm_conf_text)
        self.env = dict(slurm_env(), SLURM_CONF=self.conf,
                        STORM_CONF=self.path("etc", "storm.conf"))

    @staticmethod
    def _without_keys_of(lines, extra):
        """lines less those whose key a line of extra sets again (the stock
        gang baseline's PreemptMode=GANG): Slurm takes the last value of a
        key given twice but logs "specified more than once" as an error (22.05
        in every daemon and command, 24.11 in its daemons)."""
        keys = {ln.split("=", 1)[0].strip().lower() for ln in extra.splitlines()
                if "=" in ln and " " not in ln.split("=", 1)[0].strip()}
        return [ln for ln in lines if ln.split("=", 1)[0].lower() not in keys]

    def base_storm_conf(self):
        """What every test cluster's storm.conf starts with: this cluster's
        ports, its node-local RAM disk and its log directory."""
        local = "BcastDir=%s\nNMLogFile=%s\n" % (
            self.path("local", "storm"), self.path("log", "storm-nm-%n.log"))
        # scripts/run-sanitized: every node runs the sanitized storm-nm
        if os.environ.get("STORM_TEST_NODE_MANAGER"):
            local += "NodeManager=%s\n" % os.environ["STORM_TEST_NODE_MANAGER"]
        if self.net:
            p = self.NETNS_PORTS
            return "Port=%d\nControllerPort=%d\nBcastPort=%d\n%s" % (
                p["nm"], p["mm"], p["bcast"], local)
        return "Port=%d-%d\nControllerPort=%d\nBcastPort=%d-%d\n%s" % (
            self.nm_port_lo, self.nm_port_lo + self.nodes - 1,
            self.port_base + 65, self.port_base + 66,
            self.port_base + 65 + self.nodes, local)

    def write_storm_conf(self, text):
        """Replace storm.conf whole, as an admin's editor does: a daemon
        reading it mid-write must see the old file or the new one.  Read
        empty, it is all defaults (another BcastDir, other ports) for the
        SPANK plugin and a node manager that a slurmd (24.11 re-executes
        on every reconfigure) starts meanwhile; the node manager's
        instance lock keeps that one from running beside the node's own
        (test_0004 rewrites the file in place on purpose)."""
        path = self.path("etc", "storm.conf")
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)

    # -- processes -----------------------------------------------------
    # -- network -------------------------------------------------------
    def addr(self, host):
        """A node's (or "head"'s) address: its own in netns mode."""
        return self.net.addrs[host] if self.net else "127.0.0.1"

    def wrap(self, argv, host=HEAD):
        """argv as run on a host of this cluster: in netns mode inside its
        network namespace (client commands: the head's)."""
        return self.net.wrap(host, argv) if self.net else list(argv)

    def set_link(self, host, up):
        """Cut or restore a node's (or the head's) link (netns mode)."""
        if not self.net:
            raise ClusterError("link faults need network='netns'")
        self.net.set_link(host, up)

    def wire_ms(self, nbytes):
        """S/R on this cluster's links, or None (not shaped)."""
        return self.net.wire_ms(nbytes) if self.net else None

    def spawn(self, name, argv, host=HEAD, env=None):
        """Start a long-running process of this cluster on a host (in its
        network namespace): stopped with the cluster, its output in
        log/NAME.stderr."""
        return self._spawn(name, argv, host, env)

    def _spawn(self, name, argv, host=HEAD, env=None):
        out = open(self.path("log", name + ".stderr"), "ab")
        p = subprocess.Popen(self.wrap(argv, host), stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env or self.env,
                             start_new_session=True)
        out.close()
        self.procs[name] = p
        return p

    def start(self, wait=True, timeout=180):
        if self.storm and not os.path.exists(
                os.path.join(self.plugindir, "spank_storm.so")):
            raise ClusterError("no STORM plugins in %s: run make first" % self.plugindir)
        ensure_munge()
        self._require_clean_cgroups()
        if self.net:
            self.net.create()
        self.write_config()
        self.start_ctld()
        if self.before_nodes:
            self.before_nodes(self)
        for node in self.node_names():
            self.start_slurmd(node)
        if wait:
            self.wait_idle(timeout=timeout)
            if self.expect_nm:
                self.wait_node_managers(timeout=timeout)
        return self

    def nm_request(self, node, req, timeout=5):
        """One request to a node's manager over its control socket."""
        path = os.path.join(self.node_local(node), "storm", ".nm-%s.sock" % node)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(timeout)
        try:
            s.connect(path)
            s.send(req.encode())
            # SEQPACKET: one reply, cut at the buffer (gang traces are long)
            return s.recv(65536).decode()
        finally:
            s.close()

    def wait_node_managers(self, nodes=None, timeout=120):
        """Wait until every node manager has joined the fabric and answers
        (slurmd is idle before its NM has fetched the node table)."""
        waiting = list(nodes or self.node_names())

        def all_answer():
            # in order, and a node that answered is not asked again
            while waiting:
                try:
                    if not self.nm_request(waiting[0], "ping").startswith("ok "):
                        return False
                except OSError:
                    return False
                waiting.pop(0)
            return True

        if not poll(all_answer, timeout):
            raise ClusterError("node manager of %s not ready after %d s; see %s" % (
                waiting[0], timeout, self.path("log", "storm-nm-%s.log" % waiting[0])))

    def start_ctld(self):
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", self.conf])
        self._wait_ctld()

    def cgroup_root(self, controller):
        """This cluster's own subtree of a v1 controller (host path)."""
        return "/sys/fs/cgroup/%s/storm_%s" % (controller, self.name)

    def start_slurmd(self, node):
        # A private mount namespace per node: <dir>/local is this node's own,
        # and the freezer hierarchy is rooted at this cluster's subtree, so
        # that two test clusters' "node1/job_2" cgroups never meet.
        # The cpu hierarchy likewise: the node manager keeps the flexible
        # policy's cgroups there (cpu/storm_<node>/job_<id>).
        freezer, cpu = self.cgroup_root("freezer"), self.cgroup_root("cpu")
        os.makedirs(freezer, exist_ok=True)
        os.makedirs(cpu, exist_ok=True)
        script = ""
        if self.node_mem_mb:
            mem = os.path.join(self.cgroup_root("memory"), node)
            os.makedirs(mem, exist_ok=True)
            with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
                f.write(str(self.node_mem_mb << 20))
            script = "echo $$ > %s/cgroup.procs && " % mem
        script += ("mount --make-rprivate / && mount --bind %s %s && "
                  "mount --bind %s /sys/fs/cgroup/freezer && "
                  "mount --bind %s /sys/fs/cgroup/cpu && " % (
                      self.node_local(node), self.path("local"), freezer, cpu))
        if self.node_setup:
            script += "{ %s\n} && " % self.node_setup(node)
        script += "exec slurmd -D -f %s -N %s" % (self.conf, node)
        p = self._spawn("slurmd-" + node, ["unshare", "-m", "sh", "-c", script],
                        host=node, env=dict(self.env, **self.node_env.get(node, {})))
        # Up to 30 s: on a loaded host unshare may take long to switch, and
        # a namespace not recorded is a node whose processes stop() misses.
        def recorded_or_exited():
            with contextlib.suppress(OSError):
                fd = _pin_ns(p.pid)
                if fd is not None:
                    # A restarted slurmd gets a new namespace; what the old
                    # one started (the node manager) lives on in the old.
                    self.node_ns.setdefault(node, []).append(fd)
                    return True
            return p.poll() is not None

        poll(recorded_or_exited, 30, 0.02)
        return p

    def _wait_ctld(self, timeout=120):
        def answers():
            p = self.procs["slurmctld"]
            if p.poll() is not None:
                raise ClusterError("slurmctld exited with %s; see %s" % (
                    p.returncode, self.log()))
            return "UP" in self.run(["scontrol", "ping"], check=False).stdout

        if not poll(answers, timeout, 0.2):
            raise ClusterError("slurmctld did not answer within %d s; see %s" % (
                timeout, self.log()))

    def wait_idle(self, timeout=60, nodes=None):
        """Wait until every node (or the given ones) is idle."""
        want = set(nodes or self.node_names())
        last = [""]

        def all_idle():
            for name, p in self.procs.items():
                if p.poll() is not None and name.startswith("slurmd-") and \
                        name[len("slurmd-"):] in want:
                    raise ClusterError("%s exited with %s; see %s" % (
                        name, p.returncode, self.log(name[len("slurmd-"):])))
            out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False).stdout
            states = dict(l.split() for l in out.splitlines() if l.strip())
            last[0] = out
            return want and all(states.get(n) == "idle" for n in want)

        if not poll(all_idle, timeout):
            raise ClusterError("nodes not idle after %d s:\n%s\nlogs in %s\n%s" % (
                timeout, last[0], self.path("log"), self._stuck_report(last[0], want)))

    def _tail(self, path, lines):
        try:
            with open(path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return "(%s)\n" % e

    def recent_errors(self, per_log=8):
        """The last error lines of every daemon log of this cluster."""
        out = []
        try:
            names = sorted(os.listdir(self.path("log")))
        except OSError as e:
            return "(%s)\n" % e
        for name in names:
            lines = [l for l in self._tail(self.path("log", name), 2000).splitlines()
                     if "error" in l.lower() or "fatal" in l.lower()]
            if lines:
                out.append("--- %s\n%s\n" % (name, "\n".join(lines[-per_log:])))
        return "".join(out) or "(no error lines)\n"

    def _stuck_report(self, sinfo, want):
        """What a CI log needs when nodes do not go idle (the cluster's log
        directory does not outlive the CI machine): the controller's view of
        the jobs, and the last lines each stuck node's daemons wrote."""
        states = dict(l.split() for l in sinfo.splitlines() if l.strip())
        stuck = sorted(n for n in want if states.get(n) != "idle")
        parts = ["--- scontrol show job\n" +
                 self.run(["scontrol", "-o", "show", "job"], check=False).stdout,
                 "--- %s (last 40 lines)\n" % self.log() + self._tail(self.log(), 40)]
        for n in stuck[:3]:
            parts.append("--- %s (last 25 lines)\n" % self.log(n) +
                         self._tail(self.log(n), 25))
            nm = self.path("log", "storm-nm-%s.log" % n)
            if os.path.exists(nm):
                parts.append("--- %s (last 15 lines)\n" % nm + self._tail(nm, 15))
        return "".join(parts)

    def run(self, argv, check=True, timeout=120, **kw):
        """Run a Slurm client command against this cluster."""
        r = subprocess.run(self.wrap(argv), env=kw.pop("env", self.env),
                           capture_output=True,
                           text=True, timeout=timeout, **kw)
        if check and r.returncode:
            raise ClusterError("%s failed (rc=%d):\n%s%s" % (
                " ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def reconfigure(self, check=True):
        """scontrol reconfigure.  From Slurm 23.11 on that starts a new
        slurmctld, whose answer a loaded host can hold back past
        MessageTimeout ("Socket timed out"): then wait for slurmctld to
        answer again rather than fail."""
        r = self.run(["scontrol", "reconfigure"], check=False)
        if r.returncode and "timed out" in r.stdout + r.stderr:
            self._wait_ctld(SLURMCTLD_RESTART_S)
            return r
        if check and r.returncode:
            raise ClusterError("scontrol reconfigure failed (rc=%d):\n%s%s" % (
                r.returncode, r.stdout, r.stderr))
        return r

    def sbatch(self, *args):
        """Submit a batch job; returns its id."""
        r = self.run(["sbatch", "--parsable"] + list(args))
        return int(r.stdout.strip().split(";")[0])

    def job_info(self, jobid):
        r = self.run(["scontrol", "-o", "show", "job", str(jobid)], check=False)
        info = {}
        for word in r.stdout.split():
            k, _, v = word.partition("=")
            info.setdefault(k, v)
        return info

    def wait_job(self, jobid, timeout=120,
                 states=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                         "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL")):
        """Wait until a job reaches one of `states`; returns its final info."""
        def final_info():
            info = self.job_info(jobid)
            return info if info.get("JobState") in states else None

        info = poll(final_info, timeout, 0.2)
        if not info:
            raise ClusterError("job %s not finished after %d s: %s" % (
                jobid, timeout, self.job_info(jobid)))
        return info

    def storm_pend_reason(self, jobid):
        """STORM's reason for a pending job as squeue shows it ("PENDING
        <reason>"), or None.  On 24.11 Slurm resets it after each failed
        selection and the select plugin puts it back a moment later
        (src/plugins/compat/pend_reasons_2411.c): callers poll."""
        r = self.run(["squeue", "-h", "-j", str(jobid), "-o", "%T %R"]).stdout.strip()
        return r if r.startswith("PENDING") and "STORM_" in r else None

    def pid(self, name):
        """PID of a daemon this cluster started ("slurmctld", "slurmd-node1")."""
        p = self.procs.get(name)
        return p.pid if p and p.poll() is None else None

    def ns_pids(self, node):
        """Every process a node started (slurmd, stepds, tasks, its node
        manager), found by the node's mount namespaces."""
        nss = {_ns_id(os.fstat(fd)) for fd in self.node_ns.get(node, ())}
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if _ns_id(os.stat("/proc/%s/ns/mnt" % d)) in nss:
                        pids.append(int(d))
                except OSError:
                    pass
        return pids

    def stop_slurmd(self, node, sig=signal.SIGTERM, timeout=30):
        p = self.procs.get("slurmd-" + node)
        if p and p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def log_size(self, node=None):
        try:
            return os.path.getsize(self.log(node))
        except OSError:
            return 0

    def wait_log(self, pattern, node=None, start=0, timeout=30):
        """Wait for a regex in a daemon's log past byte offset `start`."""
        def found():
            with contextlib.suppress(OSError), \
                    open(self.log(node), errors="replace") as f:
                f.seek(start)
                return re.search(pattern, f.read())
            return None

        m = poll(found, timeout)
        if not m:
            raise ClusterError("%r not in %s after %d s" % (pattern, self.log(node), timeout))
        return m

    def restart_slurmd(self, node, wait=True):
        start = self.log_size(node)
        self.stop_slurmd(node)
        self.start_slurmd(node)
        if wait:
            # slurmctld may still show the node idle from before: wait for
            # the new slurmd itself to finish starting.
            self.wait_log(r"slurmd started on ", node=node, start=start, timeout=120)
            self.wait_idle(nodes=[node], timeout=120)

    def save_job_state(self, jobid, timeout=30):
        """Make slurmctld write its job state now and wait until it has.

        slurmctld saves job state lazily (state_save.c: at most every
        SAVE_MAX_WAIT seconds), so a slurmctld killed outright within seconds
        of a job starting comes back without the job.  A test that kills
        slurmctld to test recovery calls this first; a harmless update of
        `jobid` marks the job state dirty so a save must follow."""
        since = time.time()         # wall clock: compared with a file's mtime
        self.run(["scontrol", "update", "JobId=%s" % jobid,
                  "Comment=state-saved"])
        f = os.path.join(self.path("state"), "job_state")

        def saved():
            with contextlib.suppress(OSError):
                return os.stat(f).st_mtime > since
            return False

        wait_for(saved, timeout, "slurmctld to save its job state", 0.2,
                 error=ClusterError)

    def restart_ctld(self, sig=signal.SIGTERM):
        """Stop slurmctld and start it again from its saved state."""
        p = self.procs["slurmctld"]
        if p.poll() is None:
            p.send_signal(sig)
            p.wait(timeout=60)
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self._wait_ctld()

    def stop(self, timeout=30):
        """Stop everything this cluster started, by PID; KILL what lingers.

        SIGTERM, SIGHUP and SIGINT wait until the teardown is done (see
        stop_clusters_on_signals): raised in the middle of it, they left
        slurmds running."""
        old = signal.pthread_sigmask(signal.SIG_BLOCK, TEARDOWN_SIGNALS)
        try:
            self._stop(timeout)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _stop(self, timeout):
        with contextlib.suppress(Exception):
            if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
                self.run(["scancel", "--full", "-u", "root"], check=False, timeout=10)
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        # A frozen task cannot die: thaw this cluster's job cgroups (a
        # gang-scheduled job may be frozen when a test ends).
        self.thaw_all()
        deadline = Deadline(timeout)
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline.left()))
            if p.poll() is None:
                p.kill()
                p.wait()
        self.stop_node_managers()
        # Steps and tasks a node left behind live in its namespace only.
        for node in list(self.node_ns):
            for pid in self.ns_pids(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.thaw_all()
        self.procs.clear()
        for fds in self.node_ns.values():
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.node_ns.clear()
        self._remove_cgroups(self.cgroup_root("freezer"))
        self._remove_cgroups(self.cgroup_root("cpu"))
        if self.node_mem_mb:
            self._remove_cgroups(self.cgroup_root("memory"))
        self._unmount_locals()
        if self.net:
            self.net.destroy()
        if self.port_lock is not None:
            os.close(self.port_lock)
            self.port_lock = None

    def node_manager_pids(self):
        """{pid: node} of the node managers running in this cluster's
        node namespaces (their watchdogs are named storm-nm-watch)."""
        out = {}
        for node in list(self.node_ns):
            for pid in self.ns_pids(node):
                try:
                    with open("/proc/%d/comm" % pid) as f:
                        if f.read().strip() == "storm-nm":
                            out[pid] = node
                except OSError:
                    pass
        return out

    def stop_node_managers(self, timeout=None):
        """SIGTERM every node manager once its slurmd is gone (slurmd would
        start a new one) and wait for it to exit: a clean exit thaws what
        it switched and frees what it holds, so that a sanitized storm-nm
        (scripts/run-sanitized) has its leaks checked, which a SIGKILL
        skips.  What is still running at the deadline is killed with the
        rest of its node.  Returns the nodes whose node manager is still
        running at the deadline (NM_STOP_TIMEOUT_S unless given)."""
        timeout = NM_STOP_TIMEOUT_S if timeout is None else timeout
        pids = self.node_manager_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

        def gone():
            return not any(_alive(pid) for pid in pids)
        poll(gone, timeout)
        return [pids[p] for p in pids if _alive(p)]

    def oom_kills(self, node):
        """OOM kills in the node's memory cgroup so far (node_mem_mb)."""
        try:
            with open(os.path.join(self.cgroup_root("memory"), node,
                                   "memory.oom_control")) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except OSError:
            pass
        return 0

    def thaw_all(self):
        """Thaw every frozen cgroup of this cluster's freezer subtree."""
        root = self.cgroup_root("freezer")
        for d, _, files in os.walk(root):
            if "freezer.state" in files and d != root:
                with contextlib.suppress(OSError):
                    with open(os.path.join(d, "freezer.state"), "w") as f:
                        f.write("THAWED")

    def _require_clean_cgroups(self, timeout=15):
        """A cluster's cgroup subtrees are named after its directory, so a
        cluster started again in the same directory meets whatever the last
        one left there.  Seconds after a stop, a new job's step cgroup can
        vanish as its slurmstepd fills it ("_cgroup_procs_check: failed" in
        slurmd's log) and the step never runs, most likely because the old
        cluster's step cgroups of the same job id are being cleaned up under
        the new one.  Wait for the old subtrees to empty and remove them;
        refuse, naming the tasks, if they do not."""
        roots = [self.cgroup_root(c) for c in ("freezer", "cpu", "memory")]
        left = []

        def empty():
            left[:] = []
            for root in roots:
                for d, _, files in os.walk(root):
                    if "tasks" in files:
                        with contextlib.suppress(OSError), \
                                open(os.path.join(d, "tasks")) as f:
                            left.extend((d, t) for t in f.read().split())
            if left:
                self.thaw_all()
            return not left

        if not poll(empty, timeout, 0.2):
            raise ClusterError("tasks of an earlier cluster in %s are still in its cgroups: %s"
                               % (self.dir, left[:8]))
        for root in roots:
            self._remove_cgroups(root)

    @staticmethod
    def _remove_cgroups(root, timeout=10):
        """Remove a (now empty) cgroup subtree, deepest first.  A task just
        killed stays a member until it is reaped (EBUSY): retry a while."""
        def removed():
            for d, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            return not os.path.isdir(root)

        if os.path.isdir(root):
            poll(removed, timeout)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

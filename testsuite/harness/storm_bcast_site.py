# SPDX-License-Identifier: GPL-2.0-or-later
"""What the broadcast tests share: a site's storm.conf for srun (the
cluster's plus a few lines, as a site turning broadcast on for everyone
would write it), srun run both ways (STORM with that site file, or stock
with SLURM_STORM_BCAST=no), what a node's BcastDir keeps, and a node
manager stopped in the middle of a transfer."""
import contextlib
import os
import signal
import subprocess

from storm_wait import poll


def site_conf(cluster, name, lines):
    """The cluster's storm.conf plus `lines`, as etc/<name>, for srun
    (STORM_CONF); its path."""
    conf = cluster.path("etc", "storm.conf")
    alt = cluster.path("etc", name)
    with open(conf) as f, open(alt, "w") as g:
        g.write(f.read() + lines)
    return alt


def srun(cluster, argv, storm, conf, nodes, extra=(), check=True, **envkw):
    """srun on the cluster's first `nodes` nodes, one task each: with the
    site file `conf` (storm) or stock (SLURM_STORM_BCAST=no)."""
    e = dict(cluster.env, **envkw)
    if storm:
        e["STORM_CONF"] = conf
        e.pop("SLURM_STORM_BCAST", None)
    else:
        e["SLURM_STORM_BCAST"] = "no"
    on = ",".join(cluster.node_names()[:nodes])
    return cluster.run(["srun", "-N%d" % nodes, "--ntasks-per-node=1", "-w", on] +
                       list(extra) + argv, env=e, timeout=180, check=check)


def kept(cluster, node, keep=lambda name: True):
    """What the node's job directories hold (job_<id>/<name> for each name
    `keep` accepts)."""
    d = os.path.join(cluster.node_local(node), "storm")
    if not os.path.isdir(d):
        return []
    return [os.path.join(j, f) for j in sorted(os.listdir(d)) if j.startswith("job_")
            for f in os.listdir(os.path.join(d, j)) if keep(f)]


def stop_nm_once_logged(cluster, node, pid, argv, env, text, timeout):
    """Run argv (an srun) and stop node's node manager (pid) with SIGSTOP
    as soon as its log shows `text` after the start (a transfer it holds
    half-written), then kill it once srun has ended (SIGKILL: its slurmd
    starts a new one).  (returncode, stdout, stderr) of srun."""
    log = cluster.path("log", "storm-nm-%s.log" % node)
    start = os.path.getsize(log)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        def logged():
            with open(log) as f:
                f.seek(start)
                return text in f.read()

        poll(logged, 60, 0.005)
        os.kill(pid, signal.SIGSTOP)
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
        os.kill(pid, signal.SIGKILL)
    return p.returncode, out, err


def cc(out, src_text, *args):
    """Compile src_text (C) into the program out, mode 0755."""
    src = out + ".c"
    with open(src, "w") as f:
        f.write(src_text)
    subprocess.run(["cc", "-O1", "-o", out, src] + list(args), check=True)
    os.chmod(out, 0o755)


@contextlib.contextmanager
def small_ram_disk(cluster, node, mb):
    """node's RAM disk (its BcastDir) with mb MiB free for the block, idle
    nodes first; its usual size after.  The size counts what the disk
    already holds (an earlier job's directory the epilog has not removed
    yet): a tmpfs refuses a size below its use."""
    cluster.wait_idle()
    st = os.statvfs(cluster.node_local(node))
    used_mb = -(-(st.f_blocks - st.f_bfree) * st.f_frsize // (1024 * 1024))
    cluster.resize_local(node, used_mb + mb)
    try:
        yield
    finally:
        cluster.resize_local(node, cluster.local_mb)

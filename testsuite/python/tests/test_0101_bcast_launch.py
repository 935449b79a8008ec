# SPDX-License-Identifier: GPL-2.0-or-later
"""STORM launch: srun broadcasts the executable through libstormmech to the
node managers, which write it to the node-local BcastDir; the tasks run the
node-local copy (without --bcast: bound over the original path in the
task's mount namespace, test_0105); the files go away with the job.

SLURM_STORM_BCAST=yes turns the STORM broadcast on without --bcast (the
shared cluster keeps BcastExecutable=no); =no gives stock Slurm."""
import contextlib
import hashlib
import os
import shutil
import subprocess
import time

import pytest

import storm_bcast_site
import storm_hostlock
from storm_mpi import open_mpi_env
from storm_jobs import jobs_cancelled, submitted
from storm_wait import poll

BCAST = {"SLURM_STORM_BCAST": "yes"}


def env(cluster, **kw):
    e = dict(cluster.env)
    e.update(kw)
    return e


def share_dir(cluster):
    """A directory every user can use (pytest's tmp_path is root-only)."""
    d = cluster.path("share")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o1777)
    return d


# The file a script runs from: $0, or the node-local copy bound over $0
# (the mount at $0, its root within the file system at the last mount
# point of that file system's root).
WHERE = ("f=$(awk -v p=\"$0\" '{d[NR] = $3; r[NR] = $4; m[NR] = $5} "
         "$5 == p {dev = $3; root = $4} END {if (!root) {print p; exit} "
         "for (i = 1; i <= NR; i++) if (d[i] == dev && r[i] == \"/\") top = m[i]; "
         "print top root}' /proc/self/mountinfo)\n")


def checksum_script(path, size):
    """A shell script that prints its node, the sha256 of the file it runs
    from and that file's path (the copy's, where it is bound over $0) and
    its directory's mode, padded to `size` bytes (several chunks)."""
    head = ('#!/bin/sh\n' + WHERE +
            'echo "$SLURMD_NODENAME $(sha256sum < "$0" | cut -d" " -f1) $f '
            '$(stat -c %a "$(dirname "$f")")"\n'
            'exit 0\n')
    pad = size - len(head)
    line = "#" * 1023 + "\n"
    body = head + line * (pad // 1024) + "#" * (pad % 1024)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o755)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def job_dirs(cluster, node):
    d = os.path.join(cluster.node_local(node), "storm")
    return sorted(x for x in os.listdir(d) if x.startswith("job_")) if os.path.isdir(d) else []


def wait_no_files(cluster, timeout=40):
    """Every node's BcastDir holds no job directory (epilog or sweep)."""
    left = {}

    def none_left():
        left.clear()
        left.update((n, d) for n in cluster.node_names() for d in [job_dirs(cluster, n)] if d)
        return not left

    if not poll(none_left, timeout, 0.5):
        raise AssertionError("broadcast files left behind: %s" % left)


@contextlib.contextmanager
def dest_removed(cluster, nodes, name):
    """Yields the nodes' common path <local>/dest/name; whatever each node
    holds there (a file, or a directory a test put in the way) is removed
    on exit."""
    for n in nodes:
        os.makedirs(os.path.join(cluster.node_local(n), "dest"), exist_ok=True)
    try:
        yield cluster.path("local", "dest", name)
    finally:
        for n in nodes:
            path = os.path.join(cluster.node_local(n), "dest", name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.unlink(path)


def run_bcast(cluster, nodes, script, digest, extra=(), **envkw):
    r = cluster.run(["srun", "-N", str(nodes), "--ntasks-per-node=1"] + list(extra) +
                    [script], env=env(cluster, **BCAST, **envkw), timeout=180)
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert len(rows) == nodes, r.stdout + r.stderr
    bcast_dir = cluster.path("local", "storm")
    for node, sha, path, mode in rows:
        assert sha == digest, "node %s holds a different copy" % node
        assert path.startswith(bcast_dir + "/job_"), path   # the node-local copy ran
        assert mode == "700"
    # Slurm picks which nodes (an earlier job's nodes may still be completing):
    # one copy ran on each of `nodes` different nodes of this cluster.
    ran_on = [r[0] for r in rows]
    assert len(set(ran_on)) == nodes, ran_on
    assert set(ran_on) <= set(cluster.node_names()), ran_on
    return rows


@pytest.mark.parametrize("nodes", [1, 2, 8])
def test_bcast_and_run_identical_copies(cluster, nodes):
    script = os.path.join(share_dir(cluster), "sum%d.sh" % nodes)
    digest = checksum_script(script, 3 * 1024 * 1024 + 12345)
    run_bcast(cluster, nodes, script, digest)
    wait_no_files(cluster)


def test_bcast_16_nodes(make_cluster):
    c = make_cluster("bcast16", nodes=16, storm_conf="Timeslice=1s\nFailSafe=10s\n")
    script = os.path.join(share_dir(c), "sum16.sh")
    digest = checksum_script(script, 5 * 1024 * 1024 + 7)
    r = c.run(["srun", "-N16", "--ntasks-per-node=1", script],
              env=env(c, SLURM_STORM_BCAST_TIMING="1", **BCAST), timeout=240)
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert len(rows) == 16 and {x[1] for x in rows} == {digest}, r.stdout + r.stderr
    assert "storm-bcast:" in r.stderr and "nodes=16" in r.stderr
    # the relay (node1) asked slurmctld about the job once; the other nodes
    # took its munge-signed word for it
    for n in c.node_names()[1:]:
        with open(c.path("log", "storm-nm-%s.log" % n)) as f:
            assert "sum16.sh (%d bytes) from rank 0 (job checked by the relay)" % (
                5 * 1024 * 1024 + 7) in f.read(), n
    wait_no_files(c)


def test_bcast_executable_from_storm_conf(cluster):
    """BcastExecutable=yes broadcasts without --bcast or environment."""
    conf = cluster.path("etc", "storm.conf")
    alt = cluster.path("etc", "storm-bcastexec.conf")
    with open(conf) as f, open(alt, "w") as g:
        g.write(f.read() + "BcastExecutable=yes\n")
    script = os.path.join(share_dir(cluster), "sumconf.sh")
    digest = checksum_script(script, 100000)
    r = cluster.run(["srun", "-N2", script], env=env(cluster, STORM_CONF=alt))
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert len(rows) == 2 and {x[1] for x in rows} == {digest}
    assert all(x[2].startswith(cluster.path("local", "storm")) for x in rows)


def test_srun_bcast_option_taken_over_and_opt_out(cluster):
    script = os.path.join(share_dir(cluster), "sumopt.sh")
    digest = checksum_script(script, 200000)
    # --bcast without a path: the STORM per-job directory
    r = cluster.run(["srun", "-N2", "--bcast", script])
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert {x[1] for x in rows} == {digest}
    assert all(x[2].startswith(cluster.path("local", "storm", "job_")) for x in rows)
    # --bcast=/absolute/path keeps Slurm's meaning (node-local here)
    for n in cluster.node_names()[:2]:
        os.makedirs(os.path.join(cluster.node_local(n), "dest"), exist_ok=True)
    dest = cluster.path("local", "dest", "prog.sh")
    # on the nodes that have the destination directory
    on = "-w" + ",".join(cluster.node_names()[:2])
    r = cluster.run(["srun", "-N2", on, "--bcast=" + dest, script])
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert {x[1] for x in rows} == {digest} and {x[2] for x in rows} == {dest}
    for n in cluster.node_names()[:2]:
        with open(os.path.join(cluster.node_local(n), "dest", "prog.sh"), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest
        os.unlink(os.path.join(cluster.node_local(n), "dest", "prog.sh"))
    # SLURM_STORM_BCAST=no: stock srun --bcast (Slurm's own file name)
    r = cluster.run(["srun", "-N2", on, "-v", "--bcast=" + dest, script],
                    env=env(cluster, SLURM_STORM_BCAST="no"))
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert {x[1] for x in rows} == {digest} and {x[2] for x in rows} == {dest}
    assert "STORM broadcast" not in r.stderr


def test_compress_is_named_not_dropped(cluster):
    # srun --compress asks for Slurm's compressed sbcast; the STORM broadcast
    # sends the file as it is, says so, and the copies are still identical.
    script = os.path.join(share_dir(cluster), "sumlz4.sh")
    digest = checksum_script(script, 100000)
    r = cluster.run(["srun", "-N2", "--bcast", "--compress=lz4", script])
    assert "--compress does not apply to the STORM broadcast" in r.stderr, r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert len(rows) == 2 and {x[1] for x in rows} == {digest}, r.stdout


def test_sequential_launch_when_overlap_is_off(cluster):
    # BcastOverlap=no (here through srun's environment): the file is on
    # every node before any task is launched; same copies, same place.
    script = os.path.join(share_dir(cluster), "sumseq.sh")
    digest = checksum_script(script, 300000)
    cluster.wait_idle(nodes=["node1", "node2"])
    run_bcast(cluster, 2, script, digest, extra=["-w", "node[1-2]"],
              SLURM_STORM_BCAST_OVERLAP="no")


def test_overlapped_step_never_runs_the_previous_file(cluster):
    """Two steps of one allocation broadcast different programs to the same
    --bcast path.  With the overlapped launch the second step's tasks start
    while its file travels, and the first step's file is still there under
    that name: each task must wait for its own transfer (the node manager's
    answer for its key), so each step prints its own checksum."""
    d = share_dir(cluster)
    nodes = cluster.node_names()[:2]
    first, second = os.path.join(d, "first.sh"), os.path.join(d, "second.sh")
    d1 = checksum_script(first, 64 * 1024)
    d2 = checksum_script(second, 64 * 1024 * 1024)  # still travelling at exec
    out = os.path.join(d, "twosteps.out")
    with dest_removed(cluster, nodes, "same.sh") as dest, \
            submitted(cluster, "-N2", "-w", ",".join(nodes), "-o", out, "--wrap",
                      "export SLURM_STORM_BCAST_OVERLAP=yes; "
                      "srun -N2 --bcast=%s %s && srun -N2 --bcast=%s %s" % (
                          dest, first, dest, second), idle_timeout=None) as jobid:
        info = cluster.wait_job(jobid, timeout=180)
        text = open(out).read()
        assert info["JobState"] == "COMPLETED", (info, text)
        sums = [l.split()[1] for l in text.splitlines()
                if l.strip() and not l.startswith("srun")]
        assert sums == [d1, d1, d2, d2], text


@pytest.mark.parametrize("overlap", ["yes", "no"])
def test_node_failing_after_the_others_hold_the_file_runs_nothing(cluster, overlap):
    """node3 gets the whole file but cannot put it in place (its destination
    name is a non-empty directory), after node2 has put its own copy in
    place.  No task may start anywhere: with the overlapped launch node2's
    task is already waiting for its node's copy, and it must also wait for
    the relay's go-ahead, which never comes (without the go-ahead, node2's
    task would run)."""
    d = share_dir(cluster)
    nodes = ["node1", "node2", "node3"]
    script = os.path.join(d, "late-%s.sh" % overlap)
    checksum_script(script, 256 * 1024)
    marker = os.path.join(d, "late-%s.ran" % overlap)
    with open(script, "r+") as f:       # every task that ran leaves a line
        body = f.read().replace("exit 0\n", "echo $SLURMD_NODENAME >> %s; exit 0\n" % marker, 1)
        f.seek(0)
        f.write(body)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)
    cluster.wait_idle(nodes=nodes)
    with dest_removed(cluster, nodes, "late.sh") as dest:
        blocker = os.path.join(cluster.node_local("node3"), "dest", "late.sh")
        os.makedirs(os.path.join(blocker, "keep"), exist_ok=True)
        r = cluster.run(["srun", "-N3", "-w", ",".join(nodes), "--bcast=" + dest, script],
                        check=False, timeout=120,
                        env=env(cluster, SLURM_STORM_BCAST_OVERLAP=overlap))
        time.sleep(1)      # a task that escaped would have written by now
        assert r.returncode != 0
        assert "Failed to broadcast" in r.stderr and "node3" in r.stderr, r.stderr
        assert not os.path.exists(marker), open(marker).read()
        # node2 did hold the file: the failure came after its commit
        assert os.path.isfile(os.path.join(cluster.node_local("node2"), "dest", "late.sh"))


BAD = [
    # (what, how to make it, expected words)
    ("missing", lambda d: os.path.join(d, "no-such-prog"), "No such file or directory"),
    ("directory", lambda d: d, "not a regular file"),
]


@pytest.mark.parametrize("what,make,words", BAD)
def test_bad_executable_clear_error_nothing_runs(cluster, what, make, words):
    d = share_dir(cluster)
    path = make(d)
    before = cluster.run(["squeue", "-h", "-o", "%i"]).stdout
    r = cluster.run(["srun", "-N2", path], check=False, env=env(cluster, **BCAST))
    assert r.returncode != 0
    assert "Can not execute" in r.stderr, r.stderr
    assert words in r.stderr, r.stderr
    # refused before any allocation: no job was created
    assert "srun: job" not in r.stderr and "StepId" not in r.stderr, r.stderr
    after = cluster.run(["squeue", "-h", "-o", "%i"]).stdout
    assert not set(after.split()) - set(before.split())


def test_too_large_for_bcastmaxsize(cluster):
    conf = cluster.path("etc", "storm.conf")
    small = cluster.path("etc", "storm-small.conf")
    with open(conf) as f, open(small, "w") as g:
        g.write(f.read() + "BcastMaxSize=1M\n")
    script = os.path.join(share_dir(cluster), "big.sh")
    checksum_script(script, 2 * 1024 * 1024)
    r = cluster.run(["srun", "-N2", "--bcast", script], check=False,
                    env=env(cluster, STORM_CONF=small))
    assert r.returncode != 0
    assert "Can not execute" in r.stderr and "BcastMaxSize" in r.stderr, r.stderr
    # without --bcast: not broadcast, said once; it runs from its own path
    r = cluster.run(["srun", "-N2", script], env=env(cluster, STORM_CONF=small, **BCAST))
    said = [l for l in r.stderr.splitlines() if "is not broadcast" in l]
    assert len(said) == 1 and "BcastMaxSize" in said[0], r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if l.strip()]
    assert len(rows) == 2 and {x[2] for x in rows} == {script}, r.stdout


def test_larger_than_a_nodes_ram_disk(cluster):
    # node2's RAM disk shrinks to 4 MiB: a 6 MiB program fits BcastMaxSize
    # but not there.  The error names node2, no task runs, and node1 keeps
    # no copy or temporary file.
    script = os.path.join(share_dir(cluster), "wide.sh")
    checksum_script(script, 6 * 1024 * 1024)
    marker = cluster.path("share", "wide.ran")
    if os.path.exists(marker):      # a log directory used before
        os.unlink(marker)
    with open(script, "r+") as f:       # a task that ran leaves a trace
        body = f.read().replace("exit 0\n", "touch %s; exit 0\n" % marker, 1)
        f.seek(0)
        f.write(body)
    with storm_bcast_site.small_ram_disk(cluster, "node2", 4):
        r = cluster.run(["srun", "-N2", "-w", "node[1-2]", script], check=False,
                        env=env(cluster, **BCAST), timeout=120)
    assert r.returncode != 0
    assert "node2" in r.stderr and "No space left on device" in r.stderr, r.stderr
    assert not os.path.exists(marker)
    for n in ("node1", "node2"):
        left = storm_bcast_site.kept(cluster, n)
        assert not left, "%s keeps %s" % (n, left)


def ensure_user(name):
    with storm_hostlock.exclusive("users"):
        if subprocess.run(["id", name], capture_output=True).returncode:
            subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True)
    out = subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_unreadable_executable(cluster):
    # with --bcast srun refuses it; without, it is not broadcast and runs
    # as without STORM (a script the user cannot read fails there too)
    ensure_user("stormtest")
    script = os.path.join(share_dir(cluster), "secret.sh")
    checksum_script(script, 1000)
    os.chmod(script, 0o711)     # executable, not readable, for other users
    r = cluster.run(["runuser", "-u", "stormtest", "--", "srun", "-N1", "--bcast", script],
                    check=False)
    assert r.returncode != 0
    assert "Can not execute" in r.stderr and "Permission denied" in r.stderr, r.stderr
    r = cluster.run(["runuser", "-u", "stormtest", "--", "srun", "-N1", script],
                    check=False, env=env(cluster, **BCAST))
    assert r.returncode != 0
    assert "is not broadcast: it cannot be read (Permission denied)" in r.stderr, r.stderr


def test_other_user_cannot_read_the_copies(cluster):
    uid = ensure_user("stormtest")
    d = share_dir(cluster)
    script = os.path.join(d, "mine.sh")
    digest = checksum_script(script, 300000)
    out = os.path.join(d, "mine.out")
    batch = os.path.join(d, "mine.sbatch")
    with open(batch, "w") as f:
        f.write("#!/bin/sh\nexport SLURM_STORM_BCAST=yes\nsrun -N2 %s\nsleep 60\n" % script)
    r = cluster.run(["runuser", "-u", "stormtest", "--", "sbatch", "--parsable", "-N2",
                     "-o", out, batch])
    jobid = int(r.stdout.strip().split(";")[0])
    with jobs_cancelled(cluster, jobid, timeout=120, idle_timeout=None):
        files = []

        def both_copies():
            files[:] = []
            for n in cluster.node_names():
                jd = os.path.join(cluster.node_local(n), "storm", "job_%d" % jobid)
                if os.path.isdir(jd):
                    files.extend(os.path.join(jd, x) for x in os.listdir(jd)
                                 if not x.startswith("."))
            return len(files) >= 2

        poll(both_copies, 90, 0.5)
        assert len(files) == 2, files
        for f in files:
            st = os.stat(os.path.dirname(f))
            assert st.st_uid == uid and (st.st_mode & 0o777) == 0o700
            assert os.stat(f).st_uid == uid
            r = subprocess.run(["runuser", "-u", "nobody", "--", "cat", f],
                               capture_output=True, text=True)
            assert r.returncode != 0 and "Permission denied" in r.stderr
            r = subprocess.run(["runuser", "-u", "nobody", "--", "ls",
                                os.path.dirname(f)], capture_output=True, text=True)
            assert r.returncode != 0
        # the copies are in place before the tasks have run: their
        # checksums reach the output a moment later
        def sums():
            with open(out) as f:
                return [l.split()[1] for l in f if l.strip()]
        poll(lambda: len(sums()) >= 2, 60, 0.5)
        assert set(sums()) == {digest}, sums()
    wait_no_files(cluster)


def test_sbatch_steps_use_the_broadcast(cluster):
    d = share_dir(cluster)
    script = os.path.join(d, "steps.sh")
    digest = checksum_script(script, 1024 * 1024 + 3)
    out = os.path.join(d, "steps.out")
    jobid = cluster.sbatch("-N3", "-o", out, "--wrap",
                           "srun -N3 --bcast %s && SLURM_STORM_BCAST=yes srun -N2 %s" % (
                               script, script))
    info = cluster.wait_job(jobid, timeout=180)
    assert info["JobState"] == "COMPLETED", (info, open(out).read())
    rows = [l.split() for l in open(out) if l.strip() and not l.startswith("srun")]
    assert len(rows) == 5 and {x[1] for x in rows} == {digest}, rows
    assert {x[2].split("/")[-2] for x in rows} == {"job_%d" % jobid}
    assert {os.path.basename(x[2]) for x in rows} == {"s0_steps.sh", "s1_steps.sh"}
    wait_no_files(cluster)


def nm_pid(cluster, node):
    with open(os.path.join(cluster.node_local(node), "storm", ".nm-%s.lock" % node)) as f:
        return int(f.read().strip())


def revive_node(cluster, victim, old_pid):
    """After its NM was killed: the node gets a new NM from its slurmd
    (SPANK), which cleans up; the machine manager drained the node
    meanwhile (its NM fell silent) and returns it to service once the new
    one has answered for ReturnAfter, with nobody resuming it."""
    def idle_resuming():
        st = cluster.run(["sinfo", "-h", "-n", victim, "-o", "%T"], check=False).stdout
        return "idle" in st and "drain" not in st

    def new_nm():
        with contextlib.suppress(OSError, ValueError):
            return nm_pid(cluster, victim) != old_pid
        return False

    poll(idle_resuming, 60, 0.5)
    cluster.wait_idle()
    poll(new_nm, 30, 0.2)


def test_nm_killed_mid_transfer_fails_cleanly(cluster):
    """Stop one NM once it accepted the transfer (so it never completes),
    then kill it: srun fails naming that node, no task runs anywhere, and
    no file stays on any node (the others drop their temporaries on ABORT,
    the victim's successor removes its leftovers at start-up)."""
    d = share_dir(cluster)
    big = os.path.join(d, "big64.sh")
    checksum_script(big, 64 * 1024 * 1024)
    marker = cluster.path("local", "ran")
    with open(big, "r+") as f:           # the task would leave a marker
        f.seek(0)
        f.write("#!/bin/sh\ntouch %s\nexit 0\n#" % marker)
    victim = "node4"
    pid = nm_pid(cluster, victim)
    rc, out, err = storm_bcast_site.stop_nm_once_logged(
        cluster, victim, pid, ["srun", "-N4", big], env(cluster, **BCAST),
        "receiving s0_big64.sh", 120)
    assert rc != 0
    assert "Failed to broadcast" in err and victim in err, err
    assert "Step launch aborted" in err
    for n in cluster.node_names():
        assert not os.path.exists(os.path.join(cluster.node_local(n), "ran"))
    cluster.restart_slurmd(victim, wait=False)
    revive_node(cluster, victim, pid)
    wait_no_files(cluster)
    for n in cluster.node_names():
        sd = os.path.join(cluster.node_local(n), "storm")
        for root, _, files in os.walk(sd):
            assert not [f for f in files if f.startswith(".storm-")], (root, files)
    # and the next broadcast works again on all nodes
    script = os.path.join(d, "after.sh")
    digest = checksum_script(script, 4096)
    run_bcast(cluster, 4, script, digest)


MPI_SRC = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d exe %s\n", rank, size,
           getenv("SLURMD_NODENAME"), sum, argv[0]);
    MPI_Finalize();
    return 0;
}
"""


def test_mpi_pmix_under_storm_launch(cluster):
    d = share_dir(cluster)
    src = os.path.join(d, "mpi_allreduce.c")
    exe = os.path.join(d, "mpi_allreduce")
    with open(src, "w") as f:
        f.write(MPI_SRC)
    subprocess.run(["mpicc", "-O1", "-o", exe, src], check=True)
    e = env(cluster, **open_mpi_env("lo"), **BCAST)
    # a rank that dies ends the step at once, rather than the others
    # waiting out the timeout
    r = cluster.run(["srun", "--mpi=pmix", "-N4", "--ntasks-per-node=1",
                     "--kill-on-bad-exit=1", exe], env=e, timeout=240, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if l.startswith("rank ")]
    assert len(rows) == 4, r.stdout + r.stderr
    assert len({x[5] for x in rows}) == 4
    assert {x[7] for x in rows} == {"6"}                      # 0+1+2+3
    # the copy is bound over the original: argv[0] as without STORM
    assert {x[9] for x in rows} == {exe}, r.stdout

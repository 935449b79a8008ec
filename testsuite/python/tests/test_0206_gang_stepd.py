# SPDX-License-Identifier: GPL-2.0-or-later
"""Gang scheduling freezes a job's tasks, not its slurmstepds nor its
batch script.

Slurm (proctrack/cgroup, cgroup v1) keeps each slurmstepd in the job's
freezer cgroup and the tasks in the step's.  The node manager freezes the
step cgroups, not the job's, so the stepds keep running; otherwise
everything that talks to a stepd (sstat, a new step's launch, signals)
would wait for the job's slot, and with long quanta sstat failed with
"Socket timed out".  The batch step is not frozen but made idle-class
(freezing its sleeping shell and srun woke them at every switch).  A step
started while its job is frozen is frozen too, at the node manager's next
look (100 ms).

Long quanta (20 s) make "the job stayed frozen the whole time" checkable
from the node manager's epoch: no timing is asserted.
"""
import contextlib
import os
import re
import subprocess

import pytest

import storm_gang as g

NODES = ["node1", "node2"]


@pytest.fixture(scope="module")
def gang_long(make_gang_cluster):
    return make_gang_cluster("gangstepd", 2, "Timeslice=20s\nMaxMPL=2\nFailSafe=60s\n")


def _stepds(c, jobid):
    """{pid: "J.S"} of the slurmstepds of a job of cluster c (their command
    lines; job ids repeat across clusters, and another suite's run beside
    this one)."""
    out = {}
    for d in (p for n in c.node_names() for p in c.ns_pids(n)):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        m = re.match(r"slurmstepd: \[(%d\.\w+)\]" % jobid, cmd)
        if m:
            out[int(d)] = m.group(1)
    return out


def _freezer_cgroup(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrl, path = line.rstrip("\n").split(":", 2)
            if "freezer" in ctrl.split(","):
                return path
    return None


def _state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _frozen_job(c, a, b):
    """The job of the pair that node1's manager holds frozen, once it does."""
    def find():
        for j in (a, b):
            if g.nm_gang(c, "node1").get("job%d" % j) == "frozen":
                return j
        return None
    return g.wait_for(find, 60, "one job of the pair frozen on node1")


def _wait_frozen(c, jobid, node):
    """The job's freezer reaches FROZEN: right after the write it reads
    FREEZING until every task has entered the refrigerator, which a task
    waiting for a busy CPU does only once it is scheduled.  If it stays
    FREEZING, the failure lists every task under the job and its state."""
    try:
        g.wait_for(lambda: g.job_freezer_state(c, jobid, node) == "FROZEN",
                   10, "job %d's freezer FROZEN on %s" % (jobid, node))
    except AssertionError as e:
        top = os.path.join(c.cgroup_root("freezer"), "slurm_%s" % node,
                           "uid_0", "job_%d" % jobid)
        tasks = []
        for d, _, _ in os.walk(top):
            for t in open(os.path.join(d, "tasks")).read().split():
                try:
                    comm = open("/proc/%s/comm" % t).read().strip()
                    wchan = open("/proc/%s/wchan" % t).read()
                    tasks.append((d[len(top):], t, comm, _state(int(t)), wchan))
                except OSError:
                    pass
        raise AssertionError("%s; tasks: %r" % (e, tasks)) from None


def _cgroup_state(pid):
    """freezer.state of the freezer cgroup pid is in."""
    with open("/sys/fs/cgroup/freezer%s/freezer.state" % _freezer_cgroup(pid)) as f:
        return f.read().strip()


def _batch_script(c, jobid, node):
    """The pid of a job's batch script (the shell in its batch step)."""
    procs = os.path.join(c.cgroup_root("freezer"), "slurm_%s" % node, "uid_0",
                         "job_%d" % jobid, "step_batch", "cgroup.procs")
    for p in open(procs).read().split():
        if open("/proc/%s/comm" % p).read().strip() == "slurm_script":
            return int(p)
    raise AssertionError("no slurm_script in %s" % procs)


def _cpu_idle(pid):
    """cpu.idle of the cpu cgroup pid is in (cgroup v1)."""
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrl, path = line.rstrip("\n").split(":", 2)
            if "cpu" in ctrl.split(","):
                with open("/sys/fs/cgroup/%s%s/cpu.idle" % (ctrl, path)) as i:
                    return i.read().strip()
    return None


def _is_main_stepd(pid, jobid):
    """A step's own slurmstepd, not the fork that becomes its task: the
    latter sits in the step's cgroup and is frozen with the tasks."""
    cg = _freezer_cgroup(pid) or ""
    return not re.search(r"/job_%d/step_" % jobid, cg)


@contextlib.contextmanager
def _killed_on_exit():
    """A list for the Popen objects of the block; each is killed on exit."""
    procs = []
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_stepds_of_a_frozen_job_answer(gang_long):
    c = gang_long
    with g.running_pair(c, NODES, ("sda", "sdb"), timeout=120) as (a, b, _, _), \
            _killed_on_exit() as steps:
        fz = _frozen_job(c, a, b)
        epoch = g.nm_gang(c, "node1")["epoch"]
        _wait_frozen(c, fz, "node1")

        # the job's tasks are frozen, its stepds are not
        stepds = {p: s for p, s in _stepds(c, fz).items()
                  if _is_main_stepd(p, fz)}
        assert {"%d.batch" % fz, "%d.0" % fz} <= set(stepds.values()), stepds
        for p, s in stepds.items():
            assert _state(p) != "D" or "refrigerator" not in open(
                "/proc/%d/wchan" % p).read(), (p, s)
            assert _cgroup_state(p) == "THAWED", (p, s)

        # nor is its batch script: that is idle-class, in the node
        # manager's cpu cgroup of the job
        script = _batch_script(c, fz, "node1")
        assert _cgroup_state(script) == "THAWED", script
        assert _cpu_idle(script) == "1", script

        # sstat reaches the frozen job's step through its stepd
        r = c.run(["sstat", "-n", "-P", "-j", "%d.batch" % fz, "-o", "JobID"],
                  check=False, timeout=60)
        assert r.returncode == 0 and "%d.batch" % fz in r.stdout, (
            r.stdout, r.stderr)

        # a step started in the frozen job gets a stepd that answers
        # sstat; its task is frozen with the job's other steps
        steps.append(subprocess.Popen(
            ["srun", "--jobid=%d" % fz, "--overlap", "-w", "node1", "-N1",
             "-n1", "sleep", "300"], env=c.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        g.wait_for(lambda: any(s == "%d.1" % fz and _is_main_stepd(p, fz)
                               for p, s in _stepds(c, fz).items()),
                   30, "step %d.1's slurmstepd" % fz)
        step1 = os.path.join(c.cgroup_root("freezer"), "slurm_node1", "uid_0",
                             "job_%d" % fz, "step_1", "freezer.state")
        g.wait_for(lambda: os.path.exists(step1) and
                   open(step1).read().strip() == "FROZEN",
                   30, "step %d.1 frozen with its job" % fz)
        r = c.run(["sstat", "-n", "-P", "-j", "%d.1" % fz, "-o", "JobID"],
                  check=False, timeout=60)
        assert r.returncode == 0 and "%d.1" % fz in r.stdout, (
            r.stdout, r.stderr)

        # all of it while the job stayed frozen: no strobe in between
        assert g.nm_gang(c, "node1")["epoch"] == epoch, \
            "the slot changed during the test; nothing was shown"
        _wait_frozen(c, fz, "node1")
    # Slurm still removes the jobs' cgroups at the end
    for n in NODES:
        for j in (a, b):
            g.wait_for(lambda: g.job_freezer_state(c, j, n) is None, 30,
                       "job %d's freezer cgroup on %s removed" % (j, n))

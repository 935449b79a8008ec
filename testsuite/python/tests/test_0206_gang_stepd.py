"""Gang scheduling freezes a job's tasks, not its slurmstepds.

Slurm (proctrack/cgroup, cgroup v1) keeps each slurmstepd in the job's
freezer cgroup and the tasks in the step's.  The node manager freezes the
job level, so it moves the stepds out first; otherwise everything that
talks to a stepd (sstat, a new step's launch, signals) waits for the job's
slot, and with long quanta sstat fails with "Socket timed out".

Long quanta (20 s) make "the job stayed frozen the whole time" checkable
from the node manager's epoch: no timing is asserted.
"""
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "harness"))
import storm_gang as g  # noqa: E402

LOGROOT = os.environ.get("STORM_TEST_LOGDIR",
                         os.path.join(os.path.dirname(__file__), "..", "logs"))
NODES = ["node1", "node2"]


@pytest.fixture(scope="module")
def gang_long():
    with g.gang_cluster(os.path.join(LOGROOT, "gangstepd"), 2,
                        "Timeslice=20s\nMaxMPL=2\nFailSafe=60s\n") as c:
        yield c


def _stepds(jobid):
    """{pid: "J.S"} of the slurmstepds of a job (their command lines)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
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


def _is_main_stepd(pid, jobid):
    """A step's own slurmstepd, not the fork that becomes its task: the
    latter sits in the step's cgroup and is frozen with the tasks."""
    cg = _freezer_cgroup(pid) or ""
    return not re.search(r"/job_%d/step_" % jobid, cg)


def test_stepds_of_a_frozen_job_answer(gang_long):
    c = gang_long
    a, b, _, _ = g.submit_pair(c, NODES, ("sda", "sdb"))
    step = None
    try:
        fz = _frozen_job(c, a, b)
        epoch = g.nm_gang(c, "node1")["epoch"]
        _wait_frozen(c, fz, "node1")

        # the job's tasks are frozen, its stepds are not, and no stepd is
        # left in the job's freezer cgroup itself
        stepds = {p: s for p, s in _stepds(fz).items()
                  if _is_main_stepd(p, fz)}
        assert {"%d.batch" % fz, "%d.0" % fz} <= set(stepds.values()), stepds
        for p, s in stepds.items():
            assert _state(p) != "D" or "refrigerator" not in open(
                "/proc/%d/wchan" % p).read(), (p, s)
            assert not _freezer_cgroup(p).endswith("/job_%d" % fz), (p, s)

        # sstat reaches the frozen job's step through its stepd
        r = c.run(["sstat", "-n", "-P", "-j", "%d.batch" % fz, "-o", "JobID"],
                  check=False, timeout=60)
        assert r.returncode == 0 and "%d.batch" % fz in r.stdout, (
            r.stdout, r.stderr)

        # a step started in the frozen job gets a stepd that answers
        # sstat; its task waits for the job's slot
        step = subprocess.Popen(
            ["srun", "--jobid=%d" % fz, "--overlap", "-w", "node1", "-N1",
             "-n1", "sleep", "300"], env=c.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        g.wait_for(lambda: any(s == "%d.1" % fz and _is_main_stepd(p, fz)
                               and not _freezer_cgroup(p).endswith(
                                   "/job_%d" % fz)
                               for p, s in _stepds(fz).items()),
                   30, "step %d.1's slurmstepd out of the job's cgroup" % fz)
        r = c.run(["sstat", "-n", "-P", "-j", "%d.1" % fz, "-o", "JobID"],
                  check=False, timeout=60)
        assert r.returncode == 0 and "%d.1" % fz in r.stdout, (
            r.stdout, r.stderr)

        # all of it while the job stayed frozen: no strobe in between
        assert g.nm_gang(c, "node1")["epoch"] == epoch, \
            "the slot changed during the test; nothing was shown"
        _wait_frozen(c, fz, "node1")
    finally:
        if step:
            step.kill()
            step.wait()
        c.run(["scancel", str(a), str(b)], check=False)
        for j in (a, b):
            c.wait_job(j, timeout=120)
        c.wait_idle()
    # Slurm still removes the jobs' cgroups at the end
    for n in NODES:
        for j in (a, b):
            g.wait_for(lambda: g.job_freezer_state(c, j, n) is None, 30,
                       "job %d's freezer cgroup on %s removed" % (j, n))

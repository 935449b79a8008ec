# SPDX-License-Identifier: GPL-2.0-or-later
"""A site-wide broadcast (BcastExecutable=yes) never changes what a program
does: each task sees the node-local copy at the executable's original path
(a bind mount in the task's own mount namespace), so programs that look
beside themselves behave exactly as with stock srun (SLURM_STORM_BCAST=no).

Every shape runs on 4 nodes both ways and the outputs must be equal; on
stderr each program says which file it runs from (the mount's source, read
from /proc/self/mountinfo), which must be the node-local copy under STORM
and the original without it."""
import os
import shutil
import subprocess
import time

import pytest

import storm_bcast_site
from storm_wait import poll

NODES = 4
SYSTEM_PYTHON = "/usr/bin/python3"

# What the C programs share: the mount (if any) at the file they run from,
# on stderr, as "exe-source ROOT" (a bind mount's root is the copy's path
# within its file system, "-" for a plain file).
WHERE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
static void where(void)
{
    char exe[4096], line[8192], root[4096], mnt[4096], src[4096] = "-";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (n < 0 || !f) { fprintf(stderr, "exe-source ?\n"); return; }
    exe[n] = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
            !strcmp(mnt, exe))
            strcpy(src, root);
    fclose(f);
    fprintf(stderr, "exe-source %s\n", src);
}
"""

LIB_C = r"""
const char *hello(void) { return "hello from libhello"; }
"""

RPATH_C = WHERE_C + r"""
const char *hello(void);
int main(int argc, char **argv)
{
    where();
    printf("%s argv0=%s\n", hello(), argv[0]);
    return 0;
}
"""

SELFEXE_C = WHERE_C + r"""
int main(int argc, char **argv)
{
    char exe[4096], path[8192], buf[256] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    FILE *f;
    where();
    if (n < 0) return 3;
    exe[n] = 0;
    snprintf(path, sizeof(path), "%s/resource.txt", dirname(exe));
    if (!(f = fopen(path, "r"))) { printf("missing %s\n", path); return 1; }
    if (!fgets(buf, sizeof(buf), f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    printf("resource %s: %s argv0=%s\n", path, buf, argv[0]);
    return 0;
}
"""

MULTICALL_C = WHERE_C + r"""
int main(int argc, char **argv)
{
    char *name = basename(argv[0]);
    where();
    if (!strcmp(name, "greet")) { printf("greet: hello argv0=%s\n", argv[0]); return 0; }
    if (!strcmp(name, "shout")) { printf("shout: HELLO argv0=%s\n", argv[0]); return 0; }
    printf("unknown applet '%s'\n", name);
    return 1;
}
"""

PLAIN_C = WHERE_C + r"""
int main(int argc, char **argv)
{
    where();
    printf("plain argv0=%s euid=%d\n", argv[0], (int) geteuid());
    return 0;
}
"""

# A shell script: $0, the file beside it, and where it runs from.
SCRIPT = r"""#!/bin/sh
src=$(awk -v p="$0" '$5 == p {r = $4} END {print r ? r : "-"}' /proc/self/mountinfo)
echo "script-source $src" >&2
echo "script $0 reads: $(cat "$(dirname "$0")/data.txt")"
"""

# Python: the interpreter's prefix (a venv's, found through pyvenv.cfg
# beside the interpreter), and the mount at the interpreter's real file.
PY_WHERE = (
    "import os, sys\n"
    "exe = os.path.realpath('/proc/self/exe')\n"
    "src = [l.split()[3] for l in open('/proc/self/mountinfo') if l.split()[4] == exe]\n"
    "print('exe-source', src[-1] if src else '-', file=sys.stderr)\n"
    "print('prefix', sys.prefix, 'executable', sys.executable)\n")


cc = storm_bcast_site.cc


@pytest.fixture(scope="module")
def progs(cluster):
    """The test programs, built into the cluster's directory (which every
    node sees at the same path, as a shared file system)."""
    d = cluster.path("share", "keeps")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(cluster.path("share"), 0o1777)
    # RPATH $ORIGIN/../lib
    os.makedirs(os.path.join(d, "rpath", "bin"))
    os.makedirs(os.path.join(d, "rpath", "lib"))
    cc(os.path.join(d, "rpath", "lib", "libhello.so"), LIB_C, "-shared", "-fPIC")
    cc(os.path.join(d, "rpath", "bin", "hello"), RPATH_C,
       "-L" + os.path.join(d, "rpath", "lib"), "-lhello", "-Wl,-rpath,$ORIGIN/../lib")
    # a resource beside /proc/self/exe
    os.makedirs(os.path.join(d, "selfexe"))
    cc(os.path.join(d, "selfexe", "prog"), SELFEXE_C)
    with open(os.path.join(d, "selfexe", "resource.txt"), "w") as f:
        f.write("the resource beside the program\n")
    # a multi-call program reached through symlinks
    os.makedirs(os.path.join(d, "mc"))
    cc(os.path.join(d, "mc", "multicall"), MULTICALL_C)
    os.symlink("multicall", os.path.join(d, "mc", "greet"))
    os.symlink(os.path.join(d, "mc", "multicall"), os.path.join(d, "mc", "shout"))
    # a script reading a file beside itself
    os.makedirs(os.path.join(d, "script"))
    with open(os.path.join(d, "script", "run.sh"), "w") as f:
        f.write(SCRIPT)
    os.chmod(os.path.join(d, "script", "run.sh"), 0o755)
    with open(os.path.join(d, "script", "data.txt"), "w") as f:
        f.write("data beside the script")
    # a Python venv, and a script whose interpreter is that venv's python
    venv = os.path.join(d, "venv")
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", venv], check=True)
    with open(os.path.join(d, "venvscript.py"), "w") as f:
        f.write("#!%s/bin/python\n" % venv + PY_WHERE)
    os.chmod(os.path.join(d, "venvscript.py"), 0o755)
    # a set-user-ID program (a copy owned by the user cannot keep that)
    cc(os.path.join(d, "setuid"), PLAIN_C)
    os.chmod(os.path.join(d, "setuid"), 0o4755)
    return d


@pytest.fixture(scope="module", params=["plain", "cached"])
def site_conf(cluster, request):
    """The cluster's storm.conf with BcastExecutable=yes, for srun; cached:
    with BcastCacheSize too, so the executable travels in the bundle that
    the nodes' caches are asked for first (their node managers have none
    here, so it is sent whole: what is checked is where it is put)."""
    extra = "BcastCacheSize=64M\n" if request.param == "cached" else ""
    return storm_bcast_site.site_conf(cluster, "storm-keeps-%s.conf" % request.param,
                                      "BcastExecutable=yes\n" + extra)


def srun(cluster, argv, storm, site_conf, extra=(), check=True, **envkw):
    return storm_bcast_site.srun(cluster, argv, storm, site_conf, NODES, extra, check,
                                 **envkw)


def sources(stderr, tag):
    return [l.split(None, 1)[1] for l in stderr.splitlines() if l.startswith(tag + " ")]


def same_as_stock(cluster, site_conf, argv, tag="exe-source", extra=(), **envkw):
    """Run argv both ways; the outputs are equal, and only the STORM run
    executed node-local copies (presented at the original path)."""
    stock = srun(cluster, argv, False, site_conf, extra, **envkw)
    storm = srun(cluster, argv, True, site_conf, extra, **envkw)
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines()), (
        "STORM:\n%s%s\nstock:\n%s%s" % (storm.stdout, storm.stderr, stock.stdout, stock.stderr))
    assert len(storm.stdout.splitlines()) == NODES, storm.stdout + storm.stderr
    assert sources(stock.stderr, tag) == ["-"] * NODES, stock.stderr
    copies = sources(storm.stderr, tag)
    assert len(copies) == NODES and all("/storm/job_" in s for s in copies), storm.stderr
    if "cached" in site_conf and tag == "exe-source":     # in the bundle
        assert all("_tree/" in s for s in copies), (copies, storm.stderr)
    assert "not broadcast" not in storm.stderr, storm.stderr
    return storm


def test_rpath_origin(cluster, progs, site_conf):
    r = same_as_stock(cluster, site_conf, [os.path.join(progs, "rpath", "bin", "hello")])
    assert "hello from libhello" in r.stdout


def test_venv_python(cluster, progs, site_conf):
    venv = os.path.join(progs, "venv")
    r = same_as_stock(cluster, site_conf, [os.path.join(venv, "bin", "python"), "-c", PY_WHERE])
    assert ("prefix %s " % venv) in r.stdout, r.stdout


def test_script_whose_interpreter_is_a_venv_python(cluster, progs, site_conf):
    # the script is broadcast; its interpreter, the venv's, stays as it is
    script = os.path.join(progs, "venvscript.py")
    stock = srun(cluster, [script], False, site_conf)
    storm = srun(cluster, [script], True, site_conf, extra=["-v"])
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines())
    assert ("prefix %s " % os.path.join(progs, "venv")) in storm.stdout, storm.stdout
    assert "broadcast %s" % script in storm.stderr, storm.stderr


def test_script_reads_beside_itself(cluster, progs, site_conf):
    r = same_as_stock(cluster, site_conf, [os.path.join(progs, "script", "run.sh")],
                      tag="script-source")
    assert "data beside the script" in r.stdout


def test_resource_beside_proc_self_exe(cluster, progs, site_conf):
    r = same_as_stock(cluster, site_conf, [os.path.join(progs, "selfexe", "prog")])
    assert "the resource beside the program" in r.stdout


def test_multicall_through_symlinks(cluster, progs, site_conf):
    mc = os.path.join(progs, "mc")
    r = same_as_stock(cluster, site_conf, [os.path.join(mc, "greet")])
    assert "greet: hello" in r.stdout and "unknown applet" not in r.stdout
    # an absolute symlink, reached relative to --chdir
    r = same_as_stock(cluster, site_conf, ["./shout"], extra=["--chdir", mc])
    assert "shout: HELLO argv0=%s/./shout" % mc in r.stdout, r.stdout
    # found through PATH
    r = same_as_stock(cluster, site_conf, ["greet"],
                      PATH=mc + ":" + cluster.env.get("PATH", os.environ["PATH"]))
    assert "greet: hello argv0=%s/greet" % mc in r.stdout, r.stdout


def test_set_user_id_program_steps_aside_once(cluster, progs, site_conf):
    """A copy owned by the user cannot be set-user-ID: srun says once, on
    stderr, why it does not broadcast, and the tasks run the original."""
    prog = os.path.join(progs, "setuid")
    stock = srun(cluster, [prog], False, site_conf)
    storm = srun(cluster, [prog], True, site_conf)
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines())
    said = [l for l in storm.stderr.splitlines() if "is not broadcast" in l]
    assert len(said) == 1, storm.stderr
    assert prog in said[0] and "set-user-ID" in said[0] and "own path" in said[0]
    assert sources(storm.stderr, "exe-source") == ["-"] * NODES, storm.stderr
    assert "is not broadcast" not in stock.stderr


def mounted_at(pid, path):
    with open("/proc/%d/mountinfo" % pid) as f:
        return [l for l in f if l.split()[4] == path]


def test_bind_mount_stays_in_the_task(cluster, progs, site_conf):
    """The copy is mounted in the task's namespace only: not in its node's
    (slurmd's) nor the host's, and it goes with the task."""
    d = os.path.join(progs, "ns")
    os.makedirs(d, exist_ok=True)
    script = os.path.join(d, "hold.sh")
    flag = os.path.join(d, "holding")
    release = os.path.join(d, "release")
    for p in (flag, release):
        if os.path.exists(p):
            os.unlink(p)
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                "grep -c ' %s ' /proc/self/mountinfo > %s\n"
                "while [ ! -e %s ]; do sleep 0.2; done\n" % (script, flag, release))
    os.chmod(script, 0o755)
    e = dict(cluster.env, STORM_CONF=site_conf)
    node = cluster.node_names()[0]
    p = subprocess.Popen(cluster.wrap(["srun", "-N1", "-w", node, script]), env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert poll(lambda: os.path.exists(flag) and open(flag).read().strip(), 120, 0.2), \
            "the task did not start"
        assert open(flag).read().strip() == "1"      # the task sees its copy
        assert not mounted_at(os.getpid(), script)   # the host does not
        slurmd = cluster.pid("slurmd-" + node)
        assert slurmd and not mounted_at(slurmd, script)
    finally:
        with open(release, "w"):
            pass
        out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err

    def nowhere():
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if mounted_at(int(pid), script):
                        return False
                except (OSError, IndexError):
                    pass
        return True

    assert poll(nowhere, 30, 0.5), "a namespace with the copy outlived the task"


def test_original_only_where_srun_runs(cluster, progs, site_conf):
    """A program that exists only where srun runs (here: <dir>/local, each
    node's own RAM disk) cannot be laid over its path on the nodes; they
    run the copy from its node-local path, as before (stock srun, without
    a broadcast, cannot run it there at all)."""
    d = cluster.path("local", "only-here")
    os.makedirs(d, exist_ok=True)
    prog = os.path.join(d, "plain")
    cc(prog, PLAIN_C)
    stock = srun(cluster, [prog], False, site_conf, check=False)
    assert stock.returncode != 0
    storm = srun(cluster, [prog], True, site_conf)
    rows = storm.stdout.splitlines()
    assert len(rows) == NODES, storm.stdout + storm.stderr
    assert all(r.startswith("plain argv0=%s/job_" % cluster.path("local", "storm"))
               for r in rows), rows
    shutil.rmtree(d, ignore_errors=True)

# SPDX-License-Identifier: GPL-2.0-or-later
"""What travels with a broadcast executable: its shared libraries and the
files a user names, in one bundle each node extracts all or nothing.

- BcastExecutable=yes with BcastLibraries=yes: the libraries (found by the
  loader itself: RPATH $ORIGIN, indirect ones) are presented at their own
  paths in each task's mount namespace; the program prints what it prints
  with stock srun, and each library is read from the node-local copy.
- srun --bcast=DEST --send-libs: as Slurm, the libraries by name in
  DEST_libs/, first in the tasks' LD_LIBRARY_PATH.
- SLURM_STORM_FILES: named files and directories at their own paths, and
  under SLURM_STORM_FILES_DIR.
- A named file that cannot be sent stops srun before any task runs; a
  node without room names itself, no task runs, nothing is left."""
import os
import shutil

import pytest

import storm_bcast_site

NODES = 4

# The program: its library's greeting, and for each library it loaded
# from the test's directory, the mount at that file (a bind mount's root
# is the copy's path in its own file system; "-" for none).
LIB_SOURCES_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void source_of(const char *tag, void *sym)
{
    Dl_info i;
    char real[PATH_MAX], line[8192], root[4096], mnt[4096], src[4096] = "-";
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f || !dladdr(sym, &i) || !realpath(i.dli_fname, real)) {
        fprintf(stderr, "%s ?\n", tag);
        return;
    }
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
            !strcmp(mnt, real))
            strcpy(src, root);
    fclose(f);
    fprintf(stderr, "%s %s %s\n", tag, src, real);
}
const char *hello(void);
const char *dep(void);
int main(void)
{
    const char *llp = getenv("LD_LIBRARY_PATH");
    char first[4096] = "-";
    if (llp)
        snprintf(first, sizeof(first), "%.*s", (int) strcspn(llp, ":"), llp);
    source_of("hello-source", (void *) hello);
    source_of("dep-source", (void *) dep);
    printf("%s / %s\n", hello(), dep());
    fprintf(stderr, "ld-first %s\n", first);
    return 0;
}
"""

HELLO_C = r"""
const char *dep(void);
const char *hello(void) { return "hello from libhello"; }
"""

DEP_C = r"""
const char *dep(void) { return "and libdep"; }
"""

# Reads the named files at their own paths (stdout), and says where they
# come from and whether SLURM_STORM_FILES_DIR holds them (stderr).
READER = r"""#!/bin/sh
d=%(dir)s
echo "input: $(cat $d/input.txt) a: $(cat $d/data/a.txt) b: $(cat $d/data/sub/b.txt) link: $(cat $d/data/link)"
for p in $d/input.txt $d/data; do
    src=$(awk -v p="$p" '$5 == p {r = $4} END {print r ? r : "-"}' /proc/self/mountinfo)
    echo "file-source $src" >&2
done
if [ -n "$SLURM_STORM_FILES_DIR" ] && cmp -s "$SLURM_STORM_FILES_DIR$d/data/sub/b.txt" $d/data/sub/b.txt; then
    echo "files-dir yes" >&2
else
    echo "files-dir no" >&2
fi
"""


cc = storm_bcast_site.cc


@pytest.fixture(scope="module")
def progs(cluster):
    """Programs and files in the cluster's directory, which every node
    sees at the same path (a shared file system)."""
    d = cluster.path("share", "wholejob")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(cluster.path("share"), 0o1777)
    for sub in ("rpath/bin", "rpath/lib", "ldpath/bin", "ldpath/lib"):
        os.makedirs(os.path.join(d, sub))
    for kind in ("rpath", "ldpath"):
        lib = os.path.join(d, kind, "lib")
        cc(os.path.join(lib, "libdep.so"), DEP_C, "-shared", "-fPIC")
        # a versioned library reached through its soname's symlink
        cc(os.path.join(lib, "libhello.so.1.0"), HELLO_C, "-shared", "-fPIC",
           "-Wl,-soname,libhello.so.1", "-L" + lib, "-ldep",
           "-Wl,-rpath,$ORIGIN")
        os.symlink("libhello.so.1.0", os.path.join(lib, "libhello.so.1"))
        os.symlink("libhello.so.1", os.path.join(lib, "libhello.so"))
    cc(os.path.join(d, "rpath", "bin", "hello"), LIB_SOURCES_C,
       "-L" + os.path.join(d, "rpath", "lib"), "-lhello", "-ldep", "-ldl",
       "-Wl,-rpath,$ORIGIN/../lib")
    cc(os.path.join(d, "ldpath", "bin", "hello"), LIB_SOURCES_C,
       "-L" + os.path.join(d, "ldpath", "lib"), "-lhello", "-ldep", "-ldl")
    # named files: a file, a directory with a subdirectory and a symlink
    os.makedirs(os.path.join(d, "data", "sub"))
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write("the input")
    with open(os.path.join(d, "data", "a.txt"), "w") as f:
        f.write("file a")
    with open(os.path.join(d, "data", "sub", "b.txt"), "w") as f:
        f.write("file b")
    os.symlink("sub/b.txt", os.path.join(d, "data", "link"))
    with open(os.path.join(d, "reader.sh"), "w") as f:
        f.write(READER % {"dir": d})
    os.chmod(os.path.join(d, "reader.sh"), 0o755)
    return d


@pytest.fixture(scope="module")
def site_conf(cluster):
    """storm.conf for srun with BcastExecutable=yes and BcastLibraries=yes."""
    return storm_bcast_site.site_conf(cluster, "storm-wholejob.conf",
                                      "BcastExecutable=yes\nBcastLibraries=yes\n")


def srun(cluster, argv, storm, site_conf, extra=(), check=True, nodes=NODES, **envkw):
    return storm_bcast_site.srun(cluster, argv, storm, site_conf, nodes, extra, check,
                                 **envkw)


def tagged(stderr, tag):
    return [l.split()[1:] for l in stderr.splitlines() if l.startswith(tag + " ")]


def test_libraries_at_their_own_paths(cluster, progs, site_conf):
    """RPATH $ORIGIN/../lib, a soname symlink and an indirect dependency:
    the same output as stock srun, every library read from the node."""
    prog = os.path.join(progs, "rpath", "bin", "hello")
    stock = srun(cluster, [prog], False, site_conf)
    storm = srun(cluster, [prog], True, site_conf, extra=["-v"])
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines())
    assert storm.stdout.splitlines() == ["hello from libhello / and libdep"] * NODES
    lib = os.path.join(progs, "rpath", "lib")
    # (the real file, the path the loader named, which the copy takes)
    for tag, real, named in (("hello-source", "libhello.so.1.0", "libhello.so.1"),
                             ("dep-source", "libdep.so", "libdep.so")):
        path = os.path.join(lib, real)
        assert tagged(stock.stderr, tag) == [["-", path]] * NODES, stock.stderr
        got = tagged(storm.stderr, tag)
        assert len(got) == NODES, storm.stderr
        for src, where in got:
            assert where == path
            assert "/storm/job_" in src and src.endswith(os.path.join(lib, named)), \
                storm.stderr
    assert "is not broadcast" not in storm.stderr, storm.stderr


def test_libraries_off_by_the_user(cluster, progs, site_conf):
    prog = os.path.join(progs, "rpath", "bin", "hello")
    storm = srun(cluster, [prog], True, site_conf, SLURM_STORM_BCAST_LIBS="no")
    assert storm.stdout.splitlines() == ["hello from libhello / and libdep"] * NODES
    assert [s for s, _ in tagged(storm.stderr, "hello-source")] == ["-"] * NODES


def test_send_libs_as_slurm_does(cluster, progs, site_conf):
    """srun --bcast=DEST --send-libs: the libraries by name in DEST_libs,
    which leads LD_LIBRARY_PATH, for STORM as for Slurm's own sbcast."""
    prog = os.path.join(progs, "ldpath", "bin", "hello")
    nodes = cluster.node_names()[:2]
    for n in nodes:
        os.makedirs(os.path.join(cluster.node_local(n), "dest"), exist_ok=True)
    libdir = os.path.join(progs, "ldpath", "lib")
    runs = {}
    # a destination each (Slurm's sbcast refuses a libs directory that
    # exists: "File exists")
    for storm, name in ((True, "hello-storm"), (False, "hello-stock")):
        dest = cluster.path("local", "dest", name)
        e = dict(cluster.env, LD_LIBRARY_PATH=libdir)
        if storm:
            e.pop("SLURM_STORM_BCAST", None)
        else:
            e["SLURM_STORM_BCAST"] = "no"
        runs[storm] = cluster.run(["srun", "-N2", "-w", ",".join(nodes), "--bcast=" + dest,
                                   "--send-libs", prog], env=e, timeout=180)
        r = runs[storm]
        assert r.stdout.splitlines() == ["hello from libhello / and libdep"] * 2, r.stderr
        assert tagged(r.stderr, "ld-first") == [[dest + "_libs"]] * 2, r.stderr
        got = [where for _, where in tagged(r.stderr, "hello-source")]
        assert got == [dest + "_libs/libhello.so.1"] * 2, (storm, r.stderr)
        for n in nodes:
            libs = os.path.join(cluster.node_local(n), "dest", name + "_libs")
            assert sorted(os.listdir(libs)) == ["libdep.so", "libhello.so.1"], (storm, n)
    assert "STORM broadcast" not in runs[False].stderr


def test_named_files_at_their_paths_and_in_the_environment(cluster, progs, site_conf):
    reader = os.path.join(progs, "reader.sh")
    files = os.path.join(progs, "input.txt") + ":" + os.path.join(progs, "data")
    stock = srun(cluster, [reader], False, site_conf)
    storm = srun(cluster, [reader], True, site_conf, SLURM_STORM_FILES=files)
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines())
    assert storm.stdout.splitlines() == [
        "input: the input a: file a b: file b link: file b"] * NODES
    srcs = [s[0] for s in tagged(storm.stderr, "file-source")]
    assert len(srcs) == 2 * NODES and all("/storm/job_" in s for s in srcs), storm.stderr
    assert tagged(storm.stderr, "files-dir") == [["yes"]] * NODES, storm.stderr
    assert tagged(stock.stderr, "files-dir") == [["no"]] * NODES


def test_named_files_with_bcast(cluster, progs, site_conf):
    # --bcast (the copy in the job directory) carries named files too
    reader = os.path.join(progs, "reader.sh")
    e = dict(cluster.env, SLURM_STORM_FILES=os.path.join(progs, "data"))
    e.pop("SLURM_STORM_BCAST", None)
    r = cluster.run(["srun", "-N2", "--bcast", reader], env=e, timeout=180)
    assert r.stdout.splitlines() == ["input: the input a: file a b: file b link: file b"] * 2
    assert tagged(r.stderr, "files-dir") == [["yes"]] * 2, r.stderr


def test_missing_named_file_stops_srun(cluster, progs, site_conf):
    missing = os.path.join(progs, "no-such-input")
    marker = os.path.join(progs, "ran")
    r = srun(cluster, ["sh", "-c", "touch " + marker], True, site_conf, check=False,
             SLURM_STORM_FILES=missing)
    assert r.returncode != 0
    assert "SLURM_STORM_FILES" in r.stderr and missing in r.stderr, r.stderr
    assert "No such file or directory" in r.stderr, r.stderr
    assert not os.path.exists(marker)


def test_node_without_room_for_the_files(cluster, progs, site_conf):
    """node2's RAM disk shrinks to 4 MiB and the named directory takes 6:
    the error names node2, no task runs, and no node keeps a tree or a
    temporary file."""
    big = os.path.join(progs, "big")
    os.makedirs(big, exist_ok=True)
    for i in range(3):
        with open(os.path.join(big, "part%d" % i), "wb") as f:
            f.write(os.urandom(2 * 1024 * 1024))
    marker = os.path.join(progs, "big.ran")
    with storm_bcast_site.small_ram_disk(cluster, "node2", 4):
        r = srun(cluster, ["sh", "-c", "touch " + marker], True, site_conf, check=False,
                 nodes=2, SLURM_STORM_FILES=big)
    assert r.returncode != 0
    assert "node2" in r.stderr and "No space left on device" in r.stderr, r.stderr
    assert not os.path.exists(marker)
    for n in ("node1", "node2"):
        left = storm_bcast_site.kept(cluster, n,
                                     lambda f: "tree" in f or f.startswith(".storm-"))
        assert not left, "%s keeps %s" % (n, left)


@pytest.mark.parametrize("libs", ["no", "yes"])
def test_stdin_still_reaches_the_task(cluster, progs, site_conf, libs):
    """srun's own descriptors are left alone whether or not anything
    travels with the program: its stdin still reaches the tasks."""
    e = dict(cluster.env, STORM_CONF=site_conf, SLURM_STORM_BCAST_LIBS=libs)
    e.pop("SLURM_STORM_BCAST", None)
    r = cluster.run(["srun", "-N2", "--ntasks-per-node=1", "cat"], env=e,
                    input="through srun's stdin\n", timeout=180)
    assert r.stdout.splitlines() == ["through srun's stdin"] * 2, r.stdout + r.stderr

# SPDX-License-Identifier: GPL-2.0-or-later
"""A SquashFS container image run with Charliecloud's ch-run, the image
broadcast by STORM as a named file (SLURM_STORM_FILES).

The image is built here without network: a static busybox and the files
and mount points ch-run needs in an image, packed with mksquashfs.  ch-run
mounts it itself with squashfuse (libsquashfuse, through /dev/fuse) inside
a user namespace of its own, so it runs as an ordinary user; it runs as
root too.

- `srun ch-run IMG -- busybox sh -c ...` prints on every node what the
  same srun prints with SLURM_STORM_BCAST=no (the image read from the
  shared file system), as the user and as root.
- Under STORM the image ch-run opens at its own path is the node-local
  copy: a read-only bind mount of the file in the job's directory, in the
  task's mount namespace, which ch-run's own namespaces inherit."""
import os
import shutil
import stat
import subprocess

import pytest

from test_0101_bcast_launch import ensure_user

NODES = 4
USER = "stormtest"
MARKER = "etc/storm-image-marker"
GREETING = "hello from inside the image"

# Run inside the container: the file only the image has, the node and
# the user the container runs as (stdout); the step's named-files tree,
# which ch-run passes on in the environment (stderr).
INSIDE = ('echo "$(cat /%s) on $SLURMD_NODENAME as $(id -un)"; '
          'echo "files-dir ${SLURM_STORM_FILES_DIR:--}" >&2' % MARKER)

# The step's executable for the mount check: where the image at its own
# path comes from in the task's mount namespace (the root of the mount at
# that path; "-" for none), then ch-run on that path.
WRAPPER = r"""#!/bin/sh
img=%(img)s
src=$(awk -v p="$img" '$5 == p {r = $4} END {print r ? r : "-"}' /proc/self/mountinfo)
echo "image-source $src" >&2
exec ch-run "$img" -- /bin/busybox sh -c '%(inside)s'
"""


def build_image(d):
    """A SquashFS image with a static busybox and what ch-run binds into
    an image: /dev, /proc, /sys (required), /etc/passwd and /etc/group (its
    own files for the user), /tmp and /home."""
    root = os.path.join(d, "root")
    shutil.rmtree(root, ignore_errors=True)
    for sub in ("bin", "etc", "dev", "proc", "sys", "tmp", "home", "root", "mnt"):
        os.makedirs(os.path.join(root, sub))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(root, "etc", "group"), "w") as f:
        f.write("root:x:0:\n")
    with open(os.path.join(root, MARKER), "w") as f:
        f.write(GREETING + "\n")
    img = os.path.join(d, "busybox.sqfs")
    if os.path.exists(img):
        os.unlink(img)
    subprocess.run(["mksquashfs", root, img, "-noappend", "-all-root", "-quiet",
                    "-no-progress"], check=True, capture_output=True)
    os.chmod(img, 0o644)
    return img


@pytest.fixture(scope="module")
def image(cluster):
    for prog in ("ch-run", "mksquashfs", "busybox"):
        assert shutil.which(prog), "%s is missing: run scripts/bootstrap.sh" % prog
    # ch-run as a user opens /dev/fuse itself (scripts/bootstrap.sh gives
    # it udev's mode where no udev runs)
    assert stat.S_IMODE(os.stat("/dev/fuse").st_mode) & 0o006 == 0o006, \
        "/dev/fuse is not usable by users: run scripts/bootstrap.sh"
    assert not os.path.exists("/" + MARKER)
    d = cluster.path("share", "chimage")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(cluster.path("share"), 0o1777)
    os.chmod(d, 0o755)
    img = build_image(d)
    wrapper = os.path.join(d, "run-image.sh")
    with open(wrapper, "w") as f:
        f.write(WRAPPER % {"img": img, "inside": INSIDE})
    os.chmod(wrapper, 0o755)
    return img, wrapper


def srun(cluster, user, argv, storm, img):
    """srun on NODES nodes, one task each, as user; with storm, the
    executable is broadcast and the image named to travel with it."""
    e = dict(cluster.env, USER=user)
    if storm:
        e["SLURM_STORM_BCAST"] = "yes"
        e["SLURM_STORM_FILES"] = img
    else:
        e["SLURM_STORM_BCAST"] = "no"
        e.pop("SLURM_STORM_FILES", None)
    on = ",".join(cluster.node_names()[:NODES])
    cmd = ["srun", "-N%d" % NODES, "--ntasks-per-node=1", "-w", on] + argv
    if user != "root":
        cmd = ["runuser", "-u", user, "--"] + cmd
    return cluster.run(cmd, env=e, timeout=300)


def tagged(stderr, tag):
    return [l.split()[1] for l in stderr.splitlines() if l.startswith(tag + " ")]


def expected(cluster, user):
    return sorted("%s on %s as %s" % (GREETING, n, user)
                  for n in cluster.node_names()[:NODES])


@pytest.mark.parametrize("user", [USER, "root"])
def test_image_runs_as_without_storm(cluster, image, user):
    if user != "root":
        ensure_user(user)
    img, _ = image
    argv = ["ch-run", img, "--", "/bin/busybox", "sh", "-c", INSIDE]
    stock = srun(cluster, user, argv, False, img)
    storm = srun(cluster, user, argv, True, img)
    assert sorted(stock.stdout.splitlines()) == expected(cluster, user), stock.stderr
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines()), \
        storm.stderr
    assert "is not broadcast" not in storm.stderr, storm.stderr
    assert tagged(stock.stderr, "files-dir") == ["-"] * NODES, stock.stderr
    dirs = tagged(storm.stderr, "files-dir")
    assert len(dirs) == NODES and all("/storm/job_" in d for d in dirs), storm.stderr


def test_image_is_the_node_local_copy(cluster, image):
    ensure_user(USER)
    img, wrapper = image
    stock = srun(cluster, USER, [wrapper], False, img)
    storm = srun(cluster, USER, [wrapper], True, img)
    assert sorted(stock.stdout.splitlines()) == expected(cluster, USER), stock.stderr
    assert sorted(storm.stdout.splitlines()) == sorted(stock.stdout.splitlines()), \
        storm.stderr
    assert tagged(stock.stderr, "image-source") == ["-"] * NODES, stock.stderr
    srcs = tagged(storm.stderr, "image-source")
    assert len(srcs) == NODES, storm.stderr
    for s in srcs:
        assert "/storm/job_" in s and s.endswith(img), storm.stderr

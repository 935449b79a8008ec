# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole-job benchmark's workloads, built from what the host has
installed (no network), into the file server's export directory:

  mpi/bin/app     a C program linked against Open MPI, OpenBLAS (and
                  gfortran, which it needs) and ICU; it reaches main, asks
                  MPI whether it is initialised and calls OpenBLAS.
  mpi/lib/        every library of its closure but the C runtime's (the
                  SYSTEM set), copied there from the Debian system
                  directories and found through LD_LIBRARY_PATH, as from a
                  site's /sw tree: at least MIN_LIB_BYTES.
  pyenv/          a venv (the system python3) with Debian's numpy and scipy
                  copied into its site-packages.
  image.sqfs      a SquashFS image of at least MIN_IMAGE_BYTES: a root with
                  python3, its standard library, numpy, scipy and the
                  libraries all of them load, and unread data filling it to
                  the size (random, so it stays that size compressed).

MPI_Init is not called: the cluster has no PMI, and what a launch waits for
here is the loader, not the MPI wire-up.
"""
import glob
import os
import re
import shutil
import subprocess

MIB = 1 << 20
MIN_LIB_BYTES = 50 * MIB
MIN_IMAGE_BYTES = 256 * MIB
# What every node has: the C runtime and the loader; everything else the
# program loads lives on the file server.
SYSTEM = re.compile(r"^(ld-linux.*|linux-vdso.*|libc|libm|libdl|libpthread|librt|"
                    r"libgcc_s|libstdc\+\+|libz|libudev)\.so")
APP_C = r"""
#include <mpi.h>
double cblas_ddot(const int n, const double *x, const int incx,
		  const double *y, const int incy);

int main(void)
{
	int initialised = 1;
	double x[2] = { 1.0, 2.0 };

	MPI_Initialized(&initialised);
	return initialised || cblas_ddot(2, x, 1, x, 1) != 5.0;
}
"""
INSIDE_IMAGE = ["/usr/bin/python3", "-c", "import numpy, scipy"]
IMPORT = ["-c", "import numpy, scipy"]


def ldd(path, env=None):
    """{name: resolved path} of what the loader maps for path."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True,
                         env=env).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            libs[m.group(1)] = m.group(2)
        else:
            m = re.match(r"\s*(/\S+) \(", line)
            if m:
                libs[m.group(1)] = m.group(1)
    return libs


def _so(pattern):
    hits = sorted(glob.glob(pattern))
    if not hits:
        raise SystemExit("%s not found: run scripts/bootstrap.sh" % pattern)
    return hits[0]


def build_mpi(export):
    """mpi/bin/app and mpi/lib; returns (app, libdir, library bytes)."""
    top = os.path.join(export, "mpi")
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(os.path.join(top, "bin"))
    os.makedirs(os.path.join(top, "lib"))
    src, app = os.path.join(top, "app.c"), os.path.join(top, "bin", "app")
    with open(src, "w") as f:
        f.write(APP_C)
    multi = "/usr/lib/x86_64-linux-gnu"
    libs = [_so(multi + "/libopenblas.so.0"), _so(multi + "/libgfortran.so.[0-9]*"),
            _so(multi + "/libicuuc.so.[0-9]*")]
    subprocess.run(["mpicc", "-O1", "-o", app, src, "-Wl,--no-as-needed"] + libs,
                   check=True)
    libdir = os.path.join(top, "lib")
    total = 0
    for name, path in ldd(app).items():
        base = os.path.basename(name)
        if SYSTEM.match(base):
            continue
        shutil.copyfile(os.path.realpath(path), os.path.join(libdir, base))
        total += os.path.getsize(os.path.join(libdir, base))
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    outside = [n for n, p in ldd(app, env).items()
               if not SYSTEM.match(os.path.basename(n)) and not p.startswith(libdir + "/")]
    if outside:
        raise SystemExit("app loads %s from outside %s" % (outside, libdir))
    if total < MIN_LIB_BYTES:
        raise SystemExit("app's libraries are %d MiB, under %d" % (total // MIB,
                                                                   MIN_LIB_BYTES // MIB))
    subprocess.run([app], check=True, env=env)
    return app, libdir, total


def system_python_path(name):
    """A sysconfig path of Debian's python3 (the one the nodes run, not
    necessarily the one running this script)."""
    return subprocess.run(["/usr/bin/python3", "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()[%r])" % name],
                          capture_output=True, text=True, check=True).stdout.strip()


def site_packages_src():
    return "/usr/lib/python3/dist-packages"


def build_pyenv(export):
    """pyenv/ with numpy and scipy; returns (python, tree bytes)."""
    env_dir = os.path.join(export, "pyenv")
    shutil.rmtree(env_dir, ignore_errors=True)
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", env_dir], check=True)
    r = subprocess.run([os.path.join(env_dir, "bin", "python"), "-c",
                        "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       capture_output=True, text=True, check=True)
    site = r.stdout.strip()
    if not site.startswith(env_dir):
        raise SystemExit("venv site-packages unexpected: %s" % site)
    for pkg in ("numpy", "scipy"):
        shutil.copytree(os.path.join(site_packages_src(), pkg), os.path.join(site, pkg),
                        symlinks=True)
    python = os.path.join(env_dir, "bin", "python")
    r = subprocess.run([python, "-c", "import numpy, scipy, sys; print(numpy.__file__)"],
                       capture_output=True, text=True, check=True)
    if not r.stdout.startswith(env_dir):
        raise SystemExit("venv imports numpy from %s" % r.stdout.strip())
    return python, tree_bytes(env_dir)


def tree_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d)
               for f in fs if not os.path.islink(os.path.join(r, f)))


def _image_root(root):
    """Python with numpy and scipy, laid out as in Debian (merged /usr)."""
    for sub in ("usr/bin", "usr/lib/x86_64-linux-gnu", "usr/lib64", "etc", "dev", "proc",
                "sys", "tmp", "home", "root", "mnt", "usr/share/data"):
        os.makedirs(os.path.join(root, sub))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    for link, to in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        os.symlink(to, os.path.join(root, link))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(root, "etc", "group"), "w") as f:
        f.write("root:x:0:\n")
    shutil.copy("/bin/busybox", os.path.join(root, "usr/bin/busybox"))
    os.symlink("busybox", os.path.join(root, "usr/bin/sh"))
    py = os.path.realpath("/usr/bin/python3")
    shutil.copy(py, os.path.join(root, "usr/bin", os.path.basename(py)))
    os.symlink(os.path.basename(py), os.path.join(root, "usr/bin/python3"))
    stdlib = system_python_path("stdlib")
    shutil.copytree(stdlib, root + stdlib, symlinks=True,
                    ignore=shutil.ignore_patterns("test", "idlelib", "tkinter", "turtledemo"))
    for pkg in ("numpy", "scipy"):
        src = os.path.join(site_packages_src(), pkg)
        shutil.copytree(src, root + src, symlinks=True)
    elfs = [py] + [os.path.join(r, f) for top in (stdlib, site_packages_src())
                   for r, _, fs in os.walk(root + top) for f in fs if ".so" in f]
    need = {}
    for e in elfs:
        need.update(ldd(e))
    for name, path in need.items():
        if name.startswith("/lib64/"):
            dest = os.path.join(root, "usr/lib64", os.path.basename(name))
        else:
            dest = os.path.join(root, "usr/lib/x86_64-linux-gnu", os.path.basename(name))
        if not os.path.exists(dest) and os.path.exists(path):
            shutil.copyfile(os.path.realpath(path), dest)
            os.chmod(dest, 0o755)


def build_image(export, work):
    """image.sqfs; returns (image, bytes)."""
    root = os.path.join(work, "image-root")
    shutil.rmtree(root, ignore_errors=True)
    _image_root(root)
    img = os.path.join(export, "image.sqfs")
    sq = ["-all-root", "-quiet", "-no-progress", "-processors", "2"]
    if os.path.exists(img):
        os.unlink(img)
    subprocess.run(["mksquashfs", root, img, "-noappend"] + sq, check=True,
                   capture_output=True)
    short = MIN_IMAGE_BYTES + MIB - os.path.getsize(img)
    if short > 0:
        # appended as its own directory: only the new file is compressed
        pad = os.path.join(work, "image-data")
        shutil.rmtree(pad, ignore_errors=True)
        os.makedirs(pad)
        with open(os.path.join(pad, "unread.bin"), "wb") as f:
            left = short
            while left > 0:
                n = min(left, 8 * MIB)
                f.write(os.urandom(n))
                left -= n
        subprocess.run(["mksquashfs", pad, img, "-keep-as-directory"] + sq, check=True,
                       capture_output=True)
    os.chmod(img, 0o644)
    shutil.rmtree(root, ignore_errors=True)
    size = os.path.getsize(img)
    if size < MIN_IMAGE_BYTES:
        raise SystemExit("image is %d MiB, under %d" % (size // MIB, MIN_IMAGE_BYTES // MIB))
    subprocess.run(["ch-run", img, "--"] + INSIDE_IMAGE, check=True,
                   env=dict(os.environ, USER="root"))
    return img, size


def build_all(export, work):
    """Every workload under export; returns what the benchmark records."""
    os.makedirs(export, exist_ok=True)
    os.chmod(export, 0o755)
    app, libdir, lib_bytes = build_mpi(export)
    python, env_bytes = build_pyenv(export)
    img, img_bytes = build_image(export, work)
    return {"app": app, "app_libdir": libdir, "app_lib_bytes": lib_bytes,
            "app_bytes": os.path.getsize(app),
            "python": python, "pyenv": os.path.dirname(os.path.dirname(python)),
            "pyenv_bytes": env_bytes, "python_bytes": os.path.getsize(
                os.path.realpath(python)),
            "image": img, "image_bytes": img_bytes,
            "ch_run_bytes": os.path.getsize(shutil.which("ch-run"))}

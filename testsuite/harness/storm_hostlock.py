# SPDX-License-Identifier: GPL-2.0-or-later
"""Host-wide locks for what clusters started by different processes share.

Two test suites (one per Slurm version) run side by side on one host, each
starting its own clusters: a range of loopback ports, a /24 for a cluster
network, munged and a test user are picked or made by check-then-act, and
between the check and the act the other suite can do the same.  These
locks close that window.  They are flock()s, so a process that dies
releases its locks with its file descriptors.
"""

import contextlib
import fcntl
import os

LOCK_DIR = "/run/storm-test-locks"


def _open(name):
    os.makedirs(LOCK_DIR, exist_ok=True)
    return os.open(os.path.join(LOCK_DIR, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                   0o600)


@contextlib.contextmanager
def exclusive(name):
    """Held while the body runs: one check-then-act at a time host-wide."""
    fd = _open(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def try_hold(name):
    """An fd holding lock `name` until closed, or None if another holds it."""
    fd = _open(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd

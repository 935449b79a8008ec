# SPDX-License-Identifier: GPL-2.0-or-later
"""The nodes' cache across jobs (storm.conf BcastCacheSize): a launch first
sends the bundle of a job's files as references (their SHA-256); when
every node places them all from its cache, the files themselves do not
travel.  A node that lacks one gets the bundle, and keeps its files.

- The relaunch of the same files sends references only, and its tasks
  read the same bytes.
- A file changed since is sent again, and the tasks read the new bytes.
- A node's cache: root's directory per user, root's read-only copies;
  another user's launch of the same bytes does not use them.
- stormctl cache show lists what a node keeps; purge empties it, and the
  next launch sends the files again."""
import hashlib
import os
import pwd
import re
import shutil
import subprocess
import time

import pytest

import storm_bcast_site
from storm_cluster import Cluster
from storm_wait import wait_for
from test_0101_bcast_launch import ensure_user

NODES = 4
FILES = 6
FILE_BYTES = 1024 * 1024


@pytest.fixture(scope="module")
def ccluster():
    c = Cluster(os.path.join(os.environ.get("STORM_TEST_LOGDIR", "/tmp/storm-test-logs"),
                             "cache4"), nodes=NODES,
                storm_conf="BcastCacheSize=64M\n")
    try:
        c.start()
        # srun's memos of an earlier run in the same directory
        for u in ("root", "stormtest"):
            shutil.rmtree(c.path("share", "xdg-%s" % u), ignore_errors=True)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def site_conf(ccluster):
    return storm_bcast_site.site_conf(ccluster, "storm-cache.conf", "BcastExecutable=yes\n")


@pytest.fixture
def data(ccluster):
    """A named directory of FILES files, readable by every user."""
    d = ccluster.path("share", "cached")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.chmod(ccluster.path("share"), 0o1777)
    os.chmod(d, 0o755)
    for i in range(FILES):
        with open(os.path.join(d, "part%d" % i), "wb") as f:
            f.write(os.urandom(FILE_BYTES))
        os.chmod(os.path.join(d, "part%d" % i), 0o644)
    return d


def digest_of(d):
    h = hashlib.sha256()
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


READ_ALL = "cat %s/part* | sha256sum | cut -d' ' -f1"


def launch(c, conf, d, user=None):
    """srun of a reader of d's files on every node, with d named; (sums
    the tasks printed, bytes each bundle broadcast of the step sent (the
    executable, which travels apart, left out), stderr)."""
    # srun's memo of hashes in a directory of the user's own
    xdg = c.path("share", "xdg-%s" % (user or "root"))
    os.makedirs(xdg, exist_ok=True)
    pw = pwd.getpwnam(user or "root")
    os.chown(xdg, pw.pw_uid, pw.pw_gid)
    e = dict(c.env, STORM_CONF=conf, SLURM_STORM_FILES=d, SLURM_STORM_BCAST_TIMING="1",
             XDG_CACHE_HOME=xdg)
    e.pop("SLURM_STORM_BCAST", None)
    argv = ["srun", "-N%d" % NODES, "--ntasks-per-node=1", "-v", "sh", "-c", READ_ALL % d]
    if user:
        argv = ["runuser", "-u", user, "--"] + argv
    r = c.run(argv, env=e, timeout=180)
    sent = [int(m) for m in re.findall(r"storm-bcast: file=/proc/self/fd/\d+ bytes=(\d+)",
                                       r.stderr)]
    wait_named(c, pw.pw_uid)
    return r.stdout.split(), sent, r.stderr


def wait_named(c, uid):
    """Until every node has named what it kept of uid's files: a node
    manager hashes a file it received after the job has it, and only a
    named file is offered to the next launch."""
    def unnamed():
        left = []
        for n in c.node_names():
            d = store(c, n, uid)
            if os.path.isdir(d):
                left += [(n, e) for e in os.listdir(d) if e.startswith(".")]
        return left
    wait_for(lambda: not unnamed(), 120, "the nodes to name the files they kept")


def store(c, node, uid):
    return os.path.join(c.node_local(node), "storm", ".cache", str(uid))


def memo_counts(stderr):
    """(SHA-256 from srun's memo, bytes srun hashed) of a launch's -v."""
    m = re.search(r"(\d+) files' SHA-256 from srun's memo, (\d+) bytes hashed", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def test_relaunch_sends_references_only(ccluster, site_conf, data):
    want = digest_of(data)
    # srun remembers only hashes of files older than its racy window
    time.sleep(3)
    sums, first, err1 = launch(ccluster, site_conf, data)
    assert sums == [want] * NODES, err1
    sums, again, err2 = launch(ccluster, site_conf, data)
    assert sums == [want] * NODES, err2
    print("bytes sent, first launch:", first, "relaunch:", again)
    # the first launch sent the bundle with the files, the relaunch only
    # its references
    assert first and max(first) >= FILES * FILE_BYTES, (first, err1)
    assert len(again) == 1 and again[0] < FILES * FILE_BYTES // 100, (again, err2)
    assert "held the" in err2 and "in its cache" in err2, err2
    # the relaunch read no file to name it: srun's memo knew them all, the
    # executable (in the bundle, with a cache) included
    hits, hashed = memo_counts(err1)
    assert hits == 0 and FILES * FILE_BYTES < hashed < FILES * FILE_BYTES * 1.1, err1
    assert memo_counts(err2) == (FILES + 1, 0), err2
    # and every byte of the executable came from the cache too
    assert err2.count("storm-bcast: file=") == 1, err2


def test_changed_file_alone_is_sent_again(ccluster, site_conf, data):
    launch(ccluster, site_conf, data)
    with open(os.path.join(data, "part3"), "r+b") as f:
        f.write(b"changed")
    want = digest_of(data)
    sums, sent, err = launch(ccluster, site_conf, data)
    assert sums == [want] * NODES, err
    # the references, then the bundle with part3 as data and the other
    # files as references
    assert len(sent) == 1 and FILE_BYTES <= sent[0] < 2 * FILE_BYTES, (sent, err)
    assert "the nodes lack some of the files" in err, err


def test_what_one_node_lacks_is_all_that_travels(ccluster, site_conf, data):
    """Two files gone from node3's cache and one from node2's: the union,
    three files, is sent; every node reads every file."""
    launch(ccluster, site_conf, data)
    gone = {"node3": ["part1", "part4"], "node2": ["part4", "part5"]}
    for node, names in gone.items():
        for name in names:
            with open(os.path.join(data, name), "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            os.unlink(os.path.join(store(ccluster, node, 0), sha))
    want = digest_of(data)
    sums, sent, err = launch(ccluster, site_conf, data)
    assert sums == [want] * NODES, err
    assert len(sent) == 1 and 3 * FILE_BYTES <= sent[0] < 4 * FILE_BYTES, (sent, err)


def test_store_is_roots_and_per_user(ccluster, site_conf, data):
    launch(ccluster, site_conf, data)
    for n in ccluster.node_names():
        d = store(ccluster, n, 0)
        st = os.stat(d)
        assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o700, (d, oct(st.st_mode))
        entries = os.listdir(d)
        assert len(entries) >= FILES, entries
        for e in entries:
            st = os.stat(os.path.join(d, e))
            assert st.st_uid == 0 and (st.st_mode & 0o777) in (0o444, 0o555), (e, oct(st.st_mode))
    # the same bytes for another user travel, into a store of their own
    uid = ensure_user("stormtest")
    want = digest_of(data)
    sums, sent, err = launch(ccluster, site_conf, data, user="stormtest")
    assert sums == [want] * NODES, err
    assert max(sent) >= FILES * FILE_BYTES, (sent, err)
    for n in ccluster.node_names():
        assert len(os.listdir(store(ccluster, n, uid))) >= FILES
        r = subprocess.run(["runuser", "-u", "stormtest", "--", "ls", store(ccluster, n, 0)],
                           capture_output=True, text=True)
        assert r.returncode != 0, r.stdout


def stormctl_on(c, node, *args):
    """stormctl run on node (its node manager's control socket is in the
    node's own BcastDir)."""
    return c.run(["srun", "-N1", "-w", node, c.stormctl, "cache"] + list(args) +
                 ["--node", node], env=dict(c.env, SLURM_STORM_BCAST="no"), check=False)


def test_stormctl_shows_and_purges(ccluster, site_conf, data):
    launch(ccluster, site_conf, data)
    r = stormctl_on(ccluster, "node2", "show")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(data, "part0"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    assert sha in r.stdout, r.stdout
    r = stormctl_on(ccluster, "node2", "purge")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists(store(ccluster, "node2", 0)) or \
        not os.listdir(store(ccluster, "node2", 0))
    # node2 lacks them now: the next launch sends the files, and node2
    # keeps them again
    want = digest_of(data)
    sums, sent, err = launch(ccluster, site_conf, data)
    assert sums == [want] * NODES, err
    assert max(sent) >= FILES * FILE_BYTES, (sent, err)
    assert len(os.listdir(store(ccluster, "node2", 0))) >= FILES

# SPDX-License-Identifier: GPL-2.0-or-later
"""A network file server for a netns cluster: sshd in a namespace of its own,
every node mounting one directory of the host with sshfs at the same path.

The host's kernel has no NFS server, and a FUSE mount made on the host would
be every node's at once, reached over no link.  So:

- the server is an extra host of the cluster network (storm_netns.Network's
  `extra`, Cluster(extra_hosts=...)), with a link of its own rate;
- sshd runs in its network namespace only (ListenAddress is its address),
  with a host key and one client key generated into the cluster's directory,
  key authentication only, and the external sftp-server, so that the bytes
  it serves can be read from /proc/PID/io of its processes;
- every node mounts the export read-only at the export's own path from its
  slurmd's mount namespace (Cluster(node_setup=...)), before slurmd starts,
  so that the node's jobs see the server's files at the path the head sees
  them locally, and every read of a node goes over its link and the server's.

A task reads through FUSE, which without kernel_cache drops a file's cached
pages whenever it is opened again: each launch reads a file's contents from
the server again, as a node that has not read it before would (the bytes
each launch is served show it).  Names and attributes are kept for FUSE's
default timeouts; sshfs's own directory cache is off.
"""

import contextlib
import os
import shutil
import subprocess

from storm_wait import poll

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
HOST = "fs"


class FileServerError(RuntimeError):
    pass


class FileServer:
    """One export served from host `host` of cluster `c` (a netns Cluster
    built with extra_hosts={host: rate}, before_nodes=fs.start and
    node_setup=fs.node_setup)."""

    def __init__(self, keydir, export, host=HOST):
        self.keydir = os.path.abspath(keydir)
        self.export = os.path.abspath(export)
        self.host = host
        self.c = None

    def path(self, name):
        return os.path.join(self.keydir, name)

    # -- keys and configuration ---------------------------------------
    def prepare(self):
        """Keys and both sides' configuration; no daemon yet."""
        for prog in (SSHD, SFTP_SERVER, shutil.which("sshfs") or "sshfs"):
            if not os.access(prog, os.X_OK):
                raise FileServerError("%s is missing: apt-get install sshfs openssh-server "
                                      "(scripts/bootstrap.sh)" % prog)
        shutil.rmtree(self.keydir, ignore_errors=True)
        os.makedirs(self.keydir, mode=0o700)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                            "storm-bench-" + key, "-f", self.path(key)],
                           check=True, capture_output=True)
        shutil.copy(self.path("client_key.pub"), self.path("authorized_keys"))
        return self

    def _write_configs(self, addr):
        with open(self.path("sshd_config"), "w") as f:
            f.write("\n".join([
                "ListenAddress %s" % addr,
                "Port 22",
                "HostKey %s" % self.path("host_key"),
                "PidFile none",
                "AuthorizedKeysFile %s" % self.path("authorized_keys"),
                "AuthenticationMethods publickey",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                # the key directory lies under a world-writable /tmp
                "StrictModes no",
                "UsePAM no",
                "UseDNS no",
                "PrintMotd no",
                "X11Forwarding no",
                "AllowTcpForwarding no",
                # every node connects at once when the cluster starts
                "MaxStartups 200",
                "LogLevel ERROR",
                "Subsystem sftp %s" % SFTP_SERVER,
            ]) + "\n")
        with open(self.path("known_hosts"), "w") as f, \
                open(self.path("host_key.pub")) as pub:
            f.write("%s %s" % (addr, pub.read()))
        with open(self.path("ssh_config"), "w") as f:
            f.write("\n".join([
                "Host %s" % self.host,
                "  HostName %s" % addr,
                "  User root",
                "  IdentityFile %s" % self.path("client_key"),
                "  IdentitiesOnly yes",
                "  UserKnownHostsFile %s" % self.path("known_hosts"),
                "  StrictHostKeyChecking yes",
                "  BatchMode yes",
                "  Compression no",
                # the cheapest cipher with AES-NI: the link, not the
                # host's CPU, is what the figure is about
                "  Ciphers aes128-gcm@openssh.com",
                "  ServerAliveInterval 15",
            ]) + "\n")

    # -- life ----------------------------------------------------------
    def start(self, c, timeout=60):
        """Start sshd on the server's host of cluster c (Cluster's
        before_nodes) and wait until a client logs in from the head."""
        self.c = c
        os.makedirs("/run/sshd", exist_ok=True)      # sshd's privilege separation
        self._write_configs(c.addr(self.host))
        c.spawn("sshd-" + self.host, [SSHD, "-D", "-e", "-f", self.path("sshd_config")],
                host=self.host)
        last = []

        def logs_in():
            r = subprocess.run(c.wrap(["ssh", "-F", self.path("ssh_config"), self.host,
                                       "true"]), capture_output=True, text=True,
                               timeout=30)
            last[:] = [r.stderr]
            return r.returncode == 0

        if not poll(logs_in, timeout, 0.2):
            raise FileServerError("ssh to the file server failed: %s" % "".join(last))

    def node_setup(self, node):
        """The shell commands mounting the export on a node (Cluster's
        node_setup): read-only, every user may read (the tasks of a user
        job), sshfs's directory cache off, symbolic links passed on as the
        server has them, as NFS does (Debian's sshfs refuses absolute ones
        by default, and a venv's bin/python is one)."""
        return ("sshfs -F %s -o ro,allow_other,dir_cache=no,no_contain_symlinks,reconnect "
                "%s:%s %s"
                % (self.path("ssh_config"), self.host, self.export, self.export))

    # -- figures -------------------------------------------------------
    def _ns_ino(self):
        return os.stat(self.c.net.ns_path(self.host)).st_ino

    def sftp_pids(self):
        """The sftp-server processes serving the nodes now."""
        ino, pids = self._ns_ino(), []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            with contextlib.suppress(OSError):
                if os.stat("/proc/%s/ns/net" % d).st_ino != ino:
                    continue
                with open("/proc/%s/comm" % d) as f:
                    if f.read().strip() == "sftp-server":
                        pids.append(int(d))
        return pids

    def served(self):
        """{pid: bytes read so far} of the sftp-servers: the file contents
        each served plus the requests (tens of bytes each) it read from
        sshd.  Per process, so that a reconnected node's new server counts
        from zero (served_since)."""
        out = {}
        for pid in self.sftp_pids():
            with contextlib.suppress(OSError), open("/proc/%d/io" % pid) as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k == "rchar":
                        out[pid] = int(v)
        return out

    @staticmethod
    def served_since(before, after):
        """Bytes served between two served() readings."""
        return sum(v - before.get(pid, 0) for pid, v in after.items())

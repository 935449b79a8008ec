# SPDX-License-Identifier: GPL-2.0-or-later
"""A cluster network on one host: a network namespace per node, one switch.

Every node (and the head, where slurmctld and the user's commands run) gets
its own network namespace with one veth link into one Linux bridge, which
plays a single non-blocking switch.  Each namespace has its own address on
a private /24 of its own, its own port space (so every node uses the same
Port and BcastPort, as on a real cluster) and optionally a link shaped with
`tc tbf` in both directions (netem is not in every kernel, so no latency is
added).  The bridge has no address on the host: nothing outside these
namespaces can reach them, and they reach nothing outside.

Processes enter a namespace with `nsenter --net=` (not `ip netns exec`,
which also remounts /sys and so hides the cgroup hierarchies from slurmd).

Everything is named after a tag derived from the cluster's directory, so a
run killed outright is cleaned up by the next start in the same directory,
and teardown removes exactly what this network created.
"""

import contextlib
import hashlib
import ipaddress
import os
import subprocess

import storm_hostlock

NETNS_DIR = "/run/netns"
# tbf needs a bucket of at least one GSO segment (veth sends up to 64 KiB):
# with a smaller burst it cuts every segment to MTU size and the host's CPU,
# not the link, becomes the limit.
TBF_BURST = "1mb"
TBF_LATENCY = "20ms"
HEAD = "head"


class NetnsError(RuntimeError):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and r.returncode:
        raise NetnsError("ip %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r


def _used_subnets():
    """/24s with an address on the host or in any namespace named in
    /run/netns (another cluster's, or anyone's)."""
    used = set()
    outs = [_ip("-o", "-4", "addr", check=False).stdout]
    with contextlib.suppress(OSError):
        for ns in os.listdir(NETNS_DIR):
            outs.append(_ip("-n", ns, "-o", "-4", "addr", check=False).stdout)
    for out in outs:
        for line in out.splitlines():
            w = line.split()
            if "inet" in w:
                iface = ipaddress.ip_interface(w[w.index("inet") + 1])
                used.add(ipaddress.ip_network("%s/24" % iface.ip, strict=False))
    return used


class Network:
    """The switch and the links of one cluster.

    nodes: the node names; link_mbit: each link's rate in both directions
    (None: not shaped).  extra: {name: Mbit/s} further hosts on the same
    switch that are neither nodes nor the head (a file server), each with a
    link of its own rate (None: not shaped).  Addresses: nodes .1.. in
    order, the head .254, the extra hosts .253 down in the order given."""

    def __init__(self, seed, nodes, link_mbit=None, extra=None):
        self.tag = hashlib.sha1(seed.encode()).hexdigest()[:6]
        self.nodes = list(nodes)
        self.link_mbit = link_mbit
        self.extra = dict(extra or {})
        if len(self.nodes) + len(self.extra) > 250 or HEAD in self.extra or \
                set(self.extra) & set(self.nodes):
            raise NetnsError("extra hosts must be few and named apart from the nodes")
        self.bridge = "stb" + self.tag
        self.subnet = None
        self.addrs = {}

    # -- names ---------------------------------------------------------
    def ns(self, host):
        return "storm-%s-%s" % (self.tag, host)

    def ns_path(self, host):
        return os.path.join(NETNS_DIR, self.ns(host))

    def _host_veth(self, host):
        # interface names are at most 15 characters
        if host == HEAD:
            return "stv%sh" % self.tag
        if host in self.extra:
            return "stv%sx%d" % (self.tag, list(self.extra).index(host) + 1)
        return "stv%sn%d" % (self.tag, self.nodes.index(host) + 1)

    def hosts(self):
        return [HEAD] + self.nodes + list(self.extra)

    def rate(self, host):
        """A host's link rate in Mbit/s (None: not shaped)."""
        return self.extra[host] if host in self.extra else self.link_mbit

    def wrap(self, host, argv):
        """argv run inside a host's network namespace."""
        return ["nsenter", "--net=" + self.ns_path(host), "--"] + list(argv)

    # -- life ----------------------------------------------------------
    def _pick_subnet(self):
        used = _used_subnets()
        h = int(self.tag, 16)
        for i in range(4096):
            k = (h + i) % (250 * 250)
            net = ipaddress.ip_network("10.%d.%d.0/24" % (100 + k // 250 % 150, k % 250))
            if net not in used:
                return net
        raise NetnsError("no free 10.x.y.0/24 for the cluster network")

    def create(self):
        """Build the switch and every link; undone by destroy(), also after
        a failure half-way."""
        self.destroy()          # an earlier run's, killed before its teardown
        # a /24 counts as used once an address is on it: pick and address
        # under one host-wide lock, or a cluster of another process starting
        # at the same time could pick the same one
        with storm_hostlock.exclusive("netns-subnets"):
            self.subnet = self._pick_subnet()
            hosts = list(self.subnet.hosts())
            self.addrs = {n: str(hosts[i]) for i, n in enumerate(self.nodes)}
            self.addrs[HEAD] = str(hosts[253])
            for i, x in enumerate(self.extra):
                self.addrs[x] = str(hosts[252 - i])
            try:
                _ip("link", "add", self.bridge, "type", "bridge")
                # no STP delay: a port forwards as soon as it is up
                _ip("link", "set", self.bridge, "type", "bridge", "forward_delay",
                    "0", "stp_state", "0")
                _ip("link", "set", self.bridge, "up")
                for h in self.hosts():
                    self._add_host(h)
            except Exception:
                self.destroy()
                raise
        return self

    def _add_host(self, host):
        ns, veth = self.ns(host), self._host_veth(host)
        _ip("netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", self.bridge, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", "%s/24" % self.addrs[host], "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        rate = self.rate(host)
        if rate:
            # both ends: the host end's egress is what the node receives
            self._tbf([], veth, rate)
            self._tbf(["-n", ns], "eth0", rate)

    def _tbf(self, nsargs, dev, rate):
        r = subprocess.run(["tc"] + nsargs + ["qdisc", "replace", "dev", dev, "root",
                                               "tbf", "rate", "%dmbit" % rate,
                                               "burst", TBF_BURST, "latency", TBF_LATENCY],
                           capture_output=True, text=True)
        if r.returncode:
            raise NetnsError("tc tbf on %s failed: %s" % (dev, r.stderr.strip()))

    def destroy(self):
        """Remove every namespace, link and the bridge of this tag (and
        nothing else).  Deleting a namespace deletes its veth pair."""
        for h in self.hosts():
            if os.path.exists(self.ns_path(h)):
                _ip("netns", "del", self.ns(h), check=False)
            _ip("link", "del", self._host_veth(h), check=False)
        _ip("link", "del", self.bridge, check=False)

    # -- faults --------------------------------------------------------
    def set_link(self, host, up):
        """Cut (up=False) or restore a host's link, as a pulled cable:
        from inside its namespace, so the switch side sees it too."""
        _ip("-n", self.ns(host), "link", "set", "eth0", "up" if up else "down")

    # -- figures -------------------------------------------------------
    def wire_ms(self, nbytes):
        """S/R: the least time any broadcast of nbytes can take on these
        links (None when they are not shaped)."""
        if not self.link_mbit:
            return None
        return nbytes * 8 / (self.link_mbit * 1e6) * 1000.0

    def link_bytes(self, host):
        """(received, sent) bytes of a host's link so far, counted at the
        switch's end of its veth (what the switch sent it, what it sent
        the switch)."""
        base = "/sys/class/net/%s/statistics/" % self._host_veth(host)
        with open(base + "tx_bytes") as f:
            rx = int(f.read())
        with open(base + "rx_bytes") as f:
            tx = int(f.read())
        return rx, tx

    def created(self):
        """What of this network exists now (for tests of teardown)."""
        have = []
        with contextlib.suppress(OSError):
            have += [n for n in os.listdir(NETNS_DIR) if n.startswith("storm-%s-" % self.tag)]
        out = _ip("-o", "link", "show", check=False).stdout
        for line in out.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name == self.bridge or name.startswith("stv" + self.tag):
                have.append(name)
        return have

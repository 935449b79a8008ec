# SPDX-License-Identifier: GPL-2.0-or-later
"""storm.conf gang keys: invalid values are refused with the key named,
slurmctld keeps switching on the last good configuration, and a good
change of Timeslice is applied without a restart."""
import os
import subprocess

import pytest

import storm_gang as g
from storm_cluster import SLURMCTLD_RESTART_S

BAD = [
    ("Timeslice=50us\n", "Timeslice=50us is out of range"),
    ("Timeslice=fast\n", "bad value 'fast' for key 'Timeslice'"),
    ("MaxMPL=0\n", "MaxMPL=0 is out of range"),
    ("MaxMPL=17\n", "MaxMPL=17 is out of range"),
    ("Policy=fifo\n", "bad value 'fifo' for key 'Policy'"),
    ("FailSafe=100us\n", "FailSafe=100us is out of range"),
    ("Timeslice=1s\nFailSafe=1s\n", "FailSafe (1000000 us) must be at least twice Timeslice"),
    ("SuspectQuanta=0\n", "SuspectQuanta=0 is out of range"),
    ("Timeslice=20ms\nStrobeInterval=5ms\n",
     "StrobeInterval (5000 us) must be 0 (a strobe every quantum) or at least Timeslice"),
    ("Timeslice=2ms\nStrobeInterval=800ms\nFailSafe=1s\n",
     "FailSafe (1000000 us) must be at least twice StrobeInterval"),
    ("Timeslice=1ms\nStrobeInterval=5s\nFailSafe=20s\n",
     "StrobeInterval (5000000 us) may cover at most 1000 quanta"),
    ("StrobeInterval=2min\n", "bad value '2min' for key 'StrobeInterval'"),
    ("SwitchAt=soon\n", "bad value 'soon' for key 'SwitchAt': expected announced or arrival"),
    ("ControllerPort=99\n", "ControllerPort=99 is out of range"),
    ("PartitionName=debug MaxMPL=99\n", "bad value '99' for key 'MaxMPL'"),
]


@pytest.fixture(scope="module")
def gconf(make_gang_cluster):
    return make_gang_cluster("gangconf", 2, "Timeslice=20ms\n", partition_opts="")


@pytest.mark.parametrize("text,what", BAD)
def test_check_config_names_the_key(gconf, tmp_path, text, what):
    f = tmp_path / "storm.conf"
    f.write_text(text)
    r = subprocess.run([gconf.stormctl, "check-config",
                        str(f)], capture_output=True, text=True, env=gconf.env)
    assert r.returncode == 1
    assert str(f) in r.stderr and what in r.stderr, r.stderr


def test_reconfigure_keeps_switching_on_last_good(gconf):
    c = gconf
    path = c.path("etc", "storm.conf")
    good = open(path).read()
    g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") == "20000", SLURMCTLD_RESTART_S,
               "MM at 20 ms")
    try:
        start = os.path.getsize(c.log())
        c.write_storm_conf(good + "Timeslice=5us\n")
        c.reconfigure()
        g.wait_for(lambda: "keeping the previous configuration" in
                   open(c.log()).read()[start:], SLURMCTLD_RESTART_S, "reconfigure refused")
        assert "Timeslice" in open(c.log()).read()[start:]
        # the MM goes on at the old quantum, the NMs keep getting strobes
        # (from 23.11 on, a reconfigure is a new slurmctld process: the
        # old one's MM hands the nodes HandoverTime of quanta to time
        # themselves, and the new one's strobes take over from them)
        e1 = int(g.nm_gang(c, "node1")["epoch"])

        def strobed():
            st = g.nm_gang(c, "node1")
            return int(st["epoch"]) >= e1 + 10 and st
        st = g.wait_for(strobed, SLURMCTLD_RESTART_S,
                        "10 more strobes to node1 after the refused reconfigure")
        assert st["quantum_us"] == "20000", st
        assert g.mm_status(c)[0].get("quantum_us") == "20000"
        assert c.pid("slurmctld")

        # a good change is applied live
        c.write_storm_conf(good.replace("Timeslice=20ms", "Timeslice=35ms"))
        c.reconfigure()
        g.wait_for(lambda: g.nm_gang(c, "node1")["quantum_us"] == "35000", SLURMCTLD_RESTART_S,
                   "NMs see the new quantum")
        g.wait_for(lambda: g.mm_status(c)[0].get("quantum_us") == "35000", SLURMCTLD_RESTART_S,
                   "status shows the new quantum")
    finally:
        c.write_storm_conf(good)
        c.reconfigure(check=False)

# SPDX-License-Identifier: GPL-2.0-or-later
"""How far the timing and fairness checks of the system tests let a
measurement stray, in one place.  The tests that hold a share, a rate or a
count over a wall-clock window to these are marked `timing`: on a loaded
host they can miss their bound while the behaviour is right, so a site can
leave them out with -m "not timing" (CI runs them)."""

# Gang scheduling, two CPU-bound jobs over 200 quanta: job A's share of
# their CPU strays from one half by at most this (5 % relative).
FAIR_SHARE_DEVIATION = 0.025

# MaxMPL 3, three CPU-bound jobs: each gets more than this fraction of
# their CPU on every node (a third each, none starved).
SHARE_OF_THREE_MIN = 0.2

# StrobeInterval, 200 quanta sampled: a node freezes at least this many
# times (one a quantum, less the sampler's start and stop and a strobe a
# job's start brings).
FREEZES_IN_200_QUANTA_MIN = 150

# Policy=flexible: a busy job beside a sleeping one gets more than this
# many CPU seconds a second on each node, and under Policy=gang less than
# GANG_RATE_MAX_PER_NODE (half a core a node in theory); flexible beats
# gang by at least FLEXIBLE_GAIN.
FLEXIBLE_RATE_MIN_PER_NODE = 0.6
GANG_RATE_MAX_PER_NODE = 0.7
FLEXIBLE_GAIN = 1.3

# Lower bounds, which load only pushes further off (a wait measured on a
# busy host is longer, never shorter), so their tests are not marked:
# the fail-safe opens no sooner than this share of FailSafe after the last
# strobe (the fault falls somewhere in a quantum).
FAILSAFE_EARLIEST = 0.8

# SPDX-License-Identifier: GPL-2.0-or-later
"""The bounds the system tests hold a measured duration to, in one place.

Only lower bounds live here: load pushes a wait further off, never nearer,
so a busy host cannot make them fail.  Shares, rates and upper bounds on
durations are benchmark figures (testsuite/bench), not test assertions."""

# The fail-safe opens no sooner than this share of FailSafe after the last
# strobe (the fault falls somewhere in a quantum).
FAILSAFE_EARLIEST = 0.8

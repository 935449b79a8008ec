# SPDX-License-Identifier: GPL-2.0-or-later
"""Waiting for a condition, for the harness, the tests, the benchmarks and
the demo: one polling loop, on the monotonic clock (a wall-clock step,
from NTP or a VM's resume, must not stretch or cut a wait short)."""

import time


class WaitTimeout(AssertionError):
    """A wait ran out; an AssertionError so that a test fails, not errs."""


class Deadline:
    """A point `timeout` seconds from now on the monotonic clock."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.at = time.monotonic() + timeout

    def left(self):
        """Seconds until the deadline (negative once past)."""
        return self.at - time.monotonic()

    def passed(self):
        return self.left() <= 0


def poll(predicate, timeout, period=0.1):
    """Call predicate every `period` seconds until it returns something
    true, for at most `timeout` seconds; return that value, or the last
    (false) value once the time is up.  The predicate is always called at
    least once, and once more at the deadline."""
    deadline = Deadline(timeout)
    while True:
        last = predicate()
        if last or deadline.passed():
            return last
        time.sleep(max(0.0, min(period, deadline.left())))


def wait_for(predicate, timeout, what, period=0.1, error=WaitTimeout):
    """poll() that raises `error` naming `what` (and the predicate's last
    value) when the time is up.  Exceptions of the predicate propagate: it
    raises to give up early (a daemon that died)."""
    last = poll(predicate, timeout, period)
    if not last:
        raise error("timed out after %g s waiting for %s (last: %r)"
                    % (timeout, what, last))
    return last

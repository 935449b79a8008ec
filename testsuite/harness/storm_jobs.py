# SPDX-License-Identifier: GPL-2.0-or-later
"""Jobs that end with the block that submitted them.

A test that leaves a job behind holds nodes (or a time slot) that the next
test on the same cluster expects free, so every submission is cancelled,
waited for until Slurm has ended it and, by default, until its nodes are
idle again, whether the block passed or failed."""

import contextlib


def cancel_jobs(cluster, jobs, timeout=60):
    """scancel the jobs (None entries skipped) and wait until each ended."""
    jobs = [j for j in jobs if j]
    if not jobs:
        return
    cluster.run(["scancel"] + [str(j) for j in jobs], check=False)
    for j in jobs:
        cluster.wait_job(j, timeout=timeout)


@contextlib.contextmanager
def jobs_cancelled(cluster, *jobids, timeout=60, idle_timeout=60):
    """Yield a list holding jobids; every job in it on exit (append the
    ones the block submits) is cancelled and waited for (`timeout` each),
    then the nodes for idle (idle_timeout; None: not waited for)."""
    jobs = list(jobids)
    try:
        yield jobs
    finally:
        cancel_jobs(cluster, jobs, timeout)
        if idle_timeout is not None:
            cluster.wait_idle(timeout=idle_timeout)


@contextlib.contextmanager
def submitted(cluster, *sbatch_args, **cleanup):
    """sbatch the arguments; yield the job id; cancel it on exit as
    jobs_cancelled does (cleanup: its timeout and idle_timeout)."""
    with jobs_cancelled(cluster, **cleanup) as jobs:
        jobs.append(cluster.sbatch(*sbatch_args))
        yield jobs[0]

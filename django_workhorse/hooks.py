"""What the ``WORKHORSE['ON_JOB_FAILURE']`` and ``ON_JOB_CANCELED`` hooks receive.

The worker builds a ``JobFailure`` after each failed run is recorded (a
failure that will be retried, a terminal one, a timeout, or a job that
stalled past its ``max_stalled``) and passes it to the hook. It is part of
the public surface (``django_workhorse.JobFailure``) so that a hook can be
typed; the worker is not imported to get it. ``JobCanceled`` is the same for
a run that ended canceled (``django_workhorse.JobCanceled``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobFailure:
    """What ``WORKHORSE['ON_JOB_FAILURE']`` receives after a failed run is recorded."""

    job_id: int
    name: str
    queue: str
    attempt: int
    """The attempt that failed (1 for the first run)."""
    max_attempts: int
    will_retry: bool
    """True when the job will run again; False when it ended failed."""
    exception: BaseException
    """What the handler raised (a ``JobTimeout`` for a timed-out run, a
    ``StalledJobError`` for a job that stalled too often)."""
    timed_out: bool = False
    """True when the attempt ran past the job's ``timeout``."""
    stalled: bool = False
    """True when the job failed for stalling past its ``max_stalled``; then
    ``exception`` is a ``StalledJobError`` saying how often it stalled."""


@dataclass(frozen=True)
class JobCanceled:
    """What ``WORKHORSE['ON_JOB_CANCELED']`` receives once a canceled run is recorded."""

    job_id: int
    name: str
    queue: str
    attempt: int
    """The attempt that was running when the cancel reached it."""
    max_attempts: int
    reason: str | None
    """The reason given to ``Admin.cancel``, if any."""

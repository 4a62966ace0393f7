"""What the ``WORKHORSE['ON_JOB_FAILURE']`` and ``ON_JOB_CANCELED`` hooks receive.

Whoever ran the job (a worker, or ``run_jobs`` in a test) builds a
``JobFailure`` after each failed run is recorded (a failure that will be
retried, a terminal one, a timeout, or, for a worker's stall recovery, a
job that stalled past its ``max_stalled``) and passes it to the hook. It is part of
the public surface (``django_workhorse.JobFailure``) so that a hook can be
typed; the worker is not imported to get it. ``JobCancel`` is the same for
a run that ended canceled (``django_workhorse.JobCancel``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any


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
class JobCancel:
    """What ``WORKHORSE['ON_JOB_CANCELED']`` receives once a canceled run is recorded."""

    job_id: int
    name: str
    queue: str
    attempt: int
    """The attempt that was running when the cancel reached it."""
    max_attempts: int
    reason: str | None
    """The reason given to ``Admin.cancel``, if any."""


_RENAMED = {"JobCanceled": "JobCancel"}
"""Old public names: ``JobCanceled`` differed from the exception's old name
``JobCancelled`` by one letter and meant something else."""


def deprecated_name(module: str, name: str) -> Any:
    """The object an old name stands for, with a ``DeprecationWarning``; an
    ``AttributeError`` for any other name (module ``__getattr__``)."""
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated: it is {module}.{new} (what ON_JOB_CANCELED "
        "receives), not to be confused with the exception JobCanceledError",
        DeprecationWarning,
        stacklevel=3,
    )
    return globals()[new]


def __getattr__(name: str) -> Any:
    return deprecated_name(__name__, name)

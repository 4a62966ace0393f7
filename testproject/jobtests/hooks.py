"""``WORKHORSE['ON_JOB_FAILURE']`` and ``['ON_JOB_CANCELED']`` hooks for the acceptance tests.

Both store what they received in ``FailureCall``; ``record_then_raise`` then
raises, to show that a broken hook does not disturb job processing.
"""

from __future__ import annotations

import time

from django_workhorse import JobCancel, JobFailure

from .models import FailureCall


def _store(hook: str, failure: JobFailure) -> None:
    FailureCall.objects.create(
        hook=hook,
        job_id=failure.job_id,
        name=failure.name,
        queue=failure.queue,
        attempt=failure.attempt,
        max_attempts=failure.max_attempts,
        will_retry=failure.will_retry,
        timed_out=failure.timed_out,
        exception_type=type(failure.exception).__name__,
        exception_message=str(failure.exception),
    )


def record_failure(failure: JobFailure) -> None:
    _store("record_failure", failure)


class BrokenHookError(RuntimeError):
    """Raised on purpose by ``record_then_raise``."""


def record_then_raise(failure: JobFailure) -> None:
    _store("record_then_raise", failure)
    raise BrokenHookError(f"hook broken on purpose (job {failure.job_id})")


def record_then_exit(failure: JobFailure) -> None:
    """A hook that ends with ``sys.exit()``, as a script's code might."""
    _store("record_then_exit", failure)
    raise SystemExit(3)


def record_canceled(canceled: JobCancel) -> None:
    """``ON_JOB_CANCELED``: stored as a ``FailureCall`` of hook 'record_canceled',
    its reason as the message."""
    FailureCall.objects.create(
        hook="record_canceled",
        job_id=canceled.job_id,
        name=canceled.name,
        queue=canceled.queue,
        attempt=canceled.attempt,
        max_attempts=canceled.max_attempts,
        will_retry=False,
        timed_out=False,
        exception_type="JobCancel",
        exception_message=canceled.reason or "",
    )


def record_then_hang(failure: JobFailure) -> None:
    """A hook that never returns (a socket without a timeout, say): records
    its call, then sleeps for an hour."""
    _store("record_then_hang", failure)
    time.sleep(3600)

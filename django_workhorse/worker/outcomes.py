"""What becomes of a claimed run, decided in one place for every runner.

A claimed job either may not run at all (its payload cannot be read, no
handler answers to its name, its payload no longer fits the handler), or it
runs and ends: it returns, raises, times out, is canceled or goes to sleep.
This module holds the rules both ``runworker`` and ``run_jobs``
(``django_workhorse.testing``) apply to those ends: the admission checks
and their messages, the error envelope stored for a failed attempt, the
error of a timeout, whether (and when) a failed attempt is retried, and the
shape of what the database recorded (``Recorded``). The steps that use them
are the executor's (``worker/executor.py``: ``close`` decides how an attempt
closes), which both runners take each run through before they write its
closing through the same SQL functions, so a job ends the same way under
both. Nothing here talks to the database or imports a runner.
"""

from __future__ import annotations

import json
import logging
import traceback
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.discovery import unknown_job_message
from ..exceptions import (
    InvalidCheckpointError,
    InvalidPayloadError,
    JobCanceledError,
    JobTimeout,
    UnknownJobError,
    exception_path,
)
from ..states import AttemptOutcome

if TYPE_CHECKING:
    from ..core.definitions import JobDefinition
    from ..db.store import ClaimedJob

logger = logging.getLogger("django_workhorse.worker")

TRACEBACK_LIMIT = 16_000
MESSAGE_LIMIT = 16_000


# -- the stored error ----------------------------------------------------------


def error_envelope(exc: BaseException, *, message: str | None = None) -> dict[str, str]:
    """The JSON stored for a failed attempt: exception class, message, traceback."""
    text = "".join(traceback.format_exception(exc))
    return {
        "type": exception_path(type(exc)),
        "message": storable(message if message is not None else describe(exc)),
        "traceback": storable(text[-TRACEBACK_LIMIT:]),
    }


def error_json(exc: BaseException, *, message: str | None = None) -> str:
    """``error_envelope`` as the text ``workhorse_fail_many_v1`` takes."""
    return json.dumps(error_envelope(exc, message=message), separators=(",", ":"))


def describe(exc: BaseException) -> str:
    """``str(exc)``, cut to ``MESSAGE_LIMIT`` characters, for the record and
    the log lines of a failure.

    The exception is the handler's: its ``__str__`` may raise (which, on a
    worker's writer thread, would stop the worker) or return megabytes
    (stored in every outcome row and log line).
    """
    try:
        text = str(exc)
    except BaseException as failure:  # the handler's code, run on the runner's thread
        return f"<str() of the {type(exc).__name__} raised {type(failure).__name__}>"
    if len(text) > MESSAGE_LIMIT:
        text = f"{text[:MESSAGE_LIMIT]}... ({len(text) - MESSAGE_LIMIT} more characters)"
    return text


def storable(text: str) -> str:
    """``text`` with what jsonb cannot hold replaced: lone surrogates (from
    ``surrogateescape`` file names, say) and NUL characters."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\\u0000")


# -- before the handler runs -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a claimed job does not reach its handler: the error its attempt
    fails with, and whether that attempt may be retried."""

    error: Exception
    retryable: bool


def admit(
    job: ClaimedJob, definition: JobDefinition[..., Any] | None, runner: str
) -> Refusal | None:
    """None when ``job`` may run; else how its attempt fails.

    ``runner`` names who claimed it (a worker id, or ``run_jobs``), for the
    message of a name no handler answers to: that is about the code the
    runner has, and deploying it fixes it, so the attempt is retried like any
    failure. A payload that cannot be read, or no longer fits the handler,
    would fail the same way every time: never retried.
    """
    if job.unreadable is not None:
        error = InvalidPayloadError(f"{job.unreadable}; the job cannot run, enqueue it again")
        return Refusal(error, retryable=False)
    if definition is None:
        if job.attempt < job.max_attempts:
            then = "the attempt is retried with backoff"
        else:
            then = "that was its last attempt: retry the job once the code is deployed"
        return Refusal(UnknownJobError(unknown_job_message(job.name, runner, then)), retryable=True)
    try:
        definition.check_payload(job.payload)
    except InvalidPayloadError as exc:
        error = InvalidPayloadError(
            f"{exc}; the payload no longer fits the handler, fix the handler or the job"
        )
        return Refusal(error, retryable=False)
    return None


# -- after it ends ---------------------------------------------------------------


def timeout_error(timeout: float | None, *, abandoned: bool) -> JobTimeout:
    """The error of an attempt that ran past its ``timeout``; ``abandoned``
    when the handler's thread is still going (a worker cannot stop it)."""
    message = f"the attempt ran longer than its timeout of {timeout} s"
    if abandoned:
        message += "; its thread is abandoned and the slot stays busy until it returns"
    return JobTimeout(message)


class Recorded(NamedTuple):
    """What the database recorded for a run's end, as its writer read it
    back from the SQL function that wrote it: what a run's after-recorded
    call (the Tasks backend's ``task_finished``) and the hooks report,
    never a guess made before the write."""

    outcome: str
    """The attempt's outcome as written (``AttemptOutcome``): succeeded,
    failed, timed_out, canceled or slept."""
    will_retry: bool = False
    """A failure whose job goes back to the queue for another attempt."""
    run_at: datetime | None = None
    """When the job runs again (a retry, a wake-up), if it does."""
    retry_in: float | None = None
    """Seconds from the write to ``run_at`` (a retry)."""
    reason: str | None = None
    """The operator's reason of a cancel."""
    error: BaseException | None = None
    """The exception the failed attempt was recorded with."""

    @property
    def ended(self) -> bool:
        """The job is finished: succeeded, or failed or canceled for good."""
        return self.outcome == AttemptOutcome.SUCCEEDED or (
            self.outcome != AttemptOutcome.SLEPT and not self.will_retry
        )


@dataclass(frozen=True, slots=True)
class Retry:
    """Whether a failed attempt may be retried, and after how long."""

    retryable: bool
    delay: float | None
    """Seconds from the job's own backoff callable; None lets the database
    apply the job's backoff policy."""


def retry_decision(
    definition: JobDefinition[..., Any] | None,
    exc: BaseException,
    attempt: int,
    *,
    kind: str = AttemptOutcome.FAILED.value,
    retryable: bool = True,
) -> Retry:
    """The retry of an attempt that failed with ``exc``. ``retryable=False``
    (a refused payload or result) and a cancel are never retried, nor is a
    checkpoint refused (it would be refused again); a job's ``retry_on``
    narrows the rest. The database still applies ``max_attempts``.

    A job with no handler here (``definition`` None) is retried with the
    stored backoff: the code that defines it may be deployed by then.
    """
    if kind == AttemptOutcome.CANCELED or isinstance(
        exc, JobCanceledError | InvalidCheckpointError
    ):
        return Retry(False, None)
    if not retryable:
        return Retry(False, None)
    if definition is None:
        return Retry(True, None)
    if not definition.should_retry(exc):
        return Retry(False, None)
    try:
        delay = definition.retry_delay(attempt)
    except BaseException as hook_exc:  # user code: SystemExit and the like too
        logger.error("workhorse: backoff callable of %s failed: %s", definition.name, hook_exc)
        delay = None
    return Retry(True, delay)

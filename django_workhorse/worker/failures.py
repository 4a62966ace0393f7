"""Failed runs: how each closes, how it is described in the database, the
log lines about it, and the ``ON_JOB_FAILURE`` call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..exceptions import JobCancelled, StalledJobError
from ..hooks import JobFailure
from ..outcomes import describe, retry_decision
from ..states import AttemptOutcome
from ..store import ClaimedJob, FailResult, Recovered
from .execution import Finished, Running
from .logs import job_extra

logger = logging.getLogger("django_workhorse.worker")


@dataclass(frozen=True, slots=True)
class Failure:
    """How a failed run closes, as ``workhorse_fail_many_v1`` is told."""

    item: Finished
    kind: str
    """'failed', 'timed_out' or 'canceled' (the attempt's outcome)."""
    retryable: bool
    delay: float | None
    """Seconds before the retry from the job's own backoff callable; None
    lets the database apply the job's backoff policy."""

    @property
    def exception(self) -> BaseException:
        assert self.item.error is not None, "a failure carries its exception"
        return self.item.error

    @property
    def canceled(self) -> bool:
        return self.kind == AttemptOutcome.CANCELED


def is_cancel(item: Finished) -> bool:
    """A run that ends canceled, never retried: acked on an operator's cancel,
    a handler that raised ``JobCancelled``, or an async handler cancelled
    after a cancel was requested (its ``CancelledError`` is not a failure)."""
    exc = item.error
    return (
        item.kind == AttemptOutcome.CANCELED
        or isinstance(exc, JobCancelled)
        or (isinstance(exc, asyncio.CancelledError) and item.running.context.cancel_requested)
    )


def classify(item: Finished) -> Failure:
    """How a failed run closes: its kind, whether it may retry, and the delay."""
    if is_cancel(item):
        return Failure(item, AttemptOutcome.CANCELED.value, False, None)
    exc = item.error
    assert exc is not None, "only failed runs are classified"
    running = item.running
    retry = retry_decision(
        running.definition, exc, running.job.attempt, kind=item.kind, retryable=item.retryable
    )
    return Failure(item, item.kind, retry.retryable, retry.delay)


def log_failure(running: Running, result: FailResult, kind: str, exc: BaseException) -> None:
    """A warning while retries remain (with the delay), an error when terminal."""
    job = running.job
    extra = job_extra(job.job_id, job.queue, job.attempt, job.name)
    if result.will_retry:
        logger.warning(
            "job %s %s #%s attempt %s/%s %s: %s: %s; retrying in %.1f s",
            job.name,
            job.queue,
            job.job_id,
            job.attempt,
            job.max_attempts,
            kind.replace("_", " "),
            type(exc).__name__,
            describe(exc),
            max(0.0, result.retry_in or 0.0),
            extra=extra,
        )
    else:
        logger.error(
            "job %s %s #%s failed at attempt %s/%s: %s: %s",
            job.name,
            job.queue,
            job.job_id,
            job.attempt,
            job.max_attempts,
            type(exc).__name__,
            describe(exc),
            extra=extra,
            exc_info=(type(exc), exc, exc.__traceback__),
        )


def log_sleep(running: Running, name: str, run_at: object) -> None:
    """An INFO line for a job put to sleep (``ctx.sleep``)."""
    job = running.job
    logger.info(
        "job %s #%s sleeps (%r) until %s; no attempt used",
        job.name,
        job.job_id,
        name,
        run_at,
        extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
    )


def report_lost(running: Running, what: str) -> None:
    """The database refused a write of ``running``: its lease was lost."""
    job = running.job
    logger.warning(
        "job %s #%s: lease lost (fence %s); its %s was refused, another run owns the job",
        job.name,
        job.job_id,
        job.fence,
        what,
        extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
    )


def job_failure(
    job: ClaimedJob | Recovered,
    *,
    will_retry: bool,
    exception: BaseException,
    timed_out: bool = False,
    stalled: bool = False,
) -> JobFailure:
    """The ``JobFailure`` of ``job``, a claimed job that failed or one that
    recovery failed: both name the job and its attempt alike."""
    return JobFailure(
        job_id=job.job_id,
        name=job.name,
        queue=job.queue,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        will_retry=will_retry,
        exception=exception,
        timed_out=timed_out,
        stalled=stalled,
    )


def call_hook(
    hook: Callable[[JobFailure], object] | None, failure: Failure, result: FailResult
) -> None:
    """Tell ``WORKHORSE['ON_JOB_FAILURE']`` about a recorded failure; a hook
    that raises is logged and processing goes on."""
    if hook is None:
        return
    job = failure.item.running.job
    try:
        hook(
            job_failure(
                job,
                will_retry=result.will_retry,
                exception=failure.exception,
                timed_out=failure.kind == AttemptOutcome.TIMED_OUT,
            )
        )
    except BaseException:  # user code: a sys.exit() in a hook must not stop the worker
        logger.exception(
            "workhorse: on_job_failure hook raised for job %s; processing goes on",
            job.job_id,
            extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
        )


def stall_failure(item: Recovered) -> JobFailure:
    """What ``ON_JOB_FAILURE`` receives for a job failed by too many stalls."""
    return job_failure(
        item,
        will_retry=False,
        exception=StalledJobError(
            f"the job stalled {item.stall_count} times (max_stalled is {item.max_stalled}): "
            "its worker stopped renewing the lease"
        ),
        stalled=True,
    )


def log_recovered(item: Recovered) -> None:
    """A warning for a job taken back to run again; an error for one failed
    by too many stalls (it will not run again)."""
    extra = job_extra(item.job_id, item.queue, item.attempt, item.name)
    if item.failed:
        logger.error(
            "job %s %s #%s failed: it stalled %s times (max_stalled is %s); "
            "its worker stopped renewing the lease",
            item.name,
            item.queue,
            item.job_id,
            item.stall_count,
            item.max_stalled,
            extra=extra,
        )
    else:
        logger.warning(
            "job #%s recovered from an expired lease (stall %s)",
            item.job_id,
            item.stall_count,
            extra=extra,
        )


def call_stall_hook(hook: Callable[[JobFailure], object] | None, item: Recovered) -> None:
    """Tell ``ON_JOB_FAILURE`` about a job failed by too many stalls; a hook
    that raises is logged and processing goes on."""
    if hook is None:
        return
    try:
        hook(stall_failure(item))
    except BaseException:  # user code, as in call_hook
        logger.exception(
            "workhorse: on_job_failure hook raised for job %s; processing goes on",
            item.job_id,
            extra=job_extra(item.job_id, item.queue, item.attempt, item.name),
        )

"""What is said about a run once the database recorded its end: the one
``report`` of both runners.

Whoever wrote the run (the worker's writer, the claim that wrote a held
success: the loop's, or with one slot the handler thread's; ``run_jobs``)
hands ``Reporter.report`` the ``Closing`` it wrote and what the SQL function
answered (``Recorded``, or None when the fence refused the write: the run
lost its job); the release at shutdown hands ``Reporter.canceled`` the runs
it ended canceled. The reporter logs the end, has
``ON_JOB_FAILURE`` or ``ON_JOB_CANCELED`` called, and keeps what was
recorded on the run's context for its after-recorded call (a Django
task's ``task_finished``), made by ``after_recorded`` once the runner has
noted the write. A cancel is not a failure: ``ON_JOB_FAILURE`` is not
called for it.

Calls of the application's code go through a sink: the worker's hook thread
(``hookcalls.HookCalls``), so that a slow hook holds up no result, or
``InlineCalls`` in ``run_jobs``, which makes them at once, in the test's
thread. Nothing here reads the database.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Protocol

from ..core.hooks import JobCancel, JobFailure
from ..db import store
from .cancels import call_cancel_hook
from .executor import CANCELED, SLEPT, SUCCEEDED, TIMED_OUT, Closing, Running
from .failures import job_failure
from .logs import job_extra
from .outcomes import Recorded, describe

logger = logging.getLogger("django_workhorse.worker")

WRITTEN_SUCCESS = Recorded(SUCCEEDED)
"""What a written success recorded: the same for every success, one object."""


class Calls(Protocol):
    """Where the application's code is called once a run's end is recorded."""

    def submit(self, job_id: int, what: str, call: Callable[[], object]) -> None: ...


class InlineCalls:
    """``run_jobs``' sink: each call is made at once, in the caller's thread
    (the hook wrappers log what a hook raises, as on a worker's hook thread)."""

    def submit(self, job_id: int, what: str, call: Callable[[], object]) -> None:
        call()


class Reporter:
    """Reports the recorded ends of one runner's runs (see the module)."""

    def __init__(
        self,
        calls: Calls,
        on_failure: Callable[[JobFailure], object] | None = None,
        on_canceled: Callable[[JobCancel], object] | None = None,
    ) -> None:
        self.calls = calls
        self.on_failure = on_failure
        self.on_canceled = on_canceled

    def report(self, closing: Closing, recorded: Recorded | None) -> None:
        """``closing`` was written and the database answered ``recorded``
        (None: refused by the fence, its lease was lost). A success was
        logged as its handler returned (``logs.log_success``): a written one
        has nothing to report, and the runners do not call this for it (the
        drain's per-job cost)."""
        item = closing.item
        running = item.running
        context = running.context
        if item.abandoned or context._awaits_recorded():
            context._note_recorded(recorded)
        outcome = closing.outcome
        if recorded is None:
            if outcome == SLEPT:
                lost(running, f"sleep {getattr(item.error, 'name', '')!r}")
            else:
                lost(running, "success" if outcome == SUCCEEDED else "failure")
        elif outcome == SUCCEEDED:
            return
        elif recorded.outcome == CANCELED:
            self.canceled(running, recorded.reason)
        elif outcome == SLEPT:
            log_sleep(running, getattr(item.error, "name", ""), recorded.run_at)
        else:
            log_failure(running, recorded, closing.exception)
            if self.on_failure is not None:
                self.calls.submit(
                    running.job.job_id,
                    "on_job_failure",
                    functools.partial(call_hook, self.on_failure, running, recorded),
                )

    def canceled(self, running: Running, reason: str | None) -> None:
        """``running``'s job was recorded canceled (by its write, or by a
        release at shutdown): log it and have ``ON_JOB_CANCELED`` called."""
        log_canceled(running, reason)
        if self.on_canceled is not None:
            self.calls.submit(
                running.job.job_id,
                "on_job_canceled",
                functools.partial(call_cancel_hook, self.on_canceled, of_run(running, reason)),
            )

    def dropped(self, running: Running) -> None:
        """Nothing of ``running`` could be written (the database refused even
        its failure): its job runs again once its lease expires."""
        running.context._note_recorded(None)

    def after_recorded(self, running: Running, *, written: bool) -> None:
        """Once the runner noted that ``running``'s end is written (``written``)
        or that nothing of it will be: hand the call its code asked for
        (``JobContext._call_when_recorded``) what was recorded. What
        ``report`` kept for it, or else: a success written
        (``WRITTEN_SUCCESS``, which ``report`` is not called for), or nothing
        (None: the run lost its job)."""
        context = running.context
        call = context._take_after_recorded(WRITTEN_SUCCESS if written else None)
        if call is not None:
            self.calls.submit(running.job.job_id, "task_finished", call)


def recorded_failure(closing: Closing, result: store.FailResult) -> Recorded:
    """What ``workhorse_fail_many_v1`` answered for ``closing``, as reported."""
    return Recorded(
        CANCELED if result.canceled else closing.outcome,
        result.will_retry,
        result.run_at,
        result.retry_in,
        result.reason,
        closing.exception,
    )


def lost(running: Running, what: str) -> None:
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


def log_failure(running: Running, recorded: Recorded, exc: BaseException) -> None:
    """A warning while retries remain (with the delay), an error when terminal."""
    job = running.job
    extra = job_extra(job.job_id, job.queue, job.attempt, job.name)
    if recorded.will_retry:
        logger.warning(
            "job %s %s #%s attempt %s/%s %s: %s: %s; retrying in %.1f s",
            job.name,
            job.queue,
            job.job_id,
            job.attempt,
            job.max_attempts,
            recorded.outcome.replace("_", " "),
            type(exc).__name__,
            describe(exc),
            max(0.0, recorded.retry_in or 0.0),
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


def log_canceled(running: Running, reason: str | None) -> None:
    job = running.job
    logger.info(
        "job %s %s #%s canceled at attempt %s/%s%s",
        job.name,
        job.queue,
        job.job_id,
        job.attempt,
        job.max_attempts,
        f": {reason}" if reason else "",
        extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
    )


def of_run(running: Running, reason: str | None) -> JobCancel:
    job = running.job
    return JobCancel(job.job_id, job.name, job.queue, job.attempt, job.max_attempts, reason)


def call_hook(hook: Callable[[JobFailure], object], running: Running, recorded: Recorded) -> None:
    """Tell ``WORKHORSE['ON_JOB_FAILURE']`` about a recorded failure; a hook
    that raises is logged and processing goes on."""
    job = running.job
    assert recorded.error is not None, "a recorded failure carries its exception"
    try:
        hook(
            job_failure(
                job,
                will_retry=recorded.will_retry,
                exception=recorded.error,
                timed_out=recorded.outcome == TIMED_OUT,
            )
        )
    except BaseException:  # user code: a sys.exit() in a hook must not stop the worker
        logger.exception(
            "workhorse: on_job_failure hook raised for job %s; processing goes on",
            job.job_id,
            extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
        )

"""The handlers that run a Django task inside a workhorse job.

Every task job has the payload ``{"args": [...], "kwargs": {...}, "backend":
alias}`` and one of these two functions as its handler. Each run reads the
job's ``TaskResult`` (status RUNNING, one worker id per attempt), sends
``task_started``, calls the task (with a ``TaskContext`` when it
``takes_context``), then has ``task_finished`` sent with the run's outcome
once that outcome is recorded (by a worker on its hook thread, with the
``ON_JOB_FAILURE`` calls; by ``run_jobs`` right after its write):
SUCCESSFUL with the return value, FAILED when the job ends (the last attempt,
``JobCancelled``, an operator's cancel, a return value that is not JSON),
READY when a retry follows or a durable sleep ends the run. The exception is
raised on, so workhorse records the attempt and decides the retry as for any
job.

A run whose end the worker recorded while the task still ran (a sync task
past its timeout, a run acked canceled) gets a ``task_finished`` that says
what was recorded: the timeout or the cancel as its error, whatever the task
returned or raised afterwards.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from ..context import LeaseLost, SleepRequested, current_job, reset_current, set_current
from ..exceptions import InvalidCheckpointError, InvalidPayloadError, JobCancelled
from ..payloads import result_problem
from .compat import (
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)


def _running_result(backend_alias: str) -> TaskResult:
    backend = task_backends[backend_alias]
    return backend.get_result(str(current_job().job_id))


def _call_args(result: TaskResult) -> tuple[list[Any], dict[str, Any]]:
    task = result.task
    args = list(result.args)
    if task.takes_context:
        args.insert(0, TaskContext(task_result=result))
    return args, dict(result.kwargs)


def _returned(result: TaskResult, value: Any) -> Any:
    """What the run hands the worker for ``value``: normalized as Django
    normalizes return values, SUCCESSFUL in ``result``; or, when the worker
    will refuse to store it (not JSON that round-trips), the value as it came
    and FAILED in ``result`` with the refusal the worker records, as it fails
    such a job without retry."""
    with contextlib.suppress(TypeError, ValueError):  # the refusal below names the part
        value = normalize_json(value)
    problem = result_problem(value)
    if problem is not None:
        _failed(result, InvalidPayloadError(problem), final=True)
        return value
    object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "_return_value", value)
    return value


def _failed(result: TaskResult, exc: BaseException, *, final: bool = False) -> None:
    """The run failed with ``exc``, or the worker recorded another end for it
    meanwhile (then that end's error is the one reported); ``final`` when the
    worker ends the job whatever attempts remain."""
    ctx = current_job()
    exc = ctx._ended_with or exc
    if isinstance(exc, SleepRequested):
        # A durable sleep ends the run, not the attempt, and is no error:
        # the task runs again at its wake time.
        object.__setattr__(result, "status", TaskResultStatus.READY)
        return
    cls = type(exc)
    result.errors.append(
        TaskError(
            exception_class_path=f"{cls.__module__}.{cls.__qualname__}",
            traceback="".join(traceback.format_exception(exc)),
        )
    )
    if isinstance(exc, LeaseLost):
        # This run recorded nothing: the run that holds the job now (or the
        # end that took it) decides how the task ends, so it is not finished.
        object.__setattr__(result, "status", TaskResultStatus.READY)
        return
    # A cancel, raised or requested, ends the job canceled (FAILED to
    # Django) whatever attempts remain: workhorse_fail_many_v1 never retries it.
    # Nor does a worker retry a checkpoint or a sleep it refused.
    ends = (
        final
        or isinstance(exc, JobCancelled | InvalidCheckpointError)
        or ctx.cancel_requested
        or ctx.attempt >= ctx.max_attempts
    )
    if ends:
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
        object.__setattr__(result, "finished_at", timezone.now())
    else:
        object.__setattr__(result, "status", TaskResultStatus.READY)


def _when_recorded(result: TaskResult, exc: BaseException | None = None) -> None:
    """Send ``task_finished`` for ``result`` once the run's end is recorded
    (see the module docstring): a receiver's ``get_result`` reads that end,
    and a slow receiver holds up no result, heartbeat or claim. With the
    exception the task raised, the signal is sent while that exception is
    being handled, so receivers see it in ``sys.exc_info()`` (Django's own
    receiver logs a FAILED task with its traceback). Not for a READY one (a
    retry follows): Django's receiver would print the traceback of every
    attempt at INFO, whatever ``-v`` says, beside the worker's own line."""
    sender = type(result.task.get_backend())
    job = current_job()

    def send() -> None:
        # The run's job is current again, as it was for the run: receivers'
        # log lines carry its id (docs/observability.md), current_job() works.
        token = set_current(job)
        try:
            if exc is None or result.status != TaskResultStatus.FAILED:
                task_finished.send(sender, task_result=result)
                return
            traceback_ = exc.__traceback__
            try:
                raise exc
            except BaseException:
                task_finished.send(sender, task_result=result)
            finally:
                exc.__traceback__ = traceback_  # as recorded: the raise added a frame
        finally:
            reset_current(token)

    job._call_when_recorded(send)


def run_task(args: list[Any], kwargs: dict[str, Any], backend: str) -> Any:
    """Run a sync task for the worker; see the module docstring."""
    result = _running_result(backend)
    task_started.send(type(result.task.get_backend()), task_result=result)
    call_args, call_kwargs = _call_args(result)
    try:
        value = result.task.func(*call_args, **call_kwargs)
    except BaseException as exc:
        _failed(result, exc)
        _when_recorded(result, exc)
        raise
    return _ended(result, value)


def _ended(result: TaskResult, value: Any) -> Any:
    """What a task that returned ``value`` hands the worker."""
    ended = current_job()._ended_with
    if ended is not None:
        # Timed out or canceled while it ran: its return value was not kept.
        _failed(result, ended)
    else:
        value = _returned(result, value)
    _when_recorded(result)
    return value


async def run_task_async(args: list[Any], kwargs: dict[str, Any], backend: str) -> Any:
    """Run an async task for the worker, on its event loop; see the module docstring."""
    result = await sync_to_async(_running_result)(backend)
    # asend runs sync receivers (which may use the ORM) off the event loop.
    await task_started.asend(type(result.task.get_backend()), task_result=result)
    call_args, call_kwargs = _call_args(result)
    try:
        value = await result.task.func(*call_args, **call_kwargs)
    except BaseException as exc:
        _failed(result, exc)
        _when_recorded(result, exc)
        raise
    return _ended(result, value)

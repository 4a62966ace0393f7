"""The handlers that run a Django task inside a workhorse job.

Every task job has the payload ``{"args": [...], "kwargs": {...}, "backend":
alias}`` and one of these two functions as its handler. Each run reads the
job's ``TaskResult`` (status RUNNING, one worker id per attempt), sends
``task_started``, calls the task (with a ``TaskContext`` when it
``takes_context``), then has ``task_finished`` sent once the run's end is
recorded (by a worker on its hook thread, with the ``ON_JOB_FAILURE`` calls;
by ``run_jobs`` right after its write), with the end the database recorded
(``outcomes.Recorded``, handed over by the runner's ``report``), never a
guess made before the write: SUCCESSFUL with the return value, FAILED when
the job ended (the last attempt, ``JobCanceledError``, an operator's cancel, a
return value that could not be stored), READY when a retry follows or a
durable sleep ends the run. The exception is raised on, so workhorse
records the attempt and decides the retry as for any job.

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

from ..context import SleepRequested, current_job, reset_current, set_current
from ..exceptions import exception_path
from ..states import AttemptOutcome
from ..worker.outcomes import Recorded
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


def _as_returned(value: Any) -> Any:
    """``value`` normalized as Django normalizes return values; as it came
    when it cannot be (the worker then refuses to store it, and records
    the refusal)."""
    with contextlib.suppress(TypeError, ValueError):  # the refusal names the part
        return normalize_json(value)
    return value


def _as_recorded(
    result: TaskResult, recorded: Recorded | None, value: Any, exc: BaseException | None
) -> None:
    """Set ``result`` to the end the worker recorded for the run:
    SUCCESSFUL with the value, FAILED when the job ended (the last attempt,
    a cancel, a refused result or checkpoint), READY when a retry follows,
    a durable sleep ended the run, or the run recorded nothing (None: it
    lost its job, and the run that holds the job now decides). The error
    listed is the one recorded (a timeout, a cancel acked while the task
    ran), else the one the task raised."""
    if recorded is not None and recorded.outcome == AttemptOutcome.SUCCEEDED:
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "finished_at", timezone.now())
        object.__setattr__(result, "_return_value", value)
        return
    error = (recorded.error if recorded is not None else None) or exc
    if error is not None and not isinstance(error, SleepRequested):
        result.errors.append(
            TaskError(
                exception_class_path=exception_path(type(error)),
                traceback="".join(traceback.format_exception(error)),
            )
        )
    if recorded is not None and recorded.ended:
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
        object.__setattr__(result, "finished_at", timezone.now())
    else:
        object.__setattr__(result, "status", TaskResultStatus.READY)


def _when_recorded(result: TaskResult, value: Any = None, exc: BaseException | None = None) -> None:
    """Send ``task_finished`` for ``result`` once the run's end is recorded
    (see the module docstring), with that end: a receiver's ``get_result``
    reads the same, and a slow receiver holds up no result, heartbeat or
    claim. With the exception the task raised, the signal is sent while
    that exception is being handled, so receivers see it in
    ``sys.exc_info()`` (Django's own receiver logs a FAILED task with its
    traceback). Not for a READY one (a retry follows): Django's receiver
    would print the traceback of every attempt at INFO, whatever ``-v``
    says, beside the worker's own line."""
    sender = type(result.task.get_backend())
    job = current_job()

    def send(recorded: Recorded | None) -> None:
        _as_recorded(result, recorded, value, exc)
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
        value = _as_returned(result.task.func(*call_args, **call_kwargs))
    except BaseException as exc:
        _when_recorded(result, exc=exc)
        raise
    _when_recorded(result, value)
    return value


async def run_task_async(args: list[Any], kwargs: dict[str, Any], backend: str) -> Any:
    """Run an async task for the worker, on its event loop; see the module docstring."""
    result = await sync_to_async(_running_result)(backend)
    # asend runs sync receivers (which may use the ORM) off the event loop.
    await task_started.asend(type(result.task.get_backend()), task_result=result)
    call_args, call_kwargs = _call_args(result)
    try:
        value = _as_returned(await result.task.func(*call_args, **call_kwargs))
    except BaseException as exc:
        _when_recorded(result, exc=exc)
        raise
    _when_recorded(result, value)
    return value

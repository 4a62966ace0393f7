"""Django ``@task`` functions the acceptance tests run under ``runworker``.

Each run and each task signal leaves a ``RunRecord`` (label ``task:<name>``
or ``signal:<signal>:<status>``), so a test can see from its own process what
happened in the worker's.
"""

from __future__ import annotations

import asyncio
import os
import time

from asgiref.sync import sync_to_async
from django.dispatch import receiver
from django.utils import timezone

import django_workhorse as workhorse
from django_workhorse.tasks.compat import task_enqueued, task_finished, task_started

from .jobs import PlannedFailure
from .models import RunRecord

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task


def record(label: str, job_id: int, attempt: int, worker_id: str = "") -> RunRecord:
    return RunRecord.objects.create(
        job_id=job_id,
        attempt=attempt,
        pid=os.getpid(),
        worker_id=worker_id,
        label=label,
        started_at=timezone.now(),
    )


@task(queue_name="jobtests.tasks")
def add(a: int, b: int) -> int:
    """Adds, recording the run."""
    from django_workhorse import current_job

    ctx = current_job()
    record("task:add", ctx.job_id, ctx.attempt, ctx.worker_id)
    return a + b


@task(queue_name="jobtests.tasks", max_attempts=2)
def always_fails(message: str) -> None:
    """Fails every attempt; two attempts."""
    raise PlannedFailure(message)


@task(
    queue_name="jobtests.tasks",
    max_attempts=4,
    timeout=45,
    max_stalled=3,
    backoff=workhorse.fixed(3600),
)
def retries_in_an_hour(message: str) -> None:
    """Fails every attempt, each retry an hour later; its options set by the decorator."""
    raise PlannedFailure(message)


@task(queue_name="jobtests.tasks", max_attempts=2, timeout=1, backoff=workhorse.fixed(0))
def fate_task(kind: str) -> str:
    """Ends as ``kind`` says (``jobtests.fates.end_as``)."""
    from .fates import end_as

    return end_as(kind)


@task(queue_name="jobtests.tasks")
def gives_up(message: str) -> None:
    """Ends its job canceled on its first attempt, though attempts remain."""
    raise workhorse.JobCanceledError(message)


@task(queue_name="jobtests.tasks")
def ignores_its_cancel() -> str:
    """Runs until an operator's cancel reaches it (20 s at most), then returns
    as if nothing happened."""
    from django_workhorse import current_job

    ctx = current_job()
    record("task:ignores_its_cancel", ctx.job_id, ctx.attempt, ctx.worker_id)
    deadline = time.monotonic() + 20
    while not ctx.cancel_requested and time.monotonic() < deadline:
        time.sleep(0.02)
    return "done anyway"


@task(queue_name="jobtests.tasks", max_attempts=1, timeout=0.5)
def overruns(seconds: float) -> str:
    """Runs past its half-second timeout, then returns."""
    from django_workhorse import current_job

    ctx = current_job()
    record("task:overruns", ctx.job_id, ctx.attempt, ctx.worker_id)
    time.sleep(seconds)
    return "too late"


@task(queue_name="jobtests.tasks", takes_context=True)
def fails_once(context, label: str) -> dict:
    """Fails attempt 1, succeeds at attempt 2 and returns what its context said."""
    result = context.task_result
    record(f"task:fails_once:{label}", int(result.id), context.attempt)
    if context.attempt == 1:
        raise PlannedFailure("first attempt fails")
    return {"attempt": context.attempt, "worker_ids": len(result.worker_ids)}


@task(queue_name="jobtests.tasks")
async def async_add(a: int, b: int) -> int:
    """An async task: yields to the loop once, then adds."""
    await asyncio.sleep(0)
    from django_workhorse import current_job

    ctx = current_job()
    await sync_to_async(record)("task:async_add", ctx.job_id, ctx.attempt, ctx.worker_id)
    return a + b


@task(queue_name="jobtests.tasks")
def returns_a_date() -> object:
    """Returns a datetime, which is not JSON (Django's normalize_json refuses it)."""
    return timezone.now()


@task(queue_name="jobtests.tasks")
def returns_int_keys() -> dict:
    """Returns a dict with an int key: Django's normalize_json keeps it, but it
    would come back from JSON as a string, so workhorse refuses to store it."""
    return {1: "one"}


@task(queue_name="jobtests.tasks", max_attempts=1)
def naps(label: str) -> str:
    """Takes a durable sleep of no time on its first run, then returns its label."""
    from django_workhorse import current_job

    current_job().sleep("nap", 0)
    return label


@task(queue_name="jobtests.tasks")
def checkpoints_a_date() -> None:
    """Records a checkpoint whose result is not JSON, which fails it without retry."""
    from django_workhorse import current_job

    current_job().checkpoint("when", lambda: {"when": timezone.now()})


@task(queue_name="jobtests.tasks", max_attempts=1)
def loses_its_lease() -> None:
    """Takes its own job from itself (as a recovery would), then records a
    checkpoint, which the database refuses: the run no longer holds the job."""
    from django.db import connection

    from django_workhorse import current_job

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_job_runtime SET fence = fence + 1 WHERE job_id = %s",
            [current_job().job_id],
        )
    current_job().checkpoint("stage", lambda: 1)


@task(queue_name="jobtests.tasks-order")
def in_order(label: str) -> str:
    """Records its label, to see the order tasks ran in."""
    from django_workhorse import current_job

    ctx = current_job()
    record(f"order:{label}", ctx.job_id, ctx.attempt, ctx.worker_id)
    return label


def _ours(task_result) -> bool:
    return task_result.task.module_path.startswith("jobtests.tasks.")


@receiver(task_enqueued)
def _on_enqueued(sender, task_result, **kwargs) -> None:
    if _ours(task_result):
        record(f"signal:enqueued:{task_result.status}", int(task_result.id), 0)


@receiver(task_started)
def _on_started(sender, task_result, **kwargs) -> None:
    if _ours(task_result):
        record(
            f"signal:started:{task_result.status}",
            int(task_result.id),
            task_result.attempts,
            task_result.worker_ids[-1],
        )


@receiver(task_finished)
def _on_finished(sender, task_result, **kwargs) -> None:
    if _ours(task_result):
        record(
            f"signal:finished:{task_result.status}",
            int(task_result.id),
            task_result.attempts,
            task_result.worker_ids[-1],
        )


@task(queue_name="jobtests.tasks")
def read_back(label: str) -> str:
    """Returns ``label``; its ``task_finished`` receiver reads the result back."""
    return label


@task(queue_name="jobtests.tasks")
def finish_hangs(label: str) -> str:
    """Returns ``label``; its ``task_finished`` receiver never returns."""
    return label


@receiver(task_finished)
def _read_back_when_finished(sender, task_result, **kwargs) -> None:
    """Records the status the signal carries beside what ``get_result``
    reads from the database at that moment."""
    if task_result.task.module_path == read_back.module_path:
        stored = read_back.get_result(task_result.id)
        record(
            f"read-back:{task_result.status}:{stored.status}",
            int(task_result.id),
            task_result.attempts,
        )


@receiver(task_finished)
def _hang_when_finished(sender, task_result, **kwargs) -> None:
    """A receiver that never returns (a socket without a timeout, say):
    records its call, then sleeps for an hour."""
    if task_result.task.module_path == finish_hangs.module_path:
        record("finish-hangs:called", int(task_result.id), task_result.attempts)
        time.sleep(3600)


@task(queue_name="jobtests.tasks")
def indexes_later(pk: int) -> str:
    """Enqueues the third-party ``searchlib`` task from a worker's handler
    thread, as Wagtail's tasks enqueue others; returns its result id."""
    from searchlib.tasks import index_object

    return index_object.enqueue(pk).id

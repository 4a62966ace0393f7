"""Django ``@task`` functions through ``WorkhorseBackend``, run by real ``runworker``
processes: transactions, statuses, errors, priority, run_after, async tasks,
TaskContext across retries, and the three signals."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import RequestFactory
from django.utils import timezone
from jobtests.models import RunRecord
from jobtests.tasks import (
    add,
    always_fails,
    async_add,
    fails_once,
    ignores_its_cancel,
    in_order,
    overruns,
    returns_a_date,
)
from jobtests.views import enqueue_add

from django_workhorse import Admin
from django_workhorse.tasks.compat import TaskResultStatus

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def labels(job_id: int, prefix: str = "") -> list[str]:
    return [
        r.label
        for r in RunRecord.objects.filter(job_id=job_id, label__startswith=prefix).order_by("id")
    ]


def finished(result):
    result.refresh()
    return result if result.is_finished else None


def call_view(**query) -> tuple[int, dict]:
    """The view's status and JSON, called as Django calls it (no auth middleware:
    these tests leave the auth tables out)."""
    response = enqueue_add(RequestFactory().get("/jobtests/enqueue-add", query))
    return response.status_code, json.loads(response.content)


def test_a_task_enqueued_in_a_rolled_back_view_is_absent():
    status, body = call_view(a=1, b=2, fail=1)
    assert status == 409
    job_id = int(body["rolled_back"])
    assert Admin().get_job(job_id) is None
    assert RunRecord.objects.filter(job_id=job_id).count() == 0


def test_a_task_enqueued_in_a_committed_view_runs_under_runworker(start_worker, wait_until):
    status, body = call_view(a=2, b=3)
    assert (status, body["status"]) == (200, "READY")
    result = add.get_result(body["id"])
    assert result.status == TaskResultStatus.READY
    assert result.args == [2, 3]
    assert result.enqueued_at is not None and result.started_at is None

    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.attempts == 1
    assert result.worker_ids == [worker.worker_id]
    assert result.errors == []
    assert result.enqueued_at <= result.started_at == result.last_attempted_at
    assert result.started_at <= result.finished_at
    assert labels(int(result.id)) == [
        "signal:enqueued:READY",
        "signal:started:RUNNING",
        "task:add",
        "signal:finished:SUCCESSFUL",
    ]


def test_a_task_failing_every_attempt_ends_failed_with_each_error(start_worker, wait_until):
    result = always_fails.enqueue("boom")
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0

    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018
    assert result.attempts == 2
    assert [e.exception_class_path for e in result.errors] == ["jobtests.jobs.PlannedFailure"] * 2
    assert "PlannedFailure: boom" in result.errors[-1].traceback
    assert result.errors[-1].exception_class.__name__ == "PlannedFailure"
    assert result.finished_at is not None
    # task_finished once per run: READY while a retry follows, FAILED after the last
    assert labels(int(result.id), "signal:") == [
        "signal:enqueued:READY",
        "signal:started:RUNNING",
        "signal:finished:READY",
        "signal:started:RUNNING",
        "signal:finished:FAILED",
    ]


def test_a_context_task_sees_attempt_2_on_its_retry(start_worker, wait_until):
    result = fails_once.enqueue(label="ctx")
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"attempt": 2, "worker_ids": 2}
    assert labels(int(result.id), "task:") == ["task:fails_once:ctx"] * 2
    runs = RunRecord.objects.filter(job_id=int(result.id), label__startswith="task:")
    assert sorted(r.attempt for r in runs) == [1, 2]
    assert len(result.errors) == 1
    assert result.last_attempted_at > result.started_at


def test_an_async_task_runs_on_the_workers_event_loop(start_worker, wait_until):
    result = async_add.enqueue(20, 22)
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42
    assert labels(int(result.id), "signal:started") == ["signal:started:RUNNING"]
    assert labels(int(result.id), "signal:finished") == ["signal:finished:SUCCESSFUL"]


def test_priority_orders_tasks_of_one_queue(start_worker, wait_until):
    low = in_order.using(priority=-10).enqueue("low")
    plain = in_order.enqueue("plain")
    high = in_order.using(priority=50).enqueue("high")
    worker = start_worker("--queues", "jobtests.tasks-order", "--concurrency", "1")
    wait_until(lambda: all(finished(r) for r in (low, plain, high)), what="all three finished")
    assert worker.stop() == 0

    ran = RunRecord.objects.filter(label__startswith="order:").order_by("started_at", "id")
    assert [r.label for r in ran] == ["order:high", "order:plain", "order:low"]
    assert Admin().get_job(int(high.id)).priority == 50


def test_run_after_holds_a_task_until_its_time(start_worker, wait_until):
    worker = start_worker("--queues", "jobtests.tasks-order")
    later = timezone.now() + timedelta(seconds=2)
    deferred = in_order.using(run_after=later).enqueue("deferred")
    now = in_order.enqueue("now")
    wait_until(lambda: finished(now), what="the plain task finished")
    deferred.refresh()
    if timezone.now() < later:  # a slow machine may already be past it
        assert deferred.status == TaskResultStatus.READY
    wait_until(lambda: finished(deferred), what="the deferred task finished")
    assert worker.stop() == 0

    assert deferred.started_at >= later
    ran = RunRecord.objects.filter(label__startswith="order:").order_by("started_at", "id")
    assert [r.label for r in ran] == ["order:now", "order:deferred"]


def test_a_task_enqueued_in_a_rolled_back_atomic_block_never_runs(start_worker, wait_until):
    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = add.enqueue(1, 1)
        raise RuntimeError("roll back")
    kept = add.enqueue(2, 2)
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(kept), what="the committed task finished")
    assert worker.stop() == 0
    assert Admin().get_job(int(rolled_back.id)) is None
    assert kept.return_value == 4


def test_a_task_in_a_module_the_worker_never_imported_is_found_by_its_path(
    start_worker, wait_until
):
    from jobtests.more_tasks import shout

    result = shout.enqueue("hey")
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, "HEY")


def test_a_task_canceled_while_it_runs_finishes_failed_though_it_returns(start_worker, wait_until):
    result = ignores_its_cancel.enqueue()
    job_id = int(result.id)
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: labels(job_id, "task:"), what="the task started")
    assert Admin().cancel(job_id, reason="not wanted").status == "requested"
    wait_until(lambda: "signal:finished" in " ".join(labels(job_id)), what="task_finished")
    assert worker.stop() == 0

    assert Admin().get_job(job_id).state == "canceled"
    assert labels(job_id, "signal:") == [
        "signal:enqueued:READY",
        "signal:started:RUNNING",
        "signal:finished:FAILED",
    ]


def test_a_sync_task_past_its_timeout_finishes_as_its_attempt_was_recorded(
    start_worker, wait_until
):
    result = overruns.enqueue(1.5)
    job_id = int(result.id)
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the attempt recorded timed out")
    assert labels(job_id, "signal:") == ["signal:enqueued:READY", "signal:started:RUNNING"]
    # The abandoned thread returns a second later; its signal says what was recorded.
    wait_until(lambda: "signal:finished" in " ".join(labels(job_id)), what="task_finished")
    assert worker.stop() == 0

    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == [
        "django_workhorse.exceptions.JobTimeout"
    ]
    assert labels(job_id, "signal:") == [
        "signal:enqueued:READY",
        "signal:started:RUNNING",
        "signal:finished:FAILED",
    ]


def test_a_task_returning_what_is_not_json_ends_failed_after_one_attempt(start_worker, wait_until):
    result = returns_a_date.enqueue()
    worker = start_worker("--queues", "jobtests.tasks")
    wait_until(lambda: finished(result), what="the task finished")
    assert worker.stop() == 0

    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    assert [e.exception_class_path for e in result.errors] == [
        "django_workhorse.exceptions.InvalidPayloadError"
    ]
    assert "is a datetime, which is not JSON" in result.errors[0].traceback
    assert labels(int(result.id), "signal:") == [
        "signal:enqueued:READY",
        "signal:started:RUNNING",
        "signal:finished:FAILED",
    ]

"""What ``enqueue`` and ``aenqueue`` return answers for the job under a real
``runworker``: status, result, error, refresh() and arefresh()."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction
from jobtests.jobs import async_echo, doomed, record, sleep

from django_workhorse import JobHandle, JobNotFoundError

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def finished(handle: JobHandle) -> JobHandle | None:
    return handle if handle.refresh().is_finished else None


def test_a_handle_reads_ready_then_succeeded_with_the_result(start_worker, wait_until):
    handle = record.enqueue(label="handle")
    assert (handle.status, handle.attempts, handle.result, handle.error) == ("ready", 0, None, None)

    worker = start_worker("--queues", "jobtests.record")
    wait_until(lambda: finished(handle), what="the job finished")
    assert worker.stop() == 0

    assert handle.status == "succeeded"
    assert handle.result == {"pid": worker.pid, "attempt": 1}
    assert handle.attempts == 1
    assert handle.error is None


def test_a_handle_shows_active_while_the_handler_runs(start_worker, wait_until):
    handle = sleep.enqueue(seconds=1.5)
    worker = start_worker("--queues", "jobtests.sleep")
    wait_until(lambda: handle.refresh().status == "active", what="the job active")
    assert handle.snapshot.worker_id == worker.worker_id
    wait_until(lambda: finished(handle), what="the job finished")
    assert worker.stop() == 0
    assert handle.result == 1.5


def test_a_handle_shows_the_error_after_the_last_retry(start_worker, wait_until):
    handle = doomed.enqueue()
    worker = start_worker("--queues", "jobtests.doomed")
    wait_until(lambda: finished(handle), what="the job finished")
    assert worker.stop() == 0

    assert handle.status == "failed"
    assert handle.attempts == 2
    assert handle.result is None
    assert handle.error["type"] == "jobtests.jobs.PlannedFailure"
    assert "doomed attempt 2" in handle.error["traceback"]


def test_what_a_handle_read_stays_until_refresh(start_worker, wait_until):
    handle = record.enqueue()
    assert handle.status == "ready"
    worker = start_worker("--queues", "jobtests.record")
    other = JobHandle(handle.id, handle.name, handle.queue, handle.inserted, handle.using)
    wait_until(lambda: finished(other), what="the job finished")
    assert worker.stop() == 0
    assert handle.status == "ready"  # as last read
    assert handle.refresh().status == "succeeded"
    assert handle == other  # what a handle read is not part of its identity


def test_aenqueue_and_arefresh_from_async_code(start_worker, wait_until):
    async def enqueue_and_wait() -> JobHandle:
        handle = await async_echo.aenqueue(value="hi")
        for _ in range(400):
            await handle.arefresh()
            if handle.is_finished:
                break
            await asyncio.sleep(0.05)
        # The queries ran on asgiref's one sync thread: close its connection.
        await sync_to_async(connections.close_all)()
        return handle

    worker = start_worker("--queues", "jobtests.async")
    handle = asyncio.run(enqueue_and_wait())
    assert worker.stop() == 0
    assert handle.status == "succeeded"
    assert handle.result["echo"] == "hi"


def test_the_handle_of_a_rolled_back_enqueue_says_the_job_is_gone():
    with pytest.raises(RuntimeError), transaction.atomic():
        handle = record.enqueue()
        raise RuntimeError("roll back")
    with pytest.raises(JobNotFoundError, match="rolled back"):
        handle.refresh()

"""An async handler runs on the worker's event loop and succeeds."""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.jobs import async_echo, record
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_an_async_handler_runs_and_succeeds(start_worker, wait_until):
    handle = async_echo.enqueue(value="hi")
    worker = start_worker("--queues", "jobtests.async")
    outcome = wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).first(), what="the job terminal"
    )
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts, outcome.result) == (
        "succeeded",
        1,
        {"echo": "hi", "attempt": 1},
    )
    (run,) = RunRecord.objects.filter(job_id=handle.id)
    assert (run.pid, run.label, run.worker_id) == (worker.pid, "async", worker.worker_id)
    assert list(AttemptHistory.objects.filter(job_id=handle.id).values_list("outcome")) == [
        ("succeeded",)
    ]


def test_a_backlog_of_async_jobs_runs_each_job_exactly_once(start_worker, wait_until):
    ids = [h.id for h in async_echo.enqueue_many([{"value": str(i)} for i in range(300)])]
    worker = start_worker("--queues", "jobtests.async", "--concurrency", "50")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 300,
        timeout=60,
        what="all 300 jobs terminal",
    )
    assert worker.stop() == 0

    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert set(outcomes.values_list("state", "attempts")) == {("succeeded", 1)}
    assert sorted(outcomes.values_list("result__echo", flat=True), key=int) == [
        str(i) for i in range(300)
    ]
    runs = RunRecord.objects.filter(job_id__in=ids)
    assert sorted(runs.values_list("job_id", flat=True)) == sorted(ids)


def test_an_async_job_enqueued_into_a_queue_of_sync_jobs_runs_there(start_worker):
    # The worker serves a queue whose registered jobs are all sync; an async
    # job arrives there through .options(queue=...), after a sync one (taken
    # by the handler's thread with one slot) and before another.
    first = record.enqueue(label="sync first")
    moved = [async_echo.options(queue="jobtests.record").enqueue(value=str(i)) for i in range(2)]
    worker = start_worker("--queues", "jobtests.record", "--burst", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    outcomes = JobOutcome.objects.filter(job_id__in=[first.id, *(h.id for h in moved)])
    assert sorted(outcomes.values_list("job_id", "state")) == [
        (first.id, "succeeded"),
        *((h.id, "succeeded") for h in moved),
    ]
    assert JobOutcome.objects.get(job_id=moved[1].id).result == {"echo": "1", "attempt": 1}


def test_async_handlers_get_a_new_connection_once_theirs_broke(start_worker, wait_until):
    # Async handlers reach the ORM through sync_to_async, on one thread whose
    # Django connection they share. Once the server ended that connection (a
    # restart, a terminated session) it stayed closed: every later async job
    # failed with "the connection is closed" until its attempts ran out.
    worker = start_worker("--queues", "jobtests.async")
    first = async_echo.enqueue(value="before")
    wait_until(lambda: JobOutcome.objects.filter(job_id=first.id).exists(), what="the first job")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND application_name NOT LIKE 'workhorse%%'"
        )
        assert cursor.fetchall(), "the async handlers' connection"
    # The job that meets the break fails its attempt; the next ones run.
    broken = async_echo.options(max_attempts=1).enqueue(value="meets the break")
    wait_until(lambda: JobOutcome.objects.filter(job_id=broken.id).exists(), what="its end")
    after = async_echo.options(max_attempts=1).enqueue_many([{"value": str(i)} for i in range(3)])
    ids = [h.id for h in after]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 3, what="the jobs after"
    )
    assert worker.stop() == 0
    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert set(outcomes.values_list("state", flat=True)) == {"succeeded"}, list(
        outcomes.values_list("error", flat=True)
    )

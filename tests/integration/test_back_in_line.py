"""A job put back in line with a due time already past queues behind the jobs
of its priority that were waiting (``workhorse_requeue_runs_v1``): a sleep
whose wake time has come is ready at the back, not ahead of them, and so is
a retry a SQL caller asked for with a negative delay."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from django_workhorse.db import store
from tests.factories import ActiveJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def sleep_past(cursor, job, now) -> None:
    ((_, ok, run_at, _),) = store.sleep_many(
        cursor, job.worker, [job.id], [job.fence], ["nap"], [now - timedelta(minutes=5)], [None]
    )
    assert ok and run_at >= now


def retry_in_the_past(cursor, job, now) -> None:
    (row,) = store.fail_many(
        cursor,
        job.worker,
        [job.id],
        [job.fence],
        [json.dumps({"type": "ValueError", "message": "again"})],
        ["failed"],
        [True],
        [-300.0],
    )
    assert row.will_retry and row.run_at >= now and row.retry_in >= 0


@pytest.mark.parametrize("put_back", [sleep_past, retry_in_the_past])
def test_a_job_back_in_line_with_a_past_due_time_queues_behind_the_waiting(
    put_back, cursor, db_rows
):
    queue = f"back-in-line-{put_back.__name__}"
    running = ActiveJobFactory(queue=queue)
    waiting = ReadyJobFactory(queue=queue)
    before = db_rows.now()

    put_back(cursor, running, before)

    runtime = db_rows.runtime(running.id)
    assert runtime["state"] == "ready"
    assert runtime["run_at"] >= before
    claimed = store.claim_many(cursor, "next-worker", [queue], [1], 30)
    assert [c.job_id for c in claimed] == [waiting.id]
    claimed = store.claim_many(cursor, "next-worker", [queue], [1], 30)
    assert [c.job_id for c in claimed] == [running.id]

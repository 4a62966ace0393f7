"""The SQL side of checkpoints and durable sleep: ``workhorse_checkpoint_v1``
writes a stage only under the run's own (owner, fence); ``workhorse_sleep_many_v1``
sends a running job back to scheduled without using an attempt; both rows go
with the job at retention."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection

from django_workhorse import Admin
from django_workhorse.core.conf import RetentionSettings
from django_workhorse.db import store
from django_workhorse.operations.retention import prune
from tests.factories import ActiveJobFactory, SucceededJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def write(cursor, job, name="stage", result='{"n": 1}', owner=None, fence=None):
    return store.write_checkpoint(
        cursor, job.id, owner or job.worker, job.fence if fence is None else fence, name, result
    )


def put_to_sleep(cursor, job, name="nap", wake_at=None, delay=None):
    return store.sleep_many(cursor, job.worker, [job.id], [job.fence], [name], [wake_at], [delay])


def test_the_run_holding_the_job_records_a_stage(cursor, db_rows):
    job = ActiveJobFactory()

    assert write(cursor, job) == (True, False)

    (row,) = store.get_checkpoints(cursor, job.id)
    assert (row.name, row.kind, row.result, row.attempt) == ("stage", "checkpoint", {"n": 1}, 1)


def test_a_stage_written_under_another_owner_or_fence_is_refused_and_writes_nothing(
    cursor, db_rows
):
    job = ActiveJobFactory()
    before = db_rows.of_job(job.id)

    assert write(cursor, job, owner="someone-else") == (False, False)
    assert write(cursor, job, fence=job.fence + 1) == (False, False)

    assert db_rows.of_job(job.id) == before


def test_a_finished_job_takes_no_more_stages(cursor, db_rows):
    job = SucceededJobFactory()
    before = db_rows.of_job(job.id)

    assert write(cursor, job) == (False, False)

    assert db_rows.of_job(job.id) == before


def test_a_stage_written_after_a_cancel_request_says_so(cursor):
    job = ActiveJobFactory()
    cursor.execute(
        "UPDATE workhorse_job_runtime SET cancel_requested = true WHERE job_id = %s", [job.id]
    )

    assert write(cursor, job) == (True, True)


def test_stages_come_back_in_the_order_they_were_written(cursor):
    job = ActiveJobFactory()
    for name in ("b-first", "a-second", "c-third"):
        write(cursor, job, name=name)

    assert [r.name for r in store.get_checkpoints(cursor, job.id)] == [
        "b-first",
        "a-second",
        "c-third",
    ]


def test_a_sleep_sends_the_job_back_to_scheduled_without_using_an_attempt(cursor, db_rows):
    job = ActiveJobFactory()
    before = db_rows.now()

    ((job_id, ok, run_at, canceled),) = put_to_sleep(cursor, job, delay=60)

    assert (job_id, ok, canceled) == (job.id, True, False)
    assert timedelta(seconds=59) < run_at - before < timedelta(seconds=61)
    runtime = db_rows.runtime(job.id)
    assert (runtime["state"], runtime["run_at"], runtime["attempt"]) == ("scheduled", run_at, 0)
    assert (runtime["worker_id"], runtime["lease_expires_at"]) == (None, None)
    rows = db_rows.of_job(job.id)
    assert [(a["attempt"], a["outcome"]) for a in rows["attempts"]] == [(1, "slept")]
    slept = rows["events"][-1]
    assert (slept["kind"], json.loads(slept["data"])["name"]) == ("slept", "nap")
    (mark,) = store.get_checkpoints(cursor, job.id)
    assert (mark.name, mark.kind) == ("nap", "sleep")
    assert mark.result["wake_at"]


def test_a_sleep_of_a_job_whose_cancel_was_requested_ends_it_canceled(cursor, db_rows):
    job = ActiveJobFactory()
    assert Admin().cancel(job.id, reason="not needed").state == "active"

    ((job_id, ok, run_at, canceled),) = put_to_sleep(cursor, job, delay=3600)

    assert (job_id, ok, run_at, canceled) == (job.id, True, None, True)
    assert db_rows.runtime(job.id) is None
    snapshot = store.get_job(cursor, job.id)
    assert (snapshot["state"], snapshot["error"]["reason"]) == ("canceled", "not needed")
    assert store.get_checkpoints(cursor, job.id) == []


def test_a_sleep_whose_wake_time_has_come_is_ready_at_once(cursor, db_rows):
    job = ActiveJobFactory()

    put_to_sleep(cursor, job, wake_at=db_rows.now() - timedelta(seconds=5))

    assert db_rows.runtime(job.id)["state"] == "ready"


def test_a_sleeping_job_is_claimed_again_once_due_with_the_same_attempt_number(cursor):
    job = ActiveJobFactory()
    put_to_sleep(cursor, job, delay=0)

    (again,) = store.claim_many(cursor, "another-worker", [job.queue], [1], 30)

    assert (again.job_id, again.attempt) == (job.id, 1)
    assert again.fence > job.fence


def test_a_stale_sleep_is_refused_and_writes_nothing(cursor, db_rows):
    job = ActiveJobFactory()
    before = db_rows.of_job(job.id)

    result = store.sleep_many(cursor, job.worker, [job.id], [job.fence + 1], ["nap"], [None], [1])

    assert result == [(job.id, False, None, False)]
    assert db_rows.of_job(job.id) == before


@pytest.mark.parametrize("delay", [-1.0, None, 4e9])
def test_a_sleep_without_a_valid_delay_or_wake_time_is_refused(delay, cursor):
    job = ActiveJobFactory()

    with pytest.raises(Exception, match="needs a wake time or a delay"):
        put_to_sleep(cursor, job, delay=delay)


def test_checkpoints_go_with_their_job_at_retention(cursor, db_rows):
    job = ActiveJobFactory()
    write(cursor, job)
    store.succeed_many(cursor, job.worker, [job.id], [job.fence], ["null"])
    cursor.execute(
        "UPDATE workhorse_job_outcome SET finished_at = finished_at - interval '10 days'"
        " WHERE job_id = %s",
        [job.id],
    )

    week = RetentionSettings(
        history=7 * 86400, finished_jobs=7 * 86400, interval=None, batch_size=10
    )
    assert prune(connection.cursor(), settings=week).deleted_jobs == 1

    assert db_rows.checkpoints(job.id) == []

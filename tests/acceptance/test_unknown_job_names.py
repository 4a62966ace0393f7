"""A job whose name no handler in the worker is registered under (enqueued
from SQL or by newer code than the worker runs) loses nothing: the attempt
fails with an ``UnknownJobError`` naming the job and saying to deploy its
code, the job is retried with its backoff like any failure, and a job that
used up its attempts stays ``failed`` for an operator to retry
(docs/worker.md#failures-retries-timeouts)."""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.jobs import record

import django_workhorse as workhorse
from django_workhorse.models import AttemptHistory

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

BURST = ("--burst", "--queues", "jobtests.record")


def enqueue_from_sql(name: str, max_attempts: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1(%s, 'jobtests.record', '{\"n\": 1}', %s)",
            [name, max_attempts],
        )
        return cursor.fetchone()[0]


def test_a_job_no_worker_knows_is_retried_then_kept_failed_naming_the_job(start_worker):
    unknown = enqueue_from_sql("billing.jobs.not_deployed_yet", max_attempts=2)
    known = record.enqueue(label="beside it")
    admin = workhorse.Admin()

    first = start_worker(*BURST, ready=False)
    assert first.wait_exit(60) == 0, first.stderr

    assert known.refresh().status == "succeeded"  # the rest of the queue runs
    snapshot = admin.get_job(unknown)
    assert (snapshot.state, snapshot.current_attempt) == ("scheduled", 1)  # a retry with backoff
    assert snapshot.payload == {"n": 1}
    assert snapshot.error["type"] == "django_workhorse.exceptions.UnknownJobError"
    assert "no job named 'billing.jobs.not_deployed_yet' is registered" in snapshot.error["message"]
    assert "deploy the code that defines it" in snapshot.error["message"]
    assert "billing.jobs.not_deployed_yet" in first.stderr
    assert "Traceback" not in first.stderr

    assert admin.promote(unknown).status == "changed"
    second = start_worker(*BURST, ready=False)
    assert second.wait_exit(60) == 0, second.stderr

    snapshot = admin.get_job(unknown)
    assert (snapshot.state, snapshot.current_attempt) == ("failed", 2)
    assert snapshot.error["type"] == "django_workhorse.exceptions.UnknownJobError"
    outcomes = AttemptHistory.objects.filter(job_id=unknown).order_by("attempt")
    assert [(a.attempt, a.outcome) for a in outcomes] == [(1, "failed"), (2, "failed")]
    # Kept, payload and all: once the code is deployed an operator retries it.
    retried = admin.retry(unknown)
    assert (retried.status, retried.state) == ("changed", "ready")
    assert admin.get_job(unknown).payload == {"n": 1}

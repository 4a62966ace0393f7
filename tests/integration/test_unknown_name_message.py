"""The ``UnknownJobError`` of a job no handler answers to says what happens
next: the attempt is retried while attempts remain; on the last one it says
that was the last, and to retry the job once its code is deployed
(docs/worker.md#failures-retries-timeouts)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

import django_workhorse as workhorse
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db

# No registered job uses the queue: name it, as a project whose worker serves
# a queue before the code of its jobs is deployed does.
SERVED = override_settings(WORKHORSE={"QUEUES": {"billing": {}}})


def enqueue_from_sql(max_attempts: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1('billing.not_deployed', 'billing', '{}', %s)",
            [max_attempts],
        )
        return int(cursor.fetchone()[0])


def attempt_messages(job_id: int) -> list[str]:
    return [
        entry.error["message"]
        for entry in workhorse.Admin().get_job_timeline(job_id).items
        if entry.error is not None
    ]


@SERVED
def test_an_attempt_that_remains_is_said_to_be_retried():
    job_id = enqueue_from_sql(max_attempts=2)

    run_jobs(queues=["billing"])

    first, last = attempt_messages(job_id)
    assert first.endswith("(the attempt is retried with backoff)")
    assert "retried with backoff" not in last
    assert last.endswith("(that was its last attempt: retry the job once the code is deployed)")


@SERVED
def test_a_job_of_one_attempt_is_not_said_to_be_retried():
    job_id = enqueue_from_sql(max_attempts=1)

    run_jobs(queues=["billing"])

    snapshot = workhorse.Admin().get_job(job_id)
    assert snapshot.state == "failed"
    assert (
        "no job named 'billing.not_deployed' is registered in run_jobs"
        in (snapshot.error["message"])
    )
    assert "retried with backoff" not in snapshot.error["message"]

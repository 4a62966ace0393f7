"""A filter-wide action whose worker is SIGKILLed midway goes on in another
worker from where its last batch committed: no job is acted on twice."""

from __future__ import annotations

import signal

import pytest
from django.db import connection

from django_workhorse import Admin
from django_workhorse.operations.bulk_actions import OPERATOR_QUEUE
from tests.factories import many_failed_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SHORT_LEASES = {"LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5}


def events_per_job(kind: str, job_ids: list[int]) -> dict[int, int]:
    """How many ``kind`` events each job has (jobs with none left out)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id, count(*) FROM workhorse_job_event"
            " WHERE kind = %s AND job_id = ANY(%s) GROUP BY job_id",
            [kind, job_ids],
        )
        return dict(cursor.fetchall())


def test_an_action_whose_worker_is_killed_midway_resumes_and_acts_on_no_job_twice(
    start_worker, wait_until
):
    failed = many_failed_jobs(3000, queue="flood")
    first = start_worker("--queues", OPERATOR_QUEUE, "--id", "first", settings=SHORT_LEASES)
    second = start_worker("--queues", OPERATOR_QUEUE, "--id", "second", settings=SHORT_LEASES)
    admin = Admin()

    action = admin.start_bulk("retry", queue="flood", state="failed", batch_size=50)
    running = wait_until(
        lambda: (a := admin.bulk_action(action.id)).matched >= 300 and a,
        timeout=60,
        what="the action past its sixth batch",
    )
    holder = str(admin.get_job(running.job_id).worker_id).split("+", 1)[0]
    victim, survivor = (first, second) if holder == first.worker_id else (second, first)
    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL
    assert admin.bulk_action(action.id).status == "running"  # killed midway

    done = wait_until(
        lambda: (a := admin.bulk_action(action.id)).status == "finished" and a,
        timeout=120,
        what="the action finished by the other worker",
    )
    assert survivor.stop() == 0

    assert (done.total, done.matched, done.changed, done.skipped) == (3000, 3000, 3000, 0)
    assert events_per_job("retried", failed) == dict.fromkeys(failed, 1)
    job = admin.get_job(done.job_id)
    assert (job.state, job.stall_count) == ("succeeded", 1)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT outcome, worker_id FROM workhorse_attempt_history"
            " WHERE job_id = %s ORDER BY finished_at",
            [done.job_id],
        )
        attempts = [(outcome, owner.split("+", 1)[0]) for outcome, owner in cursor.fetchall()]
    assert attempts == [("stalled", victim.worker_id), ("succeeded", survivor.worker_id)]

"""``WORKHORSE["RETENTION"]`` in a running worker (docs/retention.md):
``FINISHED_JOBS`` is how long finished jobs are kept, ``INTERVAL`` how often
each worker retires what is older; ``INTERVAL = None`` leaves it to
``workhorse_prune``."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

from django_workhorse.worker.retention_turn import start_retention
from tests.factories import SucceededJobFactory

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def finished_ago(hours: float) -> int:
    job = SucceededJobFactory(queue="jobtests.record")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_job_outcome SET finished_at = now() - %s * interval '1 hour'"
            " WHERE job_id = %s",
            [hours, job.id],
        )
    return job.id


def job_exists(job_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workhorse_job WHERE id = %s", [job_id])
        return cursor.fetchone()[0] == 1


def test_a_worker_retires_jobs_finished_longer_ago_than_finished_jobs(start_worker, wait_until):
    old = finished_ago(hours=3)
    recent = finished_ago(hours=1)
    worker = start_worker(
        "--queues",
        "jobtests.record",
        settings={"RETENTION": {"FINISHED_JOBS": 2 * 3600, "INTERVAL": 0.3}},
    )

    wait_until(lambda: not job_exists(old), what="the job finished 3 h ago retired")
    assert worker.stop() == 0
    assert job_exists(recent)


def test_interval_none_starts_no_retention_in_the_worker():
    with override_settings(WORKHORSE={"RETENTION": {"INTERVAL": None}}):
        assert start_retention("default") is None

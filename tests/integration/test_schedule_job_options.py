"""Jobs enqueued by a schedule use the job's own queue, priority, attempts,
timeout, stall budget and backoff, and run at their slot (docs/schedules.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.core.schedules import declared, sync
from django_workhorse.models import Job, JobRuntime
from django_workhorse.worker.scheduler import sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def report_job(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(
        name="audit.schedules.report",
        queue="audit.reports",
        priority=7,
        max_attempts=9,
        timeout=30,
        max_stalled=4,
        backoff=workhorse.fixed(12),
        schedule="0 3 * * *",
    )
    def report() -> None: ...

    return report


def test_a_scheduled_job_carries_the_jobs_options_and_runs_at_its_slot(report_job, cursor):
    sync(cursor, declared("default", {}))
    cursor.execute(
        "UPDATE workhorse_schedule SET next_run_at = date_trunc('minute', now())"
        " - interval '1 minute' WHERE name = %s RETURNING next_run_at",
        [report_job.name],
    )
    (slot,) = cursor.fetchone()

    assert sweep(cursor) == 1

    job = Job.objects.get(name=report_job.name)
    assert (job.queue, job.priority, job.max_attempts, job.max_stalled) == (
        "audit.reports",
        7,
        9,
        4,
    )
    assert job.timeout == timedelta(seconds=30)
    assert job.backoff == {"kind": "fixed", "delay": 12.0}
    assert job.payload == {}
    assert JobRuntime.objects.get(job_id=job.id).run_at == slot

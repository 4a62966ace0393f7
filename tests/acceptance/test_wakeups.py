"""An enqueue wakes an idle worker through NOTIFY, not the poll timer."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from jobtests.jobs import record

from django_workhorse import Admin
from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def idle_claim_loops() -> int:
    """Worker claim connections whose last statement was the look-up done
    right before an idle wait (the claim loop is asleep)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE 'workhorse-worker %%' AND state = 'idle'"
            " AND query LIKE '%%workhorse_next_run_at_v1%%'"
        )
        return cursor.fetchone()[0]


def test_an_enqueue_wakes_an_idle_worker_long_before_the_poll_interval(start_worker, wait_until):
    worker = start_worker("--queues", "jobtests.record", settings={"POLL_INTERVAL": 60})
    wait_until(lambda: idle_claim_loops() == 1, what="the worker waiting for work")

    enqueued = time.monotonic()
    handle = record.enqueue(label="wake")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job done",
    )
    took = time.monotonic() - enqueued
    assert worker.stop() == 0

    # A correctness bound, not a benchmark: without the wake-up it would be 60 s.
    assert took < 10, took
    entries = Admin().get_job_timeline(handle.id).items
    events = {e.kind: e.at for e in entries if e.source == "event"}
    assert (events["claimed"] - events["enqueued"]).total_seconds() < 10

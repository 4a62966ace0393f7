"""A worker whose database connections are cut goes on and loses nothing.

The claim loop and the writer each have their own connection. Cutting the
writer's keeps the finished runs and writes them again on a new one; cutting
the claim loop's rolls that claim back and claims again. Either way every job
succeeds once and no handler runs twice.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection, transaction
from django.db.models import Count
from jobtests.jobs import sleep
from jobtests.models import RunRecord

from django_workhorse.models import JobOutcome
from tests.helpers import cut_connections

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

JOBS = 300


def finished(ids: list[int]) -> int:
    return JobOutcome.objects.filter(job_id__in=ids).count()


def test_cut_connections_lose_no_result_and_run_no_job_twice(start_worker, wait_until):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 0.01}] * JOBS)]
    worker = start_worker(
        "--queues",
        "jobtests.sleep",
        "--concurrency",
        "4",
        persistent_connections=True,
        # A claim cut after its commit leaves jobs leased to nobody: they
        # come back after a short lease.
        settings={"LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5},
    )

    for name in ["workhorse-writer", "workhorse-worker"] * 2:
        more = finished(ids) + 30
        wait_until(lambda more=more: finished(ids) >= more, timeout=60, what=f"{more} jobs")
        # Poll: the connection cut last time may not be back yet.
        wait_until(
            lambda name=name: cut_connections(name) == 1, timeout=30, what=f"a {name} to cut"
        )

    wait_until(lambda: finished(ids) == JOBS, timeout=120, what=f"all {JOBS} jobs terminal")
    assert worker.stop() == 0
    log = worker.stderr
    assert "written again on a new connection" in log
    assert "the claim was rolled back and is retried on a new connection" in log
    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert set(outcomes.values_list("state", flat=True)) == {"succeeded"}
    runs = RunRecord.objects.filter(job_id__in=ids)
    assert set(runs.values_list("job_id", flat=True)) == set(ids)
    assert not runs.values("job_id").annotate(n=Count("id")).filter(n__gt=1).exists()


def test_claims_pause_while_the_writer_cannot_record_results(start_worker, wait_until):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 0.005}] * JOBS)]
    with transaction.atomic():
        # Finishes insert outcome rows: this lock holds the writer back.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE workhorse_job_outcome IN EXCLUSIVE MODE")
        worker = start_worker(
            "--queues", "jobtests.sleep", "--concurrency", "4", persistent_connections=True
        )
        wait_until(lambda: RunRecord.objects.filter(job_id__in=ids).exists(), what="a run")
        time.sleep(1.5)  # unchecked, 4 slots would run every job in this time
        started = RunRecord.objects.filter(job_id__in=ids).count()
    # At most 4 results wait for the writer, and 4 more runs fill the slots.
    assert started <= 8, f"{started} jobs ran while no result could be written"

    wait_until(lambda: finished(ids) == JOBS, timeout=60, what=f"all {JOBS} jobs terminal")
    assert worker.stop() == 0
    assert RunRecord.objects.filter(job_id__in=ids).count() == JOBS

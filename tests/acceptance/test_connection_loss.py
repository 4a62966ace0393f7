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

from django_workhorse import Admin
from django_workhorse.models import JobOutcome, JobRuntime
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

    for name in ["workhorse-heartbeat", "workhorse-worker"] * 2:
        more = finished(ids) + 30
        wait_until(lambda more=more: finished(ids) >= more, timeout=60, what=f"{more} jobs")
        # Poll: the connection cut last time may not be back yet.
        wait_until(
            lambda name=name: cut_connections(name) == 1, timeout=30, what=f"a {name} to cut"
        )

    wait_until(lambda: finished(ids) == JOBS, timeout=120, what=f"all {JOBS} jobs terminal")
    assert worker.stop() == 0
    # A connection cut while idle is replaced before its next use, one cut
    # during a write or a claim is met by the retry on a new connection
    # ("written again on a new connection", "the claim was rolled back"):
    # either way nothing is lost and nothing runs twice.
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


def lease_margin(job_id: int) -> float | None:
    """Seconds left on the job's lease by the database clock (None once it
    is no longer active)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extract(epoch FROM lease_expires_at - clock_timestamp())::float"
            " FROM workhorse_job_runtime WHERE job_id = %s AND state = 'active'",
            [job_id],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def lease_expiry(job_id: int):
    return (
        JobRuntime.objects.filter(job_id=job_id, state="active")
        .values_list("lease_expires_at", flat=True)
        .first()
    )


def test_a_cut_heartbeat_connection_is_replaced_before_the_leases_run_out(start_worker, wait_until):
    job = sleep.enqueue(seconds=15)
    # A lease of 4 s renewed every 2 s: one renewal that fails must be made
    # up well before the lease runs out, not at the next turn 2 s later.
    worker = start_worker(
        "--queues", "jobtests.sleep", settings={"LOCK_DURATION": 4, "SHUTDOWN_GRACE": 1}
    )
    first = wait_until(lambda: lease_expiry(job.id), what="the job running")
    wait_until(lambda: lease_expiry(job.id) != first, what="a renewal")
    assert cut_connections("workhorse-heartbeat") == 1

    margins = []
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        margins.append(lease_margin(job.id))
        time.sleep(0.05)
    # Replaced before the next renewal used it (the server's goodbye was
    # waiting on the idle socket), or after that renewal failed.
    reconnected = Admin().workers()["connected"]
    worker.stop()
    assert None not in margins, "the job stopped running"
    assert min(margins) > 1.0, f"the lease came within {min(margins):.2f} s of expiring"
    assert reconnected == 1

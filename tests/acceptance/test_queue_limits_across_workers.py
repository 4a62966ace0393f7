"""Queue limits hold for every worker at once: the claim enforces them in the
database, so more workers or more slots never break them, and a worker killed
while holding limited jobs gives its places back once recovery runs. A
worker of a limited queue that has no room waits for a finish or the rate
window instead of claiming in a loop."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.db import connection
from jobtests.jobs import record, sleep
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.acceptance.conftest import database_url

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

LIMITED = "jobtests.limited"


def max_overlap(intervals: list[tuple]) -> int:
    """The most intervals open at one instant; an end sorts before a start
    at the same instant (the next run may begin as the last one ends)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = current = 0
    for _at, step in sorted(edges, key=lambda e: (e[0], e[1])):
        current += step
        most = max(most, current)
    return most


def most_starts_in_a_window(starts: list, window: timedelta) -> int:
    """The most starts inside any half-open window [t, t + window)."""
    starts = sorted(starts)
    most = 0
    for i, first in enumerate(starts):
        most = max(most, sum(1 for t in starts[i:] if t - first < window))
    return most


def test_a_global_concurrency_limit_of_2_holds_across_3_workers_of_4_slots(
    start_worker, wait_until
):
    settings = {"QUEUES": {LIMITED: {"concurrency": 4, "global_concurrency": 2}}}
    workers = [
        start_worker(
            "--queues", LIMITED, settings=settings, persistent_connections=True, ready=False
        )
        for _ in range(3)
    ]
    for worker in workers:
        worker.wait_ready()
    handles = sleep.options(queue=LIMITED).enqueue_many([{"seconds": 0.05}] * 200)
    ids = [h.id for h in handles]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 200,
        timeout=240,
        what="all 200 limited jobs succeeded",
    )
    for worker in workers:
        assert worker.stop() == 0

    runs = list(RunRecord.objects.filter(job_id__in=ids).values_list("started_at", "finished_at"))
    assert len(runs) == 200
    assert max_overlap(runs) == 2
    # Every worker took part: the limit is shared, not one worker's slots.
    assert len(set(RunRecord.objects.filter(job_id__in=ids).values_list("pid", flat=True))) == 3


def test_a_rate_limit_of_10_per_second_holds_over_5_seconds(start_worker, wait_until):
    settings = {"QUEUES": {LIMITED: {"concurrency": 8, "rate": 10, "period": 1}}}
    workers = [start_worker("--queues", LIMITED, settings=settings, ready=False) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    ids = [h.id for h in record.options(queue=LIMITED).enqueue_many([{}] * 70)]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() >= 50,
        timeout=120,
        what="50 rate-limited jobs finished",
    )
    for worker in workers:
        assert worker.stop() == 0

    # The claim's own record of each start, on the database clock.
    starts = list(
        AttemptHistory.objects.filter(job_id__in=ids).values_list("started_at", flat=True)
    )
    assert len(starts) >= 50
    assert most_starts_in_a_window(starts, timedelta(seconds=1)) <= 10
    assert max(starts) - min(starts) >= timedelta(seconds=4)


def test_a_sigkilled_worker_holding_limited_jobs_gives_its_places_back_after_recovery(
    start_worker, wait_until
):
    ids = [h.id for h in sleep.options(queue=LIMITED).enqueue_many([{"seconds": 60}] * 6)]
    settings = {
        "QUEUES": {LIMITED: {"concurrency": 4, "global_concurrency": 2}},
        "LOCK_DURATION": 2,
        "STALLED_INTERVAL": 0.5,
    }
    victim = start_worker("--queues", LIMITED, settings=settings)
    wait_until(
        lambda: RunRecord.objects.filter(pid=victim.pid).count() == 2,
        what="two limited jobs running in the first worker",
    )
    other = start_worker("--queues", LIMITED, settings=settings)

    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL
    wait_until(
        lambda: RunRecord.objects.filter(pid=other.pid).count() == 2,
        timeout=30,
        what="the second worker running two jobs once the first one's leases expired",
    )
    active = JobRuntime.objects.filter(job_id__in=ids, state="active")
    assert sorted(active.values_list("worker_id", flat=True)) == [other.worker_id] * 2
    assert RunRecord.objects.filter(pid=other.pid).count() == 2
    other.kill()


def claim_calls() -> int:
    """Calls of the claim functions counted by the statistics collector, as
    flushed so far by the sessions that made them (all of them once those
    sessions closed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions"
            " WHERE funcname = 'workhorse_claim_many_v1'"
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize("limit", ["concurrency", "rate"])
def test_a_worker_of_a_full_limited_queue_with_due_jobs_waits_instead_of_claiming_in_a_loop(
    limit, start_worker, wait_until
):
    """A queue that has no room (its one place taken, or its rate window
    full) and due scheduled jobs: its idle worker has a free slot, but the
    claim can start nothing until a finish (NOTIFY) or the window reopening
    (an hour away) lets it, so the worker claims a few times, not once per
    idle-wait floor (10 ms: some 200 times in two seconds)."""
    queues = {
        "concurrency": {LIMITED: {"concurrency": 2, "global_concurrency": 1}},
        "rate": {LIMITED: {"concurrency": 2, "rate": 1, "period": 3600}},
    }
    counted = database_url(
        options="-c synchronous_commit=off -c track_functions=pl"
    )  # the claims of this worker's sessions are counted
    worker = start_worker(
        "--queues",
        LIMITED,
        settings={"QUEUES": queues[limit], "POLL_INTERVAL": 0.5, "SHUTDOWN_GRACE": 0.5},
        env={"DATABASE_URL": counted},
    )
    first = sleep.options(queue=LIMITED).enqueue(seconds=3600 if limit == "concurrency" else 0)
    wait_until(
        lambda: RunRecord.objects.filter(job_id=first.id).exists(),
        timeout=30,
        what="the job that takes the queue's room to start",
    )
    before = claim_calls()
    due = [h.id for h in sleep.options(queue=LIMITED, delay=0.2).enqueue_many([{"seconds": 0}] * 3)]

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(2.2)")  # the jobs fall due; the worker has a free slot
    assert worker.stop() == 0  # its sessions end and flush their counts

    claims = claim_calls() - before
    assert claims < 20, f"{claims} claims in two idle seconds"
    # The claim promoted them all the same (a promotion starts nothing), and
    # none ran.
    assert (
        list(JobRuntime.objects.filter(job_id__in=due).values_list("state", flat=True))
        == ["ready"] * 3
    )

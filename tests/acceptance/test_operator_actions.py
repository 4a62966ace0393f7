"""Operator actions against real ``runworker`` processes: a retried job lives
twice and its timeline shows both lives; a job promoted from an hour ahead
runs now; a paused queue gets no claims from any of three workers that
were running its jobs (the jobs they had claimed finish), and a resume sets
all three claiming again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from jobtests.jobs import fails_first_life, record, sleep
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.helpers import timeline_events

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def outcome(job_id: int) -> str | None:
    row = JobOutcome.objects.filter(job_id=job_id).first()
    return row.state if row else None


def test_a_retried_job_runs_again_and_its_timeline_shows_both_lives(start_worker, wait_until):
    worker = start_worker("--queues", "jobtests.lives")
    job = fails_first_life.enqueue()
    wait_until(lambda: outcome(job.id) == "failed", timeout=30, what="the first life to fail")

    assert Admin().retry(job.id, reason="fixed").status == "changed"

    wait_until(lambda: outcome(job.id) == "succeeded", timeout=30, what="the second life")
    assert worker.stop() == 0
    entries = Admin().get_job_timeline(job.id).items
    lives = [(e.source, e.kind, e.attempt) for e in entries if e.kind != "enqueued"]
    assert lives == [
        ("event", "claimed", 1),
        ("attempt", "failed", 1),
        ("event", "failed", 1),
        ("event", "retried", 0),
        ("event", "claimed", 1),
        ("attempt", "succeeded", 1),
        ("event", "succeeded", 1),
    ]
    assert list(RunRecord.objects.filter(job_id=job.id).values_list("label", flat=True)) == [
        "first",
        "again",
    ]


def test_a_job_promoted_from_an_hour_ahead_runs_now(start_worker, wait_until):
    worker = start_worker("--queues", "jobtests.record")
    job = record.options(delay=timedelta(hours=1)).enqueue(label="later")
    assert JobRuntime.objects.get(job_id=job.id).state == "scheduled"

    assert Admin().promote(job.id).status == "changed"

    wait_until(lambda: outcome(job.id) == "succeeded", timeout=30, what="the promoted job")
    assert worker.stop() == 0


def database_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def claim_loops_idle_since(moment) -> int:
    """Worker claim connections that went idle after ``moment`` right after
    the look-up an empty claim is followed by: each made an empty claim then."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE 'workhorse-worker %%' AND state = 'idle'"
            " AND query LIKE '%%workhorse_next_run_at_v1%%' AND state_change > %s",
            [moment],
        )
        return cursor.fetchone()[0]


def runs_by_worker(ids, after=None) -> dict[str, int]:
    """How many attempts of ``ids`` each worker started (after ``after``)."""
    attempts = AttemptHistory.objects.filter(job_id__in=ids)
    if after is not None:
        attempts = attempts.filter(started_at__gt=after)
    counts: dict[str, int] = {}
    for worker_id in attempts.values_list("worker_id", flat=True):
        counts[worker_id.split("+")[0]] = counts.get(worker_id.split("+")[0], 0) + 1
    return counts


def test_a_paused_queue_gets_no_claims_from_three_workers_until_resumed(start_worker, wait_until):
    settings = {"POLL_INTERVAL": 0.5}
    workers = [
        start_worker(
            "--queues", "jobtests.sleep", "--concurrency", "2", settings=settings, ready=False
        )
        for _ in range(3)
    ]
    for worker in workers:
        worker.wait_ready()
    # Six slots claim at most six jobs ahead of the pause: most of them wait.
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 0.05, "label": "flow"}] * 150)]
    wait_until(
        lambda: len(runs_by_worker(ids)) == 3,
        timeout=60,
        what="jobs flowing through all three workers",
    )

    assert Admin().pause_queue("jobtests.sleep").status == "changed"
    paused = database_now()  # the pause has committed: every claim from now on sees it

    # Every worker comes round to an empty claim a second or more after the
    # pause (two poll intervals), its jobs claimed before the pause done.
    wait_until(
        lambda: claim_loops_idle_since(paused + timedelta(seconds=1)) == 3,
        timeout=60,
        what="each worker to claim nothing after the pause",
    )
    with connection.cursor() as cursor:
        claims = timeline_events(cursor, ids, "claimed")
    claimed = {job_id for job_id, _, _ in claims}
    assert not [at for _, at, _ in claims if at > paused]
    assert runs_by_worker(ids, after=paused) == {}
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=claimed).count() == len(claimed),
        timeout=30,
        what="the jobs claimed before the pause to finish",
    )
    waiting = set(ids) - claimed
    assert waiting, "the pause came after every job was claimed: enqueue more"
    assert set(JobRuntime.objects.filter(job_id__in=waiting).values_list("state", flat=True)) == {
        "ready"
    }

    before_resume = database_now()  # a woken claim may start before a now() after it
    assert Admin().resume_queue("jobtests.sleep").status == "changed"

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == len(ids),
        timeout=120,
        what="the waiting jobs to run after the resume",
    )
    for worker in workers:
        assert worker.stop() == 0
    # Each job ran once; the waiting ones after the resume, by all three workers.
    assert AttemptHistory.objects.filter(job_id__in=ids).count() == len(ids)
    after_resume = runs_by_worker(ids, after=before_resume)
    assert sum(after_resume.values()) == len(waiting)
    assert set(after_resume) == {w.worker_id for w in workers}

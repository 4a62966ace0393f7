"""Operator actions against real ``runworker`` processes: a retried job lives
twice and its timeline shows both lives; a job promoted from an hour ahead
runs now; a paused queue gets no claims from any of three workers while
their running jobs finish, and a resume sets them claiming again."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from jobtests.jobs import fails_first_life, record, sleep
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import JobOutcome, JobRuntime

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


def test_a_paused_queue_gets_no_claims_from_three_workers_until_resumed(start_worker, wait_until):
    settings = {"POLL_INTERVAL": 0.5}
    workers = [start_worker("--queues", "jobtests.sleep", settings=settings) for _ in range(3)]
    running = [h.id for h in sleep.enqueue_many([{"seconds": 2, "label": "running"}] * 3)]
    wait_until(
        lambda: RunRecord.objects.filter(label="running").count() == 3,
        timeout=30,
        what="each worker to be running a job",
    )

    assert Admin().pause_queue("jobtests.sleep").status == "changed"
    waiting = [h.id for h in sleep.enqueue_many([{"seconds": 0.01, "label": "after"}] * 6)]

    # The running jobs finish; then the workers, idle, claim nothing for
    # several poll intervals.
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=running, state="succeeded").count() == 3,
        timeout=30,
        what="the running jobs to finish",
    )
    time.sleep(2.5)
    assert RunRecord.objects.filter(label="after").count() == 0
    assert set(JobRuntime.objects.filter(job_id__in=waiting).values_list("state", flat=True)) == {
        "ready"
    }

    assert Admin().resume_queue("jobtests.sleep").status == "changed"

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=waiting, state="succeeded").count() == 6,
        timeout=30,
        what="the waiting jobs to run after the resume",
    )
    for worker in workers:
        assert worker.stop() == 0

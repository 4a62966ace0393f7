"""SIGTERM: running jobs get a grace period, then go back to ready unused."""

from __future__ import annotations

import signal
import time

import pytest
from django.db import connection, transaction
from jobtests.jobs import sleep
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobEvent, JobOutcome, JobRuntime

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

GRACE = 1.0


def test_sigterm_releases_running_jobs_and_exits_0_after_the_grace_period(start_worker, wait_until):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 60, "rerun_seconds": 0.2}] * 2)]
    leaving = start_worker(
        "--queues",
        "jobtests.sleep",
        "--concurrency",
        "2",
        "--id",
        "leaving",
        settings={"SHUTDOWN_GRACE": GRACE},
    )
    wait_until(
        lambda: RunRecord.objects.filter(job_id__in=ids, pid=leaving.pid).count() == 2,
        what="both jobs running",
    )
    leaving_id = leaving.worker_id

    sent = time.monotonic()
    leaving.send(signal.SIGTERM)
    code = leaving.wait_exit(GRACE + 10)
    took = time.monotonic() - sent

    assert code == 0, leaving.stderr
    assert GRACE * 0.9 <= took < GRACE + 4, f"exited {took:.2f} s after SIGTERM"
    assert "SIGTERM received" in leaving.stderr
    assert "released 2 running job(s) back to ready" in leaving.stderr
    for job_id in ids:
        runtime = JobRuntime.objects.get(job_id=job_id)
        assert (runtime.state, runtime.attempt, runtime.worker_id) == ("ready", 0, None)
        released = JobEvent.objects.get(job_id=job_id, kind="released")
        assert (released.worker_id, released.attempt) == (leaving_id, 1)
    assert not AttemptHistory.objects.filter(job_id__in=ids).exists()

    finisher = start_worker("--queues", "jobtests.sleep", "--concurrency", "2", "--id", "finisher")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 2,
        timeout=20,
        what="both jobs finished by the second worker",
    )
    assert finisher.stop() == 0
    for job_id in ids:
        outcome = JobOutcome.objects.get(job_id=job_id)
        assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 0)
        history = AttemptHistory.objects.filter(job_id=job_id).values_list("outcome", "worker_id")
        assert list(history) == [("succeeded", finisher.worker_id)]


def test_jobs_finishing_within_the_grace_period_are_recorded_before_exit(start_worker, wait_until):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 1.5}] * 3)]
    worker = start_worker(
        "--queues", "jobtests.sleep", "--concurrency", "3", settings={"SHUTDOWN_GRACE": 30}
    )
    wait_until(
        lambda: RunRecord.objects.filter(job_id__in=ids).count() == 3, what="all jobs running"
    )

    worker.send(signal.SIGTERM)
    assert worker.wait_exit(30) == 0, worker.stderr

    assert "released" not in worker.stderr
    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert sorted(outcomes.values_list("state", "attempts")) == [("succeeded", 1)] * 3
    assert not JobRuntime.objects.filter(job_id__in=ids).exists()
    assert AttemptHistory.objects.filter(job_id__in=ids, outcome="succeeded").count() == 3


def test_a_second_sigterm_stops_at_once_while_results_cannot_be_written(start_worker, wait_until):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 0.01}] * 3)]
    with transaction.atomic():
        # Finishes insert outcome rows: this lock holds the writer back.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE workhorse_job_outcome IN EXCLUSIVE MODE")
        worker = start_worker("--queues", "jobtests.sleep", "--concurrency", "3")
        wait_until(
            lambda: (
                RunRecord.objects.filter(job_id__in=ids, finished_at__isnull=False).count() == 3
            ),
            what="all three runs finished",
        )
        worker.send(signal.SIGTERM)
        wait_until(lambda: "SIGTERM received" in worker.stderr, what="the first SIGTERM seen")
        assert worker.alive(), "the first SIGTERM must wait for the results to be written"
        worker.send(signal.SIGTERM)
        code = worker.wait_exit(15)
    assert code == 1, worker.stderr
    assert "second SIGTERM" in worker.stderr
    assert "still writing at a forced stop" in worker.stderr


def running_a_minute_long_job(start_worker, wait_until, **settings):
    """A worker with a grace of 0.5 s (the flag) running a 60-second job."""
    job = sleep.enqueue(seconds=60)
    worker = start_worker(
        "--queues", "jobtests.sleep", "--shutdown-grace", "0.5", settings=settings or None
    )
    wait_until(
        lambda: RunRecord.objects.filter(job_id=job.id, pid=worker.pid).exists(),
        what="the job running",
    )
    return job, worker


def test_the_shutdown_grace_flag_wins_over_the_setting_and_the_warning_says_it(
    start_worker, wait_until
):
    job, worker = running_a_minute_long_job(start_worker, wait_until, SHUTDOWN_GRACE=3600)

    worker.send(signal.SIGTERM)
    # Under the setting's grace the worker would wait for the job's 60 s.
    assert worker.wait_exit(30) == 0, worker.stderr

    assert "SIGTERM received, finishing running jobs (up to 0.5 s;" in worker.stderr
    assert "released 1 running job(s) back to ready" in worker.stderr
    assert JobRuntime.objects.get(job_id=job.id).state == "ready"


def test_sigint_stops_a_worker_gracefully_as_sigterm_does(start_worker, wait_until):
    job, worker = running_a_minute_long_job(start_worker, wait_until)

    worker.send(signal.SIGINT)

    assert worker.wait_exit(30) == 0, worker.stderr
    assert "SIGINT received, finishing running jobs" in worker.stderr
    assert "second SIGINT" not in worker.stderr
    assert "released 1 running job(s) back to ready" in worker.stderr
    runtime = JobRuntime.objects.get(job_id=job.id)
    assert (runtime.state, runtime.attempt) == ("ready", 0)

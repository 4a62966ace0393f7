"""Durable sleep in real workers: a sleeping job holds no slot, uses no
attempt, and wakes after its time in whichever worker is running then."""

from __future__ import annotations

import signal
from datetime import datetime

import pytest
from django.db import transaction
from jobtests.durable_jobs import async_nap, nap, nap_neighbour
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobEvent, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def run_of(job_id: int, label: str) -> RunRecord:
    return RunRecord.objects.get(job_id=job_id, label=label)


def wake_time(job_id: int) -> datetime:
    (mark,) = [c for c in Admin().get_job(job_id).checkpoints if c.kind == "sleep"]
    return datetime.fromisoformat(mark.result["wake_at"])


def history(job_id: int) -> list[tuple[int, str]]:
    return list(
        AttemptHistory.objects.filter(job_id=job_id)
        .order_by("finished_at", "id")
        .values_list("attempt", "outcome")
    )


def test_a_sleeping_job_frees_its_slot_and_uses_no_attempt(start_worker, wait_until):
    with transaction.atomic():
        sleeper = nap.enqueue(seconds=2)
        neighbour = nap_neighbour.enqueue(seconds=0.2)
    worker = start_worker("--queues", "jobtests.nap", "--concurrency", "1")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=sleeper.id).exists(),
        timeout=20,
        what="the sleeping job finished",
    )
    assert worker.stop() == 0

    # The neighbour ran and finished in the only slot while the first job slept
    # (it may start before the sleep is written: the slot frees when the
    # handler returns to sleep, and the writer records the sleep meanwhile).
    went_to_sleep = run_of(sleeper.id, "before").started_at
    woke = run_of(sleeper.id, "after").started_at
    neighbour_run = run_of(neighbour.id, "neighbour")
    assert went_to_sleep < neighbour_run.started_at < neighbour_run.finished_at < woke
    assert JobEvent.objects.filter(job_id=sleeper.id, kind="slept").count() == 1
    assert woke >= wake_time(sleeper.id)
    outcome = JobOutcome.objects.get(job_id=sleeper.id)
    assert (outcome.state, outcome.attempts) == ("succeeded", 1)
    assert history(sleeper.id) == [(1, "slept"), (1, "succeeded")]
    assert RunRecord.objects.filter(job_id=sleeper.id, label="before").count() == 1


def test_a_sleep_outlives_its_worker_and_ends_in_the_next_one(start_worker, wait_until):
    handle = nap.enqueue(seconds=3)
    first = start_worker("--queues", "jobtests.nap", "--id", "first")
    wait_until(
        lambda: JobEvent.objects.filter(job_id=handle.id, kind="slept").exists(),
        what="the job asleep",
    )
    snapshot = Admin().get_job(handle.id)
    assert (snapshot.state, snapshot.worker_id) == ("scheduled", None)
    assert snapshot.sleeping_until == wake_time(handle.id)

    first.send(signal.SIGKILL)
    assert first.wait_exit(10) == -signal.SIGKILL
    second = start_worker("--queues", "jobtests.nap", "--id", "second")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=20,
        what="the job finished by the second worker",
    )
    assert second.stop() == 0

    after = run_of(handle.id, "after")
    assert after.pid == second.pid
    assert after.started_at >= wake_time(handle.id)
    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 0)
    assert outcome.result == {"before": first.pid, "after": second.pid}
    assert history(handle.id) == [(1, "slept"), (1, "succeeded")]
    assert Admin().get_job(handle.id).sleeping_until is None


def test_an_async_handler_checkpoints_and_sleeps_too(start_worker, wait_until):
    handle = async_nap.enqueue(seconds=1)
    worker = start_worker("--queues", "jobtests.asyncnap")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=20,
        what="the async job finished",
    )
    assert worker.stop() == 0

    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.attempts) == ("succeeded", 1)
    assert outcome.result == {"before": worker.pid, "after": worker.pid}
    assert run_of(handle.id, "after").started_at >= wake_time(handle.id)
    assert RunRecord.objects.filter(job_id=handle.id, label="before").count() == 1
    assert history(handle.id) == [(1, "slept"), (1, "succeeded")]

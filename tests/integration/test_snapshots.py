"""``Admin().get_job`` reads one job on whichever side of the runtime/outcome
split it stands."""

import pytest

from django_workhorse import Admin
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    RetryingJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db


def test_a_ready_job_has_no_attempt_owner_or_outcome_yet():
    job = ReadyJobFactory(payload={"a": 2, "b": 5}, priority=7, max_attempts=4)
    snap = job.snapshot()
    assert snap.id == job.id
    assert (snap.name, snap.queue, snap.payload) == ("demo.jobs.add", job.queue, {"a": 2, "b": 5})
    assert (snap.state, snap.priority, snap.current_attempt, snap.max_attempts) == (
        "ready",
        7,
        0,
        4,
    )
    assert snap.run_at is not None and snap.run_at >= snap.created_at
    assert (snap.worker_id, snap.lease_expires_at, snap.started_at) == (None, None, None)
    assert (snap.result, snap.error, snap.finished_at) == (None, None, None)
    assert not snap.is_terminal


def test_a_delayed_job_is_scheduled_for_later(db_rows):
    job = ScheduledJobFactory(delay=600)
    snap = job.snapshot()
    assert snap.state == "scheduled"
    assert 590 < (snap.run_at - snap.created_at).total_seconds() <= 600


def test_an_active_job_shows_its_worker_lease_and_attempt():
    job = ActiveJobFactory(worker="worker-a", lease_seconds=30)
    snap = job.snapshot()
    assert (snap.state, snap.worker_id, snap.current_attempt) == ("active", "worker-a", 1)
    assert snap.started_at is not None
    assert snap.lease_expires_at > snap.started_at
    assert snap.finished_at is None


def test_a_job_waiting_for_a_retry_is_scheduled_and_shows_the_last_error():
    job = RetryingJobFactory(error={"type": "ConnectionError", "message": "smtp busy"})
    snap = job.snapshot()
    assert snap.state == "scheduled"
    assert snap.current_attempt == 1
    assert snap.error == {"type": "ConnectionError", "message": "smtp busy"}
    assert snap.worker_id is None and snap.lease_expires_at is None
    assert snap.finished_at is None and not snap.is_terminal


def test_a_succeeded_job_carries_its_result():
    job = SucceededJobFactory(result={"sum": 3, "items": [1, 2]})
    snap = job.snapshot()
    assert (snap.state, snap.result, snap.error) == ("succeeded", {"sum": 3, "items": [1, 2]}, None)
    assert snap.current_attempt == 1
    assert snap.finished_at is not None
    assert (snap.run_at, snap.worker_id, snap.lease_expires_at) == (None, None, None)
    assert snap.is_terminal


def test_a_failed_job_carries_its_error():
    job = FailedJobFactory(error={"type": "ValueError", "message": "bad invoice"})
    snap = job.snapshot()
    assert (snap.state, snap.result) == ("failed", None)
    assert snap.error == {"type": "ValueError", "message": "bad invoice"}
    assert snap.finished_at is not None and snap.is_terminal


def test_a_missing_id_gives_none():
    assert Admin().get_job(2**62) is None

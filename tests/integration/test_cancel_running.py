"""Cancelling a running job, in SQL: ``workhorse_cancel_v1`` flags it and tells
its worker; the worker's ack (``workhorse_fail_many_v1``, kind 'canceled'),
a release at shutdown and a stall recovery each end it canceled, never back
in line."""

from __future__ import annotations

import json

import pytest

from django_workhorse import Admin
from django_workhorse.db import store
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db

CANCELLED = json.dumps({"type": "django_workhorse.exceptions.JobCancelled", "message": "stop"})


def ack_canceled(cursor, job, *, retryable: bool = True) -> store.FailResult:
    (result,) = store.fail_many(
        cursor, job.worker, [job.id], [job.fence], [CANCELLED], ["canceled"], [retryable], [0.0]
    )
    return result


def test_cancel_of_a_running_job_flags_it_and_leaves_it_running(db_rows):
    job = ActiveJobFactory()

    result = Admin().cancel(job.id, reason="customer left")

    assert (result.status, result.state, result.changed) == ("requested", "active", False)
    assert "its worker was asked to stop it" in result.message
    runtime = db_rows.runtime(job.id)
    assert (runtime["state"], runtime["cancel_requested"]) == ("active", True)
    assert runtime["worker_id"] == job.worker and runtime["fence"] == job.fence
    requested = db_rows.of_job(job.id)["stored_events"][-1]
    assert requested["kind"] == "cancel_requested"
    assert json.loads(requested["data"]) == {"reason": "customer left"}


def test_the_heartbeat_reply_carries_the_cancel_request(cursor):
    job = ActiveJobFactory()
    assert store.heartbeat_many(cursor, job.worker, [job.id], [job.fence], 30) == [
        (job.id, True, False)
    ]
    Admin().cancel(job.id)
    assert store.heartbeat_many(cursor, job.worker, [job.id], [job.fence], 30) == [
        (job.id, True, True)
    ]


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_the_cancel_of_a_running_job_is_announced_to_workers_on_commit(pg_connect):
    listener = pg_connect()
    listener.execute("LISTEN workhorse_control")
    job = ActiveJobFactory()

    Admin().cancel(job.id)

    (note,) = list(listener.notifies(timeout=5, stop_after=1))
    assert json.loads(note.payload) == {
        "action": "cancel",
        "job_id": job.id,
        "worker": job.worker,
        "fence": job.fence,
    }


def test_a_second_cancel_of_a_running_job_asks_again(db_rows):
    job = ActiveJobFactory()
    Admin().cancel(job.id)
    assert Admin().cancel(job.id).status == "requested"
    kinds = [e["kind"] for e in db_rows.of_job(job.id)["events"]]
    assert kinds.count("cancel_requested") == 2


def test_the_workers_ack_ends_the_job_canceled_with_the_reason_and_no_retry(cursor, db_rows):
    job = ActiveJobFactory(max_attempts=5)
    Admin().cancel(job.id, reason="customer left")

    result = ack_canceled(cursor, job, retryable=True)

    assert (result.ok, result.will_retry, result.canceled, result.reason) == (
        True,
        False,
        True,
        "customer left",
    )
    rows = db_rows.of_job(job.id)
    assert rows["runtime"] == []
    (outcome,) = rows["outcome"]
    assert (outcome["state"], outcome["attempts"]) == ("canceled", 1)
    error = json.loads(outcome["error"])
    assert (error["type"], error["reason"], error["state_before"]) == (
        "django_workhorse.exceptions.JobCancelled",
        "customer left",
        "active",
    )
    assert [(a["attempt"], a["outcome"]) for a in rows["attempts"]] == [(1, "canceled")]
    assert rows["stored_events"][-1]["kind"] == "canceled"


def test_a_handler_that_cancels_itself_ends_canceled_without_a_request(cursor, db_rows):
    job = ActiveJobFactory()
    result = ack_canceled(cursor, job)
    assert (result.ok, result.will_retry, result.reason) == (True, False, None)
    assert db_rows.outcome(job.id)["state"] == "canceled"


def test_an_ack_with_a_stale_fence_is_refused(cursor, db_rows):
    job = ActiveJobFactory()
    Admin().cancel(job.id)
    before = db_rows.fingerprint(job.id)
    (result,) = store.fail_many(
        cursor, job.worker, [job.id], [job.fence + 1], [CANCELLED], ["canceled"], [False], [None]
    )
    assert result.ok is False
    assert db_rows.fingerprint(job.id) == before


def test_a_release_at_shutdown_ends_a_flagged_job_canceled_not_ready(cursor, db_rows):
    flagged, other = ActiveJobFactory(worker="stopping"), ActiveJobFactory(worker="stopping")
    Admin().cancel(flagged.id, reason="too late")

    ids, fences = [flagged.id, other.id], [flagged.fence, other.fence]
    rows = store.release_many(cursor, "stopping", ids, fences)

    assert rows == [(flagged.id, True, True), (other.id, True, False)]
    assert db_rows.runtime(flagged.id) is None
    outcome = db_rows.outcome(flagged.id)
    assert outcome["state"] == "canceled"
    assert json.loads(outcome["error"])["reason"] == "too late"
    assert [a["outcome"] for a in db_rows.of_job(flagged.id)["attempts"]] == ["canceled"]
    assert db_rows.runtime(other.id)["state"] == "ready"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_recovery_of_a_flagged_job_whose_worker_died_ends_it_canceled(cursor, db_rows):
    job = ActiveJobFactory(lease_seconds=0, worker="died")
    Admin().cancel(job.id)

    (recovered,) = store.recover_stalled(cursor)

    assert (recovered.job_id, recovered.canceled, recovered.failed) == (job.id, True, False)
    assert db_rows.runtime(job.id) is None
    assert db_rows.outcome(job.id)["state"] == "canceled"
    assert [a["outcome"] for a in db_rows.of_job(job.id)["attempts"]] == ["stalled"]
    assert db_rows.of_job(job.id)["events"][-1]["kind"] == "canceled"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_recovery_of_a_flagged_job_keeps_the_operators_latest_reason(cursor, db_rows):
    job = ActiveJobFactory(lease_seconds=0, worker="died")
    Admin().cancel(job.id, reason="first thought")
    Admin().cancel(job.id, reason="customer left")

    store.recover_stalled(cursor)

    error = json.loads(db_rows.outcome(job.id)["error"])
    assert (error["reason"], error["state_before"]) == ("customer left", "active")
    assert store.get_job(cursor, job.id)["error"]["reason"] == "customer left"


def test_a_failure_racing_a_cancel_ends_the_job_canceled_not_retried(cursor, db_rows):
    job = ActiveJobFactory(max_attempts=5)
    Admin().cancel(job.id, reason="raced")
    failure = json.dumps({"type": "RuntimeError", "message": "boom"})

    (result,) = store.fail_many(
        cursor, job.worker, [job.id], [job.fence], [failure], ["failed"], [True], [0.0]
    )

    assert (result.ok, result.will_retry, result.canceled) == (True, False, True)
    outcome = db_rows.outcome(job.id)
    assert outcome["state"] == "canceled"
    assert json.loads(outcome["error"])["reason"] == "raced"
    attempts = db_rows.of_job(job.id)["attempts"]
    assert [(a["outcome"], json.loads(a["error"])) for a in attempts] == [
        ("failed", {"type": "RuntimeError", "message": "boom"})
    ]


def test_a_last_failure_of_a_flagged_job_still_ends_failed(cursor, db_rows):
    job = ActiveJobFactory(max_attempts=1)
    Admin().cancel(job.id)
    failure = json.dumps({"type": "RuntimeError", "message": "boom"})
    (result,) = store.fail_many(
        cursor, job.worker, [job.id], [job.fence], [failure], ["failed"], [True], [0.0]
    )
    assert (result.will_retry, result.canceled) == (False, False)
    assert db_rows.outcome(job.id)["state"] == "failed"

"""Operator actions through ``workhorse.Admin``: each does what it says, says
what it did, keeps one runtime row xor one outcome row, and records an event."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.db import connection

from django_workhorse import Admin, InvalidQueryError, UnknownQueueError
from django_workhorse.db import store
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db


def kinds(db_rows, job_id):
    return [e["kind"] for e in db_rows.of_job(job_id)["events"]]


def test_retry_runs_a_failed_job_again_with_a_fresh_budget_and_keeps_its_history(db_rows):
    job = FailedJobFactory(max_attempts=1)
    attempts_before = len(db_rows.of_job(job.id)["attempts"])

    result = Admin().retry(job.id, reason="fixed the bug")

    assert (result.status, result.state, result.changed) == ("changed", "ready", True)
    rows = db_rows.of_job(job.id)
    assert rows["outcome"] == [] and len(rows["runtime"]) == 1
    assert (rows["runtime"][0]["state"], rows["runtime"][0]["attempt"]) == ("ready", 0)
    assert len(rows["attempts"]) == attempts_before
    retried = rows["stored_events"][-1]
    assert retried["kind"] == "retried"
    assert json.loads(retried["data"]) == {
        "previous_state": "failed",
        "previous_attempts": 1,
        "reason": "fixed the bug",
    }


def test_a_retried_job_is_claimed_with_a_fence_past_every_earlier_claim(db_rows):
    job = FailedJobFactory(max_attempts=1, worker="w-old")
    Admin().retry(job.id)
    with connection.cursor() as cursor:
        (claimed,) = store.claim_many(cursor, "w-new", [job.queue], [1], 30)
        assert claimed.fence > job.fence and claimed.attempt == 1
        assert store.succeed_many(cursor, "w-old", [job.id], [job.fence], ["{}"]) == [
            (job.id, False)
        ]


def test_retry_of_a_live_or_succeeded_job_changes_nothing_and_says_why(db_rows):
    live, done = ReadyJobFactory(), SucceededJobFactory()
    before = db_rows.fingerprint(live.id), db_rows.fingerprint(done.id)

    on_live, on_done = Admin().retry(live.id), Admin().retry(done.id)

    assert (on_live.status, on_live.state) == ("unchanged", "ready")
    assert (on_done.status, on_done.state) == ("unchanged", "succeeded")
    assert "only failed or canceled jobs" in on_live.message
    assert (db_rows.fingerprint(live.id), db_rows.fingerprint(done.id)) == before


def test_an_action_on_a_job_that_does_not_exist_says_so():
    admin = Admin()
    for result in (admin.retry(987654321), admin.promote(987654321), admin.cancel(987654321)):
        assert (result.status, result.state) == ("unknown", None)
        assert "no job #987654321" in result.message


def test_promote_makes_a_scheduled_job_ready_now(db_rows):
    job = ScheduledJobFactory(delay=3600)

    result = Admin().promote(job.id)

    assert (result.status, result.state) == ("changed", "ready")
    runtime = db_rows.runtime(job.id)
    assert runtime["state"] == "ready" and runtime["run_at"] <= db_rows.now()
    promoted = db_rows.of_job(job.id)["stored_events"][-1]
    assert promoted["kind"] == "promoted"
    assert json.loads(promoted["data"]) == {"by": "operator"}
    assert Admin().promote(job.id).status == "unchanged"


@pytest.mark.parametrize("factory", [ReadyJobFactory, ScheduledJobFactory])
def test_cancel_of_a_waiting_job_ends_it_canceled_with_an_envelope_and_an_event(db_rows, factory):
    job = factory()

    result = Admin().cancel(job.id, reason="customer left")

    assert (result.status, result.state) == ("changed", "canceled")
    rows = db_rows.of_job(job.id)
    assert rows["runtime"] == []
    (outcome,) = rows["outcome"]
    assert outcome["state"] == "canceled"
    error = json.loads(outcome["error"])
    assert (error["type"], error["reason"]) == (
        "django_workhorse.exceptions.JobCancelled",
        "customer left",
    )
    assert rows["events"][-1]["kind"] == "canceled"


def test_a_cancel_envelope_says_when_and_by_whom(db_rows):
    job, anonymous = ReadyJobFactory(), ScheduledJobFactory()

    Admin().cancel(job.id, reason="duplicate", by="alice")
    Admin().cancel(anonymous.id)

    rows = db_rows.of_job(job.id)
    (outcome,) = rows["outcome"]
    error = json.loads(outcome["error"])
    assert (error["by"], error["reason"], error["state_before"]) == ("alice", "duplicate", "ready")
    # The database's time of the cancel: the outcome's own finish time.
    assert datetime.fromisoformat(error["at"]) == outcome["finished_at"]
    assert json.loads(rows["events"][-1]["data"])["by"] == "alice"
    (unnamed,) = db_rows.of_job(anonymous.id)["outcome"]
    unnamed_error = json.loads(unnamed["error"])
    assert "by" not in unnamed_error and "reason" not in unnamed_error and "at" in unnamed_error


def test_the_cancel_request_of_a_running_job_records_by_whom(db_rows):
    job = ActiveJobFactory()

    assert Admin().cancel(job.id, reason="stop", by="bob").status == "requested"

    requested = db_rows.of_job(job.id)["stored_events"][-1]
    assert requested["kind"] == "cancel_requested"
    assert json.loads(requested["data"]) == {"reason": "stop", "by": "bob"}


@pytest.mark.parametrize("by", ["", "x" * 256, "a\x00b", 7, "a\ud800"])
def test_a_bad_by_is_a_clear_error(by):
    with pytest.raises(InvalidQueryError, match="by is a string"):
        Admin().cancel(ReadyJobFactory().id, by=by)


@pytest.mark.parametrize(
    ("action", "factory"), [("cancel", ReadyJobFactory), ("retry", FailedJobFactory)]
)
@pytest.mark.parametrize("reason", ["x" * 1001, "a\x00b", "a\ud800", 7])
def test_a_reason_postgresql_cannot_store_is_refused_before_any_write(
    db_rows, action, factory, reason
):
    """Bug: a lone surrogate reached the driver and raised its UnicodeEncodeError."""
    job = factory()
    before = db_rows.fingerprint(job.id)

    with pytest.raises(InvalidQueryError, match="a reason is a string"):
        getattr(Admin(), action)(job.id, reason=reason)

    assert db_rows.fingerprint(job.id) == before


def test_cancel_of_a_finished_job_reports_how_it_finished(db_rows):
    job = SucceededJobFactory()
    result = Admin().cancel(job.id)
    assert (result.status, result.state) == ("unchanged", "succeeded")
    assert "already finished" in result.message


def test_a_canceled_job_can_be_retried(db_rows):
    job = ReadyJobFactory()
    Admin().cancel(job.id)
    assert Admin().retry(job.id).status == "changed"
    assert db_rows.runtime(job.id)["state"] == "ready"


def test_a_paused_queue_hands_out_nothing_until_resumed():
    job = ReadyJobFactory(queue="pausable")
    admin = Admin()

    assert admin.pause_queue("pausable").status == "changed"
    assert admin.pause_queue("pausable").status == "unchanged"
    with connection.cursor() as cursor:
        assert store.claim_many(cursor, "w", ["pausable"], [1], 30) == []
        assert admin.resume_queue("pausable").status == "changed"
        assert [c.job_id for c in store.claim_many(cursor, "w", ["pausable"], [1], 30)] == [job.id]
    assert admin.resume_queue("pausable").message == "queue 'pausable' was already running"


def test_pausing_or_resuming_an_unknown_queue_is_refused_with_the_known_ones():
    for act in (Admin().pause_queue, Admin().resume_queue):
        with pytest.raises(UnknownQueueError, match=r"unknown queue 'pausible'.*known: .*default"):
            act("pausible")
    assert Admin().queue_names() == []


def test_a_queue_that_only_the_database_knows_can_be_paused():
    ReadyJobFactory(queue="stored-only")  # enqueued by code this process does not import
    assert Admin().pause_queue("stored-only").status == "changed"
    assert Admin().resume_queue("stored-only").status == "changed"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_resume_wakes_listening_workers_at_once(pg_connect):
    ReadyJobFactory(queue="wake-me")
    listener = pg_connect()
    listener.execute('LISTEN "workhorse:wake-me"')
    Admin().pause_queue("wake-me")
    list(listener.notifies(timeout=0.2))  # nothing is sent on pause

    Admin().resume_queue("wake-me")

    notes = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.channel for n in notes] == ["workhorse:wake-me"]


def test_a_bad_queue_name_or_job_id_is_a_clear_error():
    with pytest.raises(InvalidQueryError, match="not a queue name"):
        Admin().pause_queue("bad name\n")
    with pytest.raises(InvalidQueryError, match="whole number"):
        Admin().retry(-1)


@pytest.mark.parametrize(
    ("action", "factory", "bad"),
    [
        ("cancel", ReadyJobFactory, "x"),
        ("cancel", ReadyJobFactory, None),
        ("retry", FailedJobFactory, 0),
    ],
)
def test_a_bulk_action_with_one_bad_id_after_good_ones_changes_no_job(
    db_rows, action, factory, bad
):
    """Bug: the jobs before the bad id were canceled (or retried), then the
    bad id raised, leaving the list half done."""
    jobs = [factory(), factory()]
    before = [db_rows.fingerprint(job.id) for job in jobs]

    with pytest.raises(InvalidQueryError, match="a job id is a whole number"):
        Admin().bulk(action, [jobs[0].id, jobs[1].id, bad])

    assert [db_rows.fingerprint(job.id) for job in jobs] == before


def test_a_bulk_cancel_with_a_bad_by_changes_no_job(db_rows):
    job = ReadyJobFactory()
    before = db_rows.fingerprint(job.id)

    with pytest.raises(InvalidQueryError, match="by is a string"):
        Admin().bulk("cancel", [job.id], by=7)

    assert db_rows.fingerprint(job.id) == before


@pytest.mark.parametrize("ids", [None, 7, "12", {1: 2}])
def test_a_bulk_action_given_no_list_of_ids_is_a_clear_error(ids):
    with pytest.raises(InvalidQueryError, match="job ids are a list of whole numbers"):
        Admin().bulk("cancel", ids)


def test_a_retried_job_fence_stays_past_its_earlier_claims_when_their_history_is_gone():
    job = ReadyJobFactory(max_attempts=1)
    with connection.cursor() as cursor:
        # Two claims given back at shutdown, then one that fails for good:
        # the attempt count is 1, the fence 3.
        for _ in range(2):
            (run,) = store.claim_many(cursor, "w-old", [job.queue], [1], 30)
            assert store.release_many(cursor, "w-old", [job.id], [run.fence])[0][1]
        (last,) = store.claim_many(cursor, "w-old", [job.queue], [1], 30)
        (failed,) = store.fail_many(
            cursor, "w-old", [job.id], [last.fence], ['{"type": "E"}'], ["failed"], [False], [None]
        )
        assert failed.ok and not failed.will_retry
        # Retention has dropped the history of those claims.
        cursor.execute("DELETE FROM workhorse_job_event WHERE job_id = %s", [job.id])
        cursor.execute("DELETE FROM workhorse_attempt_history WHERE job_id = %s", [job.id])

        assert Admin().retry(job.id).changed
        fences = []
        for _ in range(3):
            (again,) = store.claim_many(cursor, "w-old", [job.queue], [1], 30)
            fences.append(again.fence)
            assert store.release_many(cursor, "w-old", [job.id], [again.fence])[0][1]

    assert fences[0] > last.fence and fences == sorted(set(fences))

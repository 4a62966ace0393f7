"""The events the timeline derives instead of storing: a job's enqueue (from
its row), its claims (from its attempts) and a run's plain success (from its
'succeeded' attempt) read exactly like stored events, while
``workhorse_job_event`` holds only what no other row records."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse import Admin
from django_workhorse.db import store
from tests.factories import (
    ActiveJobFactory,
    BlockedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

transactional = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def events(job_id: int) -> list[tuple[str, int, str | None, dict | None]]:
    return [
        (e.kind, e.attempt, e.worker_id, e.data)
        for e in Admin().get_job_timeline(job_id).items
        if e.source == "event"
    ]


@transactional
def test_a_plain_run_stores_no_event_yet_its_timeline_shows_enqueue_claim_and_success(db_rows):
    job = SucceededJobFactory(worker="w-plain")

    rows = db_rows.of_job(job.id)
    assert rows["stored_events"] == []
    created_at = rows["job"][0]["created_at"]
    [(enqueued, _, _, data), *rest] = events(job.id)
    assert enqueued == "enqueued" and data["state"] == "ready"
    assert datetime.fromisoformat(data["run_at"]) == created_at  # PG trims trailing zeros
    assert rest == [("claimed", 1, "w-plain", None), ("succeeded", 1, "w-plain", None)]
    entries = Admin().get_job_timeline(job.id).items
    attempt = next(e for e in entries if e.source == "attempt")
    claimed = next(e for e in entries if e.kind == "claimed")
    succeeded = next(e for e in entries if e.kind == "succeeded" and e.source == "event")
    assert claimed.at == attempt.started_at and succeeded.at == attempt.finished_at


@pytest.mark.django_db
def test_the_derived_enqueue_says_how_a_scheduled_or_blocked_job_started():
    scheduled = ScheduledJobFactory()
    blocked = BlockedJobFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, created_at, first_due_at FROM workhorse_job WHERE id = ANY(%s)",
            [[scheduled.id, blocked.id]],
        )
        rows = {row[0]: row[1:] for row in cursor.fetchall()}

    [(kind, _, _, data)] = events(scheduled.id)
    created_at, first_due_at = rows[scheduled.id]
    assert kind == "enqueued" and data["state"] == "scheduled"
    assert first_due_at - created_at == timedelta(hours=1)
    assert datetime.fromisoformat(data["run_at"]) == first_due_at
    [(kind, _, _, data)] = events(blocked.id)
    assert kind == "enqueued" and data["state"] == "blocked"
    assert rows[blocked.id][1] is None  # due at once: nothing stored for it


@pytest.mark.django_db
def test_a_job_given_a_run_at_in_the_past_is_enqueued_ready_at_that_time():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() - interval '1 hour'")
        past = cursor.fetchone()[0]
    handle = add.options(run_at=past).enqueue(a=1, b=2)

    [(kind, _, _, data)] = events(handle.id)
    assert kind == "enqueued" and data["state"] == "ready"
    assert datetime.fromisoformat(data["run_at"]) == past  # PG trims trailing zeros


@pytest.mark.django_db
def test_the_running_attempt_shows_its_claim_from_the_runtime_row():
    job = ActiveJobFactory(worker="w-running")

    assert [k for k, *_ in events(job.id)] == ["enqueued", "claimed"]
    assert events(job.id)[1] == ("claimed", 1, "w-running", None)


@pytest.mark.django_db
def test_a_released_attempt_stores_its_claim_at_the_time_it_was_claimed(db_rows):
    job = ActiveJobFactory(worker="w-release")
    started_at = db_rows.runtime(job.id)["attempt_started_at"]
    with connection.cursor() as cursor:
        assert store.release_many(cursor, "w-release", [job.id], [job.fence]) == [
            (job.id, True, False)
        ]

    stored = {e["kind"]: e for e in db_rows.of_job(job.id)["stored_events"]}
    assert sorted((k, e["attempt"], e["worker_id"]) for k, e in stored.items()) == [
        ("claimed", 1, "w-release"),
        ("released", 1, "w-release"),
    ]
    assert stored["claimed"]["at"] == started_at
    assert [k for k, *_ in events(job.id)] == ["enqueued", "claimed", "released"]


@transactional
def test_a_claim_that_began_before_the_last_attempt_closed_pages_without_gaps(pg_connect):
    """A claim's time is its transaction's start: a claim that began before
    the previous attempt's failure committed, and saw the job come back in a
    later statement, starts before that attempt's finish."""
    job = ActiveJobFactory(worker="w-first", max_attempts=5)
    claimer = pg_connect()
    claimer.autocommit = False
    claimer.execute("SELECT now()")  # the claim's transaction has begun
    with connection.cursor() as cursor:
        (failed,) = store.fail_many(
            cursor,
            "w-first",
            [job.id],
            [job.fence],
            [json.dumps({"type": "ValueError", "message": "boom"})],
            ["failed"],
            [True],
            [0.0],
        )
    assert failed.will_retry
    with claimer.cursor() as cursor:
        (claimed,) = store.claim_many(cursor, "w-second", [job.queue], [1], 30)
    claimer.commit()
    with connection.cursor() as cursor:
        assert store.succeed_many(cursor, "w-second", [job.id], [claimed.fence], ["null"]) == [
            (job.id, True)
        ]
    admin = Admin()
    whole = admin.get_job_timeline(job.id).items
    second_claim = next(e for e in whole if e.kind == "claimed" and e.worker_id == "w-second")
    first_close = next(e for e in whole if e.source == "attempt" and e.kind == "failed")
    assert second_claim.at < first_close.at

    for limit in (1, 2, 3):
        paged, cursor = [], None
        while True:
            page = admin.get_job_timeline(job.id, cursor=cursor, limit=limit)
            paged.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert paged == whole, limit


@pytest.mark.django_db
def test_a_ready_job_never_claimed_shows_only_its_enqueue():
    job = ReadyJobFactory()

    assert [k for k, *_ in events(job.id)] == ["enqueued"]

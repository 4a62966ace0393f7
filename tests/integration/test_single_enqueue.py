"""One job without prerequisites takes workhorse_enqueue_v1 (typed arguments);
a batch takes workhorse_enqueue_many_v1. Both store the same rows."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from demo.jobs import add
from django.db import transaction

from django_workhorse import store

pytestmark = pytest.mark.django_db

OPTION_SETS = [
    pytest.param({}, id="defaults"),
    pytest.param({"priority": 7, "max_attempts": 2, "queue": "single-q"}, id="plain-options"),
    pytest.param({"delay": timedelta(minutes=5)}, id="delay"),
    pytest.param({"run_at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)}, id="run-at"),
    pytest.param({"run_at": datetime(2001, 1, 1, tzinfo=UTC)}, id="run-at-past"),
    pytest.param({"timeout": 12.5, "max_stalled": 0}, id="timeout-and-stalls"),
]

SAME = (
    "name",
    "queue",
    "payload",
    "max_attempts",
    "priority",
    "timeout",
    "backoff",
    "max_stalled",
    "trace_context",
    "dependency_policy",
)


def stored(db_rows, job_id: int) -> dict:
    rows = db_rows.of_job(job_id)
    job, runtime, query = rows["job"][0], rows["runtime"][0], rows["query"][0]
    due_at = job["first_due_at"] or job["created_at"]
    return {
        "job": {key: job[key] for key in SAME},
        "first_due_after_creation": (due_at - job["created_at"]).total_seconds() > 60,
        "first_due_at_stored": job["first_due_at"] is not None,
        "runtime": {key: runtime[key] for key in ("queue", "priority", "state", "attempt")},
        "run_at_is_first_due_at": runtime["run_at"] == due_at,
        "query": {key: query[key] for key in ("queue", "name")},
        "events": [event["kind"] for event in rows["events"]],
        "stored_events": rows["stored_events"],
    }


@pytest.mark.parametrize("options", OPTION_SETS)
def test_one_job_is_stored_as_the_same_job_in_a_batch_is(db_rows, options):
    one = add.options(**options).enqueue(a=1, b=2)
    batch = add.options(**options).enqueue_many([{"a": 1, "b": 2}, {"a": 3, "b": 4}])

    assert one.inserted and batch[0].inserted
    assert stored(db_rows, one.id) == stored(db_rows, batch[0].id)


def test_a_single_enqueue_with_a_held_key_returns_the_job_that_holds_it(db_rows):
    first = add.options(idempotency_key="single-key").enqueue_many([{"a": 1, "b": 2}] * 2)[0]
    before = db_rows.counts()

    again = add.options(idempotency_key="single-key").enqueue(a=5, b=6)

    assert (again.id, again.inserted) == (first.id, False)
    assert db_rows.counts() == before


def test_the_database_refuses_a_delay_out_of_range_from_psql_naming_it(cursor):
    with pytest.raises(Exception, match="delay") as refused, transaction.atomic():
        cursor.execute("SELECT workhorse_enqueue_v1('demo.jobs.add', p_delay => -1)")
    assert "0 to 3155760000" in str(refused.value.__cause__.diag.message_hint)


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_key_enqueued_singly_by_two_sessions_at_once_resolves_to_one_job(pg_connect, wait_until):
    """The second session's insert waits on the first one's; after the first
    commits, it must return the first job's id, not NULL and not a new job."""
    other, watcher = pg_connect(), pg_connect()
    single = store.SingleJob(
        name="demo.jobs.add",
        queue="default",
        payload_json='{"a": 1, "b": 2}',
        max_attempts=5,
        priority=0,
        delay=None,
        run_at=None,
        idempotency_key="single-race",
        timeout=None,
        backoff_json=None,
        max_stalled=1,
        trace_json=None,
    )
    result = {}

    def enqueue_in_other_session():
        with other.cursor() as cur:
            result["row"] = store.enqueue_one(cur, single)

    def other_session_waits_on_a_lock():
        return watcher.execute(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
            [other.info.backend_pid],
        ).fetchone()[0]

    with transaction.atomic():
        first = add.options(idempotency_key="single-race").enqueue(a=1, b=2)
        thread = threading.Thread(target=enqueue_in_other_session)
        thread.start()
        wait_until(other_session_waits_on_a_lock)
    thread.join(timeout=30)

    assert result["row"] == (first.id, False)

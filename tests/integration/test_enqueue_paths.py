"""Two SQL paths write jobs, and they write them alike.

Jobs without prerequisites, one or many, take workhorse_enqueue_batch_v1 (one
set of options, a list of payloads; workhorse_enqueue_v1 is its one-job form
for psql); jobs with prerequisites take workhorse_enqueue_many_v1 (one JSON
object per job). A job reads the same whichever path wrote it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo.jobs import add
from django.db import DatabaseError, connection, transaction

from django_workhorse import Admin
from django_workhorse.db import store

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


def through_the_general_function(options: dict, payloads: list[dict]) -> list[int]:
    """The jobs as workhorse_enqueue_many_v1 writes them (the dependents' path)."""
    bound = add.options(**options)
    rows_json, _count = bound._rows_json(payloads, bound._options.resolved())
    with connection.cursor() as cursor:
        return [job_id for job_id, _inserted in store.enqueue_many(cursor, rows_json)]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_one_job_a_batch_and_the_general_function_store_the_same_rows(db_rows, options):
    one = add.options(**options).enqueue(a=1, b=2)
    batch = add.options(**options).enqueue_many([{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    general = through_the_general_function(options, [{"a": 1, "b": 2}, {"a": 3, "b": 4}])

    assert one.inserted and all(handle.inserted for handle in batch)
    assert stored(db_rows, one.id) == stored(db_rows, batch[0].id) == stored(db_rows, general[0])
    assert stored(db_rows, batch[1].id) == stored(db_rows, general[1])


def test_a_batch_gives_each_payload_its_own_job_in_input_order():
    payloads = [{"a": i, "b": -i} for i in range(50)]

    handles = add.enqueue_many(payloads)

    assert [handle.id for handle in handles] == sorted(handle.id for handle in handles)
    jobs = Admin().get_jobs([handle.id for handle in handles])
    assert [job.payload for job in jobs] == payloads


@pytest.mark.parametrize(
    ("options", "wake"),
    [
        pytest.param({}, "", id="ready"),
        pytest.param({"delay": 3600}, "epoch", id="scheduled"),
    ],
)
@pytest.mark.parametrize("count", [1, 3], ids=["one", "batch"])
@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_each_enqueue_call_wakes_its_queue_once_on_commit(pg_connect, options, wake, count):
    listener = pg_connect()
    listener.execute('LISTEN "workhorse:paths-wake"')

    with transaction.atomic():
        handles = add.options(queue="paths-wake", **options).enqueue_many(
            [{"a": i, "b": i} for i in range(count)]
        )
        assert list(listener.notifies(timeout=0.1)) == []

    notices = list(listener.notifies(timeout=0.5))
    assert [notice.channel for notice in notices] == ["workhorse:paths-wake"]
    if wake == "epoch":
        run_at = Admin().get_job(handles[0].id).run_at
        assert float(notices[0].payload) == pytest.approx(run_at.timestamp(), abs=1e-3)
    else:
        assert notices[0].payload == ""


def test_a_single_enqueue_with_a_held_key_returns_the_job_that_holds_it(db_rows):
    first = add.options(idempotency_key="single-key").enqueue_many([{"a": 1, "b": 2}] * 2)[0]
    before = db_rows.counts()

    again = add.options(idempotency_key="single-key").enqueue(a=5, b=6)

    assert (again.id, again.inserted) == (first.id, False)
    assert db_rows.counts() == before


@pytest.mark.parametrize(
    "call",
    [
        "SELECT workhorse_enqueue_v1('demo.jobs.add', p_delay => -1)",
        "SELECT workhorse_enqueue_batch_v1('demo.jobs.add', '[{}, {}]', p_delay => -1)",
        "SELECT workhorse_enqueue_batch_v1('demo.jobs.add', '[{}]', p_timeout => 0)",
    ],
    ids=["one", "batch", "batch-timeout"],
)
def test_the_database_refuses_a_duration_out_of_range_naming_it(cursor, db_rows, call):
    before = db_rows.counts()
    with (
        pytest.raises(DatabaseError, match=r"delay .* and timeout") as refused,
        transaction.atomic(),
    ):
        cursor.execute(call)
    assert "0 to 3155760000" in str(refused.value.__cause__.diag.message_hint)
    assert db_rows.counts() == before


def test_the_batch_function_refuses_payloads_that_are_not_a_list(cursor):
    with (
        pytest.raises(DatabaseError, match="expects a JSON array of payloads, got object"),
        transaction.atomic(),
    ):
        cursor.execute("SELECT workhorse_enqueue_batch_v1('demo.jobs.add', '{}')")


def test_a_keyed_batch_from_sql_holds_one_job(cursor, db_rows):
    cursor.execute(
        "SELECT job_id, inserted FROM workhorse_enqueue_batch_v1("
        "'demo.jobs.add', '[{\"a\": 1}, {\"a\": 2}]', p_idempotency_key => 'sql-batch')"
    )
    (first, first_new), (second, second_new) = cursor.fetchall()
    assert first == second and first_new and not second_new
    assert db_rows.counts()["workhorse_job"] == 1

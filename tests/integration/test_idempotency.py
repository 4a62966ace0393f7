"""An idempotency key names one job of a type: enqueueing it again returns
that job instead of writing a second one."""

import json
import threading

import pytest
from demo.jobs import add, sleep_for
from django.db import transaction

from django_workhorse import Admin
from django_workhorse.db import store
from tests.factories import SucceededJobFactory, options_row

pytestmark = pytest.mark.django_db


def test_a_second_enqueue_with_the_same_key_returns_the_same_id_and_writes_nothing(db_rows):
    first = add.options(idempotency_key="invoice-42").enqueue(a=1, b=2)
    before = db_rows.counts()

    second = add.options(idempotency_key="invoice-42").enqueue(a=100, b=200)

    assert first.inserted is True
    assert (second.id, second.inserted) == (first.id, False)
    assert db_rows.counts() == before
    assert Admin().get_job(first.id).payload == {"a": 1, "b": 2}


def test_the_same_key_twice_within_one_enqueue_many_gives_one_job(db_rows):
    handles = add.options(idempotency_key="batch-key").enqueue_many(
        [{"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 3, "b": 3}]
    )

    assert len({h.id for h in handles}) == 1
    assert [h.inserted for h in handles] == [True, False, False]
    assert db_rows.counts()["workhorse_job"] == 1
    assert db_rows.counts()["workhorse_job_runtime"] == 1
    assert [e["kind"] for e in db_rows.of_job(handles[0].id)["events"]] == ["enqueued"]


def test_a_key_is_scoped_to_the_job_type():
    one = add.options(idempotency_key="shared").enqueue(a=1, b=2)
    other = sleep_for.options(idempotency_key="shared").enqueue(seconds=0)
    assert other.inserted
    assert other.id != one.id


def test_a_key_keeps_naming_its_job_after_the_job_finished(db_rows):
    done = SucceededJobFactory(idempotency_key="once-only")
    before = db_rows.counts()

    again = add.options(idempotency_key="once-only", queue=done.queue).enqueue(a=1, b=2)

    assert (again.id, again.inserted) == (done.id, False)
    assert db_rows.counts() == before
    assert done.snapshot().state == "succeeded"


def test_jobs_without_a_key_are_never_merged():
    handles = add.enqueue_many([{"a": 1, "b": 2}, {"a": 1, "b": 2}])
    assert len({h.id for h in handles}) == 2
    assert all(h.inserted for h in handles)


def through_the_general_function(cursor) -> list[tuple[int, bool]]:
    rows = json.dumps(
        [{"name": "demo.jobs.add", "payload": {"a": 1, "b": 2}, "idempotency_key": "race"}]
    )
    return store.enqueue_many(cursor, rows)


def through_the_batch_function(cursor) -> list[tuple[int, bool]]:
    return store.enqueue_batch(cursor, options_row(idempotency_key="race"), '[{"a": 1, "b": 2}]')


@pytest.mark.parametrize(
    "enqueue", [through_the_general_function, through_the_batch_function], ids=["many", "batch"]
)
@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_key_enqueued_by_two_sessions_at_once_resolves_to_one_job_in_both(
    pg_connect, wait_until, enqueue
):
    """The second session waits on the first one's insert, then must get its id.

    Bug: under READ COMMITTED the second session's statement snapshot predates
    the first commit, so its lookup of the existing job finds nothing and it
    returns job_id NULL. Both enqueue functions look again in a new statement.
    """
    other, watcher = pg_connect(), pg_connect()
    result = {}

    def enqueue_in_other_session():
        with other.cursor() as cur:
            result["rows"] = enqueue(cur)

    def other_session_waits_on_a_lock():
        return watcher.execute(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
            [other.info.backend_pid],
        ).fetchone()[0]

    with transaction.atomic():
        first = add.options(idempotency_key="race").enqueue(a=1, b=2)
        thread = threading.Thread(target=enqueue_in_other_session)
        thread.start()
        wait_until(other_session_waits_on_a_lock)
    thread.join(timeout=30)

    assert result["rows"] == [(first.id, False)]


@pytest.mark.parametrize("key", ["it's 100%", "back\\slash %s", "clé\n"], ids=repr)
def test_a_key_with_quotes_percents_or_backslashes_is_stored_as_given(key, cursor):
    handle = add.options(idempotency_key=key).enqueue(a=1, b=2)

    cursor.execute("SELECT idempotency_key FROM workhorse_job WHERE id = %s", [handle.id])
    assert cursor.fetchone()[0] == key
    assert add.options(idempotency_key=key).enqueue(a=1, b=2).id == handle.id

"""Enqueue writes through Django's cursor on the job's connection: what the
cursor wrapper does for any query, it does for the enqueue.

Query logs and execute wrappers see it, a transaction that must roll back
refuses it, database errors come out as Django's, and the job is in the
caller's transaction. Skipping the wrapper saved ~7.5 us of client CPU per
enqueue and would have hidden the enqueue from the tools that patch the
wrapper (docs/decisions.md, "The single enqueue, end to end"); these tests
hold any such shortcut to the wrapper's behaviour. The psycopg cursor under
the wrapper is kept per connection (db/enqueue_cursor.py), unless something
replaced the connection's cursor(): then the enqueue calls it.
"""

import asyncio

import pytest
from demo.jobs import add
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DEFAULT_DB_ALIAS, DataError, connection, connections, transaction
from django.db.transaction import TransactionManagementError
from django.test import SimpleTestCase
from django.test.testcases import DatabaseOperationForbidden
from django.test.utils import CaptureQueriesContext

from django_workhorse import Admin
from django_workhorse.db import store
from django_workhorse.db.enqueue_cursor import kept_cursor

pytestmark = pytest.mark.django_db


def test_logged_queries_show_the_enqueue():
    with CaptureQueriesContext(connection) as captured:
        add.enqueue(a=1, b=2)

    (query,) = captured.captured_queries
    assert "workhorse_enqueue_batch_v1" in query["sql"]


def test_debug_logs_the_enqueue(settings):
    settings.DEBUG = True
    connection.queries_log.clear()

    add.enqueue(a=1, b=2)

    assert any("workhorse_enqueue_batch_v1" in q["sql"] for q in connection.queries)


def test_an_execute_wrapper_sees_the_enqueue():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        add.enqueue_many([{"a": 1, "b": 2}, {"a": 3, "b": 4}])

    assert len(seen) == 1
    assert "workhorse_enqueue_batch_v1" in seen[0]


def test_a_transaction_that_must_roll_back_refuses_the_enqueue():
    with transaction.atomic():
        # What Django records when a query of this block failed.
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            add.enqueue(a=1, b=2)


def test_a_database_error_comes_out_as_djangos(monkeypatch):
    def failing(cursor, options, payloads_json):
        cursor.execute("SELECT 1/0")

    monkeypatch.setattr(store, "enqueue_batch", failing)

    with pytest.raises(DataError), transaction.atomic():
        add.enqueue(a=1, b=2)


def test_the_job_is_in_the_callers_transaction(cursor):
    with transaction.atomic():
        handle = add.enqueue(a=1, b=2)
        cursor.execute("SELECT txid_current_if_assigned() IS NOT NULL")
        assert cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM workhorse_job WHERE id = %s", [handle.id])
        assert cursor.fetchone()[0] == 1


def test_a_replaced_connection_cursor_is_what_the_enqueue_takes(monkeypatch):
    # As django-debug-toolbar records queries: cursor() replaced on the connection.
    taken = []
    original = connection.cursor

    def recording():
        taken.append(True)
        return original()

    monkeypatch.setattr(connection, "cursor", recording)

    add.enqueue(a=1, b=2)

    assert taken == [True]


class TestASimpleTestCase(SimpleTestCase):
    def test_refuses_the_enqueue_as_any_query(self):
        with self.assertRaises(DatabaseOperationForbidden):
            add.enqueue(a=1, b=2)


def test_an_enqueue_from_async_code_is_refused_as_any_query():
    async def enqueue_in_the_event_loop():
        add.enqueue(a=1, b=2)

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(enqueue_in_the_event_loop())


def test_a_connection_shared_between_threads_makes_a_cursor_per_enqueue():
    connection.inc_thread_sharing()
    try:
        assert kept_cursor(connections[DEFAULT_DB_ALIAS]) is None
        assert add.enqueue(a=1, b=2).inserted
    finally:
        connection.dec_thread_sharing()


def test_an_enqueue_after_one_the_database_refused_is_written(monkeypatch):
    def failing(cursor, options, payloads_json):
        cursor.execute("SELECT 1/0")

    with monkeypatch.context() as patched:
        patched.setattr(store, "enqueue_batch", failing)
        with pytest.raises(DataError), transaction.atomic():
            add.enqueue(a=1, b=2)

    handle = add.enqueue(a=3, b=4)

    assert Admin().get_job(handle.id).payload == {"a": 3, "b": 4}


@pytest.mark.django_db(transaction=True)
def test_an_enqueue_after_django_connects_again_is_written_on_the_new_connection():
    add.enqueue(a=1, b=2)
    connection.close()

    handle = add.enqueue(a=3, b=4)

    with connection.cursor() as cursor:
        cursor.execute("SELECT payload FROM workhorse_job WHERE id = %s", [handle.id])
        assert cursor.fetchone()[0] == '{"a": 3, "b": 4}'

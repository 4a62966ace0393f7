"""Enqueue writes through Django's cursor on the job's connection: what the
cursor wrapper does for any query, it does for the enqueue.

Query logs and execute wrappers see it, a transaction that must roll back
refuses it, database errors come out as Django's, and the job is in the
caller's transaction. Skipping the wrapper saved ~7.5 us of client CPU per
enqueue and would have hidden the enqueue from the tools that patch the
wrapper (docs/decisions.md, "The single enqueue, end to end"); these tests
hold any such shortcut to the wrapper's behaviour.
"""

import pytest
from demo.jobs import add
from django.db import DataError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from django_workhorse.db import store

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

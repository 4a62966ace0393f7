"""``depends_on`` racing retention (docs/durable-execution.md): a prerequisite
that retention deletes while a dependent is being enqueued gives
``UnknownDependencyError`` with the caller's transaction intact, never a
raw database error; and one that the enqueue has checked stays until the
dependent's edges are written.

Retention runs for real on a connection of its own; which of the two goes
first is decided by holding its transaction open, not by timing."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from demo.jobs import add
from django.db import connection, transaction

from django_workhorse import Admin, UnknownDependencyError
from django_workhorse.db import store
from tests.factories import SucceededJobFactory
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def finished_a_month_ago() -> int:
    """A succeeded job that RETENTION's default window has passed."""
    job = SucceededJobFactory(queue="deps-retention")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_job_outcome SET finished_at = now() - interval '30 days'"
            " WHERE job_id = %s",
            [job.id],
        )
    return job.id


def prune_finished_jobs(cursor) -> list[tuple]:
    """One retention step for jobs finished over a week ago."""
    week_ago = store.database_now(cursor) - timedelta(days=7)
    return store.prune_step(cursor, week_ago, week_ago, 1000, False)


def waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def test_a_prerequisite_retention_deletes_during_the_enqueue_is_unknown_and_the_transaction_goes_on(
    pg_connect,
):
    prerequisite = finished_a_month_ago()
    retention = pg_connect()
    outcome: dict[str, object] = {}

    def enqueue_in_a_transaction() -> None:
        try:
            with transaction.atomic():
                outcome["pid"] = connection.connection.info.backend_pid
                try:
                    add.options(queue="deps-retention", depends_on=[prerequisite]).enqueue(a=1, b=2)
                except Exception as exc:  # what the caller gets
                    outcome["error"] = exc
                # The caller's transaction is intact: it goes on and commits.
                outcome["after"] = add.options(queue="deps-retention").enqueue(a=3, b=4).id
        except Exception as exc:
            outcome["commit"] = exc
        finally:
            connection.close()

    with retention.transaction(), retention.cursor() as cursor:
        # Retention deletes the prerequisite and has not committed yet...
        assert ("delete_jobs", "workhorse_job", 1) in prune_finished_jobs(cursor)
        caller = threading.Thread(target=enqueue_in_a_transaction)
        caller.start()
        # ...while the caller's enqueue has begun and waits for those rows.
        poll_until(
            lambda: "pid" in outcome and waiting_on_a_lock(outcome["pid"]),
            timeout=30,
            interval=0.02,
            what="the enqueue waiting for retention's transaction",
        )
    caller.join(30)

    assert isinstance(outcome.get("error"), UnknownDependencyError), outcome
    assert f"depends on job #{prerequisite}" in str(outcome["error"])
    assert "commit" not in outcome
    assert Admin().get_job(outcome["after"]).state == "ready"
    assert Admin().get_job(prerequisite) is None


def test_a_prerequisite_checked_by_an_enqueue_is_kept_by_retention_until_its_edges_are_written(
    pg_connect,
):
    prerequisite = finished_a_month_ago()
    caller, retention = pg_connect(), pg_connect()

    with caller.transaction(), caller.cursor() as cursor:
        # The two statements of an enqueue with depends_on, with retention's
        # whole run between them.
        assert store.lock_prerequisites(cursor, [prerequisite]) == []
        with retention.cursor() as other:
            assert not [row for row in prune_finished_jobs(other) if row[0] == "delete_jobs"]
        [(dependent, inserted)] = store.enqueue_many(
            cursor,
            '[{"name": "demo.jobs.add", "queue": "deps-retention", "payload": {"a": 1, "b": 2},'
            f' "depends_on": [{prerequisite}]}}]',
        )

    assert inserted
    assert Admin().get_job(dependent).state == "ready"  # its prerequisite had succeeded
    with retention.cursor() as other:  # once the dependent is in, retention takes it
        assert ("delete_jobs", "workhorse_job", 1) in prune_finished_jobs(other)
    assert Admin().get_job(prerequisite) is None


def test_an_enqueue_outside_a_transaction_is_refused_the_same_way(pg_connect):
    prerequisite = finished_a_month_ago()
    with pg_connect().cursor() as cursor:
        prune_finished_jobs(cursor)

    with pytest.raises(UnknownDependencyError, match=f"depends on job #{prerequisite}"):
        add.options(queue="deps-retention", depends_on=[prerequisite]).enqueue(a=1, b=2)

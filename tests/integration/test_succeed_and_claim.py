"""workhorse_succeed_and_claim_v1: a one-slot worker's finish and next claim in
one call. The finish is the fenced succeed_many, written before the claim (a
limited queue counts the place it frees); the claim is claim_many; and the
commit waits for its flush even on a claim connection that does not."""

import pytest

from django_workhorse.db import store
from tests.factories import ActiveJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def test_the_success_is_written_and_the_next_job_claimed(cursor, db_rows):
    running = ActiveJobFactory(queue="one-slot", worker="w")
    waiting = ReadyJobFactory(queue="one-slot")

    succeeded, claimed = store.succeed_and_claim(
        cursor, "w", [running.id], [running.fence], ['{"n": 1}'], ["one-slot"], [1], 30
    )

    assert succeeded == [(running.id, True)]
    assert [job.job_id for job in claimed] == [waiting.id]
    assert claimed[0].attempt == 1 and claimed[0].payload == {"a": 1, "b": 2}
    assert db_rows.outcome(running.id)["state"] == "succeeded"
    assert db_rows.runtime(running.id) is None
    assert db_rows.runtime(waiting.id)["state"] == "active"
    assert db_rows.runtime(waiting.id)["worker_id"] == "w"


def test_a_stale_success_is_refused_and_the_claim_still_made(cursor, db_rows):
    running = ActiveJobFactory(queue="one-slot", worker="w")
    waiting = ReadyJobFactory(queue="one-slot")
    before = db_rows.of_job(running.id)

    succeeded, claimed = store.succeed_and_claim(
        cursor, "w", [running.id], [running.fence + 1], ["null"], ["one-slot"], [1], 30
    )

    assert succeeded == [(running.id, False)]
    assert db_rows.of_job(running.id) == before
    assert [job.job_id for job in claimed] == [waiting.id]


def test_without_successes_it_is_a_plain_claim(cursor):
    waiting = ReadyJobFactory(queue="one-slot")

    succeeded, claimed = store.succeed_and_claim(cursor, "w", [], [], [], ["one-slot"], [1], 30)

    assert succeeded == []
    assert [job.job_id for job in claimed] == [waiting.id]


def test_a_queue_limited_to_one_hands_out_the_next_job_in_the_same_call(cursor):
    store.set_queue_limits(cursor, "limited-one", 1, None, None)
    running = ActiveJobFactory(queue="limited-one", worker="w")
    waiting = ReadyJobFactory(queue="limited-one")

    succeeded, claimed = store.succeed_and_claim(
        cursor, "w", [running.id], [running.fence], ["null"], ["limited-one"], [1], 30
    )

    assert succeeded == [(running.id, True)]
    assert [job.job_id for job in claimed] == [waiting.id]


def test_a_place_another_worker_waits_for_is_left_to_the_waiting_workers(cursor):
    """A claim held back by the limit marked the queue: the finish frees the
    place and wakes the waiting workers, and does not take the place itself."""
    store.set_queue_limits(cursor, "limited-one", 1, None, None)
    running = ActiveJobFactory(queue="limited-one", worker="w")
    waiting = ReadyJobFactory(queue="limited-one")
    assert store.claim_many(cursor, "other", ["limited-one"], [1], 30) == []  # held back

    succeeded, claimed = store.succeed_and_claim(
        cursor, "w", [running.id], [running.fence], ["null"], ["limited-one"], [1], 30
    )

    assert succeeded == [(running.id, True)] and claimed == []
    assert [job.job_id for job in store.claim_many(cursor, "other", ["limited-one"], [1], 30)] == [
        waiting.id
    ]


def test_a_paused_queue_hands_out_nothing_but_the_success_is_written(cursor, db_rows):
    running = ActiveJobFactory(queue="paused-slot", worker="w")
    ReadyJobFactory(queue="paused-slot")
    store.set_queue_paused(cursor, "paused-slot", True)

    succeeded, claimed = store.succeed_and_claim(
        cursor, "w", [running.id], [running.fence], ["null"], ["paused-slot"], [1], 30
    )

    assert succeeded == [(running.id, True)] and claimed == []
    assert db_rows.outcome(running.id)["state"] == "succeeded"


def test_the_commit_waits_for_its_flush_on_a_claim_connection(pg_connect):
    """The claim connection runs with synchronous_commit off; a call that
    ends runs restores the server's setting until its transaction ends."""
    running = ActiveJobFactory(queue="one-slot", worker="w")
    conn = pg_connect()
    conn.execute("SET synchronous_commit = off")
    with conn.transaction(), conn.cursor() as cursor:
        store.succeed_and_claim(
            cursor, "w", [running.id], [running.fence], ["null"], ["one-slot"], [1], 30
        )
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "off"
    with conn.transaction(), conn.cursor() as cursor:
        store.succeed_and_claim(cursor, "w", [], [], [], ["one-slot"], [1], 30)
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "off"

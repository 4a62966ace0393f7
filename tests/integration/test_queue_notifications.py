"""What wakes a queue's idle workers: a NOTIFY on the queue's channel
(``workhorse:<queue>``) on commit of every change that can let a claim of
the queue start something. Seen here by a LISTEN session of its own."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from django_workhorse import Admin
from django_workhorse.db import store
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
)

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


@pytest.fixture
def listen(pg_connect):
    """``listen(queue)``: a session LISTENing on the queue's channel;
    ``heard(session)`` drains what it was sent so far (within 5 s of the first)."""

    def start(queue: str):
        session = pg_connect()
        session.execute(f'LISTEN "workhorse:{queue}"')
        return session

    return start


def heard(session, wait: float = 5) -> list[str]:
    return [n.channel for n in session.notifies(timeout=wait, stop_after=1)]


def silent(session) -> bool:
    return list(session.notifies(timeout=0.3)) == []


def held_back(queue: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT held_back FROM workhorse_queue WHERE name = %s", [queue])
        return cursor.fetchone()[0]


def test_a_finish_wakes_a_limited_queue_whose_claim_was_held_back_and_an_unlimited_one_never(
    listen,
):
    limited = ActiveJobFactory(queue="notify-limited", worker="w")
    unlimited = ActiveJobFactory(queue="notify-free", worker="w")
    Admin().set_queue_limits("notify-limited", global_concurrency=1)
    ReadyJobFactory(queue="notify-limited")
    with connection.cursor() as cursor:
        assert store.claim_many(cursor, "w2", ["notify-limited"], [1], 30) == []
    assert held_back("notify-limited")
    on_limited, on_free = listen("notify-limited"), listen("notify-free")

    with connection.cursor() as cursor:
        assert store.succeed_many(
            cursor, "w", [limited.id, unlimited.id], [limited.fence, unlimited.fence], ["1", "2"]
        ) == [(limited.id, True), (unlimited.id, True)]

    assert heard(on_limited) == ["workhorse:notify-limited"]
    assert silent(on_free)  # an unlimited queue pays nothing for a finish
    assert not held_back("notify-limited")  # the wake-up is sent once


def test_a_finish_in_a_limited_queue_that_held_no_claim_back_sends_nothing(listen):
    job = ActiveJobFactory(queue="notify-roomy", worker="w")
    Admin().set_queue_limits("notify-roomy", global_concurrency=5)
    ReadyJobFactory(queue="notify-roomy")
    with connection.cursor() as cursor:
        assert len(store.claim_many(cursor, "w2", ["notify-roomy"], [1], 30)) == 1
    assert not held_back("notify-roomy")
    session = listen("notify-roomy")

    with connection.cursor() as cursor:
        assert store.succeed_many(cursor, "w", [job.id], [job.fence], ["1"]) == [(job.id, True)]

    assert silent(session)


def test_a_claim_held_back_while_a_finish_is_in_flight_learns_of_the_place_it_frees(
    pg_connect, listen
):
    """The finish read held_back before the claim set it, so it sends no
    NOTIFY; the held-back worker's next-run lookup waits for that finish and
    reports the place free."""
    running = ActiveJobFactory(queue="notify-race", worker="w")
    Admin().set_queue_limits("notify-race", global_concurrency=1)
    ReadyJobFactory(queue="notify-race")
    session = listen("notify-race")
    finisher = pg_connect()
    finisher.autocommit = False
    with finisher.cursor() as cursor:
        assert store.succeed_many(cursor, "w", [running.id], [running.fence], ["1"]) == [
            (running.id, True)
        ]
    # Not committed: the claim counts the job as active and is held back.
    with connection.cursor() as cursor:
        assert store.claim_many(cursor, "w2", ["notify-race"], [1], 30) == []
    assert held_back("notify-race")

    found: list = []
    looker = pg_connect()
    lookup = threading.Thread(
        target=lambda: found.append(store.next_run_at(looker.cursor(), ["notify-race"]))
    )
    lookup.start()
    lookup.join(0.5)
    assert lookup.is_alive(), "the lookup counted before the finish in flight ended"
    finisher.commit()
    lookup.join(10)

    assert not lookup.is_alive()
    [due] = found
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        assert due is not None and due <= cursor.fetchone()[0]
    assert silent(session)  # the finish sent nothing: the lookup is what saw it
    with connection.cursor() as cursor:
        assert len(store.claim_many(cursor, "w2", ["notify-race"], [1], 30)) == 1


def test_a_limit_change_notifies_the_queue(listen):
    ScheduledJobFactory(queue="notify-limits")
    session = listen("notify-limits")

    assert Admin().set_queue_limits("notify-limits", global_concurrency=3).status == "changed"
    assert heard(session) == ["workhorse:notify-limits"]
    assert Admin().set_queue_limits("notify-limits", global_concurrency=3).status == "unchanged"
    assert silent(session)


def test_a_retry_notifies_the_queue(listen):
    job = FailedJobFactory(queue="notify-retry")
    session = listen("notify-retry")

    assert Admin().retry(job.id).changed

    assert heard(session) == ["workhorse:notify-retry"]


def test_a_promote_notifies_the_queue(listen):
    job = ScheduledJobFactory(queue="notify-promote")
    session = listen("notify-promote")

    assert Admin().promote(job.id).changed

    (note,) = list(session.notifies(timeout=5, stop_after=1))
    assert note.channel == "workhorse:notify-promote"
    assert note.payload == ""  # ready now, not a wake time

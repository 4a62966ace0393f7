"""What wakes a queue's idle workers: a NOTIFY on the queue's channel
(``workhorse:<queue>``) on commit of every change that can let a claim of
the queue start something. Seen here by a LISTEN session of its own."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse import Admin, store
from tests.factories import ActiveJobFactory, FailedJobFactory, ScheduledJobFactory

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


def test_a_finish_in_a_concurrency_limited_queue_notifies_it_and_an_unlimited_one_does_not(
    listen,
):
    limited = ActiveJobFactory(queue="notify-limited", worker="w")
    unlimited = ActiveJobFactory(queue="notify-free", worker="w")
    Admin().set_queue_limits("notify-limited", concurrency=1)
    on_limited, on_free = listen("notify-limited"), listen("notify-free")

    with connection.cursor() as cursor:
        assert store.succeed_many(
            cursor, "w", [limited.id, unlimited.id], [limited.fence, unlimited.fence], ["1", "2"]
        ) == [(limited.id, True), (unlimited.id, True)]

    assert heard(on_limited) == ["workhorse:notify-limited"]
    assert silent(on_free)  # an unlimited queue pays nothing for a finish


def test_a_limit_change_notifies_the_queue(listen):
    ScheduledJobFactory(queue="notify-limits")
    session = listen("notify-limits")

    assert Admin().set_queue_limits("notify-limits", concurrency=3).status == "changed"
    assert heard(session) == ["workhorse:notify-limits"]
    assert Admin().set_queue_limits("notify-limits", concurrency=3).status == "unchanged"
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

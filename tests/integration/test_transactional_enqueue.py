"""Enqueue runs in the caller's transaction: a rollback leaves no trace, and
the wake-up reaches workers only on commit."""

import pytest
from demo.jobs import add
from django.db import transaction

from tests.factories import ReadyJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


class Boom(Exception):
    pass


def test_enqueue_inside_a_rolled_back_atomic_block_leaves_no_row_anywhere(db_rows):
    with pytest.raises(Boom), transaction.atomic():
        add.enqueue(a=1, b=2)
        add.options(delay=60).enqueue_many([{"a": i, "b": i} for i in range(3)])
        assert db_rows.counts()["workhorse_job"] == 4
        raise Boom

    assert db_rows.counts() == dict.fromkeys(db_rows.counts(), 0)


def test_enqueue_inside_a_committed_atomic_block_writes_every_row(db_rows):
    with transaction.atomic():
        handle = add.enqueue(a=1, b=2)

    rows = db_rows.of_job(handle.id)
    assert len(rows["job"]) == len(rows["runtime"]) == len(rows["query"]) == 1
    assert [e["kind"] for e in rows["events"]] == ["enqueued"]
    assert rows["outcome"] == rows["attempts"] == []


def test_a_rolled_back_enqueue_sends_no_wake_up_and_a_committed_one_does(pg_connect):
    listener = pg_connect()
    listener.execute('LISTEN "workhorse:wake-test"')

    with pytest.raises(Boom), transaction.atomic():
        add.options(queue="wake-test").enqueue(a=1, b=2)
        raise Boom
    assert list(listener.notifies(timeout=0.2)) == []

    ReadyJobFactory(queue="wake-test")
    (notice,) = list(listener.notifies(timeout=2, stop_after=1))
    assert notice.channel == "workhorse:wake-test"

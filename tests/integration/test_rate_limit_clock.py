"""A rate limit holds for claims that waited for the queue's lock: each claim
is counted and recorded at the time it holds the queue's row, not at its
transaction's start."""

import threading
import time

import psycopg
import pytest
from demo.jobs import add

from django_workhorse import Admin
from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

QUEUE = "rated-clock"


def connect() -> psycopg.Connection:
    from django.db import connection

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


def test_a_claim_that_waited_longer_than_the_period_still_counts_against_the_next():
    for i in range(6):
        add.options(queue=QUEUE).enqueue(a=i, b=1)
    Admin().set_queue_limits(QUEUE, rate=3, period=1)
    with connect() as holder, connect() as waiter, connect() as later:
        # A migration-strength lock on the queue table: the waiter's claim
        # starts now and gets the queue's row only after more than the
        # period. (A row lock alone no longer makes a claim wait: it skips
        # the queue, test_a_claim_skips_a_limited_queue_whose_row_is_held.)
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE workhorse_queue IN EXCLUSIVE MODE")
        claimed: list[int] = []
        claiming = threading.Thread(
            target=lambda: claimed.append(
                len(store.claim_many(waiter.cursor(), "waiter", [QUEUE], [2], 30))
            )
        )
        claiming.start()
        deadline = time.monotonic() + 10
        while not _waits_for_a_lock(later, waiter) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.2)  # longer than the period, while the claim waits
        holder.execute("COMMIT")
        claiming.join(10)
        assert claimed == [2]
        # Right after it, another claim may take only what the period leaves.
        assert len(store.claim_many(later.cursor(), "later", [QUEUE], [5], 30)) == 1


def _waits_for_a_lock(observer: psycopg.Connection, waiting: psycopg.Connection) -> bool:
    row = observer.execute(
        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [waiting.info.backend_pid]
    ).fetchone()
    return row is not None and row[0] == "Lock"


def test_a_claim_skips_a_limited_queue_whose_row_is_held_and_takes_the_others():
    for i in range(3):
        add.options(queue=QUEUE).enqueue(a=i, b=1)
        add.options(queue=QUEUE + "-free").enqueue(a=i, b=1)
    Admin().set_queue_limits(QUEUE, rate=100, period=1)
    with connect() as holder, connect() as claimer:
        holder.execute("BEGIN")
        holder.execute("SELECT 1 FROM workhorse_queue WHERE name = %s FOR UPDATE", [QUEUE])
        claimed = store.claim_many(claimer.cursor(), "c", [QUEUE, QUEUE + "-free"], [5, 5], 30)
        assert sorted(c.queue for c in claimed) == [QUEUE + "-free"] * 3
        holder.execute("COMMIT")
        claimed = store.claim_many(claimer.cursor(), "c", [QUEUE], [5], 30)
        assert [c.queue for c in claimed] == [QUEUE] * 3
